package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/temporal/durable"
	"github.com/glidepath/glidepath/trace"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
)

// quietLogger is the SDK's logger: warnings and errors on stderr, no
// chatter.
type quietLogger struct{}

var sdkLog = log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))

func (quietLogger) Debug(msg string, kv ...any) {}
func (quietLogger) Info(msg string, kv ...any)  {}
func (quietLogger) Warn(msg string, kv ...any)  { sdkLog.Warn(msg, kv...) }
func (quietLogger) Error(msg string, kv ...any) { sdkLog.Error(msg, kv...) }

// answerWait is how long past [durable.Overrun] `run` waits for its
// result: the server ends a run still open at D + Overrun on a timer that
// may fire up to a second late, and its answer must reach us. So `run`
// ends by D + Overrun + answerWait (7s), with the run's result or one
// labeled unknown (resultUnknown).
const answerWait = 2 * time.Second

func runCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c conn
	c.flags(fs)
	b := fs.Duration("budget", 2*time.Minute, "the run's whole budget B")
	reserve := fs.String("reserve", "auto", "the reserve R kept for landing (auto: max(10% of B, min(20s, 25% of B)))")
	floor := fs.Duration("floor", 0, "the floor F below which nothing starts (0: 50ms)")
	maxSteps := fs.Int("max-steps", durable.DefaultMaxSteps, "model turns before landing")
	parallel := fs.Int("parallel", durable.DefaultParallel, "tool calls of one turn at once")
	traceFile := fs.String("trace", "", "write the run's JSONL trace to this file (SPEC §6)")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	quiet := fs.Duration("quiet", 60*time.Second, "the quiet clock Q: the run lands when nothing happens for this long")
	// A production server's default: a run told less could end a second
	// past D; `dev`'s server fires timers within DevTimerShift, and a run
	// on it may say so (docs/temporal.md, Timers).
	resolution := fs.Duration("timer-resolution", time.Second, "how late the server may fire a timer (its history.timerProcessorMaxTimeShift; harness-temporal dev: 10ms): leases and backoffs count it, so the run ends by D")
	progress := fs.String("progress", "auto", "live status line on stderr, a `mode`: auto (on a terminal), always or never")
	if err := fs.Parse(args); err != nil {
		return parseError(err, "run")
	}
	if fs.NArg() != 1 {
		return usage("%v: give exactly one TASK, or - to read it from standard input", errNoTask)
	}
	task := fs.Arg(0)
	if task == "-" {
		data, err := io.ReadAll(bufio.NewReader(stdin))
		if err != nil {
			return err
		}
		task = strings.TrimSpace(string(data))
	}
	if *b <= 0 {
		return usage("--budget %v: must be positive", *b)
	}
	if *quiet <= 0 {
		return usage("--quiet %v: must be positive", *quiet)
	}
	if *resolution < 0 {
		return usage("--timer-resolution %v: want a duration of 0 or more", *resolution)
	}
	if *progress != "auto" && *progress != "always" && *progress != "never" {
		return usage("--progress %q: want auto, always or never", *progress)
	}
	in := durable.Input{Task: task, Budget: *b, Floor: *floor, MaxSteps: *maxSteps, Parallel: *parallel, Quiet: *quiet,
		TimerResolution: *resolution}
	if *reserve != "auto" {
		r, err := time.ParseDuration(*reserve)
		if err != nil || r <= 0 || r >= *b {
			return usage("--reserve %q: want a duration above 0 and below the budget", *reserve)
		}
		in.Reserve = r
	}
	if in.Floor < 0 || in.Floor >= *b {
		return usage("--floor %v: want a duration of 0 or more, below the budget", in.Floor)
	}
	// The budget starts now, as far as `run` can tell: the workflow's
	// starts when the server has it, a little later.
	b0, err := budget.New(budget.Config{Total: in.Budget, Reserve: in.Reserve, Floor: in.Floor})
	if err != nil {
		return usage("%v", err)
	}
	// `run` ends by D + Overrun + answerWait, whatever the server does.
	// The wait outlives ctx: its end (the first Ctrl-C) asks the run to
	// land, which it does within its reserve, and the result is still
	// printed.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), *b+durable.Overrun+answerWait)
	defer cancel()
	dctx, stopDial := context.WithCancel(wctx)
	defer context.AfterFunc(ctx, stopDial)()
	cl, err := c.dial(dctx)
	stopDial()
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := checkKeys(wctx, cl, c.queue, c.keyID); err != nil {
		return err
	}
	in.Spent = b0.Spent() // `run`'s own start-up is spent from B, as the wait for a worker is
	wr, err := cl.ExecuteWorkflow(wctx, durable.StartOptions(client.StartWorkflowOptions{TaskQueue: c.queue}, in.Budget), durable.WorkflowName, in)
	if err != nil {
		return fmt.Errorf("cannot start the run: %w", err)
	}
	fmt.Fprintf(stderr, "harness-temporal run: started %s; watch it: harness-temporal status %s%s\n", wr.GetID(), lookUpArgs(c), wr.GetID())
	stopWatch := context.AfterFunc(ctx, func() {
		fmt.Fprintf(stderr, "harness-temporal run: landing now, within %s; press Ctrl-C again to quit at once\n", landing.Rounded(b0.Reserve()))
		// The open run of the workflow, not the first: a run that
		// continued as new is another (durable's carry.go).
		if err := cl.SignalWorkflow(wctx, wr.GetID(), "", durable.SignalLand, nil); err != nil {
			fmt.Fprintf(stderr, "harness-temporal run: warning: the run could not be asked to land: %v\n", err)
		}
	})
	defer stopWatch()
	stopStatus := func() {}
	if on, tty := progressOn(*progress, stderr); on {
		stopStatus = watchStatus(wctx, cl, wr.GetID(), stderr, tty)
	}
	var out durable.Output
	err = wr.Get(wctx, &out)
	stopStatus()
	if err != nil {
		if _, failed := errors.AsType[*temporal.ApplicationError](err); failed {
			return fmt.Errorf("run %s: %w", wr.GetID(), err)
		}
		u := &unknownError{id: wr.GetID(), lookUp: lookUpArgs(c), err: err}
		if err := print(stdout, stderr, u.result(b0), *asJSON); err != nil {
			return err
		}
		return u
	}
	if *traceFile != "" {
		if err := writeTrace(*traceFile, out.Trace); err != nil {
			fmt.Fprintf(stderr, "harness-temporal run: warning: the trace was not written: %v\n", err)
		}
		if out.Dropped > 0 {
			fmt.Fprintf(stderr, "harness-temporal run: warning: %d trace records past %d were not kept\n", out.Dropped, durable.MaxRecords)
		}
	}
	if err := print(stdout, stderr, out.Result, *asJSON); err != nil {
		return err
	}
	if out.Result.Status != landing.Complete {
		return &partialError{cause: string(out.Result.Cause)}
	}
	return nil
}

// writeTrace writes the run's records, one JSON object a line, with the
// core's encoder, so that `harness report` reads them.
func writeTrace(path string, recs []trace.Record) error {
	var buf []byte
	for _, r := range recs {
		buf = append(trace.AppendJSON(buf, r), '\n')
	}
	return os.WriteFile(path, buf, 0o600)
}

// print writes the result as `harness run` does (cmd/harness's print,
// which is in package main there: repeated here, see the package doc).
func print(stdout, stderr io.Writer, res landing.Result, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	if _, err := fmt.Fprintln(stdout, res.Text()); err != nil {
		return err
	}
	fmt.Fprintln(stderr, res.Line())
	return nil
}
