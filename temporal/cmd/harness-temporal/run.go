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
	"github.com/glidepath/glidepath/internal/redact"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/temporal/durable"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/trace/logs"
	"github.com/glidepath/glidepath/watchdog"
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

// warnResolution warns when the server's timer resolution, which every
// lease counts once, is a quarter or more of the time the run has for
// work: a 300ms run at the default 1s starts nothing, and says only
// "not enough time" (issue 26). Against `harness-temporal dev` the
// resolution is 10ms, which the flag must then say.
func warnResolution(stderr io.Writer, resolution, work time.Duration) {
	if resolution > 0 && 4*resolution >= work {
		fmt.Fprintf(stderr, "harness-temporal run: warning: --timer-resolution %s is a quarter or more of the %s this run has for work (its budget less its reserve): every lease counts it once, so little or nothing can start; harness-temporal dev fires timers within 10ms: pass --timer-resolution 10ms there\n",
			landing.Rounded(resolution), landing.Rounded(work))
	}
}

// errDialBudget is why `run` stopped dialing the server: its budget
// ended first.
var errDialBudget = errors.New("no answer from the Temporal server within the run's budget of")

func runCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c conn
	c.flags(fs)
	b := fs.Duration("budget", 2*time.Minute, "the run's whole budget B")
	reserve := fs.String("reserve", "auto", "the reserve R kept for landing (auto: max(10% of B, min(20s, 25% of B)))")
	floor := fs.Duration("floor", 0, "the floor F below which nothing starts (0: 50ms)")
	maxSteps := fs.Int("max-steps", durable.DefaultMaxSteps, "model turns before landing")
	parallel := fs.Int("parallel", durable.DefaultParallel, "tool calls of one turn at once")
	maxRepeats := fs.Int("max-repeats", durable.DefaultMaxRepeats, "repeated tool calls (same tool, arguments and result as an earlier turn's) before the run lands with cause stuck (0: the default)")
	traceFile := fs.String("trace", "", "write the run's JSONL trace to this file (SPEC §6)")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	quiet := fs.Duration("quiet", 60*time.Second, "the quiet clock Q: the run lands when nothing happens for this long")
	quietMode := fs.String("quiet-mode", "enforce", "what the quiet clock does when it fires, a `mode`: enforce (the run lands, cause quiet), warn (a quiet_warning record, and the run goes on) or off")
	maxSilence := fs.Duration("max-silence", watchdog.DefaultMaxSilence, "the longest a call in flight may be silent, however slow its kind is known to be: each call is allowed 2 × its p95 (0: the default)")
	// A production server's default: a run told less could end a second
	// past D; `dev`'s server fires timers within DevTimerShift, and a run
	// on it may say so (docs/temporal.md, Timers).
	resolution := fs.Duration("timer-resolution", time.Second, "how late the server may fire a timer (its history.timerProcessorMaxTimeShift; harness-temporal dev: 10ms): leases and backoffs count it, so the run ends by D")
	progress := fs.String("progress", "auto", "live status line on stderr, a `mode`: auto (on a terminal), always or never")
	verbose := fs.Bool("v", false, "log the run's records on stderr, once its result is back (a Temporal run's records come with it): console lines on a terminal, JSON lines otherwise")
	logFormat := fs.String("log-format", "auto", "the logs' `format`: auto, console, or json (every line on stderr one JSON object)")
	profileFlag := fs.String("profile", "", "the latency profile `FILE`, or off (default $XDG_STATE_HOME/glidepath/profile.json): the run starts from the durations this task queue's kinds took and the longest attempts of each the quiet clock cut, and adds its own")
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
	if *maxRepeats < 0 {
		return usage("--max-repeats %d: must not be negative", *maxRepeats)
	}
	if *maxSilence < 0 {
		return usage("--max-silence %v: must not be negative", *maxSilence)
	}
	qmode, err := watchdog.ParseMode(*quietMode)
	if err != nil {
		return usage("--quiet-mode: %v", err)
	}
	if *resolution < 0 {
		return usage("--timer-resolution %v: want a duration of 0 or more", *resolution)
	}
	if *progress != "auto" && *progress != "always" && *progress != "never" {
		return usage("--progress %q: want auto, always or never", *progress)
	}
	mode, err := logs.ModeOf(*verbose, *logFormat, terminal(stderr))
	if err != nil {
		return usage("%v", err)
	}
	// The values no line `run` writes may repeat, as `harness run`'s:
	// the model's key, if this process has it (the workers' own scrub
	// what they record).
	secrets := []string{os.Getenv("OPENAI_API_KEY")}
	if mode == logs.JSON {
		// Every line on stderr is one JSON object from here on, the
		// error `run` ends with included; a live line would not be one.
		lines := logs.NewLines(stderr, secrets...)
		stderr, *progress = lines, "never"
		defer func() { err = showJSON(err, lines) }()
	}
	in := durable.Input{Task: task, Budget: *b, Floor: *floor, MaxSteps: *maxSteps, Parallel: *parallel, MaxRepeats: *maxRepeats, Quiet: *quiet,
		QuietMode: qmode, MaxSilence: *maxSilence, TimerResolution: *resolution}
	where := profilePlace(c)
	profileFile := profilePath(*profileFlag, stderr)
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
	warnResolution(stderr, *resolution, b0.Total()-b0.Reserve())
	// `run` ends by D + Overrun + answerWait, whatever the server does.
	// The wait outlives ctx: its end (the first Ctrl-C) asks the run to
	// land, which it does within its reserve, and the result is still
	// printed.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), *b+durable.Overrun+answerWait)
	defer cancel()
	// Nothing has started while the server is dialed: a server that
	// takes connections and never answers is given the budget, not the
	// SDK's own 5s (issue 26), and is then an error, before any run.
	dctx, stopDial := context.WithDeadlineCause(wctx, b0.Deadline(), errDialBudget)
	defer context.AfterFunc(ctx, stopDial)()
	cl, err := c.dial(dctx)
	stopDial()
	if err != nil {
		if context.Cause(dctx) == errDialBudget {
			return fmt.Errorf("%w %s: %w", errDialBudget, landing.Rounded(*b), err)
		}
		return err
	}
	defer cl.Close()
	if err := checkKeys(wctx, cl, c.queue, c.keyID); err != nil {
		return err
	}
	in.Profile, in.Learned = loadProfile(profileFile, where, stderr)
	in.Spent = b0.Spent() // `run`'s own start-up is spent from B, as the wait for a worker is
	wr, err := cl.ExecuteWorkflow(wctx, durable.StartOptions(client.StartWorkflowOptions{TaskQueue: c.queue}, in.Budget), durable.WorkflowName, in)
	if err != nil {
		return fmt.Errorf("cannot start the run: %w", err)
	}
	fmt.Fprintf(stderr, "harness-temporal run: note: started %s; watch it: harness-temporal status %s%s\n", wr.GetID(), lookUpArgs(c), wr.GetID())
	stopWatch := context.AfterFunc(ctx, func() {
		fmt.Fprintf(stderr, "harness-temporal run: note: landing now, within %s; press Ctrl-C again to quit at once\n", landing.Rounded(b0.Reserve()))
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
		if _, ended := errors.AsType[*temporal.TimeoutError](err); ended {
			u.pinned = pinnedTo(wctx, cl, wr.GetID(), c.queue) // the server answered: what `run` has left of its bound
		}
		if err := print(stdout, stderr, u.result(b0), *asJSON, secrets...); err != nil {
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
	if *verbose {
		logRecords(mode, stderr, out.Trace, secrets)
	}
	if err := print(stdout, stderr, out.Result, *asJSON, secrets...); err != nil {
		return err
	}
	recordProfile(profileFile, where, out.Trace, b0, stderr)
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

// print writes the result as `harness run` does: the JSON object, or
// the text a person reads and a summary line on stderr, both scrubbed of
// this process's secrets and of key-shaped strings (a task or a model's
// answer may carry a key; the workers scrub only what they record).
func print(stdout, stderr io.Writer, res landing.Result, asJSON bool, secrets ...string) error {
	if asJSON {
		data, err := json.Marshal(res)
		if err == nil {
			data, err = redact.JSON(data, secrets...)
		}
		if err != nil {
			return err
		}
		_, err = stdout.Write(append(data, '\n'))
		return err
	}
	if _, err := fmt.Fprintln(stdout, redact.Secrets(res.Text(), secrets...)); err != nil {
		return err
	}
	fmt.Fprintln(stderr, res.Line())
	return nil
}
