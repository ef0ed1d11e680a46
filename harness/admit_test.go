package harness_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/admit"
	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/sim"
)

// A process at its limit refuses the next run at the door: Start with a
// *admit.AtCapacityError and nothing started, Run with the labeled result
// at once, cause at_capacity, long before B; once the running run has
// closed, its place is the next run's (issue 25).
func TestARunAtTheLimitIsRefusedAtOnceWithALabeledResult(t *testing.T) {
	srv := sim.NewPipeServer(nil)
	defer srv.Close()
	door, err := admit.New(admit.Config{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := harness.Config{Task: "explain deadline budgets", Model: newModel(t, srv), Admit: door}

	held, _, err := harness.Start(t.Context(), submittedBudget(t, time.Minute, time.Time{}), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := harness.Start(t.Context(), submittedBudget(t, time.Minute, time.Time{}), cfg); !errors.Is(err, admit.ErrAtCapacity) {
		t.Fatalf("Start at the limit: %v, want ErrAtCapacity", err)
	}
	b := submittedBudget(t, time.Minute, time.Time{})
	res, err := harness.Run(t.Context(), b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != landing.Partial || res.Cause != landing.CauseAtCapacity || res.Steps != 0 || res.Attempts != 0 || res.RunID == "" {
		t.Errorf("result %+v: want partial, cause at_capacity, no steps, no attempts, a run id", res)
	}
	if !strings.Contains(res.Boundary, "At capacity") || !strings.Contains(res.Boundary, "1 runs, its limit") {
		t.Errorf("boundary %q: want it to say the process is at capacity, at its limit", res.Boundary)
	}
	if spent := time.Duration(res.Budget.SpentMs) * time.Millisecond; spent > 10*time.Second {
		t.Errorf("refused after %v of a 1m budget: a refusal is at once", spent)
	}
	if got := door.Running(); got != 1 {
		t.Errorf("%d runs hold a place, want 1: a refused run holds none", got)
	}

	if err := held.Close(); err != nil {
		t.Fatal(err)
	}
	if got := door.Running(); got != 0 {
		t.Errorf("%d runs hold a place after the only one closed, want 0", got)
	}
	res, err = harness.Run(t.Context(), submittedBudget(t, time.Minute, time.Time{}), cfg)
	if err != nil || res.Status != landing.Complete {
		t.Fatalf("Run once the place is free: %+v, %v; want complete", res, err)
	}
	if got := door.Running(); got != 0 {
		t.Errorf("%d runs hold a place after Run returned, want 0", got)
	}
}

// A run whose budget started (at its submission) longer ago than the
// process allows was queued for the CPU: it is refused, and says how long
// it waited.
func TestARunThatWaitedTooLongToStartIsRefused(t *testing.T) {
	srv := sim.NewPipeServer(nil)
	defer srv.Close()
	door, err := admit.New(admit.Config{Late: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b := submittedBudget(t, time.Minute, time.Now().Add(-2*time.Second))
	res, err := harness.Run(t.Context(), b, harness.Config{Task: "t", Model: newModel(t, srv), Admit: door})
	if err != nil {
		t.Fatal(err)
	}
	if res.Cause != landing.CauseAtCapacity || !strings.Contains(res.Boundary, "more than the 100ms the process allows") {
		t.Errorf("result %+v: want cause at_capacity, and a boundary that says how long it waited", res)
	}
}

// submittedBudget is a budget of total submitted at start (zero: now).
func submittedBudget(t *testing.T, total time.Duration, start time.Time) *budget.Budget {
	t.Helper()
	b, err := budget.New(budget.Config{Total: total, Start: start})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
