package cancel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/glidepath/glidepath/internal/redact"
)

// MaxAnswer bounds the body of a status or cancel answer that is read: a
// status carries a call's output, which is a tool's result, not a download.
const MaxAnswer = 1 << 20 // 1 MiB

// An Endpoint is a remote tool's call endpoints (SPEC §5): the tool lives at
// URL/tools/{Tool}, and a call with key K at URL/tools/{Tool}/calls/{K}.
type Endpoint struct {
	URL  string // the tool server's base URL U
	Tool string

	// Client sends the requests. Nil uses [http.DefaultClient], which has
	// no Timeout: every request is bounded by its context, that is by its
	// lease (SPEC §2: no client-level timeouts under a budget).
	Client *http.Client
}

// State is the state of a call as its tool reports it.
type State string

const (
	Running       State = "running"        // the tool is still working on it
	Done          State = "done"           // finished; its output is final
	Failed        State = "failed"         // finished with an error; not to be retried
	NeverReceived State = "never_received" // the tool has no record of the key: the call never arrived
)

// Status is a call's state, as answered by GET U/tools/{name}/calls/{key}.
type Status struct {
	State  State
	Output json.RawMessage // the call's output, as sent, when Done
	Units  int64           // progress units so far
}

// Status asks the tool for the state of the call with key:
// GET U/tools/{Tool}/calls/{key}. A 404 is an answer, not an error: the
// tool never received the call, and Status returns State NeverReceived. Any
// other failure is a [*RequestError] matching [ErrUnreachable]: a transport
// error or the end of ctx, a status code other than 200 and 404, an answer
// over [MaxAnswer], or a body that is not {"state":…,"output":…,"units":n}
// with state running, done or failed. It blocks until the answer or ctx's
// end, and never retries.
func (e Endpoint) Status(ctx context.Context, key Key) (Status, error) {
	code, body, rerr := e.do(ctx, http.MethodGet, key)
	if rerr != nil {
		return Status{}, rerr
	}
	switch code {
	case http.StatusOK:
	case http.StatusNotFound:
		return Status{State: NeverReceived}, nil
	default:
		return Status{}, e.fail(http.MethodGet, key, code, toolMessage(body))
	}
	if len(body) > MaxAnswer {
		return Status{}, e.fail(http.MethodGet, key, code, errTooLarge)
	}
	var a struct {
		State  *State          `json:"state"`
		Output json.RawMessage `json:"output"`
		Units  int64           `json:"units"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return Status{}, e.fail(http.MethodGet, key, code, fmt.Errorf("malformed answer: %w", err))
	}
	if a.State == nil {
		return Status{}, e.fail(http.MethodGet, key, code, errors.New(`malformed answer: no "state"`))
	}
	switch *a.State {
	case Running, Done, Failed:
	default:
		return Status{}, e.fail(http.MethodGet, key, code, fmt.Errorf("malformed answer: unknown state %q", truncate(string(*a.State))))
	}
	return Status{State: *a.State, Output: a.Output, Units: a.Units}, nil
}

// Cancel asks the tool to stop the call with key:
// DELETE U/tools/{Tool}/calls/{key}. Any 2xx (the protocol's is 202) means
// the tool accepted, and Cancel returns nil; that the call has ended is
// learned from [Endpoint.Status], not here. A 404 is a [*RequestError]
// matching [ErrUnknownCall]; any other failure one matching [ErrUnreachable].
// It blocks until the answer or ctx's end; [Send] runs it on its own lease.
func (e Endpoint) Cancel(ctx context.Context, key Key) error {
	code, body, rerr := e.do(ctx, http.MethodDelete, key)
	if rerr != nil {
		return rerr
	}
	if code >= 200 && code < 300 {
		return nil
	}
	return e.fail(http.MethodDelete, key, code, toolMessage(body))
}

// do sends one request and reads at most MaxAnswer+1 bytes of its answer,
// so that the caller can tell an answer that is too large. It returns the
// status code and body, or the error of a request that got no answer.
func (e Endpoint) do(ctx context.Context, method string, key Key) (int, []byte, error) {
	u, err := e.callURL(key)
	if err != nil {
		return 0, nil, &RequestError{Method: method, URL: redact.URL(e.URL), Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return 0, nil, &RequestError{Method: method, URL: redact.URL(u), Err: err}
	}
	req.Header.Set("Accept", "application/json")
	client := e.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, &RequestError{Method: method, URL: redact.URL(u), Err: transportCause(ctx, err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer+1))
	if err != nil {
		return 0, nil, &RequestError{Method: method, URL: redact.URL(u), Code: resp.StatusCode, Err: transportCause(ctx, err)}
	}
	return resp.StatusCode, body, nil
}

func (e Endpoint) fail(method string, key Key, code int, err error) error {
	u, _ := e.callURL(key) // it was built once already
	return &RequestError{Method: method, URL: redact.URL(u), Code: code, Err: err}
}

// callURL is U/tools/{Tool}/calls/{key}, each name one escaped segment.
func (e Endpoint) callURL(key Key) (string, error) {
	// An empty or dot segment would be cleaned out of the path and the
	// request would reach another resource, whose 404 would read as "never
	// received": the one answer that licenses sending a write again.
	for _, seg := range [...]struct{ what, s string }{{"tool name", e.Tool}, {"idempotency key", string(key)}} {
		if seg.s == "" || seg.s == "." || seg.s == ".." {
			return "", fmt.Errorf("bad %s %q", seg.what, seg.s)
		}
	}
	return url.JoinPath(e.URL, "tools", url.PathEscape(e.Tool), "calls", url.PathEscape(string(key)))
}

var errTooLarge = errors.New("answer larger than 1 MiB")

// transportCause returns the cause of a failed request: ctx's cause when ctx
// has ended (which names the lease or deadline that ended it), otherwise
// the transport error without the *url.Error wrapping, whose message would
// repeat the method and URL.
func transportCause(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err
	}
	return err
}

// toolMessage returns the message of an HTTP error answer
// {"error":{"message":"…"}}, or nil when the body is not one.
func toolMessage(body []byte) error {
	var a struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &a) != nil || a.Error.Message == "" {
		return nil
	}
	return errors.New("tool says: " + truncate(a.Error.Message))
}

// truncate cuts s to 256 bytes, at a rune boundary, for error messages.
func truncate(s string) string {
	const n = 256
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
