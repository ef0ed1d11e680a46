package landing

import (
	"errors"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
)

// Issue 26: on a server that may fire a timer a second late, a lease that
// must end by D is granted that second less; in process (no resolution)
// nothing changes.
func TestAFrameOnAHostWithTimerResolutionGrantsLeasesThatMuchShorter(t *testing.T) {
	start := time.Unix(0, 0)
	now := start.Add(time.Second) // 9s left of 10s; R = 2.5s, F = 50ms
	cases := []struct {
		name                     string
		resolution               time.Duration
		wantRemaining, wantLease time.Duration
		wantSetup                time.Duration
	}{
		{"in process the figures are the clock's", 0, 9 * time.Second, 6450 * time.Millisecond, 1875 * time.Millisecond},
		{"a second of resolution is taken off once", time.Second, 8 * time.Second, 5450 * time.Millisecond, 1875 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFrame("run", "", start, 10*time.Second, 0, 0).WithResolution(tc.resolution)
			fig := f.Figures(now, 0, false)
			if fig.Remaining != tc.wantRemaining || fig.Reserve != 2500*time.Millisecond || fig.Floor != budget.DefaultFloor {
				t.Fatalf("figures %+v, want %v remaining", fig, tc.wantRemaining)
			}
			l, refused := budget.LeaseAt(fig.Remaining, fig.Reserve, fig.Floor, 0, 0, false)
			if refused != nil || l.Granted != tc.wantLease {
				t.Errorf("work lease %v (%v), want remaining − R − F − resolution = %v", l.Granted, refused, tc.wantLease)
			}
			if got := f.Resolution(); got != tc.resolution {
				t.Errorf("Resolution() = %v, want %v", got, tc.resolution)
			}
			// The setup's share (a quarter of B − R) is under what is left.
			setup, err := f.SetupLease(now, 0, 0)
			if err != nil || setup.Granted != tc.wantSetup {
				t.Errorf("setup lease %v (%v), want %v", setup.Granted, err, tc.wantSetup)
			}
		})
	}
}

func TestASetupLeaseLeftNoTimeByTheResolutionIsRefused(t *testing.T) {
	start := time.Unix(0, 0)
	f := NewFrame("child", "run", start, 400*time.Millisecond, 0, 0).WithResolution(time.Second)
	if _, err := f.SetupLease(start, 0, 0); !errors.Is(err, budget.ErrRefused) {
		t.Fatalf("a 400ms run on a server of 1s resolution was granted a setup lease (%v)", err)
	}
	if got := f.Armable(start); got != 0 {
		t.Errorf("Armable = %v, want 0", got)
	}
	if g := f.WithResolution(-time.Second); g.Resolution() != 0 {
		t.Error("a negative resolution was kept")
	}
}
