package cancel_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
)

func TestReconcileFollowsSpec5(t *testing.T) {
	errStopped := errors.New("run stopped")
	cases := []struct {
		name      string
		total     time.Duration
		spent     time.Duration // slept before Reconcile
		stopAfter time.Duration // the caller's context ends then, with errStopped; 0: never
		answers   []answer
		want      cancel.Resolution // Err is checked by wantIs
		wantOut   string
		wantAfter time.Duration
		wantIs    []error
	}{
		{
			name:    "done: its output is used",
			total:   time.Minute,
			answers: []answer{done},
			want:    cancel.Resolution{State: cancel.Done, Asks: 1},
			wantOut: `{"id":7}`,
		},
		{
			name:    "failed: a failed call",
			total:   time.Minute,
			answers: []answer{failed},
			want:    cancel.Resolution{State: cancel.Failed, Asks: 1},
			wantOut: `"card declined"`,
		},
		{
			name:    "404: never received, so the caller may retry with the same key",
			total:   time.Minute,
			answers: []answer{unknown},
			want:    cancel.Resolution{State: cancel.NeverReceived, Asks: 1},
		},
		{
			// sleeps of 250ms and 500ms, the longest draws of the first two retries
			name:      "running, running, done: asks three times with backoff between",
			total:     time.Minute,
			answers:   []answer{running, running, done},
			want:      cancel.Resolution{State: cancel.Done, Asks: 3},
			wantOut:   `{"id":7}`,
			wantAfter: 750 * time.Millisecond,
		},
		{
			// B 10s, R 2.5s, F 50ms. Asks at 0, .25, .75, 1.75, 3.75s; the
			// next sleep, 4s, is not below 10 − 3.75 − 2.5 − .05 = 3.7s, so
			// the last ask comes when FinalAsk is left: at 10 − 2.5 − .05 −
			// .25 = 7.2s.
			name:      "running until the budget stops it: a last ask as late as it allows, then an orphan",
			total:     10 * time.Second,
			answers:   []answer{running},
			want:      cancel.Resolution{State: cancel.Running, Orphan: true, Asks: 6},
			wantAfter: 7200 * time.Millisecond,
			wantIs:    []error{cancel.ErrStillRunning},
		},
		{
			name:      "done by the last ask, clamped to the budget: not an orphan",
			total:     10 * time.Second,
			answers:   []answer{running, running, running, running, running, done},
			want:      cancel.Resolution{State: cancel.Done, Asks: 6},
			wantOut:   `{"id":7}`,
			wantAfter: 7200 * time.Millisecond,
		},
		{
			name:    "unreachable: an orphan at once",
			total:   time.Minute,
			answers: []answer{broken},
			want:    cancel.Resolution{Orphan: true, Asks: 1},
			wantIs:  []error{cancel.ErrUnreachable},
		},
		{
			name:    "a malformed answer is unreachable too",
			total:   time.Minute,
			answers: []answer{garbage},
			want:    cancel.Resolution{Orphan: true, Asks: 1},
			wantIs:  []error{cancel.ErrUnreachable},
		},
		{
			name:      "running, then unreachable: an orphan last seen running",
			total:     time.Minute,
			answers:   []answer{running, broken},
			want:      cancel.Resolution{State: cancel.Running, Orphan: true, Asks: 2},
			wantAfter: 250 * time.Millisecond,
			wantIs:    []error{cancel.ErrUnreachable},
		},
		{
			name:      "a hung status endpoint costs one StatusLease",
			total:     time.Minute,
			answers:   []answer{hang},
			want:      cancel.Resolution{Orphan: true, Asks: 1},
			wantAfter: cancel.StatusLease,
			wantIs:    []error{cancel.ErrUnreachable, budget.ErrLeaseExpired},
		},
		{
			// 2s left of 10s is inside the 2.5s reserve: the run is landing.
			name:    "no work time left: an orphan without asking",
			total:   10 * time.Second,
			spent:   8 * time.Second,
			answers: []answer{done},
			want:    cancel.Resolution{Orphan: true},
			wantIs:  []error{budget.ErrRefused},
		},
		{
			name:      "the caller's context ends during a backoff sleep",
			total:     time.Minute,
			stopAfter: 100 * time.Millisecond,
			answers:   []answer{running},
			want:      cancel.Resolution{State: cancel.Running, Orphan: true, Asks: 1},
			wantAfter: 100 * time.Millisecond,
			wantIs:    []error{cancel.ErrStillRunning, errStopped},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBudget(t, tc.total)
				time.Sleep(tc.spent)
				tool := &toolServer{answers: tc.answers}
				e := cancel.Endpoint{URL: "http://tool.test", Tool: "pay", Client: inMemoryClient(tool)}
				ctx := t.Context()
				if tc.stopAfter > 0 {
					var stop context.CancelFunc
					ctx, stop = context.WithTimeoutCause(ctx, tc.stopAfter, errStopped)
					defer stop()
				}

				start := time.Now()
				r := cancel.Reconcile(ctx, b, longest, e, key, nil)
				if got := time.Since(start); got != tc.wantAfter {
					t.Errorf("Reconcile took %v, want %v", got, tc.wantAfter)
				}
				if r.State != tc.want.State || r.Orphan != tc.want.Orphan || r.Asks != tc.want.Asks || string(r.Output) != tc.wantOut {
					t.Errorf("Resolution = {State %q Orphan %v Asks %d Output %s}, want {State %q Orphan %v Asks %d Output %s}",
						r.State, r.Orphan, r.Asks, r.Output, tc.want.State, tc.want.Orphan, tc.want.Asks, tc.wantOut)
				}
				if (r.Err != nil) != r.Orphan {
					t.Errorf("Err = %v with Orphan %v; an orphan, and only an orphan, says why", r.Err, r.Orphan)
				}
				for _, target := range tc.wantIs {
					if !errors.Is(r.Err, target) {
						t.Errorf("Err = %v, want it to match %v", r.Err, target)
					}
				}
				want := slices.Repeat([]string{"GET /tools/pay/calls/gp_testkey"}, tc.want.Asks)
				if got := tool.seen(); !slices.Equal(got, want) {
					t.Errorf("tool saw %q, want %d GETs of the call's status and nothing else", got, tc.want.Asks)
				}
			})
		})
	}
}
