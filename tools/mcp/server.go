package mcp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/internal/inflight"
	"github.com/glidepath/glidepath/internal/redact"
	"github.com/glidepath/glidepath/tools"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxConnectTimeout is the most a server's connect and tools/list may
// take when its entry gives no connect_timeout: a mute server costs a
// short run a quarter of its work time at most, and a long one 5s (SPEC
// §5b). It is the budget's [budget.DefaultSetupCeiling]: every piece of a
// run's setup has the same share (issue 24).
const MaxConnectTimeout = budget.DefaultSetupCeiling

// ConnectTimeout is how long connecting to the server of cfg and listing
// its tools may take in a run whose work time (B − R, the time its work
// may spend) is work: the entry's connect_timeout when it gives one, else
// the smaller of [MaxConnectTimeout] and a quarter of work, as
// [budget.SetupCeiling] says of every piece of a run's setup. A work of 0
// or less (no run, or one not known) gives MaxConnectTimeout. Inside a
// run it is the ceiling of a setup lease, which the budget may cut
// shorter still: an explicit connect_timeout is a lease out of the run's
// budget too.
func ConnectTimeout(cfg tools.MCPServer, work time.Duration) time.Duration {
	return budget.SetupCeiling(work, cfg.ConnectTimeout)
}

// initialVersion is the protocol the first initialize asks for: the
// newest that is negotiated by initialize itself. Asked for nothing, the
// go-sdk would try 2026-07-28 first, whose server/discover the MCP
// reference server answers with "Method not found" (issue 17): nothing
// goes out before initialize. The server answers with the version it
// speaks, which a reconnect asks for again.
const initialVersion = "2025-11-25"

// closeGrace is how long Close lets a stdio server exit on its own once
// its input is closed, before its process group is killed: a run that
// ends does not wait on a server's shutdown.
const closeGrace = 200 * time.Millisecond

// Options are what [Connect] needs beside the server's entry. The zero
// value connects as the entry says.
type Options struct {
	// Transport, if set, makes each connection instead of the entry's
	// command or url: an in-process server's ([sdk.NewInMemoryTransports]),
	// or one of the caller's own. It is called again to reconnect.
	Transport func(ctx context.Context) (sdk.Transport, error)

	// HTTPClient sends a url server's requests, with the entry's headers
	// added. Nil: one with no Timeout of its own; every call's context is
	// its lease.
	HTTPClient *http.Client

	// Stderr is where a stdio server's standard error goes, as it writes
	// it. Nil: the process's own (os.Stderr). `harness run` gives one
	// that redacts secrets and, with --log-format json, makes each of the
	// server's lines a JSON object (issue 24).
	Stderr io.Writer
}

// A Server is a connection to one MCP server of a tool config's
// mcpServers, whose tools it offers as Glidepath tools ([Server.Tools]).
// Its calls share one session; a session that broke (a stdio server that
// died, an HTTP session the server dropped, a request the transport
// failed) is replaced by a fresh one at the next attempt, so a read
// retried after it goes out on a new connection. A Server is safe for
// concurrent use. Only [Connect] makes one: the methods of a zero Server
// report a server with no tools, and its Close has nothing to close.
type Server struct {
	cfg  tools.MCPServer
	opts Options

	client   *sdk.Client
	tools    []tools.Tool
	missing  []string // allowed_tools the server does not have
	warnings []error  // the server's tools that are not offered, and why

	// connLock is held while a session is made, one at a time. It is a
	// channel, not a mutex, so that a call waiting for another's connect
	// gives up when its own context ends.
	connLock chan struct{}

	// progressLock guards routes, nextToken and units, and is held while a
	// notification is delivered to its call, so that once a route's done
	// has returned nothing more is delivered for it. It is a channel, not
	// a mutex, because delivering calls the run's observer: no mutex is
	// held across a call that may block, and a test's observer may sleep
	// inside a synctest bubble, which a goroutine waiting on a mutex would
	// stall.
	progressLock chan struct{}
	routes       map[int64]*route
	nextToken    int64
	units        int64 // the units of the last heartbeat that grew, of any call: they only grow

	// pending counts what Close waits for: a connect under way, and
	// sessions being closed.
	pending inflight.Group

	// halt is the Server's own lifetime, not a caller's context: it ends
	// when a Close's context ends before the server is closed, and stops
	// what is still in flight, its HTTP requests (the session's DELETE
	// among them) and a stdio server's grace, so that what Close leaves
	// behind finishes at once.
	halt    context.Context
	haltNow context.CancelCauseFunc

	mu         sync.Mutex // guards the fields below
	session    *sdk.ClientSession
	proc       *process                // the stdio server's, while its session lives
	version    string                  // the protocol the first session agreed, asked for again on reconnecting
	connecting context.CancelCauseFunc // ends the connect under way; nil when there is none
	closed     bool
}

