package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/glidepath/glidepath/tools/demo"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/glidepath/glidepath/tools/kit"
)

// DefaultAddr is beside the sim's 8089, so both can run at once.
const DefaultAddr = "127.0.0.1:8090"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
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

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("toolserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", DefaultAddr, "`host:port` to listen on; an empty host means loopback")
	keepalive := fs.Duration("keepalive", time.Second, "silence after which a stream gets a keepalive comment")
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
	srv := demo.NewServer(demo.ServerConfig{Keepalive: *keepalive})
	l, err := kit.Listen(*addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "toolserver: listening on http://%s\n", l.Addr())
	if err := kit.Serve(ctx, l, srv); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "toolserver: stopped")
	return nil
}
