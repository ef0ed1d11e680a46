package inflight_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/internal/inflight"
)

func TestWaitReturnsWhenTheLastGoroutineHasReturnedOrItsContextEnds(t *testing.T) {
	cases := []struct {
		name     string
		works    []time.Duration // how long each goroutine runs
		bound    time.Duration   // Wait's context
		wantAt   time.Duration
		wantErr  error
		startMid time.Duration // > 0: one more goroutine of 1s started this long after Wait began
	}{
		{"nothing running returns at once", nil, time.Minute, 0, nil, 0},
		{"the longest goroutine decides", []time.Duration{time.Second, 3 * time.Second}, time.Minute, 3 * time.Second, nil, 0},
		{"a bound before the end returns at the bound", []time.Duration{time.Hour}, 2 * time.Second, 2 * time.Second, context.DeadlineExceeded, 0},
		{"a goroutine started while waiting is waited for", []time.Duration{time.Second}, time.Minute, 1500 * time.Millisecond, nil, 500 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var g inflight.Group
				start := time.Now()
				for _, d := range tc.works {
					g.Go(func() { time.Sleep(d) })
				}
				if tc.startMid > 0 {
					time.AfterFunc(tc.startMid, func() { g.Go(func() { time.Sleep(time.Second) }) })
				}
				ctx, stop := context.WithTimeout(t.Context(), tc.bound)
				defer stop()
				err := g.Wait(ctx)
				if got := time.Since(start); got != tc.wantAt || !errors.Is(err, tc.wantErr) {
					t.Errorf("Wait = %v after %v, want %v after %v", err, got, tc.wantErr, tc.wantAt)
				}
				g.Wait(t.Context()) // the bubble ends with every goroutine
			})
		})
	}
}
