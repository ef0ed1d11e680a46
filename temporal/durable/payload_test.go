package durable_test

import (
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/temporal/durable"
	"github.com/glidepath/glidepath/trace"
	"go.temporal.io/sdk/client"
)

// bigTool answers 800 KB: under the harness's 1 MiB cap on a tool's
// output, and three of them past the 2 MB Temporal allows a payload.
const bigTool = `tools:
  - name: dump
    effect: read
    command: [sh, -c, 'printf "\""; yes a | head -c 1600000 | tr -d "\n"; printf "\""']
`

// manyRepeats lets a test's run make the same call, with the same
// result, over and over, which is how it grows: it is not stuck (issue
// 27).
const manyRepeats = 100

// Seven outputs of 800 KB each: every one is cut to what a run carries,
// the oldest are left out of the requests once the conversation passes
// what one carries, each saying so, and the run completes within its
// budget, where it used to loop on Temporal's payload errors past it.
func TestAConversationPastWhatTemporalCarriesIsFittedAndTheRunCompletes(t *testing.T) {
	call := []sim.ToolCall{{Name: "dump", Arguments: "{}"}}
	var rules []sim.Rule
	for turn := 1; turn <= 7; turn++ {
		rules = append(rules, sim.Rule{Turn: turn, ToolCalls: call})
	}
	e := newEnvWith(t, bigTool, nil, &sim.Scenario{Rules: rules})
	const budget = 30 * time.Second
	began := time.Now()
	out, _ := e.run(t, durable.Input{Task: "read it all", Budget: budget, MaxRepeats: manyRepeats})
	if took, res := time.Since(began), out.Result; res.Status != landing.Complete || took > budget {
		t.Fatalf("status %s cause %s after %v: %s", res.Status, res.Cause, took, res.Boundary)
	}
	if ends := records(out, trace.AttemptEnd, "tool:dump"); len(ends) != 7 {
		t.Errorf("%d dump attempts, want 7", len(ends))
	}
	reqs := e.sim.Requests()
	last := reqs[len(reqs)-1].Messages
	var cut, leftOut, size int
	for _, m := range last {
		size += len(m.Content)
		switch {
		case strings.Contains(m.Content, "[output cut at"):
			cut++
		case strings.Contains(m.Content, "bytes left out: the conversation passed"):
			leftOut++
		}
	}
	if cut == 0 || leftOut == 0 || cut+leftOut != 7 || size > durable.MaxRequestBytes {
		t.Errorf("the last request: %d outputs cut, %d left out, %d bytes of content", cut, leftOut, size)
	}
}

// A task larger than a run can carry in every request is bad input, at
// once, not a run that cannot make its first turn.
func TestATaskPastWhatARunCarriesIsBadInput(t *testing.T) {
	e := newEnv(t, "")
	wr, err := e.c.ExecuteWorkflow(t.Context(), durable.StartOptions(client.StartWorkflowOptions{TaskQueue: e.queue}, 10*time.Second), durable.WorkflowName,
		durable.Input{Task: strings.Repeat("x", durable.MaxRequestBytes/2+1), Budget: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = wr.Get(t.Context(), nil)
	if err == nil || !strings.Contains(err.Error(), "past the") {
		t.Fatalf("error %v, want bad input saying the task is too large", err)
	}
}
