package trace_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

func TestAnHTTPStatusNamesItsOutcomeAndWhetherItIsRetried(t *testing.T) {
	cases := []struct {
		code  int
		want  trace.Outcome
		retry bool
	}{
		{0, trace.Invalid, false},
		{100, trace.Invalid, false},
		{101, trace.Invalid, false},
		{200, trace.OK, false},
		{201, trace.OK, false},
		{204, trace.OK, false},
		{299, trace.OK, false},
		{301, trace.Invalid, false},
		{304, trace.Invalid, false},
		{400, trace.Invalid, false},
		{401, trace.Invalid, false},
		{404, trace.Invalid, false},
		{408, trace.UpstreamError, true},
		{409, trace.Invalid, false},
		{422, trace.Invalid, false},
		{429, trace.RateLimited, true},
		{499, trace.Invalid, false},
		{500, trace.UpstreamError, true},
		{501, trace.UpstreamError, false},
		{502, trace.UpstreamError, true},
		{503, trace.UpstreamError, true},
		{504, trace.UpstreamError, true},
		{505, trace.UpstreamError, false},
		{599, trace.UpstreamError, false},
		{600, trace.UpstreamError, false},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.code), func(t *testing.T) {
			if got := trace.OutcomeOfStatus(tc.code); got != tc.want {
				t.Errorf("OutcomeOfStatus(%d) = %q, want %q", tc.code, got, tc.want)
			}
			if got := trace.RetryableStatus(tc.code); got != tc.retry {
				t.Errorf("RetryableStatus(%d) = %v, want %v", tc.code, got, tc.retry)
			}
		})
	}
}

func TestTheCauseThatEndedAnAttemptNamesItsOutcome(t *testing.T) {
	errWall := errors.New("watchdog: wall reached")
	stall := &watchdog.StallError{Quiet: time.Minute}
	past := time.Now().Add(-time.Second) // a context with a past deadline is over when made
	cancelled := func(cause error) func(context.Context) (context.Context, context.CancelFunc) {
		return func(parent context.Context) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancelCause(parent)
			cancel(cause)
			return ctx, func() {}
		}
	}
	expired := func(cause error) func(context.Context) (context.Context, context.CancelFunc) {
		return func(parent context.Context) (context.Context, context.CancelFunc) {
			return context.WithDeadlineCause(parent, past, cause)
		}
	}
	lease := func(capped bool) func(context.Context) (context.Context, context.CancelFunc) {
		return budget.Lease{Deadline: past, Capped: capped}.Context
	}
	cases := []struct {
		name  string
		end   func(context.Context) (context.Context, context.CancelFunc)
		quiet error
		want  trace.Outcome
	}{
		{"a lease the ceiling limited is a per-attempt timeout: gave up", lease(true), watchdog.ErrQuiet, trace.GaveUp},
		{"a lease the run's time limited is the deadline: gave up", lease(false), watchdog.ErrQuiet, trace.GaveUp},
		{"the budget's deadline is gave up", expired(budget.ErrDeadline), watchdog.ErrQuiet, trace.GaveUp},
		{"a wrapped lease expiry is gave up", cancelled(fmt.Errorf("attempt: %w", budget.ErrLeaseExpired)), watchdog.ErrQuiet, trace.GaveUp},
		{"the quiet clock is quiet", cancelled(stall), watchdog.ErrQuiet, trace.Quiet},
		{"the quiet clock unnamed is a cancellation", cancelled(stall), nil, trace.Cancelled},
		{"a quiet cause on a deadline is still quiet", expired(stall), watchdog.ErrQuiet, trace.Quiet},
		{"the wall is a deadline: gave up", expired(errWall), watchdog.ErrQuiet, trace.GaveUp},
		{"a timeout without a cause is gave up", expired(nil), watchdog.ErrQuiet, trace.GaveUp},
		{"a cancellation with a cause is cancelled", cancelled(errors.New("ctrl-c")), watchdog.ErrQuiet, trace.Cancelled},
		{"a cancellation without a cause is cancelled", cancelled(nil), watchdog.ErrQuiet, trace.Cancelled},
		{"the wall as a cancel cause is cancelled", cancelled(errWall), watchdog.ErrQuiet, trace.Cancelled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, stop := tc.end(t.Context())
			defer stop()
			if got := trace.OutcomeOfContext(ctx, tc.quiet); got != tc.want {
				t.Errorf("OutcomeOfContext = %q, want %q (err %v, cause %v)", got, tc.want, ctx.Err(), context.Cause(ctx))
			}
		})
	}
}

