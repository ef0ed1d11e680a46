package kit

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

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

	mu         sync.Mutex              // guards the fields below
	calls      int                     // tools/call requests not yet answered
	idle       chan struct{}           // closed once closed has ended and no call is left to answer
	idleClosed bool                    // reports whether idle is closed
	streams    map[streamKey]*muteable // the streams of the HTTP requests being answered, by session and request
}

// A streamKey names one request of one streamable HTTP session: its
// Mcp-Session-Id and its JSON-RPC id as sent, compacted.
type streamKey struct {
	session, id string
}

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
	m.streams = make(map[streamKey]*muteable)
	if s.closed {
		m.close(ErrClosed)
	}
	for _, t := range s.order {
		m.add(s, t)
	}
	// Stateful, the sdk's default: a session is what routes a client's
	// notifications/cancelled to the request it cancels.
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return m.server }, nil)
	allowed := s.allowedOrigins()
	m.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m.closed.Err() != nil {
			writeError(w, http.StatusServiceUnavailable, ErrClosed.Error(), true)
			return
		}
		if origin, ok := r.Header["Origin"]; ok && !originAllowed(origin, r, allowed) {
			// SPEC §5b, and MCP's own transport rules: a browser's page of
			// another origin must not reach the tools (DNS rebinding).
			writeError(w, http.StatusForbidden, fmt.Sprintf("kit: mcp: origin %s is not allowed", shown(strings.Join(origin, ", "))), false)
			return
		}
		if r.Method == http.MethodPost {
			var done func()
			w, r, done = m.watchPost(w, r)
			if done == nil {
				return // answered: a body too large or unreadable
			}
			defer done()
		}
		streamable.ServeHTTP(w, r)
	})
	s.mcp = m
	return m
}

// watchPost reads the body of a streamable HTTP POST, to learn what the
// sdk does not tell: which requests it carries, so that the stream that
// answers them can be muted, and which requests a notifications/cancelled
// in it cancels, whose streams it mutes before the sdk hears of it. A
// cancelled request gets no response (SPEC §5b): the sdk would answer it
// with an error, which the client, having forgotten the request, reports
// as "unknown message ID". It returns what to serve the POST with and the
// func to call once it is served, or a nil func when it answered the POST
// itself.
func (m *mcpSide) watchPost(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request, func()) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, mcp.DefaultMaxRequestBodyBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mcp.DefaultMaxRequestBodyBytes), http.StatusRequestEntityTooLarge)
		} else {
			http.Error(w, "failed to read body", http.StatusBadRequest)
		}
		return nil, nil, nil
	}
	r = r.Clone(r.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	session := r.Header.Get("Mcp-Session-Id")
	calls, cancelled := scanMessages(body)
	m.mu.Lock()
	for _, id := range cancelled {
		if st := m.streams[streamKey{session, id}]; st != nil {
			st.mute()
		}
	}
	m.mu.Unlock()
	if len(calls) == 0 {
		return w, r, func() {}
	}
	st := &muteable{ResponseWriter: w}
	m.mu.Lock()
	for _, id := range calls {
		m.streams[streamKey{session, id}] = st
	}
	m.mu.Unlock()
	return st, r, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, id := range calls {
			if m.streams[streamKey{session, id}] == st {
				delete(m.streams, streamKey{session, id})
			}
		}
	}
}

// scanMessages returns the ids of the requests in a POST's body, a
// JSON-RPC message or a batch of them, and the ids that its
// notifications/cancelled cancel, each as its JSON compacted. What does
// not parse is left to the sdk to refuse.
func scanMessages(body []byte) (calls, cancelled []string) {
	var batch []json.RawMessage
	if json.Unmarshal(body, &batch) != nil {
		batch = []json.RawMessage{body}
	}
	for _, raw := range batch {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				RequestID json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		if json.Unmarshal(raw, &msg) != nil || msg.Method == "" {
			continue
		}
		if id := compact(msg.ID); id != "" && id != "null" {
			calls = append(calls, id)
		}
		if msg.Method == "notifications/cancelled" {
			if id := compact(msg.Params.RequestID); id != "" {
				cancelled = append(cancelled, id)
			}
		}
	}
	return calls, cancelled
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return ""
	}
	return b.String()
}

