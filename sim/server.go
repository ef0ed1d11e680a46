package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/glidepath/glidepath/internal/pipenet"
)

// DefaultAddr is where [Serve] listens when given no address: loopback
// only, since the sim is a test double, not a service.
const DefaultAddr = "127.0.0.1:8089"

// shutdownGrace bounds how long [Serve] lets responses being written finish
// once its context ends; those still waiting are cut at once.
const shutdownGrace = 5 * time.Second

// readHeaderTimeout guards the listener against clients that never finish
// their headers.
const readHeaderTimeout = 10 * time.Second

// A Server is a sim listening on loopback or in memory, for tests, like
// [net/http/httptest.Server]. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL for OpenAI clients, ending in /v1, e.g.
	// "http://127.0.0.1:43127/v1".
	URL string

	h         *handler
	hs        *http.Server
	client    *http.Client
	done      chan struct{} // closed by Close: releases hanging handlers
	handlers  gate
	loop      sync.WaitGroup // the accept loop
	closeOnce sync.Once
}

// NewServer starts a sim on 127.0.0.1 at a free port. A nil scenario is the
// default policy. It panics if the scenario is invalid ([Scenario.Validate])
// or no port can be had, as httptest does; call [Server.Close] when done.
func NewServer(sc *Scenario) *Server {
	mustBeValid(sc)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("sim: NewServer: %v", err))
	}
	// No Proxy: a proxy from the environment must not stand between a
	// test and its loopback server.
	tr := &http.Transport{}
	return start(sc, l, "http://"+l.Addr().String()+"/v1", tr)
}

// NewPipeServer starts a sim on an in-memory listener: nothing touches the
// network, and every blocking step is a channel operation, so a test can
// run it, and a real client over [Server.Client], inside a
// [testing/synctest] bubble with fake time. Create and close it inside the
// bubble. Its URL's host is a placeholder that only Client can reach.
func NewPipeServer(sc *Scenario) *Server {
	mustBeValid(sc)
	l := pipenet.Listen("sim.invalid")
	return start(sc, l, "http://sim.invalid/v1", l.Transport())
}

func mustBeValid(sc *Scenario) {
	if err := sc.Validate(); err != nil {
		panic(fmt.Sprintf("sim: invalid scenario: %v", err))
	}
}

func start(sc *Scenario, l net.Listener, url string, tr *http.Transport) *Server {
	s := &Server{URL: url, client: &http.Client{Transport: tr}, done: make(chan struct{})}
	s.h = newHandler(sc, true, nil, s.done)
	s.hs = &http.Server{Handler: s.handlers.wrap(s.h), ReadHeaderTimeout: readHeaderTimeout}
	s.loop.Go(func() { s.hs.Serve(l) })
	return s
}

// Client returns an HTTP client that reaches the server; for a pipe
// server it is the only one that can. It has no timeout: bound calls with
// their contexts.
func (s *Server) Client() *http.Client { return s.client }

// MaxRecords is how many request records a [Server] keeps: the most
// recent ones. It bounds a long-lived server's memory (a fleet of runs on
// one embedded sim sends far more) while holding every request of any
// test that looks at them; each record holds its conversation, so the
// bound is in records, not bytes.
const MaxRecords = 1024

// Requests returns a copy of the records of the last [MaxRecords] requests
// received (all of them, until there are more), in the order they were
// numbered ([Request.Index]); the server never changes a record once made.
// [Server.Received] counts those no longer held too.
func (s *Server) Requests() []Request { return s.h.records() }

// Received reports how many requests the server has received and
// numbered, including those whose records [Server.Requests] no longer
// holds: the Index of the latest.
func (s *Server) Received() int { return s.h.received() }

// Close stops the server: it closes the listener and every connection,
// releases handlers that hang or send keepalives, waits for all of the
// server's goroutines to end, and closes the client's idle connections.
// It is idempotent.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.hs.Close()
		close(s.done)
		s.loop.Wait()
		s.handlers.shutAndWait()
		s.client.CloseIdleConnections()
	})
}

// gate counts handlers in and, once shut, turns new ones away, so shutting
// can wait for those inside without racing a late arrival.
type gate struct {
	mu   sync.Mutex // guards shut; wg.Add happens under it
	shut bool
	wg   sync.WaitGroup
}

func (g *gate) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		if g.shut {
			g.mu.Unlock()
			writeError(w, http.StatusServiceUnavailable, "[sim] the server is closing.", "", "")
			return
		}
		g.wg.Add(1)
		g.mu.Unlock()
		defer g.wg.Done()
		h.ServeHTTP(w, r)
	})
}

func (g *gate) shutAndWait() {
	g.mu.Lock()
	g.shut = true
	g.mu.Unlock()
	g.wg.Wait()
}

// Handler returns the sim as an http.Handler, serving /v1/chat/completions,
// /v1/responses and /v1/models. It keeps no record of requests, so it can serve
// indefinitely; hanging responses end when their clients leave. It panics
// if the scenario is invalid ([Scenario.Validate]).
func Handler(sc *Scenario) http.Handler {
	mustBeValid(sc)
	return newHandler(sc, false, nil, nil)
}

// Serve runs the sim on addr (host:port; [DefaultAddr] if empty, and
// loopback if the host is empty) until ctx ends, writing one line per
// request to log (which may be nil), never with header values. Its first
// line names the base URL, with the real port when addr asks for port 0.
// When ctx ends it stops accepting, cuts every response still waiting on
// its scenario (a delay, a hang, keepalives), gives the others a few
// seconds to finish, and returns nil. It returns an error if the scenario
// is invalid or addr cannot be listened on.
func Serve(ctx context.Context, addr string, sc *Scenario, log io.Writer) error {
	if err := sc.Validate(); err != nil {
		return err
	}
	if addr == "" {
		addr = DefaultAddr
	}
	if host, port, err := net.SplitHostPort(addr); err == nil && host == "" {
		addr = net.JoinHostPort("127.0.0.1", port)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	if log == nil {
		log = io.Discard
	}
	done := make(chan struct{})
	h := newHandler(sc, false, log, done)
	var handlers gate
	hs := &http.Server{Handler: handlers.wrap(h), ReadHeaderTimeout: readHeaderTimeout}
	fmt.Fprintf(log, "sim: listening on http://%s/v1\n", l.Addr())
	served := make(chan error, 1)
	go func() { served <- hs.Serve(l) }()
	select {
	case err := <-served:
		// Accepting failed; handlers already started must still end
		// before Serve returns, so that none outlives it.
		close(done)
		hs.Close()
		handlers.shutAndWait()
		return fmt.Errorf("sim: %w", err)
	case <-ctx.Done():
	}
	close(done)
	grace, cancel := context.WithTimeoutCause(context.WithoutCancel(ctx), shutdownGrace,
		errors.New("sim: shutdown grace period over"))
	defer cancel()
	if hs.Shutdown(grace) != nil {
		hs.Close()
	}
	<-served
	// Close does not wait for handlers, nor does anything for hijacked
	// connections; done has released them, so this wait is short.
	handlers.shutAndWait()
	fmt.Fprintf(log, "sim: stopped\n")
	return nil
}
