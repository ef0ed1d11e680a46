package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/glidepath/glidepath/admit"
	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/budget/profile"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/internal/redact"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/demo"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/trace/logs"
	"github.com/glidepath/glidepath/watchdog"
)

// exitPartial is the exit code of a run that landed early with a partial
// result (SPEC §4).
const exitPartial = 3

// exitAtCapacity is the exit code of a run the process refused at its
// door (cause at_capacity, package admit): it was not started, and may be
// submitted again later; a script tells it from a run that landed early
// (issue 25).
const exitAtCapacity = 4

// profileRecordBound is the most a run waits to add its latencies to the
// profile, other runs' records holding the lock included.
const profileRecordBound = time.Second

// partialError reports a run that landed early. Its result is already
// printed; the error only carries the exit code and a line for stderr.
type partialError struct {
	cause landing.Cause
	// reconcile is the command that settles the run's orphans, the one its
	// boundary, harness orphans and harness reconcile name (issue 24 item
	// 7): the journal it reads included, when it is not the default one.
	reconcile string
}

func (e *partialError) Error() string { return landing.PartialLine(e.cause, e.reconcile) }

func (e *partialError) exitCode() int {
	if e.cause == landing.CauseAtCapacity {
		return exitAtCapacity
	}
	return exitPartial
}

// runCommand is "harness run [flags] TASK".
type runCommand struct {
	streams
}

// runFlags are harness run's flags, as given.
type runFlags struct {
	budget, quiet, floor time.Duration
	maxSilence           time.Duration
	quietMode            string
	reserve              string
	model, baseURL       string
	api                  string
	toolsFile, traceFile string
	journal              string
	profile              *string
	json                 bool
	maxSteps, parallel   int
	maxRepeats           int
	progress             string
	verbose              bool
	logFormat            string
	requireTools         bool
	maxWait              time.Duration
}

