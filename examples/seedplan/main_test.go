package main

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
)

// The seed's four assertions, on fake time: the fetch's second attempt is
// its answer, the attempts are exactly search 1, fetch 1, fetch 2, extract
// 1, no lease exceeds the largest ceiling, and the plan ends inside its one
// deadline.
func TestThePlanFinishesInsideItsOneDeadlineAfterTheHungFetchIsCutAndRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		out, err := runPlan(t.Context(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if got := out.results["fetch"]; got != "body(attempt=2)" {
			t.Errorf("fetch = %q, want body(attempt=2)", got)
		}
		type stepN struct {
			step string
			n    int
		}
		var got []stepN
		for _, a := range out.attempts {
			got = append(got, stepN{a.step, a.n})
		}
		if want := []stepN{{"search", 1}, {"fetch", 1}, {"fetch", 2}, {"extract", 1}}; !slices.Equal(got, want) {
			t.Errorf("attempts %v, want %v", got, want)
		}
		for _, a := range out.attempts {
			if a.granted > 250*time.Millisecond {
				t.Errorf("%s attempt %d was granted %v, more than the largest ceiling 250ms", a.step, a.n, a.granted)
			}
		}
		if out.left <= 0 {
			t.Errorf("%v left: the plan did not finish inside its deadline", out.left)
		}
		// Search 10ms, the fetch cut at its 100ms ceiling, a full-jitter
		// sleep below 50ms, the fetch again 10ms, extract 10ms.
		if took := time.Since(start); took < 130*time.Millisecond || took >= 180*time.Millisecond {
			t.Errorf("the plan took %v, want 130ms plus one sleep under 50ms", took)
		}
		if want := time.Second - time.Since(start); out.left != want {
			t.Errorf("%v left, want %v: the budget's own reading", out.left, want)
		}
	})
}

// The same plan on 0.01s: the lease of the first step is refused before
// its tool is entered, and says which rule refused it.
func TestThePlanOnTenMillisecondsIsRefusedBeforeAnyToolIsCalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out, err := runPlan(t.Context(), 10*time.Millisecond)
		if !errors.Is(err, budget.ErrRefused) {
			t.Fatalf("err = %v, want budget.ErrRefused", err)
		}
		if n := out.calls.Load(); n != 0 || len(out.attempts) != 0 {
			t.Errorf("%d tool calls and %d attempts, want none", n, len(out.attempts))
		}
		if !strings.Contains(err.Error(), "below p50 10ms") {
			t.Errorf("the refusal %q does not say it was below the step's p50", err)
		}
	})
}

// The seed's own floor of 20ms cannot guard a 10ms budget: Glidepath
// rejects that configuration, also before any I/O.
func TestAFloorAsLongAsTheBudgetIsAConfigurationError(t *testing.T) {
	_, err := budget.New(budget.Config{Total: 10 * time.Millisecond, Floor: 20 * time.Millisecond})
	var cfgErr *budget.ConfigError
	if !errors.As(err, &cfgErr) || cfgErr.Field != "floor" {
		t.Fatalf("err = %v, want a budget.ConfigError on floor", err)
	}
}

func TestRunPrintsEachAttemptAndTheRefusal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		if err := run(t.Context(), &out); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			"search   attempt 1  lease 250ms\n",
			"fetch    attempt 2  lease 100ms\n",
			"results: search=results(attempt=1) fetch=body(attempt=2) extract=fields(attempt=1)\n",
			"refused before dialing out (0 tool calls made): search: budget: refused tool:search:",
			"plan complete, 0.8",
		} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, out.String())
			}
		}
	})
}
