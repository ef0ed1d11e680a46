package durable_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/temporal/durable"
	"github.com/glidepath/glidepath/trace"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// A sub-agent is a child workflow on a slice of its parent's budget
// (SPEC §5b): the child's deadline is the slice's end, before the
// parent's reserve with the parent's keep to spare; its labeled result is
// the tool message's content, exactly the --json object of harness run;
// its records join the parent's trace under its own run_id with the
// parent's as parent_run_id; and the parent completes.
func TestASubAgentRunsAsAChildWorkflowOnASliceOfItsParentsBudget(t *testing.T) {
	e := newEnvFiles(t, researcherFiles, nil, nil)
	const budget = 20 * time.Second
	out, wr := e.run(t, durable.Input{Task: "research deadlines", Budget: budget})
	res := out.Result
	if res.Status != landing.Complete {
		t.Fatalf("status %s cause %q: %s\n%s", res.Status, res.Cause, res.Boundary, dump(out))
	}
	starts := records(out, trace.AttemptStart, "agent:researcher")
	ends := records(out, trace.AttemptEnd, "agent:researcher")
	if len(starts) != 1 || len(ends) != 1 || ends[0].Outcome != trace.OK {
		t.Fatalf("researcher attempts %+v / %+v, want one ok\n%s", starts, ends, dump(out))
	}
	// The slice is the ceiling, since the parent had more to give.
	if starts[0].GrantedMs != 8000 {
		t.Errorf("the child was granted %dms, want its ceiling of 8s", starts[0].GrantedMs)
	}

	// The child workflow's input, from the parent's history: its budget
	// is the slice, its deadline the slice's end.
	h := e.history(t, wr)
	var child durable.Input
	var childID string
	for _, ev := range h.Events {
		a := ev.GetStartChildWorkflowExecutionInitiatedEventAttributes()
		if a == nil {
			continue
		}
		childID = a.GetWorkflowId()
		if err := converter.GetDefaultDataConverter().FromPayloads(a.GetInput(), &child); err != nil {
			t.Fatal(err)
		}
	}
	if childID == "" {
		t.Fatal("the parent started no child workflow")
	}
	// Workflow IDs are listed in clear: the child's names its call by a
	// hash of the key, never the key (issue 26).
	if starts[0].Key == "" || strings.Contains(childID, starts[0].Key) || !strings.HasPrefix(childID, "researcher/") {
		t.Errorf("the child's workflow ID %q, for the call of key %q", childID, starts[0].Key)
	}
	if child.Budget != 8*time.Second || child.Parent == nil || child.Parent.Key != starts[0].Key || child.Toolset != "researcher" {
		t.Errorf("child input budget %v toolset %q parent %+v, want 8s, researcher, the call's key %s", child.Budget, child.Toolset, child.Parent, starts[0].Key)
	}
	parentStart := records(out, trace.RunStart, "")[0]
	if dl := child.Deadline.Sub(parentStart.TS); dl > budget-time.Duration(res.Budget.ReserveMs)*time.Millisecond {
		t.Errorf("the child's deadline is %v into the parent's run: past the parent's reserve", dl)
	}

	// The child's records are in the parent's trace, under its own run id.
	var childRecs []trace.Record
	for _, r := range out.Trace {
		if r.RunID == childID {
			childRecs = append(childRecs, r)
		}
	}
	if len(childRecs) == 0 {
		t.Fatalf("no record of the child %s in the parent's trace\n%s", childID, dump(out))
	}
	for _, r := range childRecs {
		if r.ParentRunID != res.RunID {
			t.Fatalf("child record %+v: parent_run_id %q, want %q", r, r.ParentRunID, res.RunID)
		}
	}
	if first := childRecs[0]; first.Event != trace.RunStart || first.Key != starts[0].Key || first.TotalMs != 8000 {
		t.Errorf("the child's first record %+v, want its run_start with the call's key and its slice", first)
	}
	if s := records(out, trace.AttemptEnd, "tool:search"); len(s) != 1 || s[0].RunID != childID {
		t.Errorf("search attempts %+v, want one, the child's", s)
	}

	// The tool message the parent's model read is the child's result.
	var msg string
	for _, ev := range h.Events {
		a := ev.GetActivityTaskScheduledEventAttributes()
		if a == nil || a.GetActivityType().GetName() != durable.ModelActivity {
			continue
		}
		var req durable.ModelRequest
		if err := converter.GetDefaultDataConverter().FromPayloads(a.GetInput(), &req); err != nil {
			t.Fatal(err)
		}
		for _, m := range req.Messages {
			if m.Role == "tool" {
				msg = m.Content
			}
		}
	}
	var got landing.Result
	if err := json.Unmarshal([]byte(msg), &got); err != nil || got.RunID != childID || got.Status != landing.Complete {
		t.Errorf("tool message %q: want the child's --json result (err %v)", msg, err)
	}
}

