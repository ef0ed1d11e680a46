package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
)

// The _meta keys every tools/call carries (SPEC §5b).
const (
	// MetaIdempotencyKey is the call's idempotency key, minted once per
	// logical call and the same on every attempt.
	MetaIdempotencyKey = "io.github.glidepath/idempotency-key"
	// MetaBudgetRemainingMs is the attempt's lease, a JSON integer of
	// milliseconds: the Budget-Remaining-Ms of SPEC §2.
	MetaBudgetRemainingMs = "io.github.glidepath/budget-remaining-ms"
)

// maxName bounds a tool's name, as chat APIs bound function names.
const maxName = 64

// ToolName is the name a server's tool is offered under: mcp__SERVER__TOOL,
// every character outside [A-Za-z0-9_-] replaced by '_', cut to 64.
func ToolName(server, tool string) string {
	var b strings.Builder
	for _, c := range "mcp__" + server + "__" + tool {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			c = '_'
		}
		b.WriteRune(c)
	}
	return b.String()[:min(b.Len(), maxName)]
}

// tool is one tool of a server.
type tool struct {
	s      *Server
	remote string // its name on the server
	spec   tools.Spec
}

// tool builds the Glidepath tool of t: the server's schema, the config's
// overrides, and its effect as SPEC §5b decides it. A tool whose
// inputSchema is not an object schema is not offered: MCP requires one,
// and a model's function parameters must be one.
func (s *Server) tool(t *sdk.Tool) (*tool, error) {
	params, err := objectSchema(t.InputSchema)
	if err != nil {
		return nil, err
	}
	spec := tools.Spec{
		Name:        ToolName(s.cfg.Name, t.Name),
		Description: t.Description,
		Parameters:  params,
		Effect:      tools.Write,
		// The sdk sends notifications/cancelled when a call's context
		// ends: the cancel is MCP's own, with no answer to wait for.
		Cancellable: true,
	}
	if spec.Description == "" && t.Annotations != nil {
		spec.Description = t.Annotations.Title
	}
	if s.cfg.TrustHints && t.Annotations != nil && t.Annotations.ReadOnlyHint {
		spec.Effect = tools.Read
	}
	if o, ok := s.cfg.Tools[t.Name]; ok {
		if o.Effect != "" {
			spec.Effect = o.Effect
		}
		spec.Ceiling, spec.P50, spec.P95, spec.MaxAttempts = o.Ceiling, o.P50, o.P95, o.MaxAttempts
	}
	return &tool{s: s, remote: t.Name, spec: spec}, nil
}

func (t *tool) Spec() tools.Spec { return t.spec }

// objectSchema returns schema as JSON when it is of type "object".
func objectSchema(schema any) (json.RawMessage, error) {
	if schema == nil {
		return nil, errors.New(`it has no inputSchema; MCP requires one of type "object"`)
	}
	params, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("its inputSchema is not JSON: %w", err)
	}
	var head struct {
		Type json.RawMessage `json:"type"`
	}
	if err := json.Unmarshal(params, &head); err != nil {
		return nil, fmt.Errorf(`its inputSchema %.40s is not a schema of type "object"`, params)
	}
	switch string(head.Type) {
	case `"object"`:
		return params, nil
	case "":
		return nil, errors.New(`its inputSchema has no type; MCP requires type "object"`)
	}
	return nil, fmt.Errorf(`its inputSchema is of type %s, not "object"`, head.Type)
}

// Origin returns the names, in the config and on the server, of the
// server and the tool that t, a tool of a [Server], calls: what a name
// that two tools share once sanitized ([ToolName]) stands for. ok is
// false for any other tool.
func Origin(t tools.Tool) (server, name string, ok bool) {
	mt, ok := t.(*tool)
	if !ok {
		return "", "", false
	}
	return mt.s.cfg.Name, mt.remote, true
}

// Attempt makes one tools/call on ctx, the attempt's lease: its _meta
// carries the progress token, the call's key and the lease, and progress
// for that token is the call's heartbeat. When ctx ends first, the sdk
// sends notifications/cancelled and the call returns at once.
func (t *tool) Attempt(ctx context.Context, call *tools.Call) tools.Answer {
	sess, err := t.s.connected(ctx)
	if err != nil {
		// No session, so nothing was sent: a transport failure, retried
		// for a read once a connection can be had.
		return tools.Answer{Err: t.s.errorf("connect: %w", err), NotSent: true}
	}
	token, done := t.s.route(call)
	defer done()
	params := &sdk.CallToolParams{
		Name:      t.remote,
		Arguments: call.Args,
		Meta: sdk.Meta{
			"progressToken":       token,
			MetaIdempotencyKey:    string(call.Key),
			MetaBudgetRemainingMs: call.Lease.Granted.Milliseconds(),
		},
	}
	// The attempt's span, when the run has one, in _meta as MCP clients
	// that trace put it.
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	for k, v := range carrier {
		params.Meta[k] = v
	}
	// Over HTTP, whether the request went out, and was refused as one of
	// a session the server had ended (see postingKey).
	var post atomic.Int32
	res, err := sess.CallTool(context.WithValue(ctx, postingKey{}, &post), params)
	switch {
	case err == nil && res.IsError:
		// The tool failed and said so: the model reads why, and the call
		// is not tried again (SPEC §5b).
		return tools.Answer{Err: &tools.ToolError{Message: t.s.scrubText(text(res.Content))}, Outcome: trace.UpstreamError}
	case err == nil:
		out, err := output(res)
		if err != nil {
			return tools.Answer{Err: fmt.Errorf("%w: %v", tools.ErrBadAnswer, err), Outcome: trace.Invalid}
		}
		return tools.Answer{Output: out}
	case ctx.Err() != nil:
		return tools.Answer{Err: t.s.scrub(err)} // the lease, the quiet clock or the run ended it
	case answered(err):
		// The server refused the request itself: unknown tool, bad
		// params. Trying it again would get the same answer.
		return tools.Answer{Err: t.s.scrub(err), Outcome: trace.Invalid}
	}
	// The connection failed under the call: the server died, or dropped
	// the session, or the stream broke, or the HTTP request failed. The
	// next attempt, if there is one (a read), gets a fresh connection.
	// Not NotSent: the request may have reached the server before it
	// failed, unless it was an HTTP one that never went out or that the
	// server refused for its session.
	t.s.broke(sess)
	notSent := !t.s.cfg.Stdio() && t.s.opts.Transport == nil && post.Load() != posted
	return tools.Answer{Err: &tools.NoAnswerError{Err: t.s.scrub(err)}, NotSent: notSent}
}

