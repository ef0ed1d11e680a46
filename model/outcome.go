package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

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
		// The record says what the server said, not only its status
		// (issue 18): the SDK's own text is "401 Unauthorized" alone.
		ae.Err = &statusError{apiErr}
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

// statusError is an error answer as the attempt's record gives it: the
// server's own message, which [Client] has redacted of the API key, or
// the status text when it sent none. It unwraps to the SDK's error.
type statusError struct{ err *openai.Error }

func (e *statusError) Error() string {
	if msg := strings.TrimSpace(e.err.Message); msg != "" {
		return msg
	}
	return http.StatusText(e.err.StatusCode)
}

func (e *statusError) Unwrap() error { return e.err }

// Describe says in a line, for a person, why a model request failed: the
// status and the server's own message for an error answer ("401 Incorrect
// API key provided"), that the server could not be reached and why, or
// that the answer ended before it was whole. The URL is left out: it may
// carry credentials.
func Describe(err error) string {
	if apiErr, ok := errors.AsType[*openai.Error](err); ok {
		msg := strings.TrimSpace(apiErr.Message)
		if msg == "" {
			msg = http.StatusText(apiErr.StatusCode)
		}
		return fmt.Sprintf("%d %s", apiErr.StatusCode, msg)
	}
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return "could not reach the model: " + ue.Err.Error()
	}
	if errors.Is(err, ErrIncomplete) {
		return "its answer ended before it was whole"
	}
	if re, ok := errors.AsType[*ReplyError](err); ok {
		switch re.FinishReason {
		case "length":
			return "its reply was cut at the token limit (finish reason length)"
		case "content_filter":
			return "its reply was withheld by a content filter (finish reason content_filter)"
		}
		return "its reply was not a whole answer (finish reason " + re.FinishReason + ")"
	}
	if ae, ok := errors.AsType[*trace.AttemptError](err); ok && ae.Err != nil {
		return ae.Err.Error()
	}
	return err.Error()
}

// Refused reports whether err says the model's server refused the run
// itself rather than one request: a 401, 403 or 404, or a server that could
// not be reached at all. Sending it another request, the landing call
// included, would only be refused again.
func Refused(err error) bool {
	if apiErr, ok := errors.AsType[*openai.Error](err); ok {
		switch apiErr.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
			return true
		}
		return false
	}
	if oe, ok := errors.AsType[*net.OpError](err); ok {
		return oe.Op == "dial"
	}
	_, dns := errors.AsType[*net.DNSError](err)
	return dns
}