// A sub-agent is no new work once the run has narrowed: in narrow and
// later its call is refused before any child starts.
func TestASubAgentIsRefusedOnceTheRunHasNarrowed(t *testing.T) {
	e := newEnvFiles(t, map[string]string{
		"tools.yaml": `tools:
  - name: slow
    effect: read
    ceiling: 7500ms
    max_attempts: 1
    command: [sh, -c, "sleep 30"]
  - name: researcher
    agent:
      instructions: You research one question.
`,
	}, nil, nil)
	// slow is cut at its 7.5s ceiling, past 60% of a 12s budget whose
	// reserve is 500ms: the researcher, asked for in the next turn (one
	// call a turn), comes in narrow or later, however slowly the run
	// started.
	out, wr := e.run(t, durable.Input{Task: "research deadlines", Budget: 12 * time.Second, Reserve: 500 * time.Millisecond, Parallel: 1})
	for _, ev := range e.history(t, wr).Events {
		if ev.GetStartChildWorkflowExecutionInitiatedEventAttributes() != nil {
			t.Fatalf("a child was started after the run narrowed\n%s", dump(out))
		}
	}
	if ends := records(out, trace.AttemptEnd, "tool:slow"); len(ends) != 1 || ends[0].ElapsedMs < 7200 {
		t.Fatalf("slow attempts %+v, want one, past 60%%\n%s", ends, dump(out))
	}
	refused := records(out, trace.Refused, "agent:researcher")
	if len(refused) != 1 || refused[0].Reason != "gated" || refused[0].Phase == "explore" {
		t.Fatalf("researcher refusals %+v, want one gated, after explore\n%s", refused, dump(out))
	}
}

// A sub-agent's semantic events count as its parent's (SPEC §3): a child
// whose tool works for 2s with progress every 500ms keeps a parent whose
// quiet clock is 1.5s from stalling, through the coalesced signals the
// child sends it, which are on the parent's record as progress of the
// call.
func TestASubAgentsWorkKeepsItsParentsQuietClockFromFiring(t *testing.T) {
	e := newEnvFiles(t, map[string]string{
		"tools.yaml": `tools:
  - name: researcher
    ceiling: 10s
    agent:
      instructions: You research one question.
      tools: child.yaml
`,
		"child.yaml": `tools:
  - name: deep_research
    builtin: deep_research
`,
	}, nil, nil)
	out, _ := e.run(t, durable.Input{Task: "research deadlines", Budget: 30 * time.Second, Quiet: 1500 * time.Millisecond})
	if res := out.Result; res.Status != landing.Complete {
		t.Fatalf("status %s cause %q, want complete: %s\n%s", res.Status, res.Cause, res.Boundary, dump(out))
	}
	research := records(out, trace.AttemptEnd, "tool:deep_research")
	if len(research) != 1 || research[0].Outcome != trace.OK {
		t.Fatalf("the child's deep_research %+v, want one ok\n%s", research, dump(out))
	}
	var heard []trace.Record
	for _, r := range records(out, trace.Progress, "agent:researcher") {
		if r.ParentRunID == "" {
			heard = append(heard, r) // the parent's own record of its child's work
		}
	}
	if len(heard) < 2 {
		t.Fatalf("the parent heard %d progress records of its child, want its work on the record\n%s", len(heard), dump(out))
	}
}

