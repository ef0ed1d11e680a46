package main

import (
	"context"
	"fmt"
	"io"
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
	// This goroutine lives as long as the process, which it may end.
	go interrupts(signals, cancel, os.Stderr, os.Exit)
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// interrupts turns signals into the two stages of SPEC §4: the first asks
// the command to stop well (a run lands now and says so, a server shuts
// down); the second ends the process at once with exit code 130.
// The line it writes on stderr starts with a newline, to leave a live
// status line that may be drawn there, and says why the process ended.
func interrupts(signals <-chan os.Signal, cancel context.CancelCauseFunc, stderr io.Writer, exit func(int)) {
	<-signals
	cancel(harness.ErrInterrupted)
	<-signals
	fmt.Fprintln(stderr, "\nharness: interrupted twice: exiting now, without a result")
	exit(exitInterrupted)
}
