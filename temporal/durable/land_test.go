package durable_test

import (
	"testing"
	"time"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/temporal/durable"
	"github.com/glidepath/glidepath/trace"
)

// slowModel makes every model answer take 200ms: the model's observed
// p50, below which the run does not start a model attempt.
var slowModel = &sim.Scenario{Rules: []sim.Rule{{Delay: 200 * time.Millisecond}}}

// A 2.5s run (reserve 625ms) whose one tool needs 2s of work: its lease,
// all the work time left, cuts it; with less work time left than the
// model's p50, the run lands in its reserve, with the landing call on the
// time left but the floor, and ends by its deadline.
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
	models := records(out, trace.AttemptStart, "model")
	last := models[len(models)-1]
	// The run lands once no work lease can be had (the time before the
	// reserve is below the model's p50), after the work, and its landing
	// call spends the reserve: remaining − floor, more than any work lease
	// could have had.
	const floor = 50
	modelEnds := records(out, trace.AttemptEnd, "model")
	p50 := modelEnds[0].ElapsedMs - models[0].ElapsedMs // the one model attempt before landing
	if last.ElapsedMs < cut[0].ElapsedMs || last.RemainingMs-reserve.Milliseconds()-floor >= p50+1 {
		t.Errorf("landing call at %dms with %dms left, after the cut at %dms: want it once no work fits\n%s",
			last.ElapsedMs, last.RemainingMs, cut[0].ElapsedMs, dump(out))
	}
	if last.GrantedMs != last.RemainingMs-floor && last.GrantedMs != last.RemainingMs-floor-1 || last.GrantedMs < reserve.Milliseconds()-floor {
		t.Errorf("landing call granted %dms with %dms left: want remaining − floor, in the reserve", last.GrantedMs, last.RemainingMs)
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
