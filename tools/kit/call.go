package kit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/glidepath/glidepath/budget"
)

// maxMessage bounds a progress message, so that progress events stay far
// below any client's bound on event size.
const maxMessage = 1 << 10

// maxKey bounds an Idempotency-Key.
const maxKey = 255

// A run is one attempt of a call in this process: a handler goroutine, or
// a request that claimed the call and is asking the store whether to start
// one. Requests for the same call follow it instead of starting another.
type run struct {
	id     CallID
	args   string                  // the arguments' SHA-256
	cancel context.CancelCauseFunc // ends the handler's context
	done   chan struct{}           // closed once out is set
	out    Record                  // the attempt's outcome; read only after done is closed

	mu      sync.Mutex // guards the fields below
	started bool       // reports whether the handler runs
	ended   bool       // reports whether the handler returned
	has     bool       // reports whether prog holds an accepted report
	prog    progress
	changed chan struct{} // closed and replaced on each accepted report
}

type progress struct {
	Units   int64  `json:"units"`
	Total   int64  `json:"total"`
	Message string `json:"message"`
}

func (ru *run) report(units, total int64, message string) {
	ru.mu.Lock()
	defer ru.mu.Unlock()
	if ru.ended || units < 0 || ru.has && units <= ru.prog.Units {
		return
	}
	if len(message) > maxMessage {
		message = strings.ToValidUTF8(message[:maxMessage], "")
	}
	ru.has, ru.prog = true, progress{Units: units, Total: total, Message: message}
	close(ru.changed)
	ru.changed = make(chan struct{})
}

// latest returns the last accepted report, if any, and a channel closed at
// the next one.
func (ru *run) latest() (progress, bool, <-chan struct{}) {
	ru.mu.Lock()
	defer ru.mu.Unlock()
	return ru.prog, ru.has, ru.changed
}

// claim returns the call's run in this process, or makes one that the
// caller owns (own true) and must either start or release.
func (s *Server) claim(id CallID, args string, cancel context.CancelCauseFunc) (ru *run, own bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false, ErrClosed
	}
	if ru := s.runs[id]; ru != nil {
		return ru, false, nil
	}
	ru = &run{id: id, args: args, cancel: cancel, done: make(chan struct{}), changed: make(chan struct{})}
	if s.runs == nil {
		s.runs = make(map[CallID]*run)
	}
	s.runs[id] = ru
	s.active++
	return ru, true, nil
}

// release ends a run with its outcome and wakes the requests following it.
// The outcome is in the store already, so a request that finds no run next
// finds the outcome there.
func (s *Server) release(ru *run, out Record) {
	s.mu.Lock()
	delete(s.runs, ru.id)
	s.active--
	s.drainCheck()
	s.mu.Unlock()
	ru.out = out
	close(ru.done)
}

// live returns the progress units of a call whose handler runs in this
// process.
func (s *Server) live(id CallID) (units int64, ok bool) {
	s.mu.Lock()
	ru := s.runs[id]
	s.mu.Unlock()
	if ru == nil {
		return 0, false
	}
	ru.mu.Lock()
	defer ru.mu.Unlock()
	return ru.prog.Units, ru.started
}

// serveCall answers POST /tools/{name}.
func (s *Server) serveCall(w http.ResponseWriter, r *http.Request, t *Tool) {
	key, err := idempotencyKey(r.Header)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), false)
		return
	}
	// The handler's context ends with a cause of its own when the caller
	// hangs up, rather than net/http's bare context.Canceled.
	base, cancelBase := context.WithCancelCause(context.WithoutCancel(r.Context()))
	unwatch := context.AfterFunc(r.Context(), func() { cancelBase(ErrCallerGone) })
	// The deadline starts on arrival: the caller's budget was already
	// running while the request travelled.
	ctx, cancelDeadline, lease, err := receive(base, r.Header.Values(budget.Header), t.Max)
	if err != nil {
		unwatch()
		cancelBase(nil)
		writeError(w, http.StatusBadRequest, err.Error(), false)
		return
	}
	a := &arrival{tool: t, key: key, keyName: "Idempotency-Key", lease: lease, ctx: ctx, cancel: cancelBase,
		release: func() {
			unwatch()
			cancelDeadline()
			cancelBase(nil)
		}}
	if ctx.Err() != nil {
		// A call that arrives with no time left (Budget-Remaining-Ms: 0)
		// could only be cut: the handler never runs, and the answer says
		// whose time it was.
		a.release()
		writeJSON(w, http.StatusGatewayTimeout, errorBody{Error: failure{
			Message: noTimeLeft(t.Name, budget.Header, r.Header.Get(budget.Header)),
			Code:    CodeDeadline}})
		return
	}
	var status int
	a.args, status, err = readArguments(w, r, s.maxBody())
	if err != nil {
		a.release()
		writeError(w, status, err.Error(), false)
		return
	}
	rs := newResponder(w, r, s.keepaliveEvery())
	defer rs.stop()
	out, ref, ok := s.call(r.Context(), a, rs)
	switch {
	case ref != nil:
		rs.fail(ref.status, ref.message, ref.retryable)
	case ok:
		rs.answer(out)
	}
}

