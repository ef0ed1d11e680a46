// Command harness-temporal runs Glidepath runs as Temporal workflows
// (SPEC §9): `worker` serves the runs' workflow and activities with the
// tools of a tools file, `run` starts one run and prints what `harness
// run` prints, and `dev` starts an embedded development server.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/glidepath/glidepath/landing"
)

// main wires the signals: the first SIGINT or SIGTERM cancels the
// command's context (run asks the run to land, worker and dev stop), the second
// exits at once with 130 (SPEC §4).
func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		cancel()
		<-sigs
		os.Exit(exitInterrupted)
	}()
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	cancel()
	os.Exit(exitCode(err, os.Stderr))
}

// Exit codes, as `harness run` has them (SPEC §4). A run whose result
// `run` could not learn (cause unknown: no worker, a server lost) exits
// exitPartial: its labeled result is printed, and it is not complete.
const (
	exitOK      = 0
	exitFailed  = 1
	exitUsage   = 2
	exitPartial = 3

	exitInterrupted = 130 // a second Ctrl-C
)

// usageError is bad usage or config: exit 2, nothing started.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usage(format string, a ...any) error { return &usageError{fmt.Errorf(format, a...)} }

// parseError is what a command returns when its flags do not parse: a
// usage error, or nothing when help was asked for, which the flag package
// has printed.
func parseError(err error, cmd string) error {
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return usage("%v (try: harness-temporal %s --help)", err, cmd)
}

// partialError reports a run that landed early; its result is printed.
type partialError struct{ cause string }

func (e *partialError) Error() string {
	// The same line as harness run's: a run whose model answered did not
	// land early (issue 24).
	return landing.PartialLine(landing.Cause(e.cause), "")
}

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	if _, ok := errors.AsType[*partialError](err); ok {
		return exitPartial
	}
	if _, shown := errors.AsType[*shownError](err); shown {
		stderr = io.Discard // written already, as one JSON line
	}
	fmt.Fprintf(stderr, "harness-temporal: %v\n", err)
	if _, ok := errors.AsType[*unknownError](err); ok {
		return exitPartial // its labeled result is printed; the message says where to look
	}
	if _, ok := errors.AsType[*usageError](err); ok {
		return exitUsage
	}
	return exitFailed
}

const help = `usage: harness-temporal worker --address HOST:PORT [--task-queue Q] [--tools F] [--journal F] [--model M] [--base-url U] [--encrypt-key F]
       harness-temporal run --address HOST:PORT [--budget D] [--json] [--trace F] [--progress M] [-v] [--log-format F] [--profile F] [--encrypt-key F] … TASK
       harness-temporal status --address HOST:PORT [--json] [--encrypt-key F] ID
       harness-temporal land --address HOST:PORT ID
       harness-temporal dev [--address HOST:PORT] [--db FILE]`

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usage("no command\n%s", help)
	}
	switch args[0] {
	case "worker":
		return workerCommand(ctx, args[1:], stderr)
	case "run":
		return runCommand(ctx, args[1:], stdin, stdout, stderr)
	case "status":
		return statusCommand(ctx, args[1:], stdout, stderr)
	case "land":
		return landCommand(ctx, args[1:], stdout, stderr)
	case "dev":
		return devCommand(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, help)
		return nil
	}
	return usage("unknown command %q\n%s", args[0], help)
}
