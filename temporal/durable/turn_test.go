package durable_test

import (
	"testing"
	"time"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/temporal/durable"
	"github.com/glidepath/glidepath/trace"
)

// echoTool is a tools file with one quick read whose ceiling is ceiling
// and which declares no latency.
func echoTool(ceiling string) string {
	return `tools:
  - name: echo
    description: says ok
    effect: read
    ceiling: ` + ceiling + `
    command: [sh, -c, "echo ok"]
`
}

// Issue 25: after one 5s model attempt the next turn was refused on
// Temporal under 5s of work time (its p50 taken from one observation); in
// process the declared figures — none for the model — hold until
// budget.MinObserved observations. The workflow now estimates with
// budget.Latency: the second turn is granted and the run completes.
func TestOneSlowModelAttemptDoesNotRefuseTheNextTurn(t *testing.T) {
	sc := &sim.Scenario{Rules: []sim.Rule{
		{Request: 1, Delay: 5 * time.Second, ToolCalls: []sim.ToolCall{{Name: "echo"}}},
		{Request: 2, Answer: "done"},
	}}
	e := newEnvWith(t, echoTool("5s"), nil, sc)
	out, _ := e.run(t, durable.Input{Task: "echo, then answer", Budget: 12 * time.Second, Reserve: 3 * time.Second})
	if res := out.Result; res.Status != landing.Complete {
		t.Fatalf("status %s cause %q, want complete: %s\n%s", res.Status, res.Cause, res.Boundary, dump(out))
	}
	if refused := records(out, trace.Refused, "model"); len(refused) != 0 {
		t.Errorf("model turns refused %+v, want none: one observation is not an estimate", refused)
	}
	starts := records(out, trace.AttemptStart, "model")
	if len(starts) != 2 || starts[1].GrantedMs >= 5000 {
		t.Errorf("model attempts %+v, want two, the second granted less than the first took", starts)
	}
}

// Issue 25: in fit, a tool with a ceiling but no p95 was admitted on
// Temporal and refused in process. The gate is landing.AdmitAt on both:
// the ceiling stands in for the p95, and 5s does not fit in the second or
// so left before landing.
func TestInFitAToolWhoseCeilingDoesNotFitIsRefused(t *testing.T) {
	sc := &sim.Scenario{Rules: []sim.Rule{
		{Request: 1, Delay: 8200 * time.Millisecond, ToolCalls: []sim.ToolCall{{Name: "echo"}}},
	}}
	e := newEnvWith(t, echoTool("5s"), nil, sc)
	out, _ := e.run(t, durable.Input{Task: "echo late", Budget: 10 * time.Second, Reserve: time.Second})
	refused := records(out, trace.Refused, "tool:echo")
	if len(refused) != 1 || refused[0].Reason != "gated" {
		t.Fatalf("echo refusals %+v, want one, gated\n%s", refused, dump(out))
	}
	if refused[0].Phase != landing.Fit.String() {
		t.Errorf("echo refused in phase %q, want fit", refused[0].Phase)
	}
	if starts := records(out, trace.AttemptStart, "tool:echo"); len(starts) != 0 {
		t.Errorf("echo attempts %+v, want none: its ceiling does not fit before landing", starts)
	}
}
