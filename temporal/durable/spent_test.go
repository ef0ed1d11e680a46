package durable_test

import (
	"testing"
	"time"

	"github.com/glidepath/glidepath/temporal/durable"
	"github.com/glidepath/glidepath/trace"
)

// What the caller spent before it started the run (harness-temporal run's
// own start-up) is spent from the run's budget: its first record already
// has that much less left, and its total stays B.
func TestWhatTheCallerSpentBeforeTheStartIsSpentFromTheBudget(t *testing.T) {
	e := newEnv(t, "")
	const budget, spent = 20 * time.Second, 3 * time.Second
	out, _ := e.run(t, durable.Input{Task: "answer", Budget: budget, Spent: spent})
	start := records(out, trace.RunStart, "")
	if len(start) != 1 || start[0].RemainingMs > (budget-spent).Milliseconds() || start[0].TotalMs != budget.Milliseconds() {
		t.Fatalf("run_start %+v: want total %v and at most %v left", start, budget, budget-spent)
	}
	if got := out.Result.Budget; got.SpentMs < spent.Milliseconds() || got.TotalMs != budget.Milliseconds() {
		t.Errorf("result budget %+v: want total %v, spent at least %v", got, budget, spent)
	}
}
