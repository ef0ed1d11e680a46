package harness_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
)

// BenchmarkStart is a run's start cost (issue 20, item 4): Start and
// Close of a run that makes no call, and, in the first-turn case, one
// whole run of one model turn against an in-memory sim. Run it with
// -benchmem for the allocations of each, -memprofile or -cpuprofile for
// where they go. goroutines/run is what a started run holds beside its
// caller's: its clocks are timers and context callbacks, not goroutines.
func BenchmarkStart(b *testing.B) {
	srv := sim.NewPipeServer(nil)
	defer srv.Close()
	c, err := model.New(model.Config{BaseURL: srv.URL, HTTPClient: srv.Client(), Model: sim.ModelID})
	if err != nil {
		b.Fatal(err)
	}
	cfg := harness.Config{Task: "explain deadline budgets", Model: c}
	b.Run("case=start-close", func(b *testing.B) {
		for b.Loop() {
			s, _, err := harness.Start(b.Context(), newBudget(b), cfg)
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(goroutinesPerStart(b, cfg), "goroutines/run")
	})
	b.Run("case=first-turn", func(b *testing.B) {
		for b.Loop() {
			if _, err := harness.Run(b.Context(), newBudget(b), cfg); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func newBudget(b *testing.B) *budget.Budget {
	bud, err := budget.New(budget.Config{Total: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	return bud
}

// goroutinesPerStart starts a hundred runs, counts the goroutines beyond
// those before, and closes the runs.
func goroutinesPerStart(b *testing.B, cfg harness.Config) float64 {
	const n = 100
	before := runtime.NumGoroutine()
	ss := make([]*harness.Session, 0, n)
	for range n {
		s, _, err := harness.Start(context.Background(), newBudget(b), cfg)
		if err != nil {
			b.Fatal(err)
		}
		ss = append(ss, s)
	}
	after := runtime.NumGoroutine()
	for _, s := range ss {
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
	return float64(after-before) / n
}

// Starting a run starts no goroutine of its own: a fleet of ten thousand
// runs waiting on their model holds the goroutines their callers and
// their connections hold, and nothing per run beside them (issue 20).
func TestStartingARunStartsNoGoroutine(t *testing.T) {
	cfg := harness.Config{Task: "explain deadline budgets", Model: &model.Client{}}
	bud, err := budget.New(budget.Config{Total: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	s, _, err := harness.Start(t.Context(), bud, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := runtime.NumGoroutine() - before; n > 0 {
		t.Errorf("Start left %d goroutines running beside its caller", n)
	}
}
