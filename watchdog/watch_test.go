package watchdog_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/watchdog"
)

// host is a test's [watchdog.Host]: a context it ends with the cause it is
// given, and a clock of its own due at fixed instants, which notes when it
// was woken for each.
type host struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	start  time.Time

	mu    sync.Mutex
	due   []time.Time     // the instants its clock is due, in order
	woken []time.Duration // when it was woken for each, from start
}

func newHost(ctx context.Context, start time.Time, due ...time.Duration) *host {
	h := &host{start: start}
	h.ctx, h.cancel = context.WithCancelCause(ctx)
	for _, d := range due {
		h.due = append(h.due, start.Add(d))
	}
	return h
}

func (h *host) Done() <-chan struct{} { return h.ctx.Done() }
func (h *host) End(cause error)       { h.cancel(cause) }

func (h *host) Wake(now time.Time) (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for len(h.due) > 0 && !now.Before(h.due[0]) {
		h.woken = append(h.woken, now.Sub(h.start))
		h.due = h.due[1:]
	}
	if len(h.due) == 0 {
		return time.Time{}, false
	}
	return h.due[0], true
}

func TestOneTimerWakesTheQuietClockTheWallAndTheHost(t *testing.T) {
	const s = time.Second
	cases := []struct {
		name      string
		quiet     time.Duration
		wall      time.Duration // from the start; 0: none
		due       []time.Duration
		drive     func(w *watchdog.Watchdog) // runs from the start, in its own goroutine
		wantAt    time.Duration
		want      error
		wantWoken []time.Duration // by 2m, when the test stops the watchdog
	}{
		{"the wall ends the run, after the host's clock due then", time.Hour, 10 * s, []time.Duration{3 * s, 10 * s},
			func(*watchdog.Watchdog) {}, 10 * s, watchdog.ErrWall, []time.Duration{3 * s, 10 * s}},
		{"the quiet clock fires, and the host's clock runs on", 5 * s, time.Minute, []time.Duration{2 * s, 30 * s},
			func(*watchdog.Watchdog) {}, 5 * s, watchdog.ErrQuiet, []time.Duration{2 * s, 30 * s}},
		{"a quiet deadline at the wall is the wall's", 10 * s, 10 * s, nil,
			func(*watchdog.Watchdog) {}, 10 * s, watchdog.ErrWall, nil},
		{"an event moves the quiet deadline past the host's wake-up", 5 * s, 0, []time.Duration{6 * s},
			func(w *watchdog.Watchdog) { time.Sleep(4 * s); w.Mark(watchdog.ToolCall) }, 9 * s, watchdog.ErrQuiet, []time.Duration{6 * s}},
		{"a resume wakes the clock before the host's next wake-up", 5 * s, 0, []time.Duration{time.Minute},
			func(w *watchdog.Watchdog) {
				time.Sleep(s)
				resume := w.Pause()
				time.Sleep(9 * s)
				resume()
			}, 14 * s, watchdog.ErrQuiet, []time.Duration{time.Minute}},
		{"Stop ends the run, and the host's clock with it", time.Hour, time.Hour, []time.Duration{5 * s},
			func(w *watchdog.Watchdog) { time.Sleep(2 * s); w.Stop() }, 2 * s, watchdog.ErrStopped, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				h := newHost(t.Context(), start, tc.due...)
				cfg := watchdog.Config{Quiet: tc.quiet}
				if tc.wall != 0 {
					cfg.Wall = start.Add(tc.wall)
				}
				w, err := watchdog.Watch(cfg, h)
				if err != nil {
					t.Fatal(err)
				}
				var driving sync.WaitGroup
				driving.Go(func() { tc.drive(w) })
				<-h.ctx.Done()
				if got, cause := time.Since(start), context.Cause(h.ctx); got != tc.wantAt || !errors.Is(cause, tc.want) {
					t.Errorf("ended after %v with %v, want %v with %v", got, cause, tc.wantAt, tc.want)
				}
				driving.Wait()
				time.Sleep(2*time.Minute - time.Since(start))
				w.Stop()
				h.mu.Lock()
				defer h.mu.Unlock()
				if !slices.Equal(h.woken, tc.wantWoken) {
					t.Errorf("the host was woken at %v, want %v", h.woken, tc.wantWoken)
				}
			})
		})
	}
}

func TestAWallAlreadyPassedEndsTheRunBeforeWatchReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHost(t.Context(), time.Now())
		w, err := watchdog.Watch(watchdog.Config{Wall: time.Now().Add(-time.Second)}, h)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if cause := context.Cause(h.ctx); cause != watchdog.ErrWall {
			t.Errorf("cause as Watch returned = %v, want %v", cause, watchdog.ErrWall)
		}
	})
}

func TestWatchRejectsAnUnusableConfigAndCallsNothingOfItsHost(t *testing.T) {
	h := newHost(t.Context(), time.Now(), time.Second)
	if _, err := watchdog.Watch(watchdog.Config{Quiet: -time.Second}, h); err == nil {
		t.Fatal("Watch accepted a negative quiet period")
	} else if _, ok := errors.AsType[*watchdog.ConfigError](err); !ok {
		t.Fatalf("Watch = %v, want a *ConfigError", err)
	}
	if h.ctx.Err() != nil || len(h.due) != 1 {
		t.Error("Watch of an unusable config called its host")
	}
}