func (c *runCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var f runFlags
	durationVar(fs, &f.budget, "budget", 2*time.Minute, "the run's whole budget, a `duration`: it ends by then, with a labeled answer")
	durationVar(fs, &f.quiet, "quiet", watchdog.DefaultQuiet, "how long, a `duration`, the run may go without a semantic event before it counts as stalled (0: the default)")
	fs.StringVar(&f.quietMode, "quiet-mode", "enforce", "what the quiet clock does when it fires, a `mode`: enforce (the run lands, cause quiet), warn (a quiet_warning record, and the run goes on) or off")
	durationVar(fs, &f.maxSilence, "max-silence", watchdog.DefaultMaxSilence, "the longest a call in flight may be silent, a `duration`, however slow its kind is known to be: each call is allowed 2 × its p95 (0: the default)")
	fs.StringVar(&f.reserve, "reserve", "auto", "time kept for landing: a `duration` above 0, or auto for max(10%·B, min(20s, 25%·B))")
	durationVar(fs, &f.floor, "floor", budget.DefaultFloor, "below this much time, a `duration`, nothing is started (0: the default)")
	fs.StringVar(&f.model, "model", sim.ModelID, "model `name`; sim is the embedded simulated model, any other goes to --base-url")
	fs.StringVar(&f.baseURL, "base-url", "", "OpenAI-compatible `URL`, including /v1 (default: the SDK's, OpenAI's API)")
	apiVar(fs, &f.api, "the model's `API`")
	fs.StringVar(&f.toolsFile, "tools", "", "tool config `file`, YAML or JSON (SPEC §5)")
	fs.StringVar(&f.traceFile, "trace", "", "write the run's JSONL trace to `file`")
	fs.StringVar(&f.journal, "journal", "", "orphan journal `file` (default $XDG_STATE_HOME/glidepath/orphans.jsonl)")
	fs.BoolVar(&f.json, "json", false, "print the result as one JSON object")
	fs.IntVar(&f.maxSteps, "max-steps", harness.DefaultMaxSteps, "model `turns` before landing (the landing call is not counted; 0: the default)")
	fs.IntVar(&f.parallel, "parallel", harness.DefaultParallel, "most tool `calls` at once in one step (0: the default)")
	fs.IntVar(&f.maxRepeats, "max-repeats", harness.DefaultMaxRepeats, "repeated tool `calls` (same tool, arguments and result as an earlier step's) before the run lands with cause stuck (0: the default)")
	fs.StringVar(&f.progress, "progress", "auto", "live status line on stderr, a `mode`: auto (on a terminal), always or never")
	f.profile = profileFlag(fs)
	fs.BoolVar(&f.verbose, "v", false, "log the run's records on stderr: console lines on a terminal, JSON lines otherwise")
	fs.StringVar(&f.logFormat, "log-format", "auto", "the logs' `format`: auto, console, or json (every line on stderr one JSON object)")
	durationVar(fs, &f.maxWait, "max-wait", 0, "the most the process may take to start the run, a `duration`, from its own start; past it (a machine queueing for the CPU) the run is not started: cause at_capacity, exit 4 (0: no bound)")
	fs.BoolVar(&f.requireTools, "require-tools", false, "a tool the config names that the run cannot use (a server down, a manifest without it, a ceiling below its p50) is bad usage, exit 2, before the first model turn")

	pos, help, err := parseFlags(fs, "run", args, c.stdout, func(w io.Writer) { runUsage(w, fs) })
	if help || err != nil {
		return err
	}
	usage := func(err error) error { return &usageError{cmd: "run", err: err} }
	mode, err := logs.ModeOf(f.verbose, f.logFormat, isTerminal(c.stderr))
	if err != nil {
		return usage(err)
	}
	// secrets are the values nothing the run writes or prints may repeat:
	// the model's key, and below those the tools file hands its tools by
	// ${NAME} (issue 24).
	secrets := []string{os.Getenv("OPENAI_API_KEY")}
	var jsonErr *logs.Lines
	var textErr *redacting
	if mode == logs.JSON {
		// Every line on stderr is one JSON object from here on, the errors
		// the command ends with included; a live line would not be one.
		jsonErr = logs.NewLines(c.stderr, secrets...)
		c.stderr = jsonErr
		f.progress = "never"
	} else {
		// Whatever stderr shows is scrubbed as the trace is (issue 24).
		textErr = &redacting{w: c.stderr, secrets: secrets}
		c.stderr = textErr
	}
	if c.setStderr != nil {
		c.setStderr(c.stderr)
	}
	// The task is the run's input, read before its clock starts: a person
	// typing it on standard input is not the run spending its budget.
	task, err := c.task(pos)
	if err != nil {
		return usage(err)
	}
	// The budget starts now, as the run does: everything from here on,
	// reading the config and fetching manifests included, is spent from
	// the one budget --budget gave (SPEC §3). Its numbers are judged there,
	// and the field it names is the flag that set it.
	reserve, err := reserveFlag(f.reserve)
	if err != nil {
		return usage(err)
	}
	// The process's own start-up is spent from the budget too, as a
	// starved machine stretches it (issue 17), unless the task was read
	// from standard input: a person typing it is not.
	started := processStart
	if pos[0] == "-" {
		started = time.Time{}
	}
	b, err := budget.New(budget.Config{Total: f.budget, Reserve: reserve, Floor: f.floor, Start: started})
	if err != nil {
		return usage(flagError(budgetFlagError(fs, f.budget, err)))
	}
	// The machine's own latencies start the run: its first leases are
	// refused or admitted by what it has seen, not cold (SPEC §5b).
	profileFile, err := profilePath(*f.profile, "run")
	if err != nil {
		fmt.Fprintf(c.stderr, "harness run: warning: no latency profile: %v\n", err)
		profileFile = ""
	}
	var history *profile.Profile
	if profileFile != "" {
		p, err := profile.Load(profileFile)
		if err != nil {
			fmt.Fprintf(c.stderr, "harness run: warning: %v; it is ignored, and the next record sets it aside\n", err)
		}
		history = p
	}
	cfg := harness.Config{Task: task, Quiet: f.quiet, MaxSteps: f.maxSteps, Parallel: f.parallel, MaxRepeats: f.maxRepeats,
		MaxSilence: f.maxSilence}
	if cfg.QuietMode, err = watchdog.ParseMode(f.quietMode); err != nil {
		return usage(fmt.Errorf("--quiet-mode: %w", err))
	}
	if f.maxWait < 0 {
		return usage(fmt.Errorf("--max-wait %v: must not be negative", f.maxWait))
	}
	if cfg.Admit, err = admit.New(admit.Config{Late: f.maxWait}); err != nil {
		return usage(err)
	}
	if err := cfg.Validate(); err != nil {
		return usage(flagError(err))
	}
	if f.progress != "auto" && f.progress != "always" && f.progress != "never" {
		return usage(fmt.Errorf("--progress %q: want auto, always or never", f.progress))
	}
	if err := checkAPI(f.api); err != nil {
		return usage(err)
	}

	var closers []func() error
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}()
	if f.model == sim.ModelID && f.baseURL != "" {
		return usage(errors.New("--base-url: not used with --model sim, the embedded simulated model"))
	}
	models := &modelSource{name: f.model, baseURL: f.baseURL, api: f.api, closers: &closers}
	if cfg.Model, err = models.get("", ""); err != nil {
		return usage(err)
	}
	tc, err := c.toolsConfig(f)
	if err != nil {
		return usage(err)
	}
	// A key the tools file hands a tool is kept from every output as the
	// model's is; nothing has been written concurrently yet.
	secrets = append(secrets, tc.Secrets()...)
	if jsonErr != nil {
		jsonErr.SetSecrets(secrets)
	} else {
		textErr.secrets = secrets
	}
	cfg.Secrets = secrets
	if err := models.check(tc); err != nil {
		return usage(err)
	}
	// A command that is not there is a typo in the config, not a tool
	// that is down: it is bad config, before any request (SPEC §4).
	if err := lookCommands(tc); err != nil {
		return usage(err)
	}
	// Each kind is seeded from its history at the place this run calls it
	// (the model and its server, a tool's URL or command): one model's
	// latency never refuses another's calls (SPEC §5b).
	var seen *profile.Sink
	if history != nil {
		places := newPlacer(f.model, f.baseURL, tc)
		history.Seed(b.Estimates(), places.where, time.Now())
		seen = profile.NewSink(places.where)
		cfg.Sinks = append(cfg.Sinks, seen)
	}
	quietNotes(c.stderr, "harness run", cmp.Or(f.quiet, watchdog.DefaultQuiet), f.maxSilence, b.Estimates(), tc)
	if f.journal != "" || mayWrite(tc) {
		if cfg.Journal, err = openJournal(f.journal); err != nil {
			return usage(err)
		}
		closers = append(closers, cfg.Journal.Close)
	}
	closeTrace := func() error { return nil }
	if f.traceFile != "" {
		var sink *trace.JSONL
		if sink, closeTrace, err = openTrace(f.traceFile); err != nil {
			return usage(err)
		}
		closers = append(closers, closeTrace)
		cfg.Sinks = append(cfg.Sinks, sink)
	}
	// The live line is made before the exporter, so that what the
	// OpenTelemetry SDK says from its own goroutines is written through it
	// and never lands on a drawn frame.
	line := newStatusLine(c.stderr, f.progress, b)
	defer line.Close()
	warnSpans := func(err error) { fmt.Fprintf(line, "harness run: warning: %v\n", err) }
	if exp, err := exportSpans(ctx, f.model, f.baseURL, warnSpans); err != nil {
		return usage(err)
	} else if exp != nil {
		cfg.Sinks = append(cfg.Sinks, exp.sink)
		closers = append(closers, func() error {
			// Bounded by the run's deadline: a dead collector costs the
			// process nothing past B + 50ms (SPEC §8).
			if err := exp.shutdown(b.Deadline()); err != nil {
				fmt.Fprintf(c.stderr, "harness run: warning: spans: %v\n", err)
			}
			return nil
		})
	}
	cfg.Sinks = append(cfg.Sinks, line)
	if f.verbose {
		// Console lines go through the live line, which erases itself
		// first; JSON lines straight to the JSON stderr.
		var w io.Writer = line
		if mode == logs.JSON {
			w = c.stderr.(*logs.Lines).Out()
		}
		cfg.Sinks = append(cfg.Sinks, logs.New(logs.Logger(mode, w, isTerminal(c.stderr)), secrets...))
	}
	// The line is drawn until the run is over, through the landing a first
	// Ctrl-C begins: the signal's cancellation is not the line's.
	line.Start(context.WithoutCancel(ctx))
	reg := tools.NewRegistry(nil)
	cfg.Tools = reg

	s, rctx, err := harness.Start(ctx, b, cfg)
	if err == nil {
		line.Watch(s.Held)
	}
	if res, refused := harness.AtCapacity(b, cfg.RunID, err); refused {
		// Not started: its labeled result now, rather than an answer past
		// B from a machine that could not start it in time (issue 25).
		line.Close()
		if err := c.print(res, f.json, secrets...); err != nil {
			return err
		}
		return &partialError{cause: res.Cause}
	}
	if err != nil {
		return usage(flagError(err))
	}
	// Each tool the run cannot use is warned about once, by name and
	// reason: as the Toolset finds it, or as the run does (SPEC §4).
	var warnMu sync.Mutex
	warned := map[string]bool{}
	warnUnavailable := func(list []landing.Unavailable) {
		warnMu.Lock()
		defer warnMu.Unlock()
		for _, u := range list {
			if !warned[u.Tool] {
				warned[u.Tool] = true
				fmt.Fprintf(line, "harness run: warning: %v\n", &harness.UnavailableError{Tool: u.Tool, Why: u.Why})
			}
		}
	}
	// What the MCP servers say on stderr is shown as the run's own lines
	// are: scrubbed, through the live line, and in JSON mode one object
	// a line (issue 24). Closed after the servers are (closers run last
	// first), so that a last line without its newline is shown too.
	serverErr := &serverLines{w: line, secrets: secrets}
	closers = append(closers, serverErr.Close)
	ts := &harness.Toolset{Config: tc, Model: cfg.Model, Models: models.get, Stderr: serverErr,
		Warn: func(err error) {
			if ue, ok := errors.AsType[*harness.UnavailableError](err); ok {
				warnUnavailable([]landing.Unavailable{{Tool: ue.Tool, Why: ue.Why}})
				return
			}
			fmt.Fprintf(line, "harness run: warning: %v\n", err)
		}}
	ts.Resolve(rctx, s)
	ts.Register(reg)
	closers = append(closers, func() error {
		// The servers are stopped within the budget, as the tools are.
		cctx, stop := budget.WithBudget(context.Background(), b)
		defer stop()
		return ts.Close(cctx)
	})
	unavailable := s.Unavailable()
	warnUnavailable(unavailable)
	if f.requireTools && len(unavailable) > 0 {
		// Nothing has been sent to the model; the setup was spent from
		// the budget, and the trace says so.
		s.Close()
		line.Close()
		names := make([]string, len(unavailable))
		for i, u := range unavailable {
			names[i] = u.Tool
		}
		return usage(fmt.Errorf("--require-tools: %d unavailable: %s", len(names), strings.Join(names, ", ")))
	}
	// The first Ctrl-C says, on its line, that the run lands and by when
	// (SPEC §3): its landing lease is at most the reserve.
	stopNote := landingNote(ctx, line, s)
	defer stopNote()
	res := s.Run(rctx)
	// The answer is printed as soon as the run's result exists, whatever
	// the tools (SPEC §3: nothing may delay a result that exists; issue
	// 24: an in-memory tool server's Close held it until the deadline, a
	// profile's lock up to a second more, and a Ctrl-C at 0.7s printed at
	// 1.5s). What releases the run's parts comes after, each bounded by
	// the run's deadline, so that the process still ends by B + 50ms.
	stopNote()
	line.Close()                     // the run is over: what follows is printed on a clean line
	warnUnavailable(res.Unavailable) // those the run found on its way
	printErr := c.print(res, f.json, secrets...)
	if printErr == nil && res.Cause == landing.CauseUpstream {
		// Why the model failed is the first thing to fix, and is not only
		// in the answer, which a script may not print.
		fmt.Fprintf(c.stderr, "harness run: %s\n", res.Boundary)
	}
	runErr := s.Close()
	if seen != nil && b.Remaining() <= 0 {
		// Writing it is two fsyncs, which past the deadline would move the
		// process's end by the disk's latency (SPEC §7: B + 50ms). It is
		// written before the tools are released, which may take until the
		// deadline, so that this happens only to a run that ended late.
		fmt.Fprintf(c.stderr, "harness run: note: the latency profile was not updated: the run's deadline had passed\n")
	} else if seen != nil {
		// The profile is the machine's, not the run's: recording it waits
		// for other runs' records, but not for long, and not past the
		// deadline.
		pctx, stop := budget.WithBudget(context.Background(), b)
		pctx, stopBound := context.WithTimeout(pctx, profileRecordBound)
		if err := profile.Record(pctx, profileFile, seen.Observations(), time.Now()); err != nil {
			fmt.Fprintf(c.stderr, "harness run: warning: the latency profile was not updated: %v\n", err)
		}
		stopBound()
		stop()
	}
	// The tools are released within the budget: whatever still holds on
	// past its deadline is not waited for.
	cctx, stop := budget.WithBudget(context.Background(), b)
	if err := reg.Close(cctx); errors.Is(err, budget.ErrDeadline) {
		fmt.Fprintf(c.stderr, "harness run: note: a tool was still at work at the run's deadline; it is not waited for (%v)\n", err)
	} else if err != nil {
		fmt.Fprintf(c.stderr, "harness run: warning: %v\n", err)
	}
	stop()
	if err := closeTrace(); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("writing the trace: %w", err))
	}
	if printErr != nil {
		return printErr
	}
	if runErr != nil {
		// The answer stands and is printed; only the record of the run is
		// not whole (a trace file that failed, a sink that fell behind or
		// panicked). That is said on stderr, and the exit code stays the
		// run's: a script reads how the run went, not how its record did.
		fmt.Fprintf(c.stderr, "harness run: warning: the run's record is not whole: %v\n", runErr)
	}
	if res.Status == landing.Partial {
		pe := &partialError{cause: res.Cause, reconcile: cancel.ReconcileCommand("")}
		if cfg.Journal != nil {
			pe.reconcile = cancel.ReconcileCommand(cfg.Journal.Path())
		}
		return pe
	}
	return nil
}

