package budget_test

import (
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
)

// One piece of setup gets at most a quarter of the run's work time, 5s in
// a long run; what the piece asks for of its own wins (issue 24).
func TestSetupCeilingIsAQuarterOfTheWorkTimeAtMost5s(t *testing.T) {
	cases := []struct {
		name        string
		work, asked time.Duration
		want        time.Duration
	}{
		{"a 6s run: work 4.5s", 4500 * time.Millisecond, 0, 1125 * time.Millisecond},
		{"a 10s run: work 7.5s", 7500 * time.Millisecond, 0, 1875 * time.Millisecond},
		{"exactly 20s of work", 20 * time.Second, 0, 5 * time.Second},
		{"a 2m run: work 1m40s", 100 * time.Second, 0, 5 * time.Second},
		{"no run", 0, 0, 5 * time.Second},
		{"a negative work time is no run", -time.Second, 0, 5 * time.Second},
		{"its own, longer than the share", 7500 * time.Millisecond, time.Minute, time.Minute},
		{"its own, shorter", 100 * time.Second, 500 * time.Millisecond, 500 * time.Millisecond},
		{"its own, with no run", 0, 30 * time.Second, 30 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := budget.SetupCeiling(tc.work, tc.asked); got != tc.want {
				t.Errorf("SetupCeiling(work %v, asked %v) = %v, want %v", tc.work, tc.asked, got, tc.want)
			}
		})
	}
}

func TestABudgetsSetupCeilingIsOfItsWorkTime(t *testing.T) {
	for _, tc := range []struct {
		total, want time.Duration
	}{
		{6 * time.Second, 1125 * time.Millisecond}, // R 1.5s
		{10 * time.Second, 1875 * time.Millisecond},
		{2 * time.Minute, 5 * time.Second},
	} {
		b, err := budget.New(budget.Config{Total: tc.total})
		if err != nil {
			t.Fatal(err)
		}
		if got := b.SetupCeiling(0); got != tc.want {
			t.Errorf("B %v: SetupCeiling(0) = %v, want %v", tc.total, got, tc.want)
		}
	}
}
