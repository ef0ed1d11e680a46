package budget_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
)

// A budget started before New spends the time since then: a process's
// start-up is spent from its budget (issue 17). A start that is zero or
// not in the past is now.
func TestABudgetStartedBeforeNewHasSpentTheTimeSince(t *testing.T) {
	const total = time.Second
	for _, tc := range []struct {
		name      string
		start     time.Duration // relative to New; 0 leaves Start zero
		wantSpent time.Duration
	}{
		{"zero start", 0, 0},
		{"started 100ms before", -100 * time.Millisecond, 100 * time.Millisecond},
		{"a start in the future", time.Minute, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				now := time.Now()
				cfg := budget.Config{Total: total}
				if tc.start != 0 {
					cfg.Start = now.Add(tc.start)
				}
				b, err := budget.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				if got := b.Spent(); got != tc.wantSpent {
					t.Errorf("Spent() = %v, want %v", got, tc.wantSpent)
				}
				if got, want := b.Deadline(), now.Add(total-tc.wantSpent); !got.Equal(want) {
					t.Errorf("Deadline() = %v after now, want %v", got.Sub(now), want.Sub(now))
				}
			})
		})
	}
}
