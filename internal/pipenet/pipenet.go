// Package pipenet is an in-memory network for tests: a [net.Listener]
// whose connections are [net.Pipe] pairs. Every blocking step is a channel
// operation inside the process, so an HTTP server and a real client over it
// run inside a testing/synctest bubble, where real sockets cannot: time is
// fake and exact, and a goroutine left behind fails the test.
package pipenet

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
)

// A Listener hands the server's end of each dialed pipe to Accept. Create
// it, serve on it, and dial it, all inside the same bubble when under
// synctest. It is safe for concurrent use.
type Listener struct {
	name      string
	conns     chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once
}

// Listen returns a listener; name is its address as [Listener.Addr]
// reports it, a placeholder host such as "sim.invalid".
func Listen(name string) *Listener {
	return &Listener{name: name, conns: make(chan net.Conn), closed: make(chan struct{})}
}

// Accept waits for the next dialed connection, or returns [net.ErrClosed]
// once the listener is closed.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close stops Accept and every Dial still waiting; it is idempotent.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

// Addr returns the listener's placeholder address.
func (l *Listener) Addr() net.Addr { return addr(l.name) }

// DialContext connects to the listener, whatever network and address it
// is asked for, and returns the client's end of a new pipe. It fails with
// [net.ErrClosed] once the listener is closed, or with ctx's cause.
func (l *Listener) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	server, client := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		server.Close()
		client.Close()
		return nil, fmt.Errorf("pipenet: dial %s: %w", l.name, net.ErrClosed)
	case <-ctx.Done():
		server.Close()
		client.Close()
		return nil, context.Cause(ctx)
	}
}

// Transport returns an HTTP transport that reaches this listener for every
// URL. Close its idle connections when done.
func (l *Listener) Transport() *http.Transport {
	return &http.Transport{Proxy: nil, DialContext: l.DialContext, ForceAttemptHTTP2: false}
}

type addr string

func (addr) Network() string  { return "pipe" }
func (a addr) String() string { return string(a) }
