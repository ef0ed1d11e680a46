package durable_test

import (
	"context"
	"testing"
	"time"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/temporal/durable"
	"github.com/glidepath/glidepath/trace"
	"go.temporal.io/sdk/client"
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

// The budget starts when the run is started, not when a worker first
// takes it: a run started while no worker is up has spent the wait from
// its B, and says so from its first record on. The wait is not the run's
// silence: a quiet clock shorter than it does not fire.
func TestTheWaitForAWorkerIsSpentFromTheBudget(t *testing.T) {
	e := newEnvFiles(t, nil, nil, nil, noWorker)
	const budget = 20 * time.Second
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	wr, err := e.c.ExecuteWorkflow(ctx, durable.StartOptions(client.StartWorkflowOptions{TaskQueue: e.queue}, budget), durable.WorkflowName,
		durable.Input{Task: "a run that waited", Budget: budget, Quiet: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// Nothing takes the run until the worker is up: wait for the server
	// to have it, then some.
	const wait = 1500 * time.Millisecond
	time.Sleep(wait) // the wait being measured, not a synchronisation
	e.startWorker(t)
	var out durable.Output
	if err := wr.Get(ctx, &out); err != nil {
		t.Fatal(err)
	}
	first := out.Trace[0]
	if first.Event != trace.RunStart || first.ElapsedMs < wait.Milliseconds() || first.RemainingMs > (budget-wait).Milliseconds() {
		t.Errorf("run_start %+v: want the %v waited for a worker spent", first, wait)
	}
	if out.Result.Status != landing.Complete {
		t.Errorf("status %s cause %q: the wait for a worker was taken for silence: %s", out.Result.Status, out.Result.Cause, out.Result.Boundary)
	}
	if out.Result.Budget.SpentMs < wait.Milliseconds() {
		t.Errorf("spent %dms, want at least the %v waited", out.Result.Budget.SpentMs, wait)
	}
}
