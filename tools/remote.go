package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync/atomic"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/internal/ssecount"
	"github.com/glidepath/glidepath/trace"
	sse "github.com/tmaxmax/go-sse"
	"go.opentelemetry.io/otel/propagation"
)

// MaxAnswer bounds what is read of a remote tool's answer: a JSON answer
// whole, and each event of an event stream (whose count is not bounded:
// a long job may send many heartbeats).
const MaxAnswer = 1 << 20 // 1 MiB

// maxErrorBody bounds what is read of an HTTP error answer.
const maxErrorBody = 64 << 10

// Remote returns a tool served by the tool server at baseURL (SPEC §5): an
// attempt is POST baseURL/tools/{name} with {"arguments":…} and the headers
// Idempotency-Key (the logical call's key, the same on every attempt) and
// Budget-Remaining-Ms (the attempt's lease). The answer is either JSON
// {"output":…} or a finite event stream of progress events, then one result
// or error event. A cut call is cancelled at baseURL/tools/{name}/calls/{key}
// when spec.Cancellable; a write whose outcome is unknown is reconciled
// there.
//
// client carries the requests; nil uses one with no Timeout, since a lease
// bounds every request. A client-wide Timeout would cut a healthy long
// stream, so do not set one.
func Remote(spec Spec, baseURL string, client *http.Client) Tool {
	if client == nil {
		client = &http.Client{}
	}
	// The type can always send a DELETE, but a server serves the cancel
	// endpoint only where its manifest or entry says cancellable (SPEC
	// §5): without it, cancelling is turned off, the one way a spec may
	// speak of a capability.
	if !spec.Cancellable {
		spec.NotCancellable = true
	}
	return &remoteTool{spec: spec, url: baseURL, client: client}
}

type remoteTool struct {
	spec   Spec
	url    string
	client *http.Client
	file   string // the tools file whose entry built it; empty when built in code
}

// ToolsFile returns the tools file whose entry built the tool, if any.
func (t *remoteTool) ToolsFile() string { return t.file }

func (t *remoteTool) Spec() Spec { return t.spec }

func (t *remoteTool) endpoint() cancel.Endpoint {
	return cancel.Endpoint{URL: t.url, Tool: t.spec.Name, Client: t.client}
}

// Cancel sends DELETE U/tools/{name}/calls/{key}; the Registry calls it only
// when the spec says the tool is Cancellable (see [Remote]).
func (t *remoteTool) Cancel(ctx context.Context, key cancel.Key) error {
	return t.endpoint().Cancel(ctx, key)
}

// Status reads GET U/tools/{name}/calls/{key}.
func (t *remoteTool) Status(ctx context.Context, key cancel.Key) (cancel.Status, error) {
	return t.endpoint().Status(ctx, key)
}

func (t *remoteTool) baseURL() string { return t.url }

func (t *remoteTool) check() *fieldErr {
	if err := checkURL(t.url); err != nil {
		return &fieldErr{"url", err}
	}
	return nil
}

// checkURL accepts an absolute http or https URL.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return errors.New("not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("not an http or https URL")
	case u.Host == "":
		return errors.New("no host")
	}
	return nil
}

func (t *remoteTool) Attempt(ctx context.Context, call *Call) Answer {
	u, err := url.JoinPath(t.url, "tools", url.PathEscape(t.spec.Name))
	if err != nil {
		return Answer{Err: fmt.Errorf("%w: bad URL: %v", ErrBadAnswer, err), Outcome: trace.Invalid, NotSent: true}
	}
	// Whether the request went out decides whether a failed write may
	// have happened. http.Transport calls GetConn first and WroteHeaders
	// once the headers are out; a transport that calls neither tells us
	// nothing, and then the request may have gone out.
	var traced, wrote atomic.Bool
	hooks := &httptrace.ClientTrace{
		GetConn:      func(string) { traced.Store(true) },
		WroteHeaders: func() { wrote.Store(true) },
	}
	body := make([]byte, 0, len(call.Args)+16)
	body = append(append(append(body, `{"arguments":`...), call.Args...), '}')
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, hooks), http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return Answer{Err: fmt.Errorf("%w: bad URL: %v", ErrBadAnswer, err), Outcome: trace.Invalid, NotSent: true}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream, application/json")
	req.Header.Set("Idempotency-Key", string(call.Key))
	// The attempt's span, when the run has one, is the tool's parent.
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	req.Header.Set(budget.Header, call.Lease.Millis())
	resp, err := t.client.Do(req)
	if err != nil {
		// Not sent only when the transport began (GetConn) and the
		// headers never went out.
		return Answer{Err: err, NotSent: traced.Load() && !wrote.Load()}
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return errorAnswer(resp)
	}
	out, err := readAnswer(resp.Body, resp.Header.Get("Content-Type"), call)
	ans := Answer{Output: out, Err: err}
	te, isTool := errors.AsType[*ToolError](err)
	switch {
	case err == nil:
	case isTool && te.Code == CodeDeadline:
		ans.Outcome, ans.Retry = trace.GaveUp, te.Retryable // our lease ended it, at the tool's end
	case isTool:
		ans.Outcome, ans.Retry = trace.UpstreamError, te.Retryable
	case errors.Is(err, ErrBadAnswer):
		ans.Outcome = trace.Invalid
	}
	return ans
}

