package kit

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/glidepath/glidepath/budget"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The _meta fields of an MCP tools/call that carry what the headers of
// SPEC §5 carry (SPEC §5b).
const (
	// MetaBudgetRemaining is the caller's lease, a JSON integer of
	// milliseconds: Budget-Remaining-Ms.
	MetaBudgetRemaining = "io.github.glidepath/budget-remaining-ms"
	// MetaIdempotencyKey is the call's key, a string: Idempotency-Key.
	MetaIdempotencyKey = "io.github.glidepath/idempotency-key"
)

// metaPrefix begins the names of the other _meta fields the kit writes: a
// tool's manifest fields, and a failed call's retryable and code.
const metaPrefix = "io.github.glidepath/"

// An mcpSide is a Server's MCP side, made when MCP is first served: an sdk
// server offering the Server's tools, its streamable HTTP handler, and a
// context that ends when the Server closes. Every tools/call watches that
// context, so that once the Server closed no request waits on a handler.
type mcpSide struct {
	server  *mcp.Server
	handler http.Handler
	closed  context.Context
	close   context.CancelCauseFunc

	mu         sync.Mutex                 // guards the fields below
	calls      int                        // tools/call requests not yet answered
	idle       chan struct{}              // closed once closed has ended and no call is left to answer
	idleClosed bool                       // reports whether idle is closed
	posts      map[string]context.Context // the HTTP POSTs being served, by their postHeader
}

// postHeader tells a tools/call which HTTP POST brought it: the sdk gives
// a call the POST's header but not its context, which ends when the
// client closes the request's stream.
const postHeader = "Glidepath-Kit-Post"

// mcpOn returns s's MCP side, making it on first use.
func (s *Server) mcpOn() *mcpSide {
	s.init()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mcp != nil {
		return s.mcp
	}
	m := &mcpSide{server: mcp.NewServer(&mcp.Implementation{Name: "glidepath-kit", Version: "1"}, &mcp.ServerOptions{
		// Tools only: the sdk's default capabilities claim logging too.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})}
	m.closed, m.close = context.WithCancelCause(context.Background())
	m.idle = make(chan struct{})
	m.posts = make(map[string]context.Context)
	if s.closed {
		m.close(ErrClosed)
	}
	for _, t := range s.order {
		m.add(s, t)
	}
	// Stateful, the sdk's default: a session is what routes a client's
	// notifications/cancelled to the request it cancels.
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return m.server }, nil)
	m.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m.closed.Err() != nil {
			writeError(w, http.StatusServiceUnavailable, ErrClosed.Error(), true)
			return
		}
		if r.Method == http.MethodPost {
			id := rand.Text()
			r = r.WithContext(r.Context())
			r.Header = r.Header.Clone()
			r.Header.Set(postHeader, id) // whatever the client sent
			m.mu.Lock()
			m.posts[id] = r.Context()
			m.mu.Unlock()
			defer func() {
				m.mu.Lock()
				delete(m.posts, id)
				m.mu.Unlock()
			}()
		}
		streamable.ServeHTTP(w, r)
	})
	s.mcp = m
	return m
}

// add offers t over MCP. s.mu is held.
func (m *mcpSide) add(s *Server, t *Tool) {
	schema, err := mcpSchema(t.Parameters)
	if err != nil {
		s.logger().Error("kit: tool not offered over MCP", "tool", t.Name, "err", err)
		return
	}
	meta := mcp.Meta{
		metaPrefix + "effect":      t.Effect,
		metaPrefix + "cancellable": t.Cancellable,
		metaPrefix + "p50-ms":      t.P50.Milliseconds(),
		metaPrefix + "p95-ms":      t.P95.Milliseconds(),
	}
	if t.Agent {
		meta[metaPrefix+"agent"] = true
	}
	m.server.AddTool(&mcp.Tool{
		Meta:        meta,
		Name:        t.Name,
		Description: t.Description,
		InputSchema: schema,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: t.Effect == Read},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return s.serveMCPCall(ctx, req, t, m)
	})
}