// Connect starts the server (a stdio one, in a process group of its own)
// or reaches it (a url one), initializes an MCP session, and lists its
// tools, all on ctx, which bounds it: inside a run, the lease of a setup
// step, whose ceiling is [ConnectTimeout]. Connect itself bounds it by
// ConnectTimeout(cfg, 0): the entry's connect_timeout, or 5s. A server
// that does not answer in time is closed, its process killed, and the
// error says so.
func Connect(ctx context.Context, cfg tools.MCPServer, opts Options) (*Server, error) {
	ctx, cancel := context.WithTimeout(ctx, ConnectTimeout(cfg, 0))
	defer cancel()
	s := &Server{cfg: cfg, opts: opts, routes: make(map[int64]*route),
		connLock: make(chan struct{}, 1), progressLock: make(chan struct{}, 1)}
	s.halt, s.haltNow = context.WithCancelCause(context.Background())
	s.client = sdk.NewClient(&sdk.Implementation{Name: "glidepath", Version: "1"},
		&sdk.ClientOptions{ProgressNotificationHandler: s.progress})
	sess, err := s.connect(ctx)
	if err != nil {
		s.haltNow(errClosed)
		return nil, s.errorf("connect: %w", err)
	}
	var listed []*sdk.Tool
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			s.Close(context.Background())
			return nil, s.errorf("tools/list: %w", contextual(ctx, err))
		}
		listed = append(listed, t)
	}
	for _, name := range cfg.AllowedTools {
		if !slices.ContainsFunc(listed, func(t *sdk.Tool) bool { return t.Name == name }) {
			s.missing = append(s.missing, name)
		}
	}
	offered := map[string]string{} // the name offered → the server's tool offered under it
	for _, t := range listed {
		if len(cfg.AllowedTools) > 0 && !slices.Contains(cfg.AllowedTools, t.Name) {
			continue
		}
		built, err := s.tool(t)
		if err != nil {
			s.warnings = append(s.warnings, &NotOfferedError{Server: cfg.Name, Tool: t.Name, Err: err})
			continue
		}
		// Two names that differ only where ToolName replaces characters,
		// or past its cut, are offered under one: the first listed keeps
		// it, and the warning names both as the server does.
		if first, ok := offered[built.spec.Name]; ok {
			s.warnings = append(s.warnings, &NotOfferedError{Server: cfg.Name, Tool: t.Name,
				Err: fmt.Errorf("its name would be %s, as tool %q's is", built.spec.Name, first)})
			continue
		}
		offered[built.spec.Name] = t.Name
		s.tools = append(s.tools, built)
	}
	return s, nil
}

// Name returns the server's name in the config.
func (s *Server) Name() string { return s.cfg.Name }

// Tools returns the server's tools, in the order it listed them, as
// Glidepath tools named mcp__SERVER__TOOL ([ToolName]); with
// allowed_tools, those it allows.
func (s *Server) Tools() []tools.Tool { return slices.Clone(s.tools) }

// Missing returns the allowed_tools the server did not list: a name
// misspelt, or a tool the server no longer has.
func (s *Server) Missing() []string { return slices.Clone(s.missing) }

// Warnings returns why some of the server's tools are not offered, one
// [*NotOfferedError] each: an inputSchema that is not of type "object",
// or a name that two tools share once sanitized ([ToolName]).
func (s *Server) Warnings() []error { return slices.Clone(s.warnings) }

// Where returns where the server is: its command, or its URL with any
// password and the values of its query redacted, as errors show it.
func (s *Server) Where() string {
	if s.cfg.Stdio() {
		return s.cfg.Command
	}
	return redactURL(s.cfg.URL)
}

