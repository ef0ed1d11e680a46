package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/temporal/durable"
	"go.temporal.io/sdk/temporal"
)

func landCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cl, c, id, err := lookUpRun(ctx, flag.NewFlagSet("land", flag.ContinueOnError), args, stderr)
	if err != nil || cl == nil {
		return err
	}
	defer cl.Close()
	if err := cl.SignalWorkflow(ctx, id, "", durable.SignalLand, nil); err != nil {
		return fmt.Errorf("run %s: cannot ask it to land: %w", id, err)
	}
	_, err = fmt.Fprintf(stdout, "harness-temporal land: asked %s to land now (cause %s); its result goes to the run that started it; watch it: harness-temporal status %s%s\n",
		id, landing.CauseCancelled, lookUpArgs(c), id)
	return err
}

// causeUnknown is the cause of a result `run` could not learn: the run
// was started, and no answer came by its deadline plus Overrun and
// answerWait (a queue with no worker, a server lost). It is not one of
// the causes a run lands on: the run may be running still, or have ended
// with a result of its own.
const causeUnknown landing.Cause = "unknown"

// unknownError is a run whose result `run` could not learn (exit 3,
// SPEC §4: the answer printed is not complete).
type unknownError struct {
	id, lookUp string
	err        error
	pinned     string // the build the run was pinned to, as pinnedTo says it; "" unknown
}

func (e *unknownError) Error() string {
	return fmt.Sprintf("partial result: the run's result is unknown (cause %s): %s (%v); look it up: harness-temporal status %s%s",
		causeUnknown, e.what(), e.err, e.lookUp, e.id)
}

func (e *unknownError) Unwrap() error { return e.err }

// what says what `run` knows of the run: the server ended it unlanded at
// its execution timeout, or no answer came at all.
func (e *unknownError) what() string {
	if _, ok := errors.AsType[*temporal.TimeoutError](e.err); ok {
		return fmt.Sprintf("the server ended run %s at its deadline + %s before it landed: no worker took it, or none could finish it%s", e.id, durable.Overrun, e.pinned)
	}
	return fmt.Sprintf("no answer from the server for run %s by its deadline + %s", e.id, durable.Overrun+answerWait)
}

// result is the labeled result of a run whose budget is b: partial,
// cause unknown, a boundary that says what is unknown, spent as `run`
// measured it.
func (e *unknownError) result(b *budget.Budget) landing.Result {
	return landing.Result{RunID: e.id, Status: landing.Partial, Cause: causeUnknown,
		Boundary: fmt.Sprintf("The run's result is unknown: %s. Whether it made any tool call, and whether a write took effect, is unknown. "+
			"Look it up: harness-temporal status %s%s.", e.what(), e.lookUp, e.id),
		Budget: landing.ReportOf(b, time.Now())}
}