// mcpSchema returns Parameters as an MCP inputSchema, which must say
// "type":"object"; SPEC §5 leaves that implicit, arguments being an object
// anyway. Parameters is a compacted JSON object (Register made it so).
func mcpSchema(params json.RawMessage) (json.RawMessage, error) {
	var schema map[string]any
	json.Unmarshal(params, &schema)
	typ, ok := schema["type"]
	switch {
	case typ == "object":
		return params, nil
	case ok:
		return nil, fmt.Errorf(`kit: Parameters has "type" %s, and MCP requires "object"`, shown(typ))
	case string(params) == "{}":
		return json.RawMessage(`{"type":"object"}`), nil
	}
	// Spliced in rather than re-encoded, which would turn every number of
	// the schema into a float64.
	return append(json.RawMessage(`{"type":"object",`), params[1:]...), nil
}

// enter counts a tools/call until its context ends, which the sdk ends
// once it has written the answer.
func (m *mcpSide) enter(ctx context.Context) {
	m.mu.Lock()
	m.calls++
	m.mu.Unlock()
	context.AfterFunc(ctx, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.calls--
		m.idleCheck()
	})
}

// idleCheck closes idle once closed has ended and no call is left to
// answer. m.mu is held.
func (m *mcpSide) idleCheck() {
	if m.closed.Err() != nil && m.calls == 0 && !m.idleClosed {
		m.idleClosed = true
		close(m.idle)
	}
}

// shut ends every tools/call's wait, then, once they are answered, every
// session, or leaves that to a later shut if ctx ends first. The sessions
// end only then because the sdk drops the answers to the requests in
// flight when a session closes.
func (m *mcpSide) shut(ctx context.Context) {
	m.close(ErrClosed)
	m.mu.Lock()
	m.idleCheck()
	m.mu.Unlock()
	select {
	case <-m.idle:
	case <-ctx.Done():
		return
	}
	for ss := range m.server.Sessions() {
		ss.Close()
	}
}

// MCPHandler returns the [http.Handler] that serves s's tools over MCP's
// streamable HTTP transport, to mount beside s at a path such as /mcp (see
// the package documentation, # MCP). Every call returns the same handler.
// Once s is closed it answers 503.
func (s *Server) MCPHandler() http.Handler {
	return s.mcpOn().handler
}

// servingKey marks the context of a session that [Server.ServeMCP]
// serves: its value is the context whose end ends the session's calls.
type servingKey struct{}

// ServeMCP serves s's tools over MCP to one client over t, such as
// &mcp.StdioTransport{} for a server that an MCP client starts as a
// command (see the package documentation, # MCP). It blocks until the
// client ends the session or ctx ends, and returns nil, or until s closes,
// and returns [ErrClosed]. When ctx ends, the calls still running end with
// cause [ErrClosed] and are not answered. A handler that ignores its
// context may outlive ServeMCP: [Server.Close] waits for it.
func (s *Server) ServeMCP(ctx context.Context, t mcp.Transport) error {
	m := s.mcpOn()
	if m.closed.Err() != nil {
		return ErrClosed
	}
	// The session's calls end when ctx ends or s closes; the session
	// itself ends when ctx ends, or when Shutdown ends it once its calls
	// are answered.
	served, stop := context.WithCancel(ctx)
	defer stop()
	unwatch := context.AfterFunc(m.closed, stop)
	defer unwatch()
	err := m.server.Run(context.WithValue(ctx, servingKey{}, served), t)
	switch {
	case m.closed.Err() != nil:
		return ErrClosed
	case ctx.Err() != nil:
		return nil
	case err != nil:
		return fmt.Errorf("kit: mcp: %w", err)
	}
	return nil
}