// codeRejected is the code of the go-sdk's jsonrpc2.ErrRejected
// (internal/jsonrpc2/wire.go): the error its HTTP transport wraps a
// request's failure in, one that did not reach the server or got no
// answer from it (a failed POST, a 502, 503, 504 or 429), so that the
// session survives it. It is a transport failure, not the server's answer.
const codeRejected = -32005

// answered reports whether err holds a JSON-RPC error the server answered
// with. The sdk's HTTP transport wraps the server's error, when a refused
// POST carries one, beside its rejection: it is the server's answer still.
func answered(err error) bool {
	if e, ok := err.(*jsonrpc.Error); ok && e.Code != codeRejected {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return answered(u.Unwrap())
	case interface{ Unwrap() []error }:
		return slices.ContainsFunc(u.Unwrap(), answered)
	}
	return false
}

// Cancel is MCP's own cancel, which the sdk sent as
// notifications/cancelled when the attempt's context ended; there is no
// answer to wait for.
func (t *tool) Cancel(context.Context, cancel.Key) error { return cancel.ErrNoAnswer }

// Close closes the tool's server, once for all its tools.
func (t *tool) Close(ctx context.Context) error { return t.s.Close(ctx) }

// ToolsFile is the tools file that names the server, which an orphan of
// the tool records (issue 17); an MCP tool has no status to ask, so
// harness reconcile lists it as one to settle by hand.
func (t *tool) ToolsFile() string { return t.s.cfg.File }

// output is a successful result as the tool's output: its structured
// content when it has one, else its text.
func output(res *sdk.CallToolResult) (json.RawMessage, error) {
	if res.StructuredContent != nil {
		return json.Marshal(res.StructuredContent)
	}
	return json.Marshal(text(res.Content))
}

// text is what the model reads of contents: their text, one after the
// other, and a line naming each that is not text.
func text(cs []sdk.Content) string {
	var parts []string
	for _, c := range cs {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[an image, %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio, %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[a resource: %s]", c.URI))
		case *sdk.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				parts = append(parts, c.Resource.Text)
			} else if c.Resource != nil {
				parts = append(parts, fmt.Sprintf("[a resource: %s]", c.Resource.URI))
			}
		default:
			parts = append(parts, fmt.Sprintf("[content of type %T]", c))
		}
	}
	return strings.Join(parts, "\n")
}

// route is where the progress of one call goes: its heartbeats.
type route struct {
	call  *tools.Call
	last  float64 // the most progress heard; −1 before any
	units int64   // the units of its last heartbeat that grew
}

// route registers call under a fresh progress token and returns it, with
// the func that forgets it once the call has returned: progress that
// comes after, as the reference server sends after a cancel and as the
// sdk may deliver after CallTool returned, is no one's. done waits for a
// delivery to call that is under way: once it returns, nothing more is.
func (s *Server) route(call *tools.Call) (token int64, done func()) {
	s.progressLock <- struct{}{}
	defer func() { <-s.progressLock }()
	s.nextToken++
	token = s.nextToken
	s.routes[token] = &route{call: call, last: -1}
	return token, func() {
		s.progressLock <- struct{}{}
		defer func() { <-s.progressLock }()
		delete(s.routes, token)
	}
}

// progress hears notifications/progress. Only progress that grew is a
// heartbeat: MCP says progress MUST increase, and one that repeats or
// falls is reported as it is, stale, for the run to see through.
//
// The units of a heartbeat that grew come from one counter of the
// Server's, not from 0 at each attempt: the run counts progress only when
// a call's units pass the most it has seen across its attempts, and the
// server's progress starts over with each. They are delivered under
// s.progressLock, which the route's done waits for.
func (s *Server) progress(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	p := req.Params
	token, ok := tokenOf(p.ProgressToken)
	if !ok {
		return
	}
	msg := p.Message
	switch {
	case p.Total > 0:
		msg = strings.TrimSpace(fmt.Sprintf("%s/%s %s", number(p.Progress), number(p.Total), msg))
	case msg == "":
		msg = number(p.Progress)
	}
	s.progressLock <- struct{}{}
	defer func() { <-s.progressLock }()
	r := s.routes[token]
	if r == nil {
		return
	}
	if p.Progress > r.last {
		r.last = p.Progress
		s.units++
		r.units = s.units
	}
	r.call.Progress(r.units, 0, msg)
}

// tokenOf reads a progress token as the one sent: an integer, which JSON
// brings back as a float64, or a number in a string.
func tokenOf(v any) (int64, bool) {
	switch v := v.(type) {
	case float64:
		if v == math.Trunc(v) {
			return int64(v), true
		}
	case int64:
		return v, true
	case int:
		return int64(v), true
	case json.Number:
		n, err := v.Int64()
		return n, err == nil
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		return n, err == nil
	}
	return 0, false
}

func number(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