// A wait a sub-agent chose is not its parent's silence either: a child
// told 503 with Retry-After 2s sleeps it out under a parent whose quiet
// clock is 1.5s, and both complete.
func TestASubAgentsBackoffSleepPausesItsParentsQuietClock(t *testing.T) {
	// The parent's first model request is the sim's first; the child's
	// first is the second.
	sc := &sim.Scenario{Rules: []sim.Rule{{Request: 2, Status: 503, RetryAfter: "2"}}}
	e := newEnvFiles(t, map[string]string{
		"tools.yaml": `tools:
  - name: researcher
    ceiling: 10s
    agent:
      instructions: You research one question.
`,
	}, nil, sc)
	out, _ := e.run(t, durable.Input{Task: "research deadlines", Budget: 30 * time.Second, Quiet: 1500 * time.Millisecond})
	if res := out.Result; res.Status != landing.Complete {
		t.Fatalf("status %s cause %q, want complete: %s\n%s", res.Status, res.Cause, res.Boundary, dump(out))
	}
	var slept bool
	for _, r := range records(out, trace.Backoff, "model") {
		slept = slept || r.ParentRunID != "" && r.SleepMs >= 2000
	}
	if !slept {
		t.Fatalf("the child did not sleep out the server's 2s\n%s", dump(out))
	}
}

// Issue 25: a sub-agent's orphaned write never reached its parent's
// in_flight on Temporal, and the parent could say complete while the
// child's payment may or may not have happened. The parent now adopts the
// child's orphans by landing.Adopt, as a process's harness does: named
// agent/tool, in the parent's in_flight, and the parent's answer is not
// complete.
func TestASubAgentsOrphanedWriteIsItsParentsToo(t *testing.T) {
	j, err := cancel.OpenJournal(filepath.Join(t.TempDir(), "orphans.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	e := newEnvFiles(t, map[string]string{
		"tools.yaml": `tools:
  - name: payer
    description: Pays one invoice.
    ceiling: 8s
    agent:
      instructions: You pay one invoice.
      tools: child.yaml
      max_steps: 3
`,
		"child.yaml": `tools:
  - name: transfer
    description: Transfer money.
    effect: write
    ceiling: 500ms
    p50: 100ms
    command: [sh, -c, "sleep 5"]
`,
	}, j, nil)
	out, _ := e.run(t, durable.Input{Task: "pay the invoice", Budget: 20 * time.Second})
	res := out.Result
	if starts := records(out, trace.AttemptStart, "agent:payer"); len(starts) != 1 {
		t.Fatalf("payer attempts %+v, want one\n%s", starts, dump(out))
	}
	if res.Status == landing.Complete {
		t.Errorf("the parent says complete while its child's write is orphaned: %s", res.Boundary)
	}
	if len(res.InFlight) != 1 || res.InFlight[0].Tool != "payer/transfer" || res.InFlight[0].State != landing.StateOrphaned {
		t.Fatalf("in_flight %+v, want payer/transfer orphaned\n%s", res.InFlight, dump(out))
	}
	if res.Orphans != 1 {
		t.Errorf("orphans %d, want 1", res.Orphans)
	}
}