// serveMCPCall answers a tools/call of t.
func (s *Server) serveMCPCall(ctx context.Context, req *mcp.CallToolRequest, t *Tool, m *mcpSide) (*mcp.CallToolResult, error) {
	m.enter(ctx)
	meta := req.Params.GetMeta()
	key, err := metaKey(meta)
	if err != nil {
		return nil, invalidParams(err)
	}
	values, err := metaLease(meta)
	if err != nil {
		return nil, invalidParams(err)
	}
	args, err := arguments(req.Params.Arguments)
	if err != nil {
		return nil, invalidParams(err)
	}
	// wait is the request's own context, as the HTTP request's is for an
	// HTTP call, with the causes the kit gives: it ends when the request
	// does, when the HTTP POST that brought it does, and when its
	// session's serving ends or s closes.
	wait, endWait := context.WithCancelCause(context.WithoutCancel(ctx))
	defer endWait(nil) // once the handler returned, or wait ended already
	unwatch := context.AfterFunc(ctx, func() {
		if context.Cause(ctx) == context.Canceled {
			// The sdk's doing on notifications/cancelled; with a cause,
			// the connection broke.
			endWait(cancelled(t))
			return
		}
		endWait(ErrCallerGone)
	})
	defer unwatch()
	if post := m.post(req.Extra); post != nil {
		unpost := context.AfterFunc(post, func() { endWait(cancelled(t)) })
		defer unpost()
	}
	served := m.closed
	if v, ok := ctx.Value(servingKey{}).(context.Context); ok {
		served = v // which also ends when s closes
	}
	unserve := context.AfterFunc(served, func() { endWait(ErrClosed) })
	defer unserve()

	base, cancelBase := context.WithCancelCause(wait)
	hctx, cancelDeadline, lease, err := receive(base, values, t.Max)
	if err != nil {
		cancelBase(nil)
		return nil, invalidParams(leaseError(err))
	}
	a := &arrival{tool: t, key: key, keyName: MetaIdempotencyKey, args: args, lease: lease, mcp: true,
		ctx: hctx, cancel: cancelBase,
		release: func() {
			cancelDeadline()
			cancelBase(nil)
		}}
	if context.Cause(hctx) == budget.ErrDeadline {
		// No time left: as over HTTP, the handler never runs.
		a.release()
		return toolResult(Record{State: Failed, Message: noTimeLeft(t.Name, MetaBudgetRemaining, values[0]), Code: CodeDeadline}), nil
	}
	out, ref, ok := s.call(wait, a, &mcpFollower{ctx: ctx, session: req.Session, token: req.Params.GetProgressToken()})
	switch {
	case ref != nil:
		// A refusal says nothing of the call's outcome: it is an error of
		// the request, not a failed call.
		code := int64(jsonrpc.CodeInternalError)
		if ref.status == http.StatusUnprocessableEntity {
			code = jsonrpc.CodeInvalidParams
		}
		return nil, &jsonrpc.Error{Code: code, Message: ref.message}
	case !ok:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("kit: tool %s: %v", t.Name, context.Cause(wait))}
	}
	return toolResult(out), nil
}

// cancelled is the cause a call's handler gets when its MCP caller
// cancels it: with notifications/cancelled, or over HTTP by closing the
// request's stream (SPEC §5b). Only a Cancellable tool's handler gets
// [ErrCancelled], as from the cancel endpoint; another's caller just
// stopped waiting, as when an HTTP caller hangs up.
func cancelled(t *Tool) error {
	if t.Cancellable {
		return ErrCancelled
	}
	return ErrCallerGone
}

// post returns the context of the HTTP POST that brought a request, or
// nil when none did.
func (m *mcpSide) post(extra *mcp.RequestExtra) context.Context {
	if extra == nil || extra.Header == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.posts[extra.Header.Get(postHeader)]
}

func invalidParams(err error) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
}

// metaKey returns the call's idempotency key.
func metaKey(meta map[string]any) (string, error) {
	v, ok := meta[MetaIdempotencyKey]
	if !ok {
		// A key no retry can know: the call is not idempotent.
		return "mcp_" + rand.Text(), nil
	}
	k, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("kit: bad _meta %s %s: must be a string", MetaIdempotencyKey, shown(v))
	}
	if why := badKey(k); why != "" {
		return "", fmt.Errorf("kit: bad _meta %s: %s", MetaIdempotencyKey, why)
	}
	return k, nil
}

