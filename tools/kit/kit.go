package kit

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// Effect says whether a tool changes the world: a read may be retried
// blindly, a write never is (SPEC §5).
type Effect string

const (
	Read  Effect = "read"
	Write Effect = "write"
)

// Defaults of [Tool] and [Server].
const (
	// DefaultMax is a tool's own maximum run time when [Tool.Max] is zero.
	DefaultMax = 5 * time.Minute
	// DefaultKeepalive is how long a stream may stay silent before a
	// keepalive comment, when [Server.KeepaliveEvery] is zero.
	DefaultKeepalive = 15 * time.Second
	// DefaultMaxBody bounds a request body when [Server.MaxBody] is zero.
	DefaultMaxBody = 1 << 20
)

// CodeDeadline is the code of an error answer whose call the caller's own
// budget ended: its Budget-Remaining-Ms ran out, or was 0 on arrival. The
// caller reads it as its own doing ("we gave up"), not the tool's failure.
const CodeDeadline = "deadline_exceeded"

// A Handler does a tool's work. ctx ends at the call's deadline,
// min(Budget-Remaining-Ms, [Tool.Max]), or earlier when the call is
// cancelled ([ErrCancelled]), the server closes ([ErrClosed]) or the
// caller hangs up ([ErrCallerGone]); [context.Cause] says which.
// The output is encoded with [encoding/json]; a [json.RawMessage] is sent
// as it is. A handler may report progress with [Call.Progress].
type Handler func(ctx context.Context, call *Call) (any, error)

// Tool describes a tool to [Server.Register]. Name, Effect and Handler are
// required.
type Tool struct {
	// Name is 1 to 64 letters, digits, '_' or '-', as models require.
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments, an object. Nil means
	// {"type":"object","properties":{}}: no arguments.
	Parameters  json.RawMessage
	Effect      Effect
	Cancellable bool // reports whether the cancel endpoint may end a call
	// P50 and P95 are the latency hints of the manifest; a caller refuses
	// to start a call it cannot give at least P50.
	P50, P95 time.Duration
	// Max is the tool's own maximum run time: a call's deadline is never
	// later than Max after it arrives, whatever the caller's budget. Zero
	// means DefaultMax.
	Max time.Duration
	// Agent marks a sub-agent (SPEC §5b), as harness serve's tools are:
	// the manifest says "agent": true, and a Glidepath caller leases its
	// calls as slices of its budget and gates them as sub-agents.
	Agent   bool
	Handler Handler
}

// A Call is one attempt of a tool call, as its handler sees it.
type Call struct {
	Tool string
	// Key is the Idempotency-Key: the same for every attempt of one
	// logical call.
	Key string
	// Args is the raw arguments, a JSON object, compacted.
	Args json.RawMessage
	// Attempt counts the handler runs for Key, from 1: a retry after a
	// retryable failure runs the handler again with Attempt one higher.
	Attempt int
	// Lease is the caller's budget for the call as it arrived: its
	// Budget-Remaining-Ms, or over MCP its _meta [MetaBudgetRemaining].
	// The handler's deadline is min(Lease, Max) from arrival (see the
	// package documentation, # Deadlines); Lease is zero when the caller
	// sent none, and then Max alone bounds the call.
	Lease time.Duration
	// MCP reports whether the call came over MCP (see the package
	// documentation, # MCP) rather than the protocol of SPEC §5.
	MCP bool

	run *run
}

// Progress reports that the call has done units of total (0 when the
// total is unknown), with a short message. It never blocks: streams send
// only the latest report, so a burst of reports becomes one event.
// A report whose units are not greater than the last accepted one's, or
// are negative, is dropped: units strictly increase (SPEC §5), which is
// what lets a caller count a progress event as a sign of life. Messages
// are cut to 1 KiB. Reports after the handler returned are dropped, and so
// are those of a Call made outside a Server, as in a handler's unit test.
func (c *Call) Progress(units, total int64, message string) {
	if c.run != nil {
		c.run.report(units, total, message)
	}
}

// Server serves tools over the remote tool protocol of SPEC §5 (see the
// package documentation). It is an [http.Handler].
//
// The zero value is ready to use: set the fields before first use, then
// [Server.Register] tools, which may also be done while serving. A Server
// must not be copied after first use.
type Server struct {
	// KeepaliveEvery is how long an event stream may stay silent before
	// the server writes a keepalive comment. Zero means DefaultKeepalive;
	// a negative value sends none.
	KeepaliveEvery time.Duration
	// MaxBody bounds a call's request body, in bytes; a larger one is a
	// 413. Zero means DefaultMaxBody.
	MaxBody int64
	// Store keeps the calls' records. Nil means a [MemoryStore] with its
	// defaults.
	Store Store
	// Logger receives the stack of every handler panic, and the errors of
	// a Store that failed to record an outcome. Nil means [slog.Default].
	Logger *slog.Logger
	// AllowedOrigins are the origins ("https://app.example.com", scheme,
	// host and port as a browser sends them in Origin) whose pages may
	// call the tools over [Server.MCPHandler]. A request with no Origin
	// (any client that is not a browser) is always served, and so is one
	// from the server's own origin on a loopback host; any other Origin is
	// refused with 403 (see the package documentation, # MCP). Nil allows
	// no other. Read when MCP is first served.
	AllowedOrigins []string

	initOnce sync.Once
	mux      *http.ServeMux
	store    Store
	drained  chan struct{} // closed once the server is closed and no run is left

	mu            sync.Mutex // guards the fields below
	tools         map[string]*Tool
	order         []*Tool // in registration order, for the manifest
	runs          map[CallID]*run
	active        int  // runs in runs, each a handler goroutine or a request about to start one
	closed        bool // reports whether Close or Shutdown was called
	drainedClosed bool // reports whether drained is closed

	mcp *mcpSide // nil until MCP is first served (see mcp.go)
}

