package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/demo"
)

// exitPartial is the exit code of a run that landed early with a partial
// result (SPEC §4).
const exitPartial = 3

// partialError reports a run that landed early. Its result is already
// printed; the error only carries the exit code and a line for stderr.
type partialError struct{ cause landing.Cause }

func (e *partialError) Error() string {
	return "partial result: the run landed early (cause " + string(e.cause) + ")"
}

// runCommand is "harness run [flags] TASK".
type runCommand struct {
	streams
}

// runFlags are harness run's flags, as given.
type runFlags struct {
	budget, quiet, floor time.Duration
	reserve              string
	model, baseURL       string
	toolsFile, traceFile string
	journal              string
	json                 bool
	maxSteps, parallel   int
	progress             string
}

func (c *runCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var f runFlags
	fs.DurationVar(&f.budget, "budget", 2*time.Minute, "the run's whole budget, a `duration`: it ends by then, with a labeled answer")
	fs.DurationVar(&f.quiet, "quiet", 60*time.Second, "how long the run may go without a semantic event before it counts as stalled")
	fs.StringVar(&f.reserve, "reserve", "auto", "time kept for landing: a `duration`, or auto for max(10%·B, min(20s, 25%·B))")
	fs.DurationVar(&f.floor, "floor", budget.DefaultFloor, "below this much time nothing is started")
	fs.StringVar(&f.model, "model", sim.ModelID, "model `name`; sim is the embedded simulated model, any other goes to --base-url")
	fs.StringVar(&f.baseURL, "base-url", "", "OpenAI-compatible `URL`, including /v1 (default: the SDK's, OpenAI's API)")
	fs.StringVar(&f.toolsFile, "tools", "", "tool config `file`, YAML or JSON (SPEC §5)")
	fs.StringVar(&f.traceFile, "trace", "", "write the run's JSONL trace to `file`")
	fs.StringVar(&f.journal, "journal", "", "orphan journal `file` (default $XDG_STATE_HOME/glidepath/orphans.jsonl)")
	fs.BoolVar(&f.json, "json", false, "print the result as one JSON object")
	fs.IntVar(&f.maxSteps, "max-steps", harness.DefaultMaxSteps, "model `turns` before landing (the landing call is not counted)")
	fs.IntVar(&f.parallel, "parallel", harness.DefaultParallel, "most tool `calls` at once in one step")
	fs.StringVar(&f.progress, "progress", "auto", "live status line on stderr, a `mode`: auto (on a terminal), always or never")

	pos, help, err := parseFlags(fs, "run", args, c.stdout, func(w io.Writer) { runUsage(w, fs) })
	if help || err != nil {
		return err
	}
	task, cfg, err := c.config(pos, f)
	if err != nil {
		return &usageError{cmd: "run", err: err}
	}

	var closers []func() error
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}()
	// The budget starts now: fetching remote tools' manifests is spent from
	// it, and the run gets what is left, so the process still ends by B.
	start, err := budget.New(budget.Config{Total: cfg.Budget, Reserve: cfg.Reserve, Floor: cfg.Floor})
	if err != nil {
		return &usageError{cmd: "run", err: err}
	}
	if cfg.Model, err = c.model(f, &closers); err != nil {
		return &usageError{cmd: "run", err: err}
	}
	var fetched bool
	if cfg.Tools, fetched, err = c.tools(ctx, f, start); err != nil {
		return &usageError{cmd: "run", err: err}
	}
	if f.journal != "" || hasWrites(cfg.Tools) {
		if cfg.Journal, err = openJournal(f.journal); err != nil {
			return err
		}
		closers = append(closers, cfg.Journal.Close)
	}
	closeTrace := func() error { return nil }
	if f.traceFile != "" {
		file, err := os.Create(f.traceFile)
		if err != nil {
			return err
		}
		trace := bufio.NewWriter(file)
		closeTrace = sync.OnceValue(func() error { return errors.Join(trace.Flush(), file.Close()) })
		closers = append(closers, closeTrace)
		cfg.Trace = trace
	}
	cfg.Task = task
	if fetched {
		cfg.Budget = start.Remaining()
	}

	line := newStatusLine(c.stderr, f.progress)
	cfg.Status = line.set
	res, runErr := harness.Run(ctx, cfg)
	line.clear()
	if err := closeTrace(); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("writing the trace: %w", err))
	}
	if res.Status == "" {
		return runErr // an invalid config or an internal failure: no result
	}
	if err := c.print(res, f.json); err != nil {
		return err
	}
	if runErr != nil {
		// The answer is printed, but the run's record is not whole: that is
		// an internal error, whatever the answer's status.
		return runErr
	}
	if res.Status == landing.Partial {
		return &partialError{cause: res.Cause}
	}
	return nil
}

