package main

import (
	"bufio"
	"context"
	"encoding/json"
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
)

// quietLogger is the SDK's logger: warnings and errors on stderr, no
// chatter.
type quietLogger struct{}

var sdkLog = log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))

func (quietLogger) Debug(msg string, kv ...any) {}
func (quietLogger) Info(msg string, kv ...any)  {}
func (quietLogger) Warn(msg string, kv ...any)  { sdkLog.Warn(msg, kv...) }
func (quietLogger) Error(msg string, kv ...any) { sdkLog.Error(msg, kv...) }

// waitGrace is how long past the run's budget `run` waits for its result
// before it says the run is lost: a run lands by its deadline, so only a
// server or fleet that stopped can take longer.
const waitGrace = time.Minute

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
	in := durable.Input{Task: task, Budget: *b, Floor: *floor, MaxSteps: *maxSteps, Parallel: *parallel, Quiet: *quiet}
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
	cl, err := c.dial(ctx)
	if err != nil {
		return err
	}
	defer cl.Close()
	// The wait outlives ctx: its end (the first Ctrl-C) cancels the
	// workflow, which lands within its reserve, and the result is still
	// printed.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), *b+waitGrace)
	defer cancel()
	wr, err := cl.ExecuteWorkflow(wctx, durable.StartOptions(client.StartWorkflowOptions{TaskQueue: c.queue}), durable.WorkflowName, in)
	if err != nil {
		return fmt.Errorf("cannot start the run: %w", err)
	}
	stopWatch := context.AfterFunc(ctx, func() {
		reserve := in.Reserve
		if reserve == 0 {
			reserve = budget.DefaultReserve(in.Budget)
		}
		fmt.Fprintf(stderr, "harness-temporal run: landing now, within %s; press Ctrl-C again to quit at once\n", landing.Rounded(reserve))
		if err := cl.CancelWorkflow(wctx, wr.GetID(), wr.GetRunID()); err != nil {
			fmt.Fprintf(stderr, "harness-temporal run: warning: the run could not be cancelled: %v\n", err)
		}
	})
	defer stopWatch()
	var out durable.Output
	if err := wr.Get(wctx, &out); err != nil {
		return fmt.Errorf("run %s: %w", wr.GetID(), err)
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
