package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/temporaltest"
	"google.golang.org/protobuf/types/known/durationpb"
)

// DefaultDevAddress is where `dev` listens when --address is not given:
// the Temporal CLI's own default.
const DefaultDevAddress = "127.0.0.1:7233"

// devCommand runs an embedded Temporal server for trying Glidepath on one
// machine: temporaltest's, which keeps its data in memory and is gone
// when the process ends (the Temporal CLI's dev server cannot be built
// from the module proxy, issue 19). Its frontend listens on a port of its
// choosing; dev serves it at --address by forwarding connections, and
// registers the namespace "default" that worker and run use.
func devCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("address", DefaultDevAddress, "where the server listens, HOST:PORT")
	if err := fs.Parse(args); err != nil {
		return usage("%v (try: harness-temporal dev --help)", err)
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return usage("--address %s: %v", *addr, err)
	}
	ts := temporaltest.NewServer()
	defer ts.Stop()
	if err := registerDefault(ctx, ts.GetFrontendHostPort()); err != nil {
		l.Close()
		return err
	}
	var wg sync.WaitGroup
	wg.Go(func() { forward(ctx, l, ts.GetFrontendHostPort(), stderr) })
	fmt.Fprintf(stdout, "harness-temporal dev: Temporal is ready at %s (namespace default; data in memory, gone on exit)\n", l.Addr())
	<-ctx.Done()
	l.Close()
	wg.Wait()
	return nil
}

// registerDefault registers the namespace "default" and waits until the
// server knows it.
func registerDefault(ctx context.Context, hostPort string) error {
	nc, err := client.NewNamespaceClient(client.Options{HostPort: hostPort, Logger: quietLogger{}})
	if err != nil {
		return err
	}
	defer nc.Close()
	err = nc.Register(ctx, &workflowservice.RegisterNamespaceRequest{Namespace: "default", WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour)})
	if err != nil {
		return fmt.Errorf("dev: registering the namespace default: %w", err)
	}
	wait, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	for {
		if _, err := nc.Describe(wait, "default"); err == nil {
			return nil
		}
		select {
		case <-wait.Done():
			return fmt.Errorf("dev: the namespace default did not become ready: %w", context.Cause(wait))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// forward copies each connection accepted on l to and from the server at
// to, until l is closed; it waits for every copy it started.
func forward(ctx context.Context, l net.Listener, to string, stderr io.Writer) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		in, err := l.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				fmt.Fprintln(stderr, "harness-temporal dev:", err)
			}
			return
		}
		wg.Go(func() {
			defer in.Close()
			out, err := (&net.Dialer{}).DialContext(ctx, "tcp", to)
			if err != nil {
				return
			}
			defer out.Close()
			done := context.AfterFunc(ctx, func() { in.Close(); out.Close() })
			defer done()
			var pipes sync.WaitGroup
			pipes.Go(func() { io.Copy(out, in); out.(*net.TCPConn).CloseWrite() })
			io.Copy(in, out)
			in.(*net.TCPConn).CloseWrite()
			pipes.Wait()
		})
	}
}