// task returns the one TASK argument, read from standard input for "-".
func (c *runCommand) task(pos []string) (string, error) {
	if len(pos) != 1 {
		return "", fmt.Errorf("want exactly one TASK (or - to read it from standard input), got %d arguments", len(pos))
	}
	task := pos[0]
	if task == "-" {
		data, err := io.ReadAll(io.LimitReader(c.stdin, 1<<20))
		if err != nil {
			return "", fmt.Errorf("reading the task: %w", err)
		}
		task = string(data)
	}
	task = strings.TrimSpace(task)
	if task == "" {
		return "", errors.New("the task is empty")
	}
	return task, nil
}

// reserveFlag reads --reserve: auto (zero, the default rule) or a duration.
// A reserve of 0 is bad usage, not auto: the reserve is the run's time to
// land (SPEC §2), and taking 0 for the default reserve silently gave a
// user who asked for none the automatic one (issue 24).
func reserveFlag(v string) (time.Duration, error) {
	if v == "auto" {
		return 0, nil
	}
	r, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("--reserve %q: want auto or a duration such as 10s, 500ms or 2m", v)
	}
	if r == 0 {
		return 0, fmt.Errorf("--reserve %s: no time would be kept for landing; want auto or a duration above 0, such as 500ms", v)
	}
	return r, nil
}