// config checks everything that can be checked before anything is sent.
func (c *runCommand) config(pos []string, f runFlags) (string, harness.Config, error) {
	var cfg harness.Config
	if len(pos) != 1 {
		return "", cfg, fmt.Errorf("want exactly one TASK (or - to read it from standard input), got %d arguments", len(pos))
	}
	task := pos[0]
	if task == "-" {
		data, err := io.ReadAll(io.LimitReader(c.stdin, 1<<20))
		if err != nil {
			return "", cfg, fmt.Errorf("reading the task: %w", err)
		}
		task = string(data)
	}
	task = strings.TrimSpace(task)
	switch {
	case task == "":
		return "", cfg, errors.New("the task is empty")
	case f.budget <= 0:
		return "", cfg, fmt.Errorf("--budget %v: must be positive", f.budget)
	case f.quiet <= 0:
		return "", cfg, fmt.Errorf("--quiet %v: must be positive", f.quiet)
	case f.floor <= 0:
		return "", cfg, fmt.Errorf("--floor %v: must be positive", f.floor)
	case f.maxSteps < 1:
		return "", cfg, fmt.Errorf("--max-steps %d: must be at least 1", f.maxSteps)
	case f.parallel < 1:
		return "", cfg, fmt.Errorf("--parallel %d: must be at least 1", f.parallel)
	case f.progress != "auto" && f.progress != "always" && f.progress != "never":
		return "", cfg, fmt.Errorf("--progress %q: want auto, always or never", f.progress)
	case f.model == "":
		return "", cfg, errors.New("--model: empty")
	}
	cfg = harness.Config{Budget: f.budget, Quiet: f.quiet, Floor: f.floor, MaxSteps: f.maxSteps, Parallel: f.parallel}
	if f.reserve != "auto" {
		r, err := time.ParseDuration(f.reserve)
		if err != nil || r <= 0 {
			return "", cfg, fmt.Errorf("--reserve %q: want auto or a positive duration", f.reserve)
		}
		cfg.Reserve = r
	}
	return task, cfg, nil
}

// model returns the client for --model: the embedded simulator, served in
// memory, or an OpenAI-compatible server.
func (c *runCommand) model(f runFlags, closers *[]func() error) (*model.Client, error) {
	if f.model == sim.ModelID {
		if f.baseURL != "" {
			return nil, errors.New("--base-url: not used with --model sim, the embedded simulated model")
		}
		srv := sim.NewPipeServer(nil)
		*closers = append(*closers, func() error { srv.Close(); return nil })
		return model.New(model.Config{BaseURL: srv.URL, HTTPClient: srv.Client(), Model: sim.ModelID})
	}
	return model.New(model.Config{BaseURL: f.baseURL, APIKey: os.Getenv("OPENAI_API_KEY"), Model: f.model})
}

// tools loads --tools, fills remote entries from their manifests, and
// registers every tool. Manifests are fetched on a lease of b, the run's
// budget, so that a slow tool server cannot make the run end late; fetched
// reports whether any was.
func (c *runCommand) tools(ctx context.Context, f runFlags, b *budget.Budget) (reg *tools.Registry, fetched bool, err error) {
	reg = tools.NewRegistry(nil)
	if f.toolsFile == "" {
		return reg, false, nil
	}
	tc, err := tools.LoadConfig(f.toolsFile, demo.Builtins())
	if err != nil {
		return nil, false, err
	}
	for _, e := range tc.Entries {
		fetched = fetched || e.URL != ""
	}
	rctx, cancel := budget.WithBudget(ctx, b)
	defer cancel()
	if err := tc.Resolve(rctx, nil, tools.DefaultResolveTimeout); err != nil {
		fmt.Fprintf(c.stderr, "harness run: warning: %v\n", err)
	}
	for _, t := range tc.Tools(nil) {
		if err := reg.Register(t); err != nil {
			return nil, false, err
		}
	}
	return reg, fetched, nil
}

func hasWrites(reg *tools.Registry) bool {
	for _, s := range reg.Specs() {
		if s.Effect == tools.Write {
			return true
		}
	}
	return false
}

func openJournal(path string) (*cancel.Journal, error) {
	if path == "" {
		p, err := cancel.DefaultJournalPath()
		if err != nil {
			return nil, err
		}
		path = p
	}
	return cancel.OpenJournal(path)
}

// print writes the result: the JSON object, or the text a person reads
// (which leads with the boundary of a partial result) and a summary line
// on stderr.
func (c *runCommand) print(res landing.Result, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(c.stdout).Encode(res)
	}
	if _, err := fmt.Fprintln(c.stdout, res.Text()); err != nil {
		return err
	}
	cause := "none"
	if res.Cause != "" {
		cause = string(res.Cause)
	}
	fmt.Fprintf(c.stderr, "%s · cause %s · %d steps · %d attempts · %d orphans · spent %v of %v\n",
		res.Status, cause, res.Steps, res.Attempts, res.Orphans,
		time.Duration(res.Budget.SpentMs)*time.Millisecond, time.Duration(res.Budget.TotalMs)*time.Millisecond)
	return nil
}

func runUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `usage: harness run [flags] TASK

Run answers TASK (- reads it from standard input) with an agent that lands
inside its budget: every model turn and tool call is leased from one
deadline, a reserve is kept for landing, and the answer is labeled complete
or partial. First Ctrl-C: land now; second: exit at once (130).
Exit codes: 0 complete, 3 partial, 2 bad usage or config, 1 internal error.

Flags:

`)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// statusLine is the live line on stderr: budget spent, phase, step and
// the call in flight, redrawn at every change the run reports. It starts
// no goroutine: a change is the only thing worth redrawing for.
type statusLine struct {
	w  io.Writer
	on bool

	mu    sync.Mutex // serializes draws
	drawn bool
}

func newStatusLine(w io.Writer, mode string) *statusLine {
	on := mode == "always"
	if mode == "auto" {
		if f, ok := w.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
				on = true
			}
		}
	}
	return &statusLine{w: w, on: on}
}

func (l *statusLine) set(s harness.Status) {
	if !l.on {
		return
	}
	inFlight := s.InFlight
	if inFlight == "" {
		inFlight = "-"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "\r\033[K%v of %v spent · %s · step %d · %s",
		s.Spent.Truncate(100*time.Millisecond), s.Total, s.Phase, s.Step, inFlight)
	l.drawn = true
}

// clear erases the line before the result is printed.
func (l *statusLine) clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.drawn {
		fmt.Fprint(l.w, "\r\033[K")
		l.drawn = false
	}
}
