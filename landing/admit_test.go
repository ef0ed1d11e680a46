package landing_test

import (
	"errors"
	"testing"
	"time"

	"github.com/glidepath/glidepath/landing"
)

// AdmitAt is the gate both hosts apply (issue 25): on Temporal a tool with
// a ceiling and no p95 used to pass in fit.
func TestAdmitAt(t *testing.T) {
	cases := []struct {
		name               string
		phase              landing.Phase
		p95, ceiling, left time.Duration
		admitted           bool
	}{
		{"explore admits anything", landing.Explore, 0, 0, 0, true},
		{"narrow admits anything", landing.Narrow, time.Hour, 0, time.Second, true},
		{"fit admits a p95 below the time left", landing.Fit, time.Second, 0, 2 * time.Second, true},
		{"fit refuses a p95 at the time left", landing.Fit, 2 * time.Second, 0, 2 * time.Second, false},
		{"fit takes the ceiling for a missing p95 and refuses it when it does not fit", landing.Fit, 0, 5 * time.Second, 900 * time.Millisecond, false},
		{"fit takes the ceiling for a missing p95 and admits it when it fits", landing.Fit, 0, 500 * time.Millisecond, 900 * time.Millisecond, true},
		{"fit refuses a call with neither p95 nor ceiling", landing.Fit, 0, 0, time.Hour, false},
		{"land refuses everything", landing.Land, time.Millisecond, 0, time.Hour, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := landing.AdmitAt(tc.phase, "tool:echo", tc.p95, tc.ceiling, tc.left)
			if (err == nil) != tc.admitted {
				t.Fatalf("AdmitAt = %v, want admitted %t", err, tc.admitted)
			}
			if err != nil && !errors.Is(err, landing.ErrGated) {
				t.Errorf("%v does not match ErrGated", err)
			}
		})
	}
}

// Adopt is how a parent makes its child's orphans its own on both hosts
// (issue 25).
func TestAParentAdoptsOnlyItsChildsOrphans(t *testing.T) {
	got := landing.Adopt(3, "payer", []landing.InFlight{
		{Tool: "transfer", IdempotencyKey: "k1", State: landing.StateOrphaned},
		{Tool: "search", IdempotencyKey: "k2", State: landing.StateCancelled},
	})
	want := landing.Call{Step: 3, Tool: "payer/transfer", Key: "k1", Outcome: landing.Interrupted, State: landing.StateOrphaned}
	if len(got) != 1 || got[0] != want {
		t.Errorf("Adopt = %+v, want [%+v]", got, want)
	}
}