// metaLease returns the call's lease as Budget-Remaining-Ms values for
// [receive] (nil when there is none), so that it is read exactly as the
// header is. The sdk decodes a JSON number as a float64, which is written
// back as its decimal digits: a fraction or a sign stays visible to the
// parser.
func metaLease(meta map[string]any) ([]string, error) {
	v, ok := meta[MetaBudgetRemaining]
	if !ok {
		return nil, nil
	}
	f, ok := v.(float64)
	if !ok {
		return nil, fmt.Errorf("kit: bad _meta %s %s: not a JSON integer", MetaBudgetRemaining, shown(v))
	}
	return []string{strconv.FormatFloat(f, 'f', -1, 64)}, nil
}

// leaseError names the _meta field in what budget said of its value.
func leaseError(err error) error {
	if e, ok := errors.AsType[*budget.HeaderError](err); ok {
		return fmt.Errorf("kit: bad _meta %s %s: %s", MetaBudgetRemaining, e.Value, e.Reason)
	}
	return err
}

// shown renders a _meta value for a message, as JSON cut to 64 bytes.
func shown(v any) string {
	data, _ := json.Marshal(v) // it was decoded from JSON
	if len(data) > 64 {
		data = data[:64]
	}
	return string(data)
}

// toolResult is a call's outcome as MCP answers it: an output as text
// content holding its JSON, and as structured content too when it is an
// object; a failure as an error result whose text is the message.
func toolResult(rec Record) *mcp.CallToolResult {
	if rec.State == Done {
		var b bytes.Buffer
		err := json.Compact(&b, rec.Output)
		if err == nil {
			res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}
			if b.Bytes()[0] == '{' {
				res.StructuredContent = json.RawMessage(b.Bytes())
			}
			return res
		}
		// As in writeJSON: a stored output that is not JSON.
		rec = Record{State: Failed, Message: encodingFailure(err).Message}
	}
	msg := rec.Message
	meta := mcp.Meta{metaPrefix + "retryable": rec.Retryable}
	if rec.Code != "" {
		msg += " (" + rec.Code + ")"
		meta[metaPrefix+"code"] = rec.Code
	}
	return &mcp.CallToolResult{Meta: meta, IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// An mcpFollower relays a run's progress to an MCP request as
// notifications/progress, when its caller sent a progressToken.
type mcpFollower struct {
	ctx     context.Context // the request's: the sdk sends what is sent with it on the request's own stream
	session *mcp.ServerSession
	token   any   // nil: the caller wants no progress
	sent    bool  // reports whether a notification was sent
	units   int64 // the last units sent
}

func (f *mcpFollower) follow(wait context.Context, ru *run) bool {
	for {
		var changed <-chan struct{}
		if f.token != nil {
			var p progress
			var has bool
			p, has, changed = ru.latest()
			f.progress(p, has)
		}
		select {
		case <-ru.done:
			if f.token != nil {
				// The last report may have come just before the end.
				p, has, _ := ru.latest()
				f.progress(p, has)
			}
			return true
		case <-changed:
		case <-wait.Done():
			return false
		}
	}
}

// progress sends p unless its units are not above those already sent to
// this request, which may have followed an earlier attempt: units strictly
// increase per request.
func (f *mcpFollower) progress(p progress, has bool) {
	if !has || f.sent && p.Units <= f.units {
		return
	}
	f.sent, f.units = true, p.Units
	// A notification that cannot be sent is lost, not fatal: the answer
	// may still get through.
	f.session.NotifyProgress(f.ctx, &mcp.ProgressNotificationParams{
		ProgressToken: f.token,
		Progress:      float64(p.Units),
		Total:         float64(p.Total),
		Message:       p.Message,
	})
}
