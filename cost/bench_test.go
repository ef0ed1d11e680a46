package cost_test

import (
	"testing"

	"github.com/glidepath/glidepath/cost"
)

// The accounting runs once per model attempt, beside the time lease: a
// lease and a charge must cost nothing the run would notice (issue 28:
// at most 1.05× the run without a cost cap), and allocate nothing.

// hotPath returns a budget under both caps with plenty left, so that
// every Lease takes the granted path, and the usage of one attempt.
func hotPath(tb testing.TB) (*cost.Budget, cost.Price, cost.Ask, cost.Usage) {
	tb.Helper()
	b := mustNew(tb, cost.Config{Cap: cost.Amount{Cost: 1_000_000 * cost.Dollar, Tokens: 1 << 60}}, cost.Amount{})
	p := cost.Price{Input: 2_500_000, CacheRead: 1_250_000, Output: 10_000_000, Reasoning: 10_000_000}
	return b, p, cost.Ask{Input: 1200, Ceiling: 4096, P50: 300}, cost.Usage{Input: 1200, Cached: 800, Output: 250, Reasoning: 40}
}

func TestLeaseAndChargeAllocateNothing(t *testing.T) {
	b, p, ask, u := hotPath(t)
	var err error
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err = b.Lease(ask, p); err == nil {
			b.Charge(cost.Of(u, p))
		}
	})
	if err != nil {
		t.Fatalf("lease refused: %v", err)
	}
	if allocs != 0 {
		t.Errorf("a lease and its charge allocate %v times, want 0", allocs)
	}
}

func BenchmarkLeaseAndCharge(b *testing.B) {
	bud, p, ask, u := hotPath(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := bud.Lease(ask, p); err != nil {
			b.Fatal(err)
		}
		bud.Charge(cost.Of(u, p))
	}
}