// errorAnswer turns an HTTP error answer into the attempt's failure, by
// status: 429 rate_limited; 408, 500, 502, 503, 504 upstream_error and
// retried; other 5xx upstream_error; anything else invalid
// ([trace.OutcomeOfStatus], [trace.RetryableStatus]); and, whatever the
// status, gave_up when the tool says our own deadline ended it
// ([CodeDeadline]).
func errorAnswer(resp *http.Response) Answer {
	code := resp.StatusCode
	ans := Answer{Status: code, Header: resp.Header}
	ans.Outcome, ans.Retry = trace.OutcomeOfStatus(code), trace.RetryableStatus(code)
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody)) // a cut body still says what it can
	var e struct {
		Error struct {
			Message   string `json:"message"`
			Retryable *bool  `json:"retryable"`
			Code      string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &e) == nil && e.Error.Message != "" {
		ans.Err = &ToolError{Message: e.Error.Message, Retryable: ans.Retry, Code: e.Error.Code}
		if e.Error.Code == CodeDeadline {
			// Our lease ended it, at the tool's end: ours, and retried as
			// the tool says, like an attempt our own lease cut.
			ans.Outcome = trace.GaveUp
			ans.Retry = e.Error.Retryable != nil && *e.Error.Retryable
		}
	} else {
		ans.Err = fmt.Errorf("HTTP %d", code)
	}
	return ans
}

// sink hears what an event stream says besides its result; a [*Call] is
// one.
type sink interface {
	Keepalive()
	Progress(units, total int64, msg string)
}

// readAnswer decodes a remote tool's successful answer: an event stream
// when contentType says text/event-stream, else JSON {"output":…}. It
// returns the output, or a [*ToolError] for an error event, an error
// matching [ErrBadAnswer] for an answer that is not the protocol's,
// [ErrIncomplete] for a stream that ended without a result, or the read
// error. It reads at most [MaxAnswer] bytes of JSON, and of each event.
func readAnswer(body io.Reader, contentType string, s sink) (json.RawMessage, error) {
	if mt, _, err := mime.ParseMediaType(contentType); err == nil && mt == "text/event-stream" {
		return readEvents(body, s)
	}
	data, err := io.ReadAll(io.LimitReader(body, MaxAnswer+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxAnswer {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrBadAnswer, MaxAnswer)
	}
	return decodeOutput(data)
}

// decodeOutput reads {"output":…}, as sent in a JSON answer or a result
// event.
func decodeOutput(data []byte) (json.RawMessage, error) {
	var a struct {
		Output json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadAnswer, err)
	}
	if a.Output == nil {
		return nil, fmt.Errorf(`%w: no "output"`, ErrBadAnswer)
	}
	return a.Output, nil
}

func readEvents(body io.Reader, s sink) (json.RawMessage, error) {
	cfg := &sse.ReadConfig{MaxEventSize: MaxAnswer}
	for ev, err := range sse.Read(ssecount.NewReader(body, s.Keepalive, nil), cfg) {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%w: an event larger than %d bytes", ErrBadAnswer, MaxAnswer)
		}
		if err != nil {
			return nil, err
		}
		switch ev.Type {
		case "progress":
			var p struct {
				Units   *int64 `json:"units"`
				Total   int64  `json:"total"`
				Message string `json:"message"`
			}
			// A heartbeat without units says nothing about progress;
			// it is not a reason to drop the call either.
			if json.Unmarshal([]byte(ev.Data), &p) == nil && p.Units != nil {
				s.Progress(*p.Units, p.Total, p.Message)
			}
		case "result":
			return decodeOutput([]byte(ev.Data))
		case "error":
			var e struct {
				Message   string `json:"message"`
				Retryable bool   `json:"retryable"`
				Code      string `json:"code"`
			}
			if err := json.Unmarshal([]byte(ev.Data), &e); err != nil {
				return nil, fmt.Errorf("%w: error event: %v", ErrBadAnswer, err)
			}
			if e.Message == "" {
				e.Message = "the tool reported an error without a message"
			}
			return nil, &ToolError{Message: e.Message, Retryable: e.Retryable, Code: e.Code}
		}
	}
	return nil, ErrIncomplete
}
