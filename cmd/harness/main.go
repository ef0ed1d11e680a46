package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/internal/procstart"
)

// exitInterrupted is the exit code after a second Ctrl-C.
const exitInterrupted = 130

// processStart is when the process started (package procstart), set by
// main alone: `harness run` spends the process's start-up from its budget
// (issue 17). Tests that call run leave it zero, and their clock starts
// at budget.New.
var processStart time.Time

func main() {
	processStart = procstart.At
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