// receive makes the deadline of a call that brought values as its lease
// (the Budget-Remaining-Ms values, or their MCP twin; none: no lease), as
// [budget.Receive] computes it: min(lease, limit) from now. It returns the
// lease received, 0 when none was.
func receive(parent context.Context, values []string, limit time.Duration) (context.Context, context.CancelFunc, time.Duration, error) {
	var h http.Header
	if values != nil {
		h = http.Header{budget.Header: values}
	}
	ctx, cancel, err := budget.Receive(parent, h, limit)
	if err != nil || len(values) == 0 {
		return ctx, cancel, 0, err
	}
	lease, _ := budget.ParseRemaining(values[0]) // Receive accepted it
	return ctx, cancel, lease, nil
}

func noTimeLeft(tool, field, value string) string {
	return fmt.Sprintf("kit: no time left for tool %s: the caller's %s was %s", tool, field, value)
}

// An arrival is one request for a call, over either protocol: what it
// brought, and the contexts made for it.
type arrival struct {
	tool    *Tool
	key     string
	keyName string // what the caller's protocol calls the key, for messages
	args    json.RawMessage
	lease   time.Duration
	mcp     bool
	// ctx is the handler's context if this request starts the handler: it
	// ends at the call's deadline, or when cancel is called.
	ctx     context.Context
	cancel  context.CancelCauseFunc
	release func() // releases ctx's resources, once no handler runs on it
}

// A follower waits for a run on a request's behalf, relaying its
// progress to the caller: an HTTP [responder], or an MCP request.
type follower interface {
	// follow returns true once ru is done, or false when wait ends first
	// or the caller is gone.
	follow(wait context.Context, ru *run) bool
}

// A refusal is the kit's own answer to a request, not a call's outcome.
type refusal struct {
	status    int // as HTTP answers it
	message   string
	retryable bool
}

// call serves a: it starts the handler, or follows the attempt already
// running in this process, and returns the call's outcome, or a refusal.
// wait is the request's own context: a handler that ignores its deadline
// is still followed while wait lasts, so that a caller still listening
// gets the late answer. ok is false when wait ended first, and there is
// nobody left to answer. call owns a's contexts: it releases them, or
// hands them to the handler it starts.
func (s *Server) call(wait context.Context, a *arrival, f follower) (out Record, ref *refusal, ok bool) {
	// The contexts belong to this request until a handler starts on them;
	// then the handler's goroutine releases them when it returns.
	started := false
	defer func() {
		if !started {
			a.release()
		}
	}()
	t, key := a.tool, a.key
	id := CallID{Tool: t.Name, Key: key}
	sum := sha256.Sum256(a.args)
	hash := hex.EncodeToString(sum[:])
	for {
		ru, own, err := s.claim(id, hash, a.cancel)
		if err != nil {
			return Record{}, &refusal{http.StatusServiceUnavailable, err.Error(), true}, true
		}
		if ru.args != hash {
			return Record{}, &refusal{http.StatusUnprocessableEntity, reusedKey(a.keyName, key), false}, true
		}
		if !own {
			if !f.follow(a.ctx, ru) {
				return Record{}, &refusal{http.StatusServiceUnavailable, fmt.Sprintf("kit: the call with %s %s was still running when this request ended: %v", a.keyName, key, context.Cause(a.ctx)), true}, true
			}
			if ru.out.Final() {
				return ru.out, nil, true
			}
			continue // the attempt failed retryably: this request tries again
		}
		rec, ok, err := s.store.Begin(a.ctx, id, hash)
		if err != nil {
			msg := fmt.Sprintf("kit: idempotency store: %v", err)
			s.release(ru, Record{State: Failed, ArgsSHA256: hash, Message: msg, Retryable: true})
			return Record{}, &refusal{http.StatusServiceUnavailable, msg, true}, true
		}
		if !ok {
			s.release(ru, rec)
			switch {
			case rec.ArgsSHA256 != hash:
				return Record{}, &refusal{http.StatusUnprocessableEntity, reusedKey(a.keyName, key), false}, true
			case rec.State == Running:
				return Record{}, &refusal{http.StatusConflict, fmt.Sprintf("kit: the call with %s %s is running in another process", a.keyName, key), true}, true
			}
			return rec, nil, true
		}
		started = true
		call := &Call{Tool: t.Name, Key: key, Args: a.args, Attempt: rec.Attempts, Lease: a.lease, MCP: a.mcp, run: ru}
		ru.mu.Lock()
		ru.started = true
		ru.mu.Unlock()
		// The run is counted in s.active until release: Close waits for
		// this goroutine.
		go func() {
			out := Record{State: Failed, Message: fmt.Sprintf("kit: tool %s: handler exited without returning", t.Name)}
			defer func() {
				ru.mu.Lock()
				ru.ended = true
				out.Units = ru.prog.Units
				ru.mu.Unlock()
				out.ArgsSHA256, out.Attempts = hash, rec.Attempts
				a.release()
				if err := s.store.Finish(context.WithoutCancel(a.ctx), id, out); err != nil {
					s.logger().Error("kit: idempotency store lost an outcome", "tool", t.Name, "key", key, "err", err)
				}
				s.release(ru, out)
			}()
			out = s.invoke(a.ctx, t, call)
		}()
		// The handler's context ends at the deadline; a handler that
		// ignores it is still followed, so that a caller still listening
		// gets the late answer.
		if f.follow(wait, ru) {
			return ru.out, nil, true
		}
		return Record{}, nil, false
	}
}

