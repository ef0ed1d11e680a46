package durable_test

import (
	"context"
	"testing"
	"time"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/temporal/durable"
	"github.com/glidepath/glidepath/trace"
	"go.temporal.io/sdk/client"
)

// slowModel makes every model answer take 200ms: the model's observed
// p50, below which the run does not start a model attempt.
var slowModel = &sim.Scenario{Rules: []sim.Rule{{Delay: 200 * time.Millisecond}}}

// A 2.5s run (reserve 625ms) whose one tool needs 2s of work: its lease,
// all the work time left, cuts it; the run lands in its reserve, a
// landing call on the time left but the floor, and ends by its deadline.
func TestARunOutOfWorkTimeLandsInsideItsReserveAndItsBudget(t *testing.T) {
	e := newEnvWith(t, `tools:
  - name: deep_research
    builtin: deep_research
    p50: 100ms
`, nil, slowModel)
	const budget = 2500 * time.Millisecond
	out, _ := e.run(t, durable.Input{Task: "research deadlines", Budget: budget})
	res := out.Result
	if res.Status != landing.Partial || res.Cause != landing.CauseBudget {
		t.Fatalf("status %s cause %q, want partial budget: %s", res.Status, res.Cause, res.Boundary)
	}
	reserve := 625 * time.Millisecond
	if res.Budget.ReserveMs != reserve.Milliseconds() {
		t.Errorf("reserve %dms, want %v", res.Budget.ReserveMs, reserve)
	}
	cut := records(out, trace.AttemptEnd, "tool:deep_research")
	if len(cut) != 1 || cut[0].Outcome != trace.GaveUp {
		t.Fatalf("deep_research attempts %+v, want one cut", cut)
	}
	// After the cut, what is left before the reserve is below the floor
	// or close to it: a work lease gets at most that (the model's p50,
	// from one observation, refuses nothing: budget.MinObserved, issue
	// 25), and a landing call spends the reserve: remaining − floor, more
	// than any work lease could have had.
	const floor = 50
	for _, m := range records(out, trace.AttemptStart, "model") {
		if m.ElapsedMs < cut[0].ElapsedMs {
			continue
		}
		work := m.RemainingMs - reserve.Milliseconds() - floor
		landingLease := m.GrantedMs == m.RemainingMs-floor || m.GrantedMs == m.RemainingMs-floor-1
		if !landingLease && m.GrantedMs > work+1 {
			t.Errorf("model attempt at %dms granted %dms with %dms left: neither a work lease nor remaining − floor\n%s",
				m.ElapsedMs, m.GrantedMs, m.RemainingMs, dump(out))
		}
	}
	if l := records(out, trace.Landing, ""); len(l) != 1 || l[0].Cause != "budget" {
		t.Errorf("landing records %+v", l)
	}
	end := records(out, trace.RunEnd, "")[0]
	if end.ElapsedMs > budget.Milliseconds() || end.LateMs != 0 || res.Budget.SpentMs > res.Budget.TotalMs {
		t.Errorf("run ended at %dms (late %dms, spent %dms) of %v", end.ElapsedMs, end.LateMs, res.Budget.SpentMs, budget)
	}
	for _, r := range out.Trace {
		if r.Event == trace.AttemptStart && r.ElapsedMs+r.GrantedMs > budget.Milliseconds() {
			t.Errorf("attempt %s at %dms granted %dms: its lease passes the deadline", r.Step, r.ElapsedMs, r.GrantedMs)
		}
	}
}

// Issue 25: a run that lands before its first model turn names, as in
// process, the setup that did not finish; on Temporal its boundary named
// none. Nothing takes this 2s run (reserve 500ms) for 1.7s, so its setup
// finds no work time left and is refused.
func TestARunWhoseSetupHadNoTimeSaysSoInItsBoundary(t *testing.T) {
	e := newEnvFiles(t, nil, nil, nil, noWorker)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	wr, err := e.c.ExecuteWorkflow(ctx, durable.StartOptions(client.StartWorkflowOptions{TaskQueue: e.queue}, 2*time.Second), durable.WorkflowName,
		durable.Input{Task: "a run with no time for its setup", Budget: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1700 * time.Millisecond) // the wait that spends the work time, not a synchronisation
	e.startWorker(t)
	var out durable.Output
	if err := wr.Get(ctx, &out); err != nil {
		t.Fatal(err)
	}
	res := out.Result
	const want = "Ran out of allotted time at step 0: in setup, setup was not started (not enough time)."
	if res.Status != landing.Partial || res.Cause != landing.CauseBudget || res.Boundary != want {
		t.Fatalf("status %s cause %q boundary %q, want partial budget %q\n%s", res.Status, res.Cause, res.Boundary, want, dump(out))
	}
}
