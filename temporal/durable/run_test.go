package durable_test

import (
	"testing"
	"time"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/temporal/durable"
	"github.com/glidepath/glidepath/trace"
)

const searchAndFetch = `tools:
  - name: search
    builtin: search
  - name: fetch
    builtin: fetch
`

func TestARunOnTheSimCompletesWithEveryActivityLeasedAndTriedOnce(t *testing.T) {
	e := newEnv(t, searchAndFetch)
	out, wr := e.run(t, durable.Input{Task: "find what a deadline budget is", Budget: 20 * time.Second})
	res := out.Result
	if res.Status != landing.Complete || res.Cause != "" {
		t.Fatalf("status %s cause %q, want complete: %s", res.Status, res.Cause, res.Boundary)
	}
	if res.Budget.SpentMs > res.Budget.TotalMs || res.Budget.TotalMs != 20000 {
		t.Errorf("budget %+v: want total 20000 and spent within it", res.Budget)
	}
	for _, name := range []string{"tool:search", "tool:fetch"} {
		ends := records(out, trace.AttemptEnd, name)
		if len(ends) != 1 || ends[0].Outcome != trace.OK {
			t.Errorf("%s: attempts %+v, want one ok", name, ends)
		}
	}
	// Every attempt's ScheduleToClose is the lease its attempt_start
	// records, and no activity may be retried by Temporal.
	starts := records(out, trace.AttemptStart, "")
	var leased []scheduled
	for _, s := range scheduledOf(e.history(t, wr)) {
		if s.maxAttempts != 1 {
			t.Errorf("%s: MaximumAttempts %d, want 1", s.name, s.maxAttempts)
		}
		if s.name == durable.ModelActivity || s.name == durable.ToolActivity || s.name == durable.ToolsActivity {
			leased = append(leased, s)
		}
	}
	if len(leased) != len(starts) || len(starts) < 3 {
		t.Fatalf("%d attempt activities scheduled, %d attempt_start records", len(leased), len(starts))
	}
	for i, s := range leased {
		if got, want := s.scheduleToClose.Milliseconds(), starts[i].GrantedMs; got != want {
			t.Errorf("activity %d (%s, %s): ScheduleToClose %dms, granted %dms", i, s.name, starts[i].Step, got, want)
		}
		if s.scheduleToClose <= 0 || s.scheduleToClose > 20*time.Second {
			t.Errorf("activity %d: ScheduleToClose %v outside the budget", i, s.scheduleToClose)
		}
	}
	if ends := records(out, trace.RunEnd, ""); len(ends) != 1 || ends[0].Result != "complete" || ends[0].TotalMs != 20000 {
		t.Errorf("run_end records %+v", ends)
	}
}