func reusedKey(keyName, key string) string {
	return fmt.Sprintf("kit: %s %s was used with other arguments", keyName, key)
}

// invoke runs the handler; a panic is recovered here, and only here, with
// its stack logged, and becomes a failed call.
func (s *Server) invoke(ctx context.Context, t *Tool, call *Call) (out Record) {
	defer func() {
		if p := recover(); p != nil {
			s.logger().Error("kit: tool panicked", "tool", t.Name, "key", call.Key, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			out = Record{State: Failed, Message: fmt.Sprintf("kit: tool %s panicked: %v", t.Name, p)}
		}
	}()
	v, err := t.Handler(ctx, call)
	if err != nil {
		return failed(ctx, t.Name, err)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return Record{State: Failed, Message: fmt.Sprintf("kit: tool %s: output is not JSON: %v", t.Name, err)}
	}
	return Record{State: Done, Output: data}
}

// failed turns a handler's error into a failed record. An error returned
// once the context ended is taken to be the context's doing, so the call
// may be tried again with the same key: that is how a read that timed out
// is retried (SPEC §2).
func failed(ctx context.Context, tool string, err error) Record {
	if e, ok := errors.AsType[*Error](err); ok {
		msg := e.Message
		if msg == "" {
			msg = fmt.Sprintf("kit: tool %s failed", tool)
		}
		return Record{State: Failed, Message: msg, Retryable: e.Retryable}
	}
	if ctx.Err() != nil {
		rec := Record{State: Failed, Message: fmt.Sprintf("kit: tool %s ended: %v", tool, context.Cause(ctx)), Retryable: true}
		if errors.Is(context.Cause(ctx), budget.ErrDeadline) {
			rec.Code = CodeDeadline // the caller's budget, not the tool's own Max
		}
		return rec
	}
	msg := err.Error()
	if msg == "" {
		msg = fmt.Sprintf("kit: tool %s failed", tool)
	}
	return Record{State: Failed, Message: msg}
}

func idempotencyKey(h http.Header) (string, error) {
	const name = "Idempotency-Key"
	v := h.Values(name)
	switch {
	case len(v) == 0:
		return "", errors.New("kit: missing Idempotency-Key header: every call needs a key minted once per logical call (SPEC §5)")
	case len(v) > 1:
		return "", errors.New("kit: Idempotency-Key header sent more than once")
	}
	k := strings.TrimSpace(v[0])
	if why := badKey(k); why != "" {
		return "", fmt.Errorf("kit: bad %s header: %s", name, why)
	}
	return k, nil
}

// badKey says why k cannot be an idempotency key, or returns "".
func badKey(k string) string {
	if k == "" || len(k) > maxKey {
		return fmt.Sprintf("must be 1 to %d characters", maxKey)
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return "only visible ASCII characters are allowed"
		}
	}
	return ""
}

// readArguments reads the body {"arguments":{…}} and returns the arguments
// compacted, or the status and error to answer with.
func readArguments(w http.ResponseWriter, r *http.Request, limit int64) (json.RawMessage, int, error) {
	var data []byte
	if r.Body != nil {
		var err error
		data, err = io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("kit: request body larger than %d bytes", limit)
		}
		if err != nil {
			return nil, http.StatusBadRequest, fmt.Errorf("kit: reading the request body: %v", err)
		}
	}
	var body struct {
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(data, &body); err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf(`kit: request body is not {"arguments":{…}}: %v`, err)
	}
	args, err := arguments(body.Arguments)
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	return args, 0, nil
}

// arguments checks a call's raw arguments and returns them compacted;
// none, or null, are {}.
func arguments(args json.RawMessage) (json.RawMessage, error) {
	if len(args) == 0 || string(args) == "null" {
		return json.RawMessage("{}"), nil
	}
	if args[0] != '{' {
		return nil, errors.New("kit: arguments must be a JSON object")
	}
	var b bytes.Buffer
	if err := json.Compact(&b, args); err != nil {
		return nil, fmt.Errorf("kit: arguments: %v", err)
	}
	return b.Bytes(), nil
}