func TestTheRunsCauseCarriesThroughAnAttemptsLease(t *testing.T) {
	run, cancel := context.WithCancelCause(t.Context())
	actx, stop := budget.Lease{Deadline: time.Now().Add(time.Hour), Capped: true}.Context(run)
	defer stop()
	cancel(&watchdog.StallError{Quiet: time.Minute})
	if got := trace.OutcomeOfContext(actx, watchdog.ErrQuiet); got != trace.Quiet {
		t.Errorf("OutcomeOfContext = %q, want quiet", got)
	}
}

func TestAContextThatHasNotEndedNamesNoOutcome(t *testing.T) {
	if got := trace.OutcomeOfContext(t.Context(), watchdog.ErrQuiet); got != "" {
		t.Errorf("OutcomeOfContext = %q, want none", got)
	}
}

func TestOnlyWhatSPECSection2AllowsIsRetried(t *testing.T) {
	cases := []struct {
		name string
		e    trace.AttemptError
		want bool
	}{
		{"a transport error", trace.AttemptError{Outcome: trace.UpstreamError, Err: errors.New("connection reset")}, true},
		{"408", trace.AttemptError{Outcome: trace.UpstreamError, Status: 408}, true},
		{"429", trace.AttemptError{Outcome: trace.RateLimited, Status: 429}, true},
		{"500", trace.AttemptError{Outcome: trace.UpstreamError, Status: 500}, true},
		{"502", trace.AttemptError{Outcome: trace.UpstreamError, Status: 502}, true},
		{"503", trace.AttemptError{Outcome: trace.UpstreamError, Status: 503}, true},
		{"504", trace.AttemptError{Outcome: trace.UpstreamError, Status: 504}, true},
		{"a per-attempt timeout", trace.AttemptError{Outcome: trace.GaveUp, Err: budget.ErrLeaseExpired}, true},
		{"a wrapped per-attempt timeout", trace.AttemptError{Outcome: trace.GaveUp, Err: fmt.Errorf("x: %w", budget.ErrLeaseExpired)}, true},
		{"not 501", trace.AttemptError{Outcome: trace.UpstreamError, Status: 501}, false},
		{"not 505", trace.AttemptError{Outcome: trace.UpstreamError, Status: 505}, false},
		{"not 400", trace.AttemptError{Outcome: trace.Invalid, Status: 400}, false},
		{"not 404", trace.AttemptError{Outcome: trace.Invalid, Status: 404}, false},
		{"not an answer that cannot be used", trace.AttemptError{Outcome: trace.Invalid, Err: errors.New("bad JSON")}, false},
		{"not the run's deadline", trace.AttemptError{Outcome: trace.GaveUp, Err: budget.ErrDeadline}, false},
		{"not the wall", trace.AttemptError{Outcome: trace.GaveUp, Err: errors.New("watchdog: wall reached")}, false},
		{"not the quiet clock", trace.AttemptError{Outcome: trace.Quiet, Err: watchdog.ErrQuiet}, false},
		{"not a cancellation", trace.AttemptError{Outcome: trace.Cancelled, Err: context.Canceled}, false},
		{"not a success", trace.AttemptError{Outcome: trace.OK}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := trace.Retryable(&tc.e); got != tc.want {
				t.Errorf("Retryable(%v) = %v, want %v", &tc.e, got, tc.want)
			}
		})
	}
}

func TestEveryOutcomeIsOnOneSide(t *testing.T) {
	cases := []struct {
		o    trace.Outcome
		ours bool
	}{
		{trace.OK, false},
		{trace.GaveUp, true},
		{trace.UpstreamError, false},
		{trace.RateLimited, false},
		{trace.Invalid, false},
		{trace.Quiet, true},
		{trace.Cancelled, true},
		{"", false},
	}
	for _, tc := range cases {
		t.Run(string(tc.o), func(t *testing.T) {
			if got := tc.o.Ours(); got != tc.ours {
				t.Errorf("%q.Ours() = %v, want %v", tc.o, got, tc.ours)
			}
		})
	}
}