// Close ends the session. A stdio server gets its input closed and a
// moment to exit; then its whole process group is killed, whatever its
// leader started, and its exit is waited for. An HTTP session is deleted.
// A connect under way is given up, and what it started is closed too.
//
// Close returns once nothing of the server is left, or when ctx ends,
// whichever is first. When ctx ends first, what is left is stopped at
// once: stdio servers are killed, HTTP requests (the DELETE among them)
// are cancelled, and Close returns ctx's cause; the goroutines that were
// closing finish on their own, and a later Close waits for them. Close is
// idempotent.
func (s *Server) Close(ctx context.Context) error {
	if s.haltNow == nil {
		return nil // a zero Server: nothing was connected, so nothing is left
	}
	s.mu.Lock()
	s.closed = true
	sess, proc, connecting := s.session, s.proc, s.connecting
	s.session, s.proc = nil, nil
	s.mu.Unlock()
	if connecting != nil {
		connecting(errClosed) // it closes what it made, and Close waits for it as pending
	}
	var closed chan error
	if sess != nil {
		closed = make(chan error, 1)
		s.pending.Go(func() { closed <- closeSession(s.halt, sess, proc) })
	}
	if err := s.pending.Wait(ctx); err != nil {
		s.haltNow(err)
		return fmt.Errorf("mcp: closing server %s: %w", s.cfg.Name, err)
	}
	s.haltNow(errClosed) // nothing is left to stop: this frees what halt holds
	if closed != nil {
		return <-closed
	}
	return nil
}

// closeSession closes sess and, for a stdio server, makes sure its
// process group is gone. ctx ends the stdio server's grace; an HTTP
// session's DELETE ends with the Server's halt, which is what callers
// pass as ctx.
func closeSession(ctx context.Context, sess *sdk.ClientSession, proc *process) error {
	if sess == nil {
		return nil
	}
	closed := make(chan error, 1)
	go func() { closed <- sess.Close() }()
	if proc == nil {
		return <-closed
	}
	grace := time.NewTimer(closeGrace)
	defer grace.Stop()
	select {
	case err := <-closed:
		proc.kill() // what its leader left running
		return err
	case <-grace.C:
	case <-ctx.Done():
	}
	proc.kill()
	<-closed // the transport reaps the leader once it is dead
	return nil
}

// connected returns the server's session, connecting a fresh one when there
// is none or the last one broke, on ctx. A call that waits for another's
// connect waits only as long as its own ctx lets it.
func (s *Server) connected(ctx context.Context) (*sdk.ClientSession, error) {
	s.mu.Lock()
	closed, sess := s.closed, s.session
	s.mu.Unlock()
	switch {
	case closed:
		return nil, errClosed
	case sess != nil:
		return sess, nil
	}
	select {
	case s.connLock <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for another call's connect: no answer in time (%w)", context.Cause(ctx))
	}
	defer func() { <-s.connLock }()
	s.mu.Lock()
	closed, sess = s.closed, s.session
	if !closed && sess == nil {
		s.pending.Add() // under s.mu, so that a Close that follows waits for it
	}
	s.mu.Unlock()
	switch {
	case closed:
		return nil, errClosed
	case sess != nil:
		return sess, nil // the connect waited for made it
	}
	defer s.pending.Done()
	return s.connect(ctx)
}

var errClosed = errors.New("the server's connection is closed")

// broke drops sess, a session whose connection failed, so that the next
// attempt connects again, and closes it in the background: the attempt
// that saw it fail does not wait for a server's grace or a DELETE.
func (s *Server) broke(sess *sdk.ClientSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session != sess {
		return // another call saw it first, or Close took it
	}
	proc := s.proc
	s.session, s.proc = nil, nil
	s.pending.Go(func() { closeSession(s.halt, sess, proc) })
}

// connect opens a session and keeps it as the server's. s.connLock is
// held, or the Server is not yet shared. A Close meanwhile ends ctx.
func (s *Server) connect(ctx context.Context) (*sdk.ClientSession, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errClosed
	}
	s.connecting = cancel
	opts := &sdk.ClientSessionOptions{ProtocolVersion: cmp.Or(s.version, initialVersion)}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.connecting = nil
		s.mu.Unlock()
	}()
	t, proc, err := s.transport(ctx)
	if err != nil {
		return nil, err
	}
	var sess *sdk.ClientSession
	if proc != nil {
		// A server that does not answer in time is killed then, not after
		// the sdk's own grace periods: its setup lease is all it costs.
		stop := context.AfterFunc(ctx, proc.kill)
		sess, err = s.client.Connect(ctx, t, opts)
		stop()
	} else {
		sess, err = s.client.Connect(ctx, t, opts)
	}
	if err != nil {
		if proc != nil {
			proc.kill() // what the leader left running; the sdk reaped the leader
		}
		return nil, contextual(ctx, err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		closeSession(s.halt, sess, proc)
		return nil, errClosed
	}
	s.session, s.proc = sess, proc
	if res := sess.InitializeResult(); res != nil && s.version == "" {
		// A server older than the version asked for says which it speaks;
		// a reconnect asks for that one.
		s.version = res.ProtocolVersion
	}
	s.mu.Unlock()
	return sess, nil
}

