package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
)

const (
	// defaultReconcileBudget bounds one "harness reconcile": every status
	// request is leased from it, so a journal full of dead tools costs
	// this much and no more.
	defaultReconcileBudget = 30 * time.Second

	// reconcileParallel is how many status requests are in flight at once,
	// so that a few unresponsive tools do not eat the budget of the rest.
	reconcileParallel = 8
)

// reconcileCommand is "harness reconcile [--journal FILE] [--budget D]".
type reconcileCommand struct {
	streams
}

func (c *reconcileCommand) Run(ctx context.Context, args []string) (err error) {
	fs := flag.NewFlagSet("reconcile", flag.ContinueOnError)
	journal := journalFlag(fs)
	var total *time.Duration
	fs.Func("budget", "the `duration` the whole command may take (default 30s)", durationFlag(&total))
	pos, help, err := parseFlags(fs, "reconcile", args, c.stdout, func(w io.Writer) { reconcileUsage(w, fs) })
	if help || err != nil {
		return err
	}
	if len(pos) > 0 {
		return &usageError{cmd: "reconcile", err: fmt.Errorf("unexpected argument %q", pos[0])}
	}
	cfg := budget.Config{Total: defaultReconcileBudget}
	if total != nil {
		cfg.Total = *total
	}
	b, err := budget.New(cfg)
	if err != nil {
		return &usageError{cmd: "reconcile", err: fmt.Errorf("--budget %v: must be positive", cfg.Total)}
	}
	path, err := journalPath(*journal, "reconcile")
	if err != nil {
		return err
	}
	open, err := readOrphans(path)
	if err != nil {
		return err
	}
	if len(open) == 0 {
		fmt.Fprintf(c.stderr, "harness reconcile: no open orphans in %s\n", path)
		return nil
	}

	answers := askAll(ctx, b, open)

	j, err := cancel.OpenJournal(path)
	if err != nil {
		return err
	}
	// A journal or stdout that failed is an internal error, and wins over
	// the orphans left open, which the journal may not even hold now.
	overrides := func(e error) bool {
		_, open := errors.AsType[*stillOpenError](err)
		return e != nil && (err == nil || open)
	}
	defer func() {
		if cerr := j.Close(); overrides(cerr) {
			err = cerr
		}
	}()
	var out bytes.Buffer
	tw := tabwriter.NewWriter(&out, 0, 8, 2, ' ', 0)
	// What was appended is printed even when a later append fails.
	defer func() {
		tw.Flush()
		if _, werr := c.stdout.Write(out.Bytes()); overrides(werr) {
			err = werr
		}
	}()
	settled := map[cancel.State]int{}
	for i, e := range open {
		a := answers[i]
		switch {
		case a.err != nil:
			fmt.Fprintf(tw, "%s\t%s\tstill open: %v\n", e.IdempotencyKey, e.Tool, a.err)
			continue
		case a.status.State == cancel.Running:
			fmt.Fprintf(tw, "%s\t%s\tstill open: the tool says running (units %d)\n", e.IdempotencyKey, e.Tool, a.status.Units)
			continue
		}
		// Appended, never rewritten: the open entry stays, and this one,
		// later in the file, closes its key (SPEC §5).
		e.TS, e.State = time.Time{}, string(a.status.State)
		if err := j.Append(e); err != nil {
			return err
		}
		settled[a.status.State]++
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.IdempotencyKey, e.Tool, settledNote(a.status))
	}
	stillOpen := len(open) - settled[cancel.Done] - settled[cancel.Failed] - settled[cancel.NeverReceived]
	tw.Flush()
	noun := "orphans"
	if len(open) == 1 {
		noun = "orphan"
	}
	fmt.Fprintf(&out, "reconciled %d open %s: %d done, %d failed, %d never received; %d still open\n",
		len(open), noun, settled[cancel.Done], settled[cancel.Failed], settled[cancel.NeverReceived], stillOpen)
	if stillOpen > 0 {
		return &stillOpenError{n: stillOpen}
	}
	return nil
}

// stillOpenError ends a reconcile that left orphans open with exit code 3,
// so that a script does not take "nothing failed" for "all settled".
type stillOpenError struct{ n int }

func (e *stillOpenError) Error() string {
	if e.n == 1 {
		return "1 orphan is still open: run harness reconcile again later, or settle it by hand"
	}
	return fmt.Sprintf("%d orphans are still open: run harness reconcile again later, or settle them by hand", e.n)
}

func (e *stillOpenError) exitCode() int { return exitPartial }

type statusAnswer struct {
	status cancel.Status
	err    error
}

// askAll asks each orphan's tool for its status once, reconcileParallel at
// a time, and returns the answers in the order of open.
func askAll(ctx context.Context, b *budget.Budget, open []cancel.Entry) []statusAnswer {
	answers := make([]statusAnswer, len(open))
	sem := make(chan struct{}, reconcileParallel)
	var wg sync.WaitGroup
	for i, e := range open {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			answers[i].status, answers[i].err = ask(ctx, b, e)
		})
	}
	wg.Wait()
	return answers
}

// ask sends one status request on its own work lease: the reserve is kept
// for recording what was learned.
func ask(ctx context.Context, b *budget.Budget, e cancel.Entry) (cancel.Status, error) {
	if e.URL == "" {
		return cancel.Status{}, errors.New("not asked: its tool has no URL, so it cannot be asked from outside the run that made the call; settle it by hand")
	}
	lease, err := b.Lease(nil, cancel.StatusLease)
	if err != nil {
		return cancel.Status{}, fmt.Errorf("not asked: %w", err)
	}
	lctx, stop := lease.Context(ctx)
	defer stop()
	return cancel.Endpoint{URL: e.URL, Tool: e.Tool}.Status(lctx, e.IdempotencyKey)
}

func settledNote(s cancel.Status) string {
	switch s.State {
	case cancel.Done:
		if len(s.Output) == 0 {
			return "done"
		}
		out := string(s.Output)
		if len(out) > 120 {
			out = strings.ToValidUTF8(out[:120], "") + "…"
		}
		return "done, output " + out
	case cancel.Failed:
		return "failed: the tool reports the call failed; it is not retried"
	case cancel.NeverReceived:
		return "never received: the tool never got the call; it may be sent again with the same key"
	}
	return string(s.State)
}

func reconcileUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `usage: harness reconcile [--journal FILE] [--budget D]

Reconcile asks the tool of every open orphan for the call's status, once,
and appends an entry with the settled state (done, failed or
never_received) for each that settled. Orphans still running or whose tool
does not answer stay open, for a later reconcile. The journal is only
appended to, never rewritten. Every status request is leased from one
budget (--budget). The exit code is 0 when every orphan settled (or there
was none) and 3 when some stay open.

Flags:

`)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}