// Issue 25 (review): a sub-agent's last signal to its parent, its records
// of work up to its landing, was waited for without bound once the child
// had landed: a parent's server that did not answer held the child past
// its own deadline. The wait is now bounded by what the child has left,
// and never moves its end. The server that never answers is the SDK's
// test environment with the signal mocked to block.
func TestASubAgentsLastSignalToItsParentWaitsNoLongerThanItsBudget(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.SetTestTimeout(time.Minute)
	env.RegisterWorkflowWithOptions(durable.Workflow, workflow.RegisterOptions{Name: durable.WorkflowName})
	env.RegisterActivityWithOptions(func(context.Context, string) (durable.ToolList, error) {
		return durable.ToolList{Fingerprint: "test"}, nil
	},
		activity.RegisterOptions{Name: durable.ToolsActivity})
	env.RegisterActivityWithOptions(func(context.Context, durable.ModelRequest) (durable.ModelReply, error) {
		return durable.ModelReply{Content: "Done.", FinishReason: "stop", TurnAttempted: model.TurnAttempted{Outcome: trace.OK}}, nil
	}, activity.RegisterOptions{Name: durable.ModelActivity})
	release := make(chan struct{})
	signals := make(chan struct{}, 16)
	env.OnSignalExternalWorkflow(mock.Anything, "parent", "", durable.SignalProgress, mock.Anything).Return(
		func(_, _, _, _ string, _ any) error {
			signals <- struct{}{}
			<-release // the parent's side never answers until the test ends
			return nil
		})
	const budget = 2 * time.Second
	done := make(chan struct{})
	go func() {
		defer close(done)
		env.ExecuteWorkflow(durable.WorkflowName, durable.Input{Task: "answer", Budget: budget,
			Parent: &durable.Parent{WorkflowID: "parent", RunID: "parent-run", Step: "agent:researcher", Key: "k1"}})
	}()
	// Bounded generously: the run's timers fire on the wall clock while a
	// signal is outstanding, and the machine is shared.
	select {
	case <-done:
	case <-time.After(10 * budget):
		t.Errorf("the child was still waiting for its last signal to its parent %v after it started, on a budget of %v", 10*budget, budget)
	}
	close(release)
	<-done
	if len(signals) == 0 {
		t.Fatal("the child never signalled its parent")
	}
	var out durable.Output
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if out.Result.Status == "" {
		t.Error("the child returned no labeled result")
	}
	if end, ok := last(out.Trace, trace.RunEnd); !ok || end.LateMs != 0 {
		t.Errorf("run_end %+v, want one on time", end)
	}
}

// last is the last record of event ev in recs.
func last(recs []trace.Record, ev trace.Event) (trace.Record, bool) {
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Event == ev {
			return recs[i], true
		}
	}
	return trace.Record{}, false
}

// Issue 25: on Temporal a sub-agent's model estimate started empty, so a
// child made a model turn its parent's estimate says cannot fit; in
// process a child on its parent's model starts from what the parent knows
// of it (landing.Inherit). Six turns of 600ms give the parent a p50
// (budget.MinObserved is five); the child's slice of 700ms leaves it less
// than that before its reserve, so it refuses its turn, as in process.
func TestASubAgentStartsFromItsParentsModelEstimate(t *testing.T) {
	turn := func(n int, c sim.ToolCall) sim.Rule {
		return sim.Rule{Request: n, Delay: 600 * time.Millisecond, ToolCalls: []sim.ToolCall{c}}
	}
	search := func(q string) sim.ToolCall { return sim.ToolCall{Name: "search", Arguments: `{"query":"` + q + `"}`} }
	sc := &sim.Scenario{Rules: []sim.Rule{
		turn(1, search("one")), turn(2, search("two")), turn(3, search("three")), turn(4, search("four")), turn(5, search("five")),
		turn(6, sim.ToolCall{Name: "researcher", Arguments: `{"task":"look it up"}`}),
		{Answer: "Done."},
	}}
	e := newEnvFiles(t, map[string]string{
		"tools.yaml": `tools:
  - name: search
    builtin: search
  - name: researcher
    ceiling: 700ms
    agent:
      instructions: You research.
      tools: child.yaml
`,
		"child.yaml": "tools:\n  - name: search\n    builtin: search\n",
	}, nil, sc)
	out, _ := e.run(t, durable.Input{Task: "research", Budget: 20 * time.Second}) // narrow at 12s, far after the sixth turn
	var refused, turns []trace.Record
	for _, r := range out.Trace {
		if r.ParentRunID == "" || r.Step != "model" {
			continue
		}
		switch {
		case r.Event == trace.Refused:
			refused = append(refused, r)
		case r.Event == trace.AttemptStart && r.Phase != landing.Land.String():
			turns = append(turns, r)
		}
	}
	if len(turns) != 0 || len(refused) != 1 || refused[0].Reason != "below p50" {
		t.Fatalf("the child's model turns %+v, refusals %+v; want its turn refused below its parent's p50\n%s", turns, refused, dump(out))
	}
}

// researcherFiles are a tools file whose researcher is a sub-agent with
// an 8s ceiling, and the sub-agent's own, which searches.
var researcherFiles = map[string]string{
	"tools.yaml": `tools:
  - name: researcher
    description: Researches one question.
    ceiling: 8s
    agent:
      instructions: You research one question.
      tools: child.yaml
      max_steps: 4
`,
	"child.yaml": `tools:
  - name: search
    builtin: search
`,
}
