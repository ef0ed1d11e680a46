package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/glidepath/glidepath/budget"
	"github.com/openai/openai-go/v3"
)

// Outcome is how one attempt ended, as written in the trace (SPEC §6).
// It keeps "we gave up" apart from "they failed".
type Outcome string

const (
	OK            Outcome = "ok"
	GaveUp        Outcome = "gave_up"        // our lease or deadline ended it
	UpstreamError Outcome = "upstream_error" // 5xx, a transport error, or a stream cut short
	RateLimited   Outcome = "rate_limited"   // 429
	Invalid       Outcome = "invalid"        // another 4xx, or a response we cannot use
	Quiet         Outcome = "quiet"          // the run's quiet clock fired
	Cancelled     Outcome = "cancelled"      // the run was cancelled
)

var (
	// ErrGaveUp is matched when the harness stopped the call: a lease or the
	// deadline ended an attempt, or a backoff sleep would have outlasted the
	// budget.
	ErrGaveUp = errors.New("model: gave up")

	// ErrUpstream is matched when the server failed the call: an error
	// status, a transport error or a broken stream.
	ErrUpstream = errors.New("model: upstream failed")

	// ErrIncomplete is matched when a stream ended without a finish reason:
	// the answer is cut short and is not an answer.
	ErrIncomplete = errors.New("model: stream ended without a finish reason")
)

// AttemptError is the failure of one attempt. It matches [ErrGaveUp] for
// gave_up, quiet and cancelled outcomes and [ErrUpstream] for the others,
// and unwraps to the underlying error (an *openai.Error, a transport error,
// a context cause).
type AttemptError struct {
	Attempt int
	Outcome Outcome
	Status  int         // the HTTP status, when there was one
	Header  http.Header // the error response's headers, for Retry-After
	Err     error
}

func (e *AttemptError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("model: attempt %d: %s (status %d): %v", e.Attempt, e.Outcome, e.Status, e.Err)
	}
	return fmt.Sprintf("model: attempt %d: %s: %v", e.Attempt, e.Outcome, e.Err)
}

func (e *AttemptError) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel of e's outcome.
func (e *AttemptError) Is(target error) bool {
	switch e.Outcome {
	case GaveUp, Quiet, Cancelled:
		return target == ErrGaveUp
	}
	return target == ErrUpstream
}

// GaveUpError reports retries stopped because the next backoff sleep would
// outlast the budget. It matches [ErrGaveUp] and unwraps to the last
// attempt's error.
type GaveUpError struct {
	Delay budget.Delay
	Last  error
}

func (e *GaveUpError) Error() string {
	return fmt.Sprintf("model: gave up: %s (sleep %v): %v", e.Delay.Reason, e.Delay.Sleep, e.Last)
}

func (e *GaveUpError) Unwrap() error { return e.Last }

// Is reports whether target is [ErrGaveUp].
func (e *GaveUpError) Is(target error) bool { return target == ErrGaveUp }

// classify turns an attempt's error into its outcome. actx is the attempt's
// context: its cause says whether our lease, the run's deadline, the quiet
// clock or the caller ended it.
func classify(actx context.Context, attempt int, err error) *AttemptError {
	ae := &AttemptError{Attempt: attempt, Err: err}
	if actx.Err() != nil {
		cause := context.Cause(actx)
		ae.Err = cause
		switch {
		case errors.Is(cause, budget.ErrLeaseExpired), errors.Is(cause, budget.ErrDeadline):
			ae.Outcome = GaveUp
		case isQuiet(cause):
			ae.Outcome = Quiet
		default:
			ae.Outcome = Cancelled
		}
		return ae
	}
	if apiErr, ok := errors.AsType[*openai.Error](err); ok {
		ae.Status = apiErr.StatusCode
		if apiErr.Response != nil {
			ae.Header = apiErr.Response.Header
		}
		switch {
		case ae.Status == http.StatusTooManyRequests:
			ae.Outcome = RateLimited
		case ae.Status == http.StatusRequestTimeout || ae.Status >= 500:
			ae.Outcome = UpstreamError
		default:
			ae.Outcome = Invalid
		}
		return ae
	}
	if _, ok := errors.AsType[*json.SyntaxError](err); ok {
		ae.Outcome = Invalid
		return ae
	}
	if _, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		ae.Outcome = Invalid
		return ae
	}
	ae.Outcome = UpstreamError // transport errors and streams cut short
	return ae
}

// retryable reports whether a failed attempt may be tried again (SPEC §2):
// transport errors, 408, 429, 500, 502, 503, 504 and per-attempt timeouts.
// A lease cut short by the run's own deadline is not a per-attempt timeout:
// there is no time for another.
func retryable(ae *AttemptError) bool {
	switch ae.Outcome {
	case RateLimited:
		return true
	case GaveUp:
		return errors.Is(ae.Err, budget.ErrLeaseExpired)
	case UpstreamError:
		switch ae.Status {
		case 0, http.StatusRequestTimeout, http.StatusInternalServerError, http.StatusBadGateway,
			http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
	}
	return false
}