// A muteable is the stream of a streamable HTTP POST that a cancel can
// mute: what the sdk writes to it after is dropped, the response to the
// cancelled request among it, and the stream ends with the handler. It
// never holds a lock across a write: a response racing the cancel may
// still go out, as MCP allows.
type muteable struct {
	http.ResponseWriter
	muted atomic.Bool
}

func (w *muteable) mute() { w.muted.Store(true) }

func (w *muteable) Write(b []byte) (int, error) {
	if w.muted.Load() {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets [http.ResponseController] flush the stream.
func (w *muteable) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// allowedOrigins returns the origins of [Server.AllowedOrigins] as
// [originAllowed] compares them.
func (s *Server) allowedOrigins() map[string]bool {
	allowed := make(map[string]bool, len(s.AllowedOrigins))
	for _, o := range s.AllowedOrigins {
		allowed[normalOrigin(o)] = true
	}
	return allowed
}

// originAllowed reports whether a request whose Origin header has the
// values origin may be served: an origin of allowed, or the server's own
// origin on loopback (a page the server itself would serve, which no
// other site can be: a rebinding site's Origin names its own host).
func originAllowed(origin []string, r *http.Request, allowed map[string]bool) bool {
	if len(origin) != 1 {
		return false
	}
	o := normalOrigin(origin[0])
	if allowed[o] {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host != strings.ToLower(r.Host) {
		return false
	}
	return loopbackHost(u.Hostname())
}

// normalOrigin lowercases an origin and cuts a trailing slash, as
// browsers send none.
func normalOrigin(o string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(o)), "/")
}

func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
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
	err := m.server.Run(context.WithValue(ctx, servingKey{}, served), &hushed{Transport: t})
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
	// does (notifications/cancelled, or its session's connection broke),
	// and when its session's serving ends or s closes. The HTTP POST that
	// brought it ending is not a cancel (SPEC §5b): a network blip must
	// not kill a handler, whose outcome its key still finds.
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
// cancels it with notifications/cancelled (SPEC §5b), the only cancel:
// over HTTP, a request's stream that closes is not one. Only a
// Cancellable tool's handler gets
// [ErrCancelled], as from the cancel endpoint; another's caller just
// stopped waiting, as when an HTTP caller hangs up.
func cancelled(t *Tool) error {
	if t.Cancellable {
		return ErrCancelled
	}
	return ErrCallerGone
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

// hushed is a transport of [Server.ServeMCP] whose connection sends no
// response to a request the client cancelled (SPEC §5b): the sdk answers
// one with an error, which a client that has forgotten the request reports
// as "unknown message ID". Over streamable HTTP, [mcpSide.watchPost] does
// the same to the request's stream.
type hushed struct {
	mcp.Transport
}

func (t *hushed) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &hushedConn{Connection: c, pending: make(map[jsonrpc.ID]bool)}, nil
}

// SupportsProtocolVersion is the wrapped transport's, which the sdk asks.
func (t *hushed) SupportsProtocolVersion(version string) bool {
	if pv, ok := t.Transport.(mcp.ProtocolVersionSupporter); ok {
		return pv.SupportsProtocolVersion(version)
	}
	return true
}

type hushedConn struct {
	mcp.Connection

	mu      sync.Mutex          // guards pending
	pending map[jsonrpc.ID]bool // the client's requests not yet answered: true once cancelled
}

// Read notes the requests a notifications/cancelled cancels before the
// sdk hears of it, and so before the handler's context ends.
func (c *hushedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	req, ok := msg.(*jsonrpc.Request)
	switch {
	case !ok:
	case req.IsCall():
		c.mu.Lock()
		c.pending[req.ID] = false
		c.mu.Unlock()
	case req.Method == "notifications/cancelled":
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) == nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
				c.mu.Lock()
				if _, ok := c.pending[id]; ok {
					c.pending[id] = true // one answered already is forgotten
				}
				c.mu.Unlock()
			}
		}
	}
	return msg, err
}

// Write drops the response to a cancelled request.
func (c *hushedConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		drop := c.pending[resp.ID]
		delete(c.pending, resp.ID)
		c.mu.Unlock()
		if drop {
			return nil
		}
	}
	return c.Connection.Write(ctx, msg)
}
