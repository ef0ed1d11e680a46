package watchdog_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/watchdog"
)

// A parent whose deadline is the wall, as budget.WithBudget's is, ends the
// run at the wall with its own cause, and still wins the tie with a quiet
// deadline at the same instant: the watchdog arms no second timer for it.
func TestAParentDeadlineAtTheWallIsTheWall(t *testing.T) {
	errDeadline := errors.New("budget: deadline")
	cases := []struct {
		name  string
		quiet time.Duration
	}{
		{"quiet clock far off", time.Hour},
		{"quiet deadline at the wall", 20 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				wall := start.Add(20 * time.Second)
				parent, cancel := context.WithDeadlineCause(t.Context(), wall, errDeadline)
				defer cancel()
				w, ctx := mustStart(t, parent, watchdog.Config{Quiet: tc.quiet, Wall: wall})
				defer w.Stop()

				<-ctx.Done()
				if got := time.Since(start); got != 20*time.Second {
					t.Errorf("run ended after %v, want 20s", got)
				}
				if cause := context.Cause(ctx); cause != errDeadline {
					t.Errorf("cause = %v, want the parent's %v", cause, errDeadline)
				}
				if ctx.Err() != context.DeadlineExceeded {
					t.Errorf("ctx.Err() = %v, want %v", ctx.Err(), context.DeadlineExceeded)
				}
				if d, ok := ctx.Deadline(); !ok || !d.Equal(wall) {
					t.Errorf("ctx.Deadline() = %v, %v; want the wall %v", d, ok, wall)
				}
				if w.Snapshot().Stalled {
					t.Error("the quiet clock fired: the wall wins a tie")
				}
			})
		})
	}
}
