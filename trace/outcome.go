package trace

import (
	"context"
	"errors"
	"net/http"

	"github.com/glidepath/glidepath/budget"
)

// Outcome is how one attempt ended, as an attempt_end record writes it
// (SPEC §6). The zero Outcome is none: an attempt that has not ended.
type Outcome string

const (
	OK            Outcome = "ok"
	GaveUp        Outcome = "gave_up"        // our lease or deadline ended it, or the budget refused it
	UpstreamError Outcome = "upstream_error" // 5xx, a transport error, a stream cut short, a failure the other side reported
	RateLimited   Outcome = "rate_limited"   // 429
	Invalid       Outcome = "invalid"        // another 4xx, or an answer or arguments that cannot be used
	Quiet         Outcome = "quiet"          // the run's quiet clock fired
	Cancelled     Outcome = "cancelled"      // the run was cancelled
)

// Ours reports whether o is an end we put to the attempt ("we gave up":
// gave_up, quiet, cancelled) rather than a failure of the other side
// ("they failed": upstream_error, rate_limited, invalid). OK is neither.
func (o Outcome) Ours() bool { return o == GaveUp || o == Quiet || o == Cancelled }

// OutcomeOfStatus is the outcome an HTTP status alone says: 2xx OK; 429
// RateLimited; 408 and 500 and above UpstreamError; any other, Invalid,
// since an answer with it cannot be used.
func OutcomeOfStatus(code int) Outcome {
	switch {
	case code >= 200 && code <= 299:
		return OK
	case code == http.StatusTooManyRequests:
		return RateLimited
	case code == http.StatusRequestTimeout, code >= 500:
		return UpstreamError
	}
	return Invalid
}

// OutcomeOfContext names how the end of ctx, an attempt's context, ended
// the attempt, from its cause: a lease or the run's deadline
// ([budget.ErrLeaseExpired], [budget.ErrDeadline]) is GaveUp; a cause
// matching quiet, the cause the run's quiet clock ends it with, is Quiet; any
// other deadline (a watchdog's wall, a caller's timeout) is GaveUp; anything
// else is Cancelled. A nil quiet names no cause Quiet. For a ctx that has
// not ended it returns the zero Outcome.
func OutcomeOfContext(ctx context.Context, quiet error) Outcome {
	err := ctx.Err()
	if err == nil {
		return ""
	}
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, budget.ErrLeaseExpired), errors.Is(cause, budget.ErrDeadline):
		return GaveUp
	case quiet != nil && errors.Is(cause, quiet):
		return Quiet
	case errors.Is(err, context.DeadlineExceeded):
		return GaveUp
	}
	return Cancelled
}

// RetryableStatus reports whether SPEC §2 retries an attempt answered with
// HTTP status code: 408, 429, 500, 502, 503 or 504.
func RetryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// Retryable reports whether SPEC §2 lets the failed attempt e be tried
// again: rate limited; an upstream error with a retryable status
// ([RetryableStatus]) or with none, which is a transport error or a stream
// cut short; or a per-attempt timeout, a GaveUp whose cause is
// [budget.ErrLeaseExpired]. A lease cut short by the run's own deadline is
// not a per-attempt timeout: there is no time for another. A failure the
// other side reported in its own words, without a status, carries its own
// verdict on retrying, which its caller applies instead. Whether the work
// may be sent twice at all (a write) is the caller's to decide.
func Retryable(e *AttemptError) bool {
	switch e.Outcome {
	case RateLimited:
		return true
	case UpstreamError:
		return e.Status == 0 || RetryableStatus(e.Status)
	case GaveUp:
		return errors.Is(e.Err, budget.ErrLeaseExpired)
	}
	return false
}
