package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/glidepath/glidepath/tools/demo"
	"github.com/glidepath/glidepath/tools/kit"
)

// DefaultAddr is beside the sim's 8089, so both can run at once.
const DefaultAddr = "127.0.0.1:8090"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case isUsage(err):
		fmt.Fprintln(os.Stderr, "toolserver:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "toolserver:", err)
		os.Exit(1)
	}
}

type usageError struct{ msg string }

func isUsage(err error) bool {
	_, ok := errors.AsType[usageError](err)
	return ok
}

func (e usageError) Error() string { return e.msg + " (try: toolserver --help)" }

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("toolserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", DefaultAddr, "`host:port` to listen on; an empty host means loopback")
	keepalive := fs.Duration("keepalive", time.Second, "silence after which a stream gets a keepalive comment")
	withMCP := fs.Bool("mcp", false, "also serve the tools over MCP's streamable HTTP at /mcp")
	mcpStdio := fs.Bool("mcp-stdio", false, "serve the tools over MCP on stdin and stdout instead of HTTP")
	var origins []string
	fs.Func("allow-origin", "an `origin` (scheme://host[:port]) whose browser pages may call /mcp, beside requests with no Origin "+
		"and the server's own origin on loopback; repeatable", func(o string) error {
		u, err := url.Parse(o)
		if err != nil || u.Scheme == "" || u.Host == "" || u.Path != "" && u.Path != "/" || u.RawQuery != "" {
			return fmt.Errorf("%q is not an origin such as https://app.example.com", o)
		}
		origins = append(origins, o)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if *keepalive <= 0 {
		return usageError{"--keepalive must be positive"}
	}
	if *mcpStdio {
		var addrSet bool
		fs.Visit(func(f *flag.Flag) { addrSet = addrSet || f.Name == "addr" })
		if addrSet || *withMCP || len(origins) > 0 {
			return usageError{"--mcp-stdio serves no HTTP: it takes neither --addr, --mcp nor --allow-origin"}
		}
	}
	if len(origins) > 0 && !*withMCP {
		return usageError{"--allow-origin is for MCP over HTTP: give --mcp too"}
	}
	srv := demo.NewServer(demo.ServerConfig{Keepalive: *keepalive})
	srv.AllowedOrigins = origins
	if *mcpStdio {
		return serveStdio(ctx, srv, stdin, stdout, stderr)
	}
	l, err := kit.Listen(*addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "toolserver: listening on http://%s\n", l.Addr())
	if *withMCP {
		fmt.Fprintf(stdout, "toolserver: MCP at http://%s/mcp\n", l.Addr())
		err = serveWithMCP(ctx, l, srv)
	} else {
		err = kit.Serve(ctx, l, srv)
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "toolserver: stopped")
	return nil
}

// serveWithMCP is kit.Serve with MCP's streamable HTTP mounted at /mcp
// beside the kit's own protocol.
func serveWithMCP(ctx context.Context, l net.Listener, srv *kit.Server) error {
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.MCPHandler())
	mux.Handle("/", srv)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(l) }()
	select {
	case err := <-served:
		srv.Close()
		return err
	case <-ctx.Done():
	}
	// The kit first, as kit.Serve does: its handlers end and its MCP
	// sessions are answered and closed, and only then do the requests
	// following them end, which http.Server.Shutdown waits for.
	srv.Close()
	grace, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if hs.Shutdown(grace) != nil {
		hs.Close()
	}
	<-served
	return nil
}

// serveStdio serves srv over MCP on stdin and stdout, as a command an MCP
// client starts, until the client ends the session or ctx ends; then it
// closes srv, waiting for its handlers. stdout carries the protocol, so
// what toolserver itself says goes to stderr.
func serveStdio(ctx context.Context, srv *kit.Server, stdin io.Reader, stdout, stderr io.Writer) error {
	in, ok := stdin.(io.ReadCloser)
	if !ok {
		in = io.NopCloser(stdin)
	}
	fmt.Fprintln(stderr, "toolserver: serving MCP on stdin and stdout")
	err := srv.ServeMCP(ctx, &mcp.IOTransport{Reader: in, Writer: nopCloser{stdout}})
	srv.Close()
	if err != nil {
		return err
	}
	fmt.Fprintln(stderr, "toolserver: stopped")
	return nil
}

// nopCloser keeps stdout open when the MCP session ends, as the sdk's
// StdioTransport does.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
