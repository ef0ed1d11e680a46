package harness_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/watchdog"
)

// The run's context is one context made from the caller's, ended by the
// run's one timer (issue 25 item 6); it still ends as each clock says,
// with ctx.Err() as a context with a deadline says it and a cause that
// names why, and carries the run's deadline and budget.
func TestTheRunsContextEndsAsItsClocksSay(t *testing.T) {
	errMine := errors.New("the caller's own reason")
	const s = time.Second
	cases := []struct {
		name      string
		quiet     time.Duration
		caller    func(ctx context.Context) (context.Context, func()) // the caller's context, and what it does from the start
		wantAt    time.Duration
		wantErr   error
		wantCause error
		wantTotal time.Duration // the run's budget, and so its deadline
	}{
		{"the wall", time.Hour, func(ctx context.Context) (context.Context, func()) { return ctx, func() {} },
			10 * s, context.DeadlineExceeded, budget.ErrDeadline, 10 * s},
		{"the quiet clock", 4 * s, func(ctx context.Context) (context.Context, func()) { return ctx, func() {} },
			4 * s, context.Canceled, watchdog.ErrQuiet, 10 * s},
		{"the caller's cancel", time.Hour, func(ctx context.Context) (context.Context, func()) {
			ctx, cancel := context.WithCancelCause(ctx)
			return ctx, func() { time.Sleep(2 * s); cancel(errMine) }
		}, 2 * s, context.Canceled, errMine, 10 * s},
		{"the caller's deadline, before the budget's", time.Hour, func(ctx context.Context) (context.Context, func()) {
			ctx, cancel := context.WithTimeoutCause(ctx, 3*s, errMine)
			return ctx, func() { <-ctx.Done(); cancel() }
		}, 3 * s, context.DeadlineExceeded, nil, 3 * s},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				bud, err := budget.New(budget.Config{Total: 10 * s})
				if err != nil {
					t.Fatal(err)
				}
				caller, drive := tc.caller(t.Context())
				sess, ctx, err := harness.Start(caller, bud, harness.Config{Task: "wait", Quiet: tc.quiet, Model: &model.Client{}})
				if err != nil {
					t.Fatal(err)
				}
				defer sess.Close()
				if d, ok := ctx.Deadline(); !ok || d.Sub(start) != tc.wantTotal {
					t.Errorf("Deadline() = %v, %v; want %v from the start", d.Sub(start), ok, tc.wantTotal)
				}
				if b, ok := budget.FromContext(ctx); !ok || b.Total() != tc.wantTotal {
					t.Errorf("FromContext = %v, %v; want the run's budget of %v", b, ok, tc.wantTotal)
				}
				go drive()
				<-ctx.Done()
				if got := time.Since(start); got != tc.wantAt {
					t.Errorf("ended after %v, want %v", got, tc.wantAt)
				}
				if err := ctx.Err(); err != tc.wantErr {
					t.Errorf("Err() = %v, want %v", err, tc.wantErr)
				}
				// A caller's deadline and the run's wall are one instant:
				// either cause names it.
				cause := context.Cause(ctx)
				if tc.wantCause == nil && !errors.Is(cause, errMine) && !errors.Is(cause, budget.ErrDeadline) ||
					tc.wantCause != nil && !errors.Is(cause, tc.wantCause) {
					t.Errorf("cause = %v, want %v", cause, tc.wantCause)
				}
			})
		})
	}
}

// The caller's cancel starts the count of R to the run's landing (SPEC
// §3); a run's end of its own, such as its quiet clock's, does not.
func TestOnlyTheCallersCancelStartsTheCountOfR(t *testing.T) {
	const r = 10 * time.Second
	cases := []struct {
		name     string
		cancel   bool // the caller cancels, rather than the quiet clock fire
		wantLeft time.Duration
	}{
		{"the caller's cancel", true, r - 3*time.Second},
		{"the quiet clock", false, r},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				bud, err := budget.New(budget.Config{Total: time.Minute, Reserve: r})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				sess, rctx, err := harness.Start(ctx, bud, harness.Config{Task: "wait", Quiet: 5 * time.Second, Model: &model.Client{}})
				if err != nil {
					t.Fatal(err)
				}
				defer sess.Close()
				if tc.cancel {
					cancel()
				}
				<-rctx.Done()
				synctest.Wait()
				time.Sleep(3 * time.Second)
				if got := time.Until(sess.LandsBy()); got != tc.wantLeft {
					t.Errorf("3s after the run's context ended, LandsBy is %v from now, want %v", got, tc.wantLeft)
				}
			})
		})
	}
}
