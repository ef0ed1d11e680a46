package budget_test

import (
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
)

func TestArmableCountsTheHostsTimerResolutionOnce(t *testing.T) {
	cases := []struct {
		name                        string
		remaining, resolution, want time.Duration
	}{
		{"a host with no resolution leaves the time as it is", 3 * time.Second, 0, 3 * time.Second},
		{"a timer that may fire a second late is set a second sooner", 3 * time.Second, time.Second, 2 * time.Second},
		{"a resolution past the time left leaves none", 400 * time.Millisecond, time.Second, 0},
		{"a negative resolution counts as none", time.Second, -time.Second, time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := budget.Armable(tc.remaining, tc.resolution); got != tc.want {
				t.Errorf("Armable(%v, %v) = %v, want %v", tc.remaining, tc.resolution, got, tc.want)
			}
		})
	}
}

// Issue 26: a backoff recorded as 28ms took 1003ms on a server that holds
// short timers back by a second. The give-up test counts what the sleep
// costs on the host; the sleep recorded is still the one drawn.
func TestABackoffShorterThanTheResolutionCostsTheResolution(t *testing.T) {
	at28ms := func(int64) int64 { return int64(28 * time.Millisecond) }
	const floor = 50 * time.Millisecond
	cases := []struct {
		name       string
		resolution time.Duration
		ra         budget.RetryAfter
		available  time.Duration
		want       budget.Delay
	}{
		{"in process a 28ms sleep fits 500ms", 0, budget.RetryAfter{}, 500 * time.Millisecond,
			budget.Delay{Sleep: 28 * time.Millisecond, Source: budget.FromJitter}},
		{"a 28ms sleep that costs a second does not fit 500ms", time.Second, budget.RetryAfter{}, 500 * time.Millisecond,
			budget.Delay{Sleep: 28 * time.Millisecond, Source: budget.FromJitter, GiveUp: true, Reason: budget.BackoffExceedsBudget}},
		{"a 28ms sleep that costs a second fits 2s", time.Second, budget.RetryAfter{}, 2 * time.Second,
			budget.Delay{Sleep: 28 * time.Millisecond, Source: budget.FromJitter}},
		{"a server's 10ms that costs a second does not fit 500ms", time.Second, budget.RetryAfter{Wait: 10 * time.Millisecond, Given: true}, 500 * time.Millisecond,
			budget.Delay{Sleep: 10 * time.Millisecond, Source: budget.FromRetryAfter, GiveUp: true, Reason: budget.RetryAfterExceedsBudget}},
		{"a sleep longer than the resolution costs what it sleeps", 10 * time.Millisecond, budget.RetryAfter{}, 79 * time.Millisecond,
			budget.Delay{Sleep: 28 * time.Millisecond, Source: budget.FromJitter}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bo := budget.Backoff{Rand: at28ms, Resolution: tc.resolution}
			if got := bo.Next(1, tc.ra, tc.available, floor); got != tc.want {
				t.Errorf("Next = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCostIsTheSleepOrTheResolution(t *testing.T) {
	bo := budget.Backoff{Resolution: time.Second}
	for _, c := range []struct{ sleep, want time.Duration }{
		{0, time.Second}, {28 * time.Millisecond, time.Second}, {time.Second, time.Second}, {3 * time.Second, 3 * time.Second},
	} {
		if got := bo.Cost(c.sleep); got != c.want {
			t.Errorf("Cost(%v) = %v, want %v", c.sleep, got, c.want)
		}
	}
	if got := (budget.Backoff{}).Cost(28 * time.Millisecond); got != 28*time.Millisecond {
		t.Errorf("in process Cost(28ms) = %v, want 28ms", got)
	}
}
