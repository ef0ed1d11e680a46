package mcp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/glidepath/glidepath/internal/redact"
	"github.com/glidepath/glidepath/tools"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultConnectTimeout bounds connecting to a server and listing its
// tools when the caller's context does not bound it sooner: a setup step
// of the run, whose lease is the tighter bound inside a run.
const DefaultConnectTimeout = 20 * time.Second

// ConnectTimeout is how long [Connect] may take for cfg: its
// connect_timeout, or DefaultConnectTimeout.
func ConnectTimeout(cfg tools.MCPServer) time.Duration {
	if cfg.ConnectTimeout > 0 {
		return cfg.ConnectTimeout
	}
	return DefaultConnectTimeout
}

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
}

// A Server is a connection to one MCP server of a tool config's
// mcpServers, whose tools it offers as Glidepath tools ([Server.Tools]).
// Its calls share one session; a session that broke (a stdio server that
// died, an HTTP session the server dropped) is replaced by a fresh one at
// the next attempt, so a read retried after it goes out on a new
// connection. A Server is safe for concurrent use.
type Server struct {
	cfg  tools.MCPServer
	opts Options

	client  *sdk.Client
	tools   []tools.Tool
	missing []string // allowed_tools the server does not have

	connMu sync.Mutex // held while a session is made: one at a time

	mu        sync.Mutex // guards the fields below
	session   *sdk.ClientSession
	proc      *process // the stdio server's, while its session lives
	version   string   // the protocol the first session agreed, asked for again on reconnecting
	routes    map[int64]*route
	nextToken int64
	closed    bool
}

// Connect starts the server (a stdio one, in a process group of its own)
// or reaches it (a url one), initializes an MCP session, and lists its
// tools, all on ctx, which bounds it: inside a run, the lease of a setup
// step. A server that does not answer in time is closed, its process
// killed, and the error says so.
func Connect(ctx context.Context, cfg tools.MCPServer, opts Options) (*Server, error) {
	ctx, cancel := context.WithTimeout(ctx, ConnectTimeout(cfg))
	defer cancel()
	s := &Server{cfg: cfg, opts: opts, routes: make(map[int64]*route)}
	s.client = sdk.NewClient(&sdk.Implementation{Name: "glidepath", Version: "1"},
		&sdk.ClientOptions{ProgressNotificationHandler: s.progress})
	sess, err := s.connect(ctx)
	if err != nil {
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
	for _, t := range listed {
		if len(cfg.AllowedTools) > 0 && !slices.Contains(cfg.AllowedTools, t.Name) {
			continue
		}
		built, err := s.tool(t)
		if err != nil {
			s.Close(context.Background())
			return nil, s.errorf("tool %s: %w", t.Name, err)
		}
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

// Close ends the session. A stdio server gets its input closed and a
// moment to exit; then its whole process group is killed, whatever its
// leader started, and its exit is waited for. An HTTP session is deleted.
// Close is idempotent and returns once nothing of the server is left.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	sess, proc := s.session, s.proc
	s.session, s.proc = nil, nil
	s.mu.Unlock()
	return closeSession(ctx, sess, proc)
}

// closeSession closes sess and, for a stdio server, makes sure its
// process group is gone.
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
// is none or the last one broke, on ctx.
func (s *Server) connected(ctx context.Context) (*sdk.ClientSession, error) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	s.mu.Lock()
	closed, sess := s.closed, s.session
	s.mu.Unlock()
	switch {
	case closed:
		return nil, errClosed
	case sess != nil:
		return sess, nil
	}
	return s.connect(ctx)
}

var errClosed = errors.New("the server's connection is closed")

// broke drops sess, a session whose connection failed, so that the next
// attempt connects again, and closes it.
func (s *Server) broke(sess *sdk.ClientSession) {
	s.mu.Lock()
	if s.session != sess {
		s.mu.Unlock()
		return // another call saw it first
	}
	proc := s.proc
	s.session, s.proc = nil, nil
	s.mu.Unlock()
	closeSession(context.Background(), sess, proc)
}

// connect opens a session and keeps it as the server's. s.connMu is held,
// or the Server is not yet shared.
func (s *Server) connect(ctx context.Context) (*sdk.ClientSession, error) {
	t, proc, err := s.transport(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	opts := &sdk.ClientSessionOptions{ProtocolVersion: s.version}
	s.mu.Unlock()
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
		closeSession(context.Background(), sess, proc)
		return nil, errClosed
	}
	s.session, s.proc = sess, proc
	if res := sess.InitializeResult(); res != nil && s.version == "" {
		// A server older than the newest protocol costs a round trip to
		// find out (server/discover); a reconnect need not pay it again.
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
		cmd.Env = os.Environ()
		for _, k := range slices.Sorted(maps.Keys(s.cfg.Env)) {
			cmd.Env = append(cmd.Env, k+"="+s.cfg.Env[k])
		}
		// The server's messages go where the harness's do: they are the
		// server's own, and a server that fails to start says why there.
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		p := &process{}
		return &startedTransport{CommandTransport: sdk.CommandTransport{Command: cmd, TerminateDuration: closeGrace}, p: p}, p, nil
	}
	client := s.opts.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	if len(s.cfg.Headers) > 0 {
		c := *client
		c.Transport = &headers{base: client.Transport, h: s.cfg.Headers}
		client = &c
	}
	// The standalone stream stays: a server may send a request's progress
	// on it, as the reference server does.
	return &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: client}, nil, nil
}

// errorf says which server failed, its URL without a password.
func (s *Server) errorf(format string, args ...any) error {
	where := s.cfg.Command
	if !s.cfg.Stdio() {
		where = redact.URL(s.cfg.URL)
	}
	return &ServerError{Server: s.cfg.Name, Where: where, Err: fmt.Errorf(format, args...)}
}

// contextual says why ctx ended, when it ended the request: a server that
// does not answer within its lease is told apart from one that failed.
func contextual(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("no answer in time (%w)", context.Cause(ctx))
	}
	return err
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

// headers adds a server's headers to every request, such as an
// Authorization its entry gives. They are never logged.
type headers struct {
	base http.RoundTripper
	h    map[string]string
}

func (h *headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.h {
		r.Header.Set(k, v)
	}
	base := h.base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(r)
}

// ServerError reports an MCP server that could not be connected to or
// listed: which, where, and why. It matches [ErrServer].
type ServerError struct {
	Server string // its name in the config
	Where  string // its command, or its URL with any password redacted
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
