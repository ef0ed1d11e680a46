package budget_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
)

// The SPEC §7 targets these benchmarks measure: a lease decision under
// 100ns and 0 allocations; a lease with its context at most 1.5× the
// context.WithTimeout + cancel it replaces, measured in the same run.

// hotPath returns a budget with plenty of time left and a kind with a known
// p50, so that every Lease takes the granted path.
func hotPath(tb testing.TB) (*budget.Budget, *budget.Kind) {
	tb.Helper()
	b, err := budget.New(budget.Config{Total: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	k := b.Estimates().Kind("model")
	k.Declare(800*time.Millisecond, 3*time.Second)
	return b, k
}

func TestLeaseAllocatesNothingOnTheGrantedPath(t *testing.T) {
	b, k := hotPath(t)
	for _, tc := range []struct {
		name  string
		lease func(*budget.Kind, time.Duration) (budget.Lease, error)
	}{
		{"work lease", b.Lease},
		{"landing lease", b.LandingLease},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			allocs := testing.AllocsPerRun(1000, func() {
				_, err = tc.lease(k, 10*time.Second)
			})
			if err != nil {
				t.Fatalf("lease refused: %v", err)
			}
			if allocs != 0 {
				t.Errorf("a granted lease allocates %v times, want 0", allocs)
			}
		})
	}
}

// BenchmarkTimeNow is the floor under BenchmarkLease: a lease reads the
// monotonic clock once, and on a virtual machine that read can cost more
// than the rest of the decision.
func BenchmarkTimeNow(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		time.Now()
	}
}

func BenchmarkLease(b *testing.B) {
	bud, k := hotPath(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := bud.Lease(k, 10*time.Second); err != nil {
			b.Fatal(err)
		}
	}
}

// parents are the contexts a lease's context hangs from: a bare one, and
// a run's own (cancellable, so each child registers with it, as in the
// harness).
func parents(b *testing.B, bud *budget.Budget) []struct {
	name string
	ctx  context.Context
} {
	run, cancel := budget.WithBudget(context.Background(), bud)
	b.Cleanup(cancel)
	return []struct {
		name string
		ctx  context.Context
	}{
		{"parent=background", context.Background()},
		{"parent=run", run},
	}
}

func BenchmarkLeaseContext(b *testing.B) {
	bud, k := hotPath(b)
	for _, p := range parents(b, bud) {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				l, err := bud.Lease(k, 10*time.Second)
				if err != nil {
					b.Fatal(err)
				}
				_, cancel := l.Context(p.ctx)
				cancel()
			}
		})
	}
}

// BenchmarkContextWithTimeout is the baseline for BenchmarkLeaseContext:
// what an attempt costs with a plain timeout and no budget.
func BenchmarkContextWithTimeout(b *testing.B) {
	bud, _ := hotPath(b)
	for _, p := range parents(b, bud) {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, cancel := context.WithTimeout(p.ctx, 10*time.Second)
				cancel()
			}
		})
	}
}

func BenchmarkGrant(b *testing.B) {
	b.ReportAllocs()
	available := 100 * time.Second
	for b.Loop() {
		budget.Grant(available, budget.DefaultFloor, 10*time.Second, 800*time.Millisecond)
		available-- // a fresh input each time, so nothing folds to a constant
	}
}

func BenchmarkKindObserve(b *testing.B) {
	k := budget.NewEstimates().Kind("tool:search")
	for i := range 64 {
		k.Observe(time.Duration(i) * time.Millisecond) // a full window: the sort sees every sample
	}
	b.ReportAllocs()
	d := time.Duration(0)
	for b.Loop() {
		k.Observe(d)
		d = (d + 7*time.Millisecond) % time.Second
	}
}

func BenchmarkParseRemaining(b *testing.B) {
	for _, tc := range []struct{ name, v string }{
		{"short", "1500"},
		{"max-padded", " 31536000000 "},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := budget.ParseRemaining(tc.v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkParseRetryAfter(b *testing.B) {
	now := time.Date(2025, time.June, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		h    http.Header
	}{
		{"none", http.Header{}},
		{"retry-after-ms", http.Header{"Retry-After-Ms": {"1500.5"}}},
		{"delta-seconds", http.Header{"Retry-After": {"120"}}},
		{"http-date", http.Header{"Retry-After": {"Sun, 01 Jun 2025 12:00:30 GMT"}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := budget.ParseRetryAfter(tc.h, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
