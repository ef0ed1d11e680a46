package model

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	"github.com/openai/openai-go/v3"
)

// ErrIncomplete is matched when a stream ended without a finish reason: the
// answer is cut short and is not an answer.
var ErrIncomplete = errors.New("model: stream ended without a finish reason")

// Classify turns the error of attempt n of a model request made with
// openai-go into the attempt's failure and its outcome (SPEC §6). actx is
// the attempt's context: when it has ended, its cause says whether our
// lease, the run's deadline, the quiet clock or the caller ended it;
// otherwise an error status of the SDK is classified by its status, a
// response that could not be decoded is invalid, and anything else, a
// transport error or a stream cut short, is upstream.
func Classify(actx context.Context, attempt int, err error) *trace.AttemptError {
	ae := &trace.AttemptError{Step: Kind, Attempt: attempt, Err: err}
	if actx.Err() != nil {
		ae.Err = context.Cause(actx)
		ae.Outcome = trace.OutcomeOfContext(actx, watchdog.ErrQuiet)
		return ae
	}
	if apiErr, ok := errors.AsType[*openai.Error](err); ok {
		// The SDK makes one only of an error status, 400 and above.
		ae.Status = apiErr.StatusCode
		if apiErr.Response != nil {
			ae.Header = apiErr.Response.Header
		}
		ae.Outcome = trace.OutcomeOfStatus(ae.Status)
		return ae
	}
	if _, ok := errors.AsType[*json.SyntaxError](err); ok {
		ae.Outcome = trace.Invalid
		return ae
	}
	if _, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		ae.Outcome = trace.Invalid
		return ae
	}
	ae.Outcome = trace.UpstreamError // transport errors and streams cut short
	return ae
}
