package budget

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

func TestBackoffCeilingDoublesUpToTheCap(t *testing.T) {
	cases := []struct {
		bo   Backoff
		n    int
		want time.Duration
	}{
		{Backoff{}, 1, 250 * time.Millisecond},
		{Backoff{}, 2, 500 * time.Millisecond},
		{Backoff{}, 3, time.Second},
		{Backoff{}, 6, 8 * time.Second},
		{Backoff{}, 7, 8 * time.Second},
		{Backoff{}, 1 << 40, 8 * time.Second},
		{Backoff{}, 0, 250 * time.Millisecond},
		{Backoff{Base: time.Second, Cap: 3 * time.Second}, 2, 2 * time.Second},
		{Backoff{Base: time.Second, Cap: 3 * time.Second}, 3, 3 * time.Second},
		{Backoff{Base: 1 << 62, Cap: 1<<63 - 1}, 3, 1<<63 - 1},
	}
	for _, tc := range cases {
		if got := tc.bo.Ceiling(tc.n); got != tc.want {
			t.Errorf("%+v.Ceiling(%d) = %v, want %v", tc.bo, tc.n, got, tc.want)
		}
	}
}

func TestJitterIsUniformFromZeroToTheCeilingInclusive(t *testing.T) {
	var asked int64
	low := Backoff{Rand: func(n int64) int64 { asked = n; return 0 }}
	if got := low.Jitter(3); got != 0 || asked != int64(time.Second)+1 {
		t.Errorf("lowest draw = %v (asked Rand for [0,%d)), want 0 of [0,1s]", got, asked)
	}
	high := Backoff{Rand: func(n int64) int64 { return n - 1 }}
	if got := high.Jitter(3); got != time.Second {
		t.Errorf("highest draw = %v, want 1s", got)
	}
	for range 1000 {
		if d := (Backoff{}).Jitter(2); d < 0 || d > 500*time.Millisecond {
			t.Fatalf("default jitter %v outside [0, 500ms]", d)
		}
	}
}

func TestDecideGivesUpWhenTheSleepWouldOutlastTheBudget(t *testing.T) {
	cases := []struct {
		name      string
		sleep     time.Duration
		src       Source
		available time.Duration
		giveUp    bool
		reason    string
	}{
		{"fits", 100 * time.Millisecond, FromJitter, time.Second, false, ""},
		{"just fits", 949 * time.Millisecond, FromJitter, time.Second, false, ""},
		{"reaches available − floor", 950 * time.Millisecond, FromJitter, time.Second, true, BackoffExceedsBudget},
		{"retry-after beyond", 3600 * time.Second, FromRetryAfter, 5 * time.Second, true, RetryAfterExceedsBudget},
		{"inside the reserve", 0, FromJitter, -time.Second, true, BackoffExceedsBudget},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.sleep, tc.src, tc.available, 50*time.Millisecond)
			if d.GiveUp != tc.giveUp || d.Reason != tc.reason || d.Sleep != tc.sleep || d.Source != tc.src {
				t.Errorf("Decide = %+v, want give up %v reason %q", d, tc.giveUp, tc.reason)
			}
		})
	}
}

