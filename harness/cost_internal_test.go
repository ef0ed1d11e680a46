package harness

import (
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
)

// What a run costs at every turn and call, and at its end, measured in
// objects (issue 25 item 6): these are on every run of a fleet.
func TestARunsTurnsAndItsEndCostNoMoreThanTheyNeed(t *testing.T) {
	b, err := budget.New(budget.Config{Total: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := Start(t.Context(), b, Config{Task: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct {
		name string
		max  float64
		f    func()
	}{
		// Before: a trace.Observer of thirteen closures, fourteen objects.
		{"the observer of a turn is one object", 1, func() { s.observer(1, s.w) }},
		{"the observer of a call is one object", 1, func() { s.observerFor(1, s.w, "call_1") }},
		// Before: a context and a timer for each wait, and the cancels'
		// grace, 21 objects for nothing in flight.
		{"waiting for nothing in flight at the end makes nothing", 0, func() {
			s.settleCancels()
			s.endCancels()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if n := testing.AllocsPerRun(100, tc.f); n > tc.max {
				t.Errorf("%v objects, want at most %v", n, tc.max)
			}
		})
	}
}
