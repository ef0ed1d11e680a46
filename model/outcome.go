package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
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

// ErrNotModelServer is matched by every [*NotServerError]: the base URL
// answered, but not as an OpenAI-compatible model server does.
var ErrNotModelServer = errors.New("model: not an OpenAI-compatible model server")

// NotServerError reports a server that answered a streamed chat completion
// request with a success status and no event stream: an HTML page, an
// empty body, JSON of any shape, anything the SDK cannot read a chunk
// from. It is not a model server, or not one this client can talk to, and
// asking it again, or asking it to land, would get the same answer (issue
// 24): [Classify] makes it [trace.Invalid], which is not retried, and
// [Refused] reports it. An answer with an event stream's media type that
// ends before its first event is a stream cut short ([ErrIncomplete]),
// not this: a model server may drop a connection. It matches
// [ErrNotModelServer].
type NotServerError struct {
	URL         string // the base URL, without credentials or query
	Status      int    // the status it answered
	ContentType string // the media type it answered; empty when it sent none
	Empty       bool   // reports whether its answer had no body at all
}

func (e *NotServerError) Error() string { return "model: " + e.words() }

// words says it for a person: "http://127.0.0.1:8000/v1 is not an
// OpenAI-compatible model server: it answered 200 text/html".
func (e *NotServerError) words() string {
	what := e.ContentType
	switch {
	case e.Empty:
		what = "with an empty body"
	case what == "":
		what = "with no content type"
	}
	return fmt.Sprintf("%s is not an OpenAI-compatible model server: it answered %d %s", e.URL, e.Status, what)
}

// Is reports whether target is [ErrNotModelServer].
func (e *NotServerError) Is(target error) bool { return target == ErrNotModelServer }

// notServer returns the failure of an attempt whose answer, as counted by
// c, was a success status with no event stream and nothing in it the SDK
// could read as a chunk or a keepalive; nil when it was not that.
func (c *counter) notServer() *NotServerError {
	if c.url == nil || c.status < 200 || c.status > 299 || c.keepalives.Load() > 0 {
		return nil
	}
	media, _, err := mime.ParseMediaType(c.contentType)
	if err != nil {
		media = strings.ToLower(strings.TrimSpace(c.contentType))
	}
	if media == "text/event-stream" {
		return nil
	}
	return &NotServerError{URL: baseURL(c.url), Status: c.status, ContentType: media, Empty: c.bytes.Load() == 0}
}

// baseURL is the base URL of the chat completions (or responses) request u, without its
// credentials, query or fragment: what a person typed as --base-url, and
// safe to print.
func baseURL(u *url.URL) string {
	v := *u
	v.User, v.RawQuery, v.ForceQuery, v.Fragment, v.RawFragment = nil, "", false, "", ""
	v.Path = strings.TrimSuffix(strings.TrimSuffix(v.Path, "/chat/completions"), "/responses")
	v.RawPath = ""
	return v.String()
}

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
	if errors.Is(err, ErrNotModelServer) {
		ae.Outcome = trace.Invalid // asking again gets the same page
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
// API key provided"), that the server could not be reached and why, that
// it is not a model server ("http://127.0.0.1:8000/v1 is not an
// OpenAI-compatible model server: it answered 200 text/html"), or that the
// answer ended before it was whole. A URL is given only as the base URL of
// a [*NotServerError], without credentials or query: it may carry them.
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
	if ns, ok := errors.AsType[*NotServerError](err); ok {
		return ns.words()
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
// itself rather than one request: a 401, 403 or 404, a server that could
// not be reached at all, or one that is not a model server
// ([ErrNotModelServer]). Sending it another request, the landing call
// included, would only be refused again.
func Refused(err error) bool {
	if errors.Is(err, ErrNotModelServer) {
		return true
	}
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
