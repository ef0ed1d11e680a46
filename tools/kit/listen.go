package kit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// shutdownGrace bounds how long [Serve] lets answers being written finish
// once the handlers have returned; connections still busy are then cut.
const shutdownGrace = 5 * time.Second

// readHeaderTimeout guards the listener against clients that never finish
// their headers.
const readHeaderTimeout = 10 * time.Second

// Listen listens on a TCP address for [Serve]. A tool server runs code on
// a caller's behalf, so it listens on loopback unless told otherwise: ""
// means 127.0.0.1 on a free port and ":8090" means 127.0.0.1:8090; another
// host, such as "0.0.0.0:8090", is used only when given explicitly.
func Listen(addr string) (net.Listener, error) {
	if addr == "" {
		addr = ":0"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("kit: listen: %w", err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, fmt.Errorf("kit: %w", err)
	}
	return l, nil
}

// Serve serves srv on l until ctx ends, then shuts down: it closes srv
// ([Server.Close]: every handler's context ends with [ErrClosed] and Serve
// waits for the handlers to return), lets the answers being written
// finish for a few seconds, and returns nil. srv stays closed. It returns
// an error, after closing srv, if serving fails.
func Serve(ctx context.Context, l net.Listener, srv *Server) error {
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: readHeaderTimeout}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(l) }()
	select {
	case err := <-served:
		srv.Close()
		return fmt.Errorf("kit: %w", err)
	case <-ctx.Done():
	}
	// Handlers first: the requests following them end only once they do,
	// and http.Server.Shutdown waits for those requests.
	srv.Close()
	grace, cancel := context.WithTimeoutCause(context.WithoutCancel(ctx), shutdownGrace,
		errors.New("kit: shutdown grace period over"))
	defer cancel()
	if hs.Shutdown(grace) != nil {
		hs.Close()
	}
	<-served
	return nil
}

// ListenAndServe is [Listen] and [Serve]. It logs the address it listens
// on to srv's Logger.
func ListenAndServe(ctx context.Context, addr string, srv *Server) error {
	l, err := Listen(addr)
	if err != nil {
		return err
	}
	srv.logger().Info("kit: listening", "url", "http://"+l.Addr().String())
	return Serve(ctx, l, srv)
}