// flagError restates a field error of the package that judged a number as
// an error of the flag that set it: "--reserve 1s: must be less than the
// total".
func flagError(err error) error {
	if be, ok := errors.AsType[*budget.ConfigError](err); ok {
		name := map[string]string{"total": "budget"}[be.Field]
		if name == "" {
			name = be.Field
		}
		return fmt.Errorf("--%s %v: %w", name, be.Value, be.Err)
	}
	if he, ok := errors.AsType[*harness.ConfigError](err); ok {
		if he.Value == "" {
			return fmt.Errorf("--%s: %w", he.Field, he.Err)
		}
		return fmt.Errorf("--%s %s: %w", he.Field, he.Value, he.Err)
	}
	return err
}

// lookCommands checks that the program of every command entry of tc, and
// of its status command, and of every stdio MCP server it names, and of
// every sub-agent's tools file, is there: exec.LookPath, as the tool's
// own start would look it up (a bare name on PATH, a path with a slash as
// it is written, an MCP server's relative to its cwd). One that is not is
// bad config, named by its tools file and entry: "not found" is exit 2
// for every kind that starts a program (issue 24). harness run, serve and
// plan --tools all ask it.
func lookCommands(tc *tools.Config) error {
	for _, c := range tc.Configs() {
		for _, e := range c.Entries {
			for _, argv := range [][]string{e.Command, e.Status} {
				if len(argv) == 0 {
					continue
				}
				if _, err := exec.LookPath(argv[0]); err != nil {
					return fmt.Errorf("tools: %s: tool %s: command %q: %w", c.File, e.Name, argv[0], errors.Unwrap(err))
				}
			}
		}
		for _, m := range c.MCPServers {
			if !m.Stdio() {
				continue
			}
			// exec.Cmd evaluates a relative path with a slash against
			// its Dir, the server's cwd.
			prog := m.Command
			if m.Cwd != "" && strings.ContainsRune(prog, filepath.Separator) && !filepath.IsAbs(prog) {
				prog = filepath.Join(m.Cwd, prog)
			}
			if _, err := exec.LookPath(prog); err != nil {
				return fmt.Errorf("tools: %s: mcp server %s: command %q: %w", c.File, m.Name, m.Command, errors.Unwrap(err))
			}
		}
	}
	return nil
}