func TestNextDelayLetsTheServerWinAndChecksTheBudget(t *testing.T) {
	// A 10s budget with a 2.5s reserve: 7.5s available at the start.
	cases := []struct {
		name    string
		header  http.Header
		wantErr error
		want    Delay
	}{
		{"no header: jitter", nil, nil, Delay{Sleep: 500 * time.Millisecond, Source: FromJitter}},
		// The spread after a server's wait is at most the larger of the
		// wait and Base (250ms), and the ceiling (500ms for retry 2).
		{"retry-after-ms replaces the backoff, spread by at most Base", http.Header{"Retry-After-Ms": {"200"}}, nil,
			Delay{Sleep: 450 * time.Millisecond, Source: FromRetryAfter, Spread: 250 * time.Millisecond}},
		{"retry-after-ms wins over Retry-After", http.Header{"Retry-After-Ms": {"1500"}, "Retry-After": {"1"}}, nil,
			Delay{Sleep: 2 * time.Second, Source: FromRetryAfter, Spread: 500 * time.Millisecond}},
		{"Retry-After seconds", http.Header{"Retry-After": {"2"}}, nil,
			Delay{Sleep: 2500 * time.Millisecond, Source: FromRetryAfter, Spread: 500 * time.Millisecond}},
		{"a Retry-After of 0 is spread by at most Base", http.Header{"Retry-After": {"0"}}, nil,
			Delay{Sleep: 250 * time.Millisecond, Source: FromRetryAfter, Spread: 250 * time.Millisecond}},
		{"the spread never makes a wait that fits one that does not", http.Header{"Retry-After-Ms": {"7400"}}, nil,
			Delay{Sleep: 7450*time.Millisecond - 1, Source: FromRetryAfter, Spread: 50*time.Millisecond - 1}},
		{"a wait that fits only without the floor gives up", http.Header{"Retry-After-Ms": {"7460"}}, nil,
			Delay{Sleep: 7460 * time.Millisecond, Source: FromRetryAfter, GiveUp: true, Reason: RetryAfterExceedsBudget}},
		{"Retry-After beyond the budget gives up without sleeping", http.Header{"Retry-After": {"3600"}}, nil,
			Delay{Sleep: time.Hour, Source: FromRetryAfter, GiveUp: true, Reason: RetryAfterExceedsBudget}},
		{"malformed Retry-After falls back to jitter", http.Header{"Retry-After": {"soon"}}, ErrBadRetryAfter,
			Delay{Sleep: 500 * time.Millisecond, Source: FromJitter}},
		{"absurd Retry-After gives up", http.Header{"Retry-After": {"99999999999"}}, ErrBadRetryAfter,
			Delay{Source: FromRetryAfter, GiveUp: true, Reason: RetryAfterExceedsBudget}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := mustNew(t, Config{Total: 10 * time.Second})
				bo := Backoff{Rand: func(n int64) int64 { return n - 1 }} // always the ceiling
				d, err := b.NextDelay(bo, 2, tc.header)
				if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
					t.Errorf("err = %v, want %v", err, tc.wantErr)
				}
				if d != tc.want {
					t.Errorf("delay %+v, want %+v", d, tc.want)
				}
			})
		})
	}
}

// A thousand clients told "Retry-After: 1" at one instant come back over
// the spread after it, not in one burst: no 50ms window of the 250ms
// spread of a first retry holds twice its share.
func TestRetryAfterSpreadsAFleetTurnedAwayAtOneInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Config{Total: 10 * time.Second})
		rng := rand.New(rand.NewPCG(1, 2))
		bo := Backoff{Rand: rng.Int64N}
		windows := make([]int, 6)
		const fleet = 1000
		for range fleet {
			d, err := b.NextDelay(bo, 1, http.Header{"Retry-After": {"1"}})
			if err != nil || d.GiveUp || d.Sleep < time.Second || d.Sleep > time.Second+DefaultBase {
				t.Fatalf("delay %+v, %v; want 1s to 1.25s", d, err)
			}
			windows[(d.Sleep-time.Second)/(50*time.Millisecond)]++
		}
		mean := float64(fleet) / 5 // the 250ms spread is five windows
		for i, n := range windows[:5] {
			if float64(n) >= 2*mean {
				t.Errorf("window %d holds %d retries, the mean is %.0f", i, n, mean)
			}
		}
	})
}

func TestNextDelayGivesUpWhenJitterWouldOutlastTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Config{Total: 10 * time.Second})
		time.Sleep(6 * time.Second) // 1.5s available
		bo := Backoff{Base: time.Second, Rand: func(n int64) int64 { return n - 1 }}
		d, err := b.NextDelay(bo, 2, nil) // would sleep 2s
		if err != nil || !d.GiveUp || d.Reason != BackoffExceedsBudget {
			t.Errorf("delay %+v, %v; want give up, backoff exceeds budget", d, err)
		}
	})
}

func TestDelayWaitSleepsExactlyOrUntilTheContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := (Delay{Sleep: 200 * time.Millisecond}).Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 200*time.Millisecond {
			t.Errorf("slept %v, want 200ms", got)
		}

		start = time.Now()
		if err := (Delay{Sleep: time.Hour, GiveUp: true}).Wait(t.Context()); err != nil || time.Since(start) != 0 {
			t.Errorf("a delay that gave up slept %v (err %v)", time.Since(start), err)
		}

		quiet := errors.New("quiet")
		ctx, cancel := context.WithTimeoutCause(t.Context(), 50*time.Millisecond, quiet)
		defer cancel()
		start = time.Now()
		if err := (Delay{Sleep: time.Hour}).Wait(ctx); !errors.Is(err, quiet) {
			t.Errorf("Wait = %v, want the context's cause", err)
		}
		if got := time.Since(start); got != 50*time.Millisecond {
			t.Errorf("waited %v, want 50ms", got)
		}
	})
}

func TestSourceNamesMatchTheTrace(t *testing.T) {
	if FromJitter.String() != "jitter" || FromRetryAfter.String() != "retry_after" {
		t.Errorf("sources %q %q", FromJitter, FromRetryAfter)
	}
}
