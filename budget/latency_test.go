package budget_test

import (
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
)

// The estimate rule as a value (issue 25): a Temporal workflow keeps a
// Latency in its state and must estimate exactly as a process's Kind.
func TestALatencyKeepsItsDeclaredFiguresUntilMinObservedObservations(t *testing.T) {
	var l budget.Latency
	l.Declare(0, 0)
	kind := budget.NewEstimates().Kind("model")
	for i := range budget.MinObserved + 2 {
		took := time.Duration(i+1) * time.Second
		l.Observe(took)
		kind.Observe(took)
		if l.P50() != kind.P50() || l.P95() != kind.P95() {
			t.Fatalf("after %d observations Latency says p50 %v p95 %v, Kind %v %v", i+1, l.P50(), l.P95(), kind.P50(), kind.P95())
		}
		if i+1 < budget.MinObserved && l.P50() != 0 {
			t.Fatalf("after %d observations p50 %v, want the declared 0 until %d", i+1, l.P50(), budget.MinObserved)
		}
	}
	if l.P50() == 0 {
		t.Error("the observations never replaced the declared figures")
	}
}

func TestSliceGrant(t *testing.T) {
	const floor = 50 * time.Millisecond
	cases := []struct {
		name                           string
		remaining, reserve, want, keep time.Duration
		granted, kept                  time.Duration
		rule                           budget.Rule
	}{
		{"a child gets what is left before the reserve and keep", 10 * time.Second, 2 * time.Second, 0, time.Second, 7 * time.Second, time.Second, 0},
		{"a ceiling below that caps it", 10 * time.Second, 2 * time.Second, 3 * time.Second, time.Second, 3 * time.Second, time.Second, 0},
		{"keep is at least twice the floor", 10 * time.Second, 2 * time.Second, 0, 0, 10*time.Second - 2*time.Second - 2*floor, 2 * floor, 0},
		{"no more than the floor left after keep is refused", 3 * time.Second, 2 * time.Second, 0, 990 * time.Millisecond, 0, 990 * time.Millisecond, budget.ParentKeep},
		{"a ceiling at the floor is refused", 10 * time.Second, 2 * time.Second, floor, time.Second, floor, time.Second, budget.BelowFloor},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			granted, kept, _, rule := budget.SliceGrant(tc.remaining, tc.reserve, floor, tc.want, tc.keep)
			if granted != tc.granted || kept != tc.kept || rule != tc.rule {
				t.Errorf("SliceGrant = %v, %v, %v; want %v, %v, %v", granted, kept, rule, tc.granted, tc.kept, tc.rule)
			}
		})
	}
}