// landingNote prints, when ctx is cancelled by the first Ctrl-C, the one
// line SPEC §3 asks for: the run is landing, within how long, and a
// second Ctrl-C quits at once. A run that was still working lands within
// its reserve (its landing lease is at most R, and never past the
// deadline); one already landing keeps the landing it began, which ends
// by the deadline. stop, which waits for the line to be written if it is
// being written, ends it.
func landingNote(ctx context.Context, w io.Writer, s *harness.Session) (stop func()) {
	done := make(chan struct{})
	unhook := context.AfterFunc(ctx, func() {
		defer close(done)
		if !errors.Is(context.Cause(ctx), harness.ErrInterrupted) {
			return
		}
		within := max(time.Until(s.LandsBy()), 0)
		fmt.Fprintf(w, "harness run: interrupted: landing now, with an answer within %s; press Ctrl-C again to quit at once, without one\n",
			landing.Rounded(within))
	})
	return sync.OnceFunc(func() {
		if !unhook() {
			<-done // the line is being written: it is whole before what follows
		}
	})
}

// toolsConfig reads --tools; no file is no tools.
func (c *runCommand) toolsConfig(f runFlags) (*tools.Config, error) {
	if f.toolsFile == "" {
		return &tools.Config{}, nil
	}
	return tools.LoadConfig(f.toolsFile, demo.Builtins())
}