func (s *Server) init() {
	s.initOnce.Do(func() {
		s.store = s.Store
		if s.store == nil {
			s.store = new(MemoryStore)
		}
		s.drained = make(chan struct{})
		s.mux = http.NewServeMux()
		s.mux.HandleFunc("/tools", s.serveTools)
		s.mux.HandleFunc("/tools/{name}", s.serveTool)
		s.mux.HandleFunc("/tools/{name}/calls/{key}", s.serveCallRecord)
		s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusNotFound, "kit: no such endpoint: "+r.URL.Path, false)
		})
	})
}

// Register adds a tool. It returns a [*ToolError] when a field is invalid
// or the name is taken (matching [ErrDuplicate]); the server is then
// unchanged. The tool is copied.
func (s *Server) Register(t Tool) error {
	s.init()
	if err := validate(&t); err != nil {
		return err
	}
	if t.Parameters == nil {
		t.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
	} else {
		var b bytes.Buffer
		json.Compact(&b, t.Parameters) // validate checked it is JSON
		t.Parameters = b.Bytes()
	}
	if t.Max == 0 {
		t.Max = DefaultMax
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tools[t.Name]; ok {
		return &ToolError{Name: t.Name, Field: "Name", Err: ErrDuplicate}
	}
	if s.tools == nil {
		s.tools = make(map[string]*Tool)
	}
	s.tools[t.Name] = &t
	s.order = append(s.order, &t)
	if s.mcp != nil {
		s.mcp.add(s, &t)
	}
	return nil
}

func validate(t *Tool) error {
	bad := func(field string, err error) error { return &ToolError{Name: t.Name, Field: field, Err: err} }
	switch {
	case !validName(t.Name):
		return bad("Name", errBadName)
	case t.Effect != Read && t.Effect != Write:
		return bad("Effect", errBadEffect)
	case t.Handler == nil:
		return bad("Handler", errNil)
	case t.P50 < 0:
		return bad("P50", errNegative)
	case t.P95 < 0:
		return bad("P95", errNegative)
	case t.P95 != 0 && t.P95 < t.P50:
		return bad("P95", errP95BelowP50)
	case t.Max < 0:
		return bad("Max", errNegative)
	}
	if t.Parameters != nil {
		var schema map[string]any
		if json.Unmarshal(t.Parameters, &schema) != nil || schema == nil {
			return bad("Parameters", errNotSchema)
		}
	}
	return nil
}

func validName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ServeHTTP serves the manifest, calls, and the status and cancel
// endpoints (see the package documentation, # Protocol).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.init()
	s.mux.ServeHTTP(w, r)
}

func (s *Server) tool(name string) *Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools[name]
}

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func (s *Server) keepaliveEvery() time.Duration {
	if s.KeepaliveEvery == 0 {
		return DefaultKeepalive
	}
	return s.KeepaliveEvery
}

func (s *Server) maxBody() int64 {
	if s.MaxBody <= 0 {
		return DefaultMaxBody
	}
	return s.MaxBody
}

// Shutdown stops the server: calls that arrive after it are answered 503
// with [ErrClosed], every running handler's context ends with cause
// [ErrClosed], its MCP sessions end (see the package documentation,
// # Goroutines), and Shutdown waits for the handlers to return or for ctx to
// end, whichever comes first, returning ctx's cause in the latter case;
// the server still owns the handlers left running, and [Server.Close]
// waits for them. Requests being answered are not waited for: they belong
// to the [http.Server], whose own Shutdown waits for them. Shutdown is
// idempotent.
func (s *Server) Shutdown(ctx context.Context) error {
	s.init()
	s.mu.Lock()
	s.closed = true
	for _, ru := range s.runs {
		ru.cancel(ErrClosed)
	}
	s.drainCheck()
	m := s.mcp
	s.mu.Unlock()
	if m != nil {
		m.shut(ctx)
	}
	select {
	case <-s.drained:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Close is [Server.Shutdown] without a bound: it returns once every
// handler has returned, a handler that ignores its context included.
func (s *Server) Close() error {
	return s.Shutdown(context.Background())
}

// drainCheck closes drained once the server is closed and idle. s.mu is
// held.
func (s *Server) drainCheck() {
	if s.closed && s.active == 0 && !s.drainedClosed {
		s.drainedClosed = true
		close(s.drained)
	}
}