// transport makes the transport of one connection, and for a stdio server
// the process it runs in.
func (s *Server) transport(ctx context.Context) (sdk.Transport, *process, error) {
	switch {
	case s.opts.Transport != nil:
		t, err := s.opts.Transport(ctx)
		return t, nil, err
	case s.cfg.Stdio():
		cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
		cmd.Dir = s.cfg.Cwd
		// The environment a command tool gets, not the harness's: no key
		// the harness holds reaches the server unless its env names it
		// (issue 24).
		cmd.Env = tools.Environ(s.cfg.Env)
		// The server's messages go where the harness's do: they are the
		// server's own, and a server that fails to start says why there.
		cmd.Stderr = s.opts.Stderr
		if cmd.Stderr == nil {
			cmd.Stderr = os.Stderr
		}
		// Copied through a pipe when it is not a file: a process that left
		// the group may hold the pipe, and must not hold Close.
		cmd.WaitDelay = closeGrace
		cmd.SysProcAttr = procAttr()
		p := &process{}
		return &startedTransport{CommandTransport: sdk.CommandTransport{Command: cmd, TerminateDuration: closeGrace}, p: p}, p, nil
	}
	client := s.opts.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	c := *client
	c.Transport = &roundTripper{base: client.Transport, headers: s.cfg.Headers, halt: s.halt}
	// The standalone stream stays: a server may send a request's progress
	// on it, as the reference server does.
	//
	// The sdk's reconnects are off (MaxRetries < 0): the harness is the one
	// retry layer (SPEC §5b). With them, a broken stream was resumed with
	// Last-Event-ID after backoffs of 1s, 1.5s, 2.25s…: a dead server took
	// 17.6s to become an upstream error, and a stream resumed through a
	// restarted proxy was replayed out of order and never answered, so the
	// call waited out its lease (issue 17). Without them, a request's
	// stream that breaks, or the standalone stream, fails the session at
	// once: the attempt is an upstream error, and the next one, a read's
	// retry, goes out on a fresh session with the same key.
	return &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: &c, MaxRetries: -1}, nil, nil
}

// errorf says which server failed, and where it is ([Server.Where]),
// with no secret of its URL in the message.
func (s *Server) errorf(format string, args ...any) error {
	return &ServerError{Server: s.cfg.Name, Where: s.Where(), Err: s.scrub(fmt.Errorf(format, args...))}
}

// contextual says why ctx ended, when it ended the request: a server that
// does not answer within its lease is told apart from one that failed,
// and both from a Server that was closed meanwhile.
func contextual(ctx context.Context, err error) error {
	switch cause := context.Cause(ctx); {
	case ctx.Err() == nil:
		return err
	case errors.Is(cause, errClosed):
		return errClosed
	default:
		return fmt.Errorf("no answer in time (%w)", cause)
	}
}

// startedTransport is the sdk's command transport, noting the process it
// starts, so that it can be killed as a group.
type startedTransport struct {
	sdk.CommandTransport
	p *process
}

func (t *startedTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	conn, err := t.CommandTransport.Connect(ctx)
	if err == nil {
		t.p.started(t.Command.Process.Pid)
	}
	return conn, err
}

// process is a stdio server's process group. Its group id is the leader's
// pid (Setpgid with Pgid 0).
type process struct {
	mu  sync.Mutex
	pid int // 0 until started
}

func (p *process) started(pid int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pid = pid
}

// kill kills the process group: the leader, and whatever it started (npx
// runs the server as a child of its own).
func (p *process) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pid > 0 {
		syscall.Kill(-p.pid, syscall.SIGKILL)
	}
}

// roundTripper sends a url server's requests: with the server's headers,
// such as an Authorization its entry gives (they are never logged), and
// each cancelled when halt ends, so that a Close whose context ended
// leaves no request waiting on the server.
type roundTripper struct {
	base    http.RoundTripper
	headers map[string]string
	halt    context.Context
}