// mayWrite reports whether a tool of tc, or of a sub-agent's tools, may be
// a write: one that says so, or one whose effect its manifest has yet to
// tell. Its orphans need the journal, which is opened before the run
// starts.
func mayWrite(tc *tools.Config) bool {
	for _, c := range tc.Configs() {
		if len(c.MCPServers) > 0 {
			return true // a server's tool is a write until the config says read
		}
		for _, t := range c.Tools(nil) {
			if t.Spec().Effect != tools.Read {
				return true
			}
		}
	}
	return false
}

// openTrace creates the JSONL trace at path, and its folder as the
// journal's is made: both are files a run writes, and neither should fail
// a run half-way. The sink writes each record to the file as it is
// recorded, unbuffered, so that Ctrl-C twice or SIGKILL mid-run leaves
// every record up to that instant (issue 24). close closes it, once.
func openTrace(path string) (sink *trace.JSONL, close func() error, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, fmt.Errorf("--trace %s: %w", path, err)
	}
	file, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--trace %s: %w", path, err)
	}
	return trace.NewJSONL(file), sync.OnceValue(file.Close), nil
}

// openJournal opens the orphan journal at path, or at the default one.
// Its error names the flag, or says the default was meant: a journal that
// cannot be opened is bad usage, found before anything starts (exit 2,
// issue 18).
func openJournal(path string) (*cancel.Journal, error) {
	name := "--journal " + path
	if path == "" {
		p, err := cancel.DefaultJournalPath()
		if err != nil {
			return nil, fmt.Errorf("the default orphan journal (give --journal FILE): %w", err)
		}
		path, name = p, "the default orphan journal "+p+" (give --journal FILE)"
	}
	j, err := cancel.OpenJournal(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, errors.Unwrap(err))
	}
	return j, nil
}

