package trace_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/trace"
)

func TestErrorsNameTheirStepAndMatchTheirSide(t *testing.T) {
	cause := errors.New("boom")
	cases := []struct {
		err  error
		want string
		is   error
		not  error
	}{
		{&trace.AttemptError{Step: "model", Attempt: 2, Outcome: trace.UpstreamError, Status: 500, Err: cause}, "model: attempt 2: upstream_error (status 500): boom", trace.ErrFailed, trace.ErrGaveUp},
		{&trace.AttemptError{Step: "tool:search", Attempt: 1, Outcome: trace.GaveUp, Err: cause}, "tool:search: attempt 1: gave_up: boom", trace.ErrGaveUp, trace.ErrFailed},
		{&trace.AttemptError{Step: "model", Attempt: 1, Outcome: trace.RateLimited, Status: 429, Err: cause}, "model: attempt 1: rate_limited (status 429): boom", trace.ErrFailed, trace.ErrGaveUp},
		{&trace.AttemptError{Step: "model", Attempt: 1, Outcome: trace.Invalid, Err: cause}, "model: attempt 1: invalid: boom", trace.ErrFailed, trace.ErrGaveUp},
		{&trace.AttemptError{Step: "tool:a", Attempt: 3, Outcome: trace.Quiet, Err: cause}, "tool:a: attempt 3: quiet: boom", trace.ErrGaveUp, trace.ErrFailed},
		{&trace.AttemptError{Step: "tool:a", Attempt: 1, Outcome: trace.Cancelled, Err: cause}, "tool:a: attempt 1: cancelled: boom", trace.ErrGaveUp, trace.ErrFailed},
		{&trace.AttemptError{Attempt: 1, Outcome: trace.UpstreamError, Err: cause}, "attempt 1: upstream_error: boom", trace.ErrFailed, trace.ErrGaveUp},
		{&trace.GaveUpError{Step: "tool:a", Delay: budget.Delay{Sleep: time.Minute, Reason: budget.RetryAfterExceedsBudget}, Last: cause}, "tool:a: gave up: retry_after_exceeds_budget (sleep 1m0s): boom", trace.ErrGaveUp, trace.ErrFailed},
		{&trace.GaveUpError{Step: "model", Delay: budget.Delay{Sleep: 3 * time.Second, Reason: budget.BackoffExceedsBudget}, Last: cause}, "model: gave up: backoff_exceeds_budget (sleep 3s): boom", trace.ErrGaveUp, trace.ErrFailed},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
			if !errors.Is(tc.err, tc.is) {
				t.Errorf("%v does not match %v", tc.err, tc.is)
			}
			if errors.Is(tc.err, tc.not) {
				t.Errorf("%v matches %v", tc.err, tc.not)
			}
			if !errors.Is(tc.err, cause) {
				t.Errorf("%v does not unwrap to its cause", tc.err)
			}
		})
	}
}

func TestAGaveUpErrorReachesTheLastAttemptsError(t *testing.T) {
	h := http.Header{"Retry-After": {"120"}}
	last := &trace.AttemptError{Step: "model", Attempt: 3, Outcome: trace.RateLimited, Status: 429, Header: h, Err: errors.New("slow down")}
	err := error(&trace.GaveUpError{Step: "model", Delay: budget.Delay{Sleep: 2 * time.Minute, GiveUp: true}, Last: last})
	ae, ok := errors.AsType[*trace.AttemptError](err)
	if !ok || ae != last || ae.Header.Get("Retry-After") != "120" {
		t.Fatalf("AsType = %v, %v; want the last attempt", ae, ok)
	}
	// Both sentinels reach through: we gave up on a failure of theirs.
	if !errors.Is(err, trace.ErrGaveUp) || !errors.Is(err, trace.ErrFailed) {
		t.Errorf("%v: ErrGaveUp %v, ErrFailed %v; want both", err, errors.Is(err, trace.ErrGaveUp), errors.Is(err, trace.ErrFailed))
	}
}