func (rt *roundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	// The first POST on an attempt's context is its tools/call.
	p, _ := r.Context().Value(postingKey{}).(*atomic.Int32)
	if p != nil && (r.Method != http.MethodPost || !p.CompareAndSwap(unposted, posted)) {
		p = nil
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	stop := context.AfterFunc(rt.halt, func() { cancel(context.Cause(rt.halt)) })
	release := func() { stop(); cancel(nil) }
	r = r.Clone(ctx)
	for k, v := range rt.headers {
		r.Header.Set(k, v)
	}
	base := rt.base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(r)
	if err != nil {
		release()
		return nil, err
	}
	if p != nil && resp.StatusCode == http.StatusNotFound && r.Header.Get("Mcp-Session-Id") != "" {
		// MCP: a server answers 404 to a request of a session it has
		// ended, and so did not run it.
		p.Store(refused)
	}
	// A response's body, such as a stream of events, outlives RoundTrip:
	// the request stays cancellable until it is closed.
	resp.Body = &releasingBody{ReadCloser: resp.Body, release: sync.OnceFunc(release)}
	return resp, nil
}

// postingKey marks the context of an attempt's tools/call with an
// *atomic.Int32 that the roundTripper sets as its POST goes, so that an
// attempt that failed unsent is known not to have reached the server: its
// session had failed before (a standalone stream that broke; the sdk then
// fails the write without sending it), or the server had ended it (404).
type postingKey struct{}

// The states of an attempt's POST.
const (
	unposted int32 = iota // no POST went out
	posted                // it went out, and may have reached the server
	refused               // it went out, and the server said its session was gone
)

type releasingBody struct {
	io.ReadCloser
	release func()
}

func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}

// redactURL returns raw as it may be shown: its password redacted
// ([redact.URL]) and the value of every key of its query replaced by
// "[redacted]", the keys kept: a token in a query string is as secret as
// one in a header.
func redactURL(raw string) string {
	shown := redact.URL(raw)
	base, query, ok := strings.Cut(shown, "?")
	if !ok {
		return shown
	}
	query, fragment, hasFragment := strings.Cut(query, "#")
	shown = base + "?" + redactQuery(query)
	if hasFragment {
		shown += "#" + fragment
	}
	return shown
}

// redactQuery replaces the value of each key=value of a raw query.
func redactQuery(query string) string {
	parts := strings.Split(query, "&")
	for i, p := range parts {
		if k, _, ok := strings.Cut(p, "="); ok {
			parts[i] = k + "=[redacted]"
		}
	}
	return strings.Join(parts, "&")
}

// scrub returns err with the secrets of the server's URL out of its
// message: its query as written, which a transport error quotes with the
// URL, and each value of it, raw or decoded, that a server's message may
// echo ([redact.Secrets] leaves out values too short to be secrets). It
// unwraps to err, whose message it does not repeat.
func (s *Server) scrub(err error) error {
	if err == nil || s.cfg.Stdio() {
		return err
	}
	msg := err.Error()
	if scrubbed := s.scrubText(msg); scrubbed != msg {
		return &scrubbedError{msg: scrubbed, err: err}
	}
	return err
}

// scrubText is [Server.scrub] for text.
func (s *Server) scrubText(msg string) string {
	u, err := url.Parse(s.cfg.URL)
	if err != nil || u.RawQuery == "" {
		return msg
	}
	msg = strings.ReplaceAll(msg, "?"+u.RawQuery, "?"+redactQuery(u.RawQuery))
	var known []string
	for p := range strings.SplitSeq(u.RawQuery, "&") {
		if _, v, ok := strings.Cut(p, "="); ok && v != "" {
			known = append(known, v)
			if d, err := url.QueryUnescape(v); err == nil && d != v {
				known = append(known, d)
			}
		}
	}
	return redact.Secrets(msg, known...)
}

type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// ServerError reports an MCP server that could not be connected to or
// listed: which, where, and why. It matches [ErrServer].
type ServerError struct {
	Server string // its name in the config
	Where  string // its command, or its URL with its password and query values redacted ([Server.Where])
	Err    error
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("mcp server %s (%s): %v", e.Server, e.Where, e.Err)
}

func (e *ServerError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrServer].
func (e *ServerError) Is(target error) bool { return target == ErrServer }

// ErrServer is matched by every [*ServerError].
var ErrServer = errors.New("mcp: server unavailable")

// NotOfferedError reports a tool of a server that is not offered, and
// why. It matches [ErrNotOffered].
type NotOfferedError struct {
	Server string // its name in the config
	Tool   string // its name on the server
	Err    error
}

func (e *NotOfferedError) Error() string {
	return fmt.Sprintf("mcp server %s: tool %q is not offered: %v", e.Server, e.Tool, e.Err)
}

func (e *NotOfferedError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrNotOffered].
func (e *NotOfferedError) Is(target error) bool { return target == ErrNotOffered }

// ErrNotOffered is matched by every [*NotOfferedError].
var ErrNotOffered = errors.New("mcp: tool not offered")