// print writes the result: the JSON object, or the text a person reads
// (which leads with the boundary of a partial result) and a summary line
// on stderr. Both are scrubbed of secrets, as the trace is: a tool's error
// or a model's answer may repeat a key (issue 24).
func (c *runCommand) print(res landing.Result, asJSON bool, secrets ...string) error {
	if asJSON {
		data, err := json.Marshal(res)
		if err == nil {
			data, err = redact.JSON(data, secrets...)
		}
		if err != nil {
			return err
		}
		_, err = c.stdout.Write(append(data, '\n'))
		return err
	}
	if _, err := fmt.Fprintln(c.stdout, redact.Secrets(res.Text(), secrets...)); err != nil {
		return err
	}
	fmt.Fprintln(c.stderr, res.Line())
	return nil
}

func runUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `usage: harness run [flags] TASK

Run answers TASK (- reads it from standard input) with an agent that lands
inside its budget: every model turn and tool call is leased from one
deadline, a reserve is kept for landing, and the answer is labeled complete
or partial. First Ctrl-C: land now (a line on stderr says within how
long); second: exit at once (130).
A tool the config names that the run cannot use (its server down, its
manifest unusable or without it, its ceiling below its p50) is warned
about and listed in --json "unavailable"; a command or MCP server command
that is not found is bad config. A model that sent nothing, only
keepalives, or an answer it never finished before its lease or the quiet
clock ended it is named in the boundary, and is not sent the landing call;
nor is a --base-url that is not a model server (it answered 200 with no
event stream), which is asked once. A run whose model answered though
every tool call failed or never started is partial (cause tools_failed).
A model that makes the same tool call, with the same arguments and the
same result, --max-repeats times over lands partial (cause stuck).
Exit codes: 0 complete, 3 partial, 2 bad usage or config (--require-tools:
any unavailable tool), 1 internal error.

Flags:

`)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}
