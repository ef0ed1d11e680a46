package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/glidepath/glidepath/harness"
)

// exitInterrupted is the exit code after a second Ctrl-C.
const exitInterrupted = 130

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	// The first signal asks the command to stop well: a run lands now and
	// says so, a server shuts down. The second stops the process at once.
	// This goroutine lives as long as the process, which it may end.
	go func() {
		<-signals
		cancel(harness.ErrInterrupted)
		<-signals
		os.Exit(exitInterrupted)
	}()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
