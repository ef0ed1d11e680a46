package budget

import (
	"testing"
	"time"
)

// A kind that has observed nothing holds no ring of observations: a run's
// kinds are made as it starts, and a fleet of idle runs would otherwise
// hold one each for nothing (issue 20). Its first observation makes it,
// and the estimates are those of the observations all the same.
func TestAKindMakesItsRingAtItsFirstObservation(t *testing.T) {
	k := NewEstimates().Kind("model")
	k.Declare(time.Second, 2*time.Second)
	if k.est.samples != nil {
		t.Fatal("a kind that observed nothing holds a ring")
	}
	if k.P50() != time.Second {
		t.Errorf("p50 %v before any observation, want the declared 1s", k.P50())
	}
	for range MinObserved {
		k.Observe(100 * time.Millisecond)
	}
	if k.est.samples == nil || k.P50() != 100*time.Millisecond {
		t.Errorf("after %d observations of 100ms: ring %v, p50 %v; want a ring and 100ms", MinObserved, k.est.samples != nil, k.P50())
	}
}
