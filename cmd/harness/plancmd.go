package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/plan"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/demo"
	"github.com/glidepath/glidepath/watchdog"
)

// planCommand is "harness plan [flags] [FILE]".
type planCommand struct {
	streams
}

// planFlags are the flags that override the file; nil when not given.
type planFlags struct {
	budget, modelCeiling, toolCeiling *time.Duration
	steps, toolCalls                  *int
	modelRetries, toolRetries         *int
	json                              bool

	stepsFlag string // "--steps" or "--max-steps", whichever set steps
	tools     string // --tools FILE

	quiet, maxSilence time.Duration // as harness run's, for the notes on tools slower than Q
}

func (c *planCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	var f planFlags
	fs.Func("budget", "the run budget, a `duration` such as 2m (default 2m, as harness run)", durationFlag(&f.budget))
	fs.Func("max-steps", "max model `turns` (default 50, as harness run)", f.stepsFlagSet("--max-steps"))
	fs.Func("steps", "max model `turns`: the same as --max-steps", f.stepsFlagSet("--steps"))
	fs.Func("tool-calls-per-step", "tool `calls` a model turn asks for (default 1)", intFlag(&f.toolCalls))
	fs.Func("model-ceiling", "per-attempt model `timeout`; 0 means none (default: openai-go's, none)", durationFlag(&f.modelCeiling))
	fs.Func("model-retries", "model `retries` (default: openai-go's, 2)", intFlag(&f.modelRetries))
	fs.Func("tool-ceiling", "per-attempt `timeout` of every tool; 0 means none (default: net/http's, none; with --tools, the file's)", durationFlag(&f.toolCeiling))
	fs.Func("tool-retries", "`retries` of every tool (default 0; with --tools, the file's)", intFlag(&f.toolRetries))
	fs.StringVar(&f.tools, "tools", "", "plan the tools of this tool config `file`, as harness run --tools reads it")
	fs.BoolVar(&f.json, "json", false, "print one JSON object instead of the table")
	durationVar(fs, &f.quiet, "quiet", watchdog.DefaultQuiet, "harness run's --quiet, a `duration`: with --tools, a tool that declares a p95 above it is named on stderr, with the silence it is allowed (0: the default)")
	durationVar(fs, &f.maxSilence, "max-silence", watchdog.DefaultMaxSilence, "harness run's --max-silence, a `duration` (0: the default)")

	pos, help, err := parseFlags(fs, "plan", args, c.stdout, func(w io.Writer) { planUsage(w, fs) })
	if help || err != nil {
		return err
	}
	if len(pos) > 1 {
		return &usageError{cmd: "plan", err: fmt.Errorf("at most one FILE, got %d: %s", len(pos), strings.Join(pos, " "))}
	}

	cfg := plan.Config{Origin: map[string]string{}}
	var sources []string
	if len(pos) == 1 {
		if cfg, err = c.load(pos[0]); err != nil {
			return &usageError{cmd: "plan", err: err}
		}
		name := pos[0]
		if name == "-" {
			name = "stdin"
		}
		sources = append(sources, name)
	}
	if f.tools != "" {
		// The plan file then gives the run and the model, the tools file
		// the tools; both giving tools would leave one of them unread.
		if len(cfg.Tools) > 0 {
			return &usageError{cmd: "plan", err: fmt.Errorf("both %s and --tools %s list tools; give them in one place", sources[0], f.tools)}
		}
		tc, err := tools.LoadConfig(f.tools, demo.Builtins())
		if err != nil {
			return &usageError{cmd: "plan", err: err}
		}
		// The file harness run would refuse is refused here too: a
		// command or MCP server's command not found (issue 24).
		if err := lookCommands(tc); err != nil {
			return &usageError{cmd: "plan", err: err}
		}
		cfg.Tools = plan.FromTools(tc, cfg.Origin)
		cfg.ToolsFile = f.tools
		quietNotes(c.stderr, "harness plan", cmp.Or(f.quiet, watchdog.DefaultQuiet), f.maxSilence, budget.NewEstimates(), tc)
		sources = append(sources, "--tools "+f.tools)
	}
	source := cmp.Or(strings.Join(sources, " and "), "flags and defaults")
	f.apply(&cfg)
	p, err := plan.Make(cfg)
	if err != nil {
		return &usageError{cmd: "plan", err: err}
	}

	// Rendered whole before writing, so a failure prints nothing on stdout.
	var out bytes.Buffer
	if f.json {
		enc := json.NewEncoder(&out)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(reportOf(p, source)); err != nil {
			return err
		}
	} else {
		writePlan(&out, p, source)
	}
	_, err = c.stdout.Write(out.Bytes())
	return err
}

// load reads the plan file name, or standard input for "-".
func (c *planCommand) load(name string) (plan.Config, error) {
	if name == "-" {
		return plan.Load("stdin", c.stdin)
	}
	file, err := os.Open(name)
	if err != nil {
		return plan.Config{}, err
	}
	defer file.Close()
	return plan.Load(name, file)
}

// stepsFlagSet sets steps for the flag named name. --steps and --max-steps
// are one value under two names (harness run's, and the plan file's), so
// giving both is a mistake even when they agree.
func (f *planFlags) stepsFlagSet(name string) func(string) error {
	set := intFlag(&f.steps)
	return func(s string) error {
		if f.stepsFlag != "" && f.stepsFlag != name {
			return fmt.Errorf("%s is given too: --steps and --max-steps are one flag", f.stepsFlag)
		}
		f.stepsFlag = name
		return set(s)
	}
}

// apply lets the flags override cfg. --tool-ceiling and --tool-retries set
// every tool; with no tools listed they describe one, named "tool".
func (f *planFlags) apply(cfg *plan.Config) {
	override(cfg, &cfg.Budget, f.budget, "budget", "--budget")
	override(cfg, &cfg.Steps, f.steps, "steps", f.stepsFlag)
	override(cfg, &cfg.ToolCallsPerStep, f.toolCalls, "tool_calls_per_step", "--tool-calls-per-step")
	override(cfg, &cfg.Model.Ceiling, f.modelCeiling, "model.ceiling", "--model-ceiling")
	override(cfg, &cfg.Model.Retries, f.modelRetries, "model.retries", "--model-retries")
	if len(cfg.Tools) == 0 && (f.toolCeiling != nil || f.toolRetries != nil) {
		cfg.Tools = []plan.Tool{{Name: "tool"}}
	}
	if f.toolCeiling != nil {
		cfg.ToolFlags = append(cfg.ToolFlags, "--tool-ceiling")
	}
	if f.toolRetries != nil {
		cfg.ToolFlags = append(cfg.ToolFlags, "--tool-retries")
	}
	for i := range cfg.Tools {
		t := &cfg.Tools[i]
		field := fmt.Sprintf("tools[%d]", i)
		if override(cfg, &t.Ceiling, f.toolCeiling, field+".ceiling", "--tool-ceiling") {
			t.CeilingDefault = nil
		}
		if override(cfg, &t.Retries, f.toolRetries, field+".retries", "--tool-retries") {
			t.RetriesDefault = nil
		}
	}
}

// override sets *dst to v, if the flag named flag was given, and records
// that the field now comes from it. It reports whether it did.
func override[T any](cfg *plan.Config, dst **T, v *T, field, flag string) bool {
	if v == nil {
		return false
	}
	*dst = v
	cfg.Origin[field] = flag
	return true
}

func durationFlag(dst **time.Duration) func(string) error {
	return func(s string) error {
		d, err := time.ParseDuration(s)
		if err != nil {
			return plan.ErrNotDuration
		}
		*dst = &d
		return nil
	}
}

func intFlag(dst **int) func(string) error {
	return func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil {
			return plan.ErrNotInteger
		}
		*dst = &n
		return nil
	}
}

func planUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `usage: harness plan [flags] [FILE]
       harness plan --tools TOOLSFILE [flags] [FILE]

Plan prints the worst case a configuration really ships without a budget:
every attempt runs to its ceiling and fails, every retry sleeps its longest
backoff, for every step. Values left out get the defaults of the library in
charge (openai-go for the model: no timeout, 2 retries; net/http for tools:
no timeout, no retries), and the output says which. Beside it, what the same
configuration costs under Glidepath: the budget, and a labeled answer.

FILE is YAML or JSON ("-" reads standard input). Unknown fields are errors.

  budget: 2m               # the run budget
  steps: 20                # max model turns
  tool_calls_per_step: 1
  model:
    ceiling: 60s           # per-attempt timeout; leave out for openai-go's (none)
    retries: 2             # leave out for openai-go's (2)
  tools:
    - name: search
      ceiling: 30s         # leave out for net/http's (none)
      retries: 2           # leave out for none

--tools TOOLSFILE plans the tools of the tool config harness run --tools
reads, so that "what does my run ship without Glidepath?" has an answer.
Each tool keeps the limits the file gives it, and only the run's one
deadline is taken away: its ceiling (left out: a builtin's own, else none,
no timeout at all), and max_attempts − 1 retries for a read (max_attempts
left out: 3), none for a write or a tool that does not say it reads, as
under Glidepath. The model is openai-go's unless --model-ceiling and
--model-retries say otherwise; the run is --budget and --max-steps. With a
FILE too, FILE gives the run and the model and TOOLSFILE the tools, so FILE
must list none.

Flags override the files:

`)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// write prints p as aligned tables, then a one-line verdict.
func writePlan(w io.Writer, p plan.Plan, source string) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	row := func(cells ...string) { fmt.Fprintln(tw, "  "+strings.Join(cells, "\t")) }

	fmt.Fprintf(tw, "plan: %s\n\n", source)
	fmt.Fprintln(tw, "without a budget: every attempt runs to its ceiling and fails, every backoff sleeps its longest")
	if p.ToolsFile != "" && len(p.Tools) > 0 {
		keep := fmt.Sprintf("the tools keep the limits %s gives them: its ceilings, max_attempts − 1 retries for a read, none for a write", p.ToolsFile)
		if len(p.ToolFlags) > 0 {
			keep += ", but " + strings.Join(p.ToolFlags, " and ") + " set them all"
		}
		fmt.Fprintln(tw, keep)
	}
	row("call", "ceiling", "retries", "worst per call")
	row(append([]string{"model"}, callCells(p.Model)...)...)
	for _, t := range p.Tools {
		row(append([]string{"tool " + t.Name}, callCells(t)...)...)
	}
	row("per step", perStepFormula(p, p.Model.Worst, p.PerStep))
	total := fmt.Sprintf("%d steps × %v = %v", p.Steps, p.PerStep, p.Total)
	if p.Total.Unbounded {
		total += " (" + strings.Join(p.Unbounded, "; ") + ")"
	}
	row("total", total)
	fmt.Fprintln(tw)

	fmt.Fprintf(tw, "if servers send Retry-After: openai-go waits up to %v before each model retry\n", model.SDKMaxRetryAfter)
	row("model", fmt.Sprintf("%s × %d + %d × %v = %v", ceilingString(p.Model.Ceiling), p.Model.Attempts(), p.Model.Retries, model.SDKMaxRetryAfter, p.RetryAfterModel))
	row("per step", perStepFormula(p, p.RetryAfterModel, p.RetryAfterPerStep))
	row("total", fmt.Sprintf("%d steps × %v = %v", p.Steps, p.RetryAfterPerStep, p.RetryAfterTotal))
	fmt.Fprintln(tw)

	fmt.Fprintln(tw, "under Glidepath: every attempt and every sleep is leased from one deadline")
	row("budget B", p.Budget.String())
	row("reserve R", p.Reserve.String()+", kept for landing: max(10%·B, min(20s, 25%·B))")
	row("floor F", p.Floor.String()+", nothing starts with less")
	if p.Work() > p.Floor {
		row("work", p.Work().String()+" (B − R); each attempt gets min(its ceiling, time left − R − F)")
	} else {
		row("work", "none: B − R is not above F, so every work call is refused and the run lands at once")
	}
	row("worst case", p.Budget.String()+", and the run returns a labeled answer, complete or partial")

	if len(p.Defaults) > 0 {
		fmt.Fprintln(tw)
		if p.ToolsFile != "" {
			fmt.Fprintln(tw, "defaults used, and how the tools file's entries were read")
		} else {
			fmt.Fprintln(tw, "defaults used")
		}
		for _, d := range p.Defaults {
			field := d.Field
			if d.Tool != "" {
				field += " (" + d.Tool + ")"
			}
			row(field, d.Value, d.Why)
		}
	}
	fmt.Fprintln(tw)
	tw.Flush()
	fmt.Fprintf(w, "verdict: %s\n", p.Verdict())
}

// callCells are a call's ceiling, retries and worst case, each value that
// came from a default marked so.
func callCells(c plan.Call) []string {
	ceiling, retries := ceilingString(c.Ceiling), strconv.Itoa(c.Retries)
	if c.DefaultCeiling {
		ceiling += " (default)"
	}
	if c.DefaultRetries {
		retries += " (default)"
	}
	return []string{ceiling, retries, callFormula(c)}
}

func ceilingString(b plan.Bound) string {
	if b.Unbounded {
		return "none"
	}
	return b.String()
}

// callFormula is "ceiling × attempts + backoff = worst".
func callFormula(c plan.Call) string {
	s := fmt.Sprintf("%s × %d", ceilingString(c.Ceiling), c.Attempts())
	if c.Backoff > 0 {
		s += fmt.Sprintf(" + %v backoff", c.Backoff)
	}
	return s + " = " + c.Worst.String()
}

// perStepFormula is "model + N × slowest tool = ... = per step".
func perStepFormula(p plan.Plan, model, perStep plan.Bound) string {
	if p.Slowest < 0 || p.ToolCalls == 0 {
		return fmt.Sprintf("model %v = %v", model, perStep)
	}
	t := p.Tools[p.Slowest]
	return fmt.Sprintf("model %v + %d × %s %v = %v", model, p.ToolCalls, t.Name, t.Worst, perStep)
}

// planReport is the --json output. Every duration is in milliseconds; an
// unbounded one is null beside a true *_unbounded.
type planReport struct {
	Source           string       `json:"source"`
	BudgetMs         float64      `json:"budget_ms"`
	Steps            int          `json:"steps"`
	ToolCallsPerStep int          `json:"tool_calls_per_step"`
	Model            callReport   `json:"model"`
	Tools            []callReport `json:"tools"`
	SlowestTool      *string      `json:"slowest_tool"`
	PerStepMs        *float64     `json:"per_step_ms"`
	PerStepUnbounded bool         `json:"per_step_unbounded"`
	TotalMs          *float64     `json:"total_ms"`
	TotalUnbounded   bool         `json:"total_unbounded"`
	UnboundedBecause []string     `json:"unbounded_because"`
	Ratio            *float64     `json:"ratio"`
	RetryAfter       struct {
		MaxWaitMs           float64  `json:"max_wait_ms"`
		ModelWorstMs        *float64 `json:"model_worst_ms"`
		ModelWorstUnbounded bool     `json:"model_worst_unbounded"`
		PerStepMs           *float64 `json:"per_step_ms"`
		PerStepUnbounded    bool     `json:"per_step_unbounded"`
		TotalMs             *float64 `json:"total_ms"`
		TotalUnbounded      bool     `json:"total_unbounded"`
	} `json:"retry_after"`
	Glidepath struct {
		BudgetMs  float64 `json:"budget_ms"`
		ReserveMs float64 `json:"reserve_ms"`
		FloorMs   float64 `json:"floor_ms"`
		WorkMs    float64 `json:"work_ms"`
		WorstMs   float64 `json:"worst_ms"`
	} `json:"glidepath"`
	Defaults []defaultReport `json:"defaults"`
	Verdict  string          `json:"verdict"`
}

type callReport struct {
	Name             string   `json:"name"`
	CeilingMs        *float64 `json:"ceiling_ms"`
	CeilingUnbounded bool     `json:"ceiling_unbounded"`
	Retries          int      `json:"retries"`
	Attempts         int      `json:"attempts"`
	BackoffMs        float64  `json:"backoff_ms"`
	WorstMs          *float64 `json:"worst_ms"`
	WorstUnbounded   bool     `json:"worst_unbounded"`
}

type defaultReport struct {
	Field string  `json:"field"`
	Tool  *string `json:"tool"` // null for a value that is not a tool's
	Value string  `json:"value"`
	Why   string  `json:"why"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// msOrNull returns b in milliseconds, or nil when it is unbounded.
func msOrNull(b plan.Bound) *float64 {
	if b.Unbounded {
		return nil
	}
	v := ms(b.D)
	return &v
}

func callReportOf(c plan.Call) callReport {
	return callReport{
		Name:             c.Name,
		CeilingMs:        msOrNull(c.Ceiling),
		CeilingUnbounded: c.Ceiling.Unbounded,
		Retries:          c.Retries,
		Attempts:         c.Attempts(),
		BackoffMs:        ms(c.Backoff),
		WorstMs:          msOrNull(c.Worst),
		WorstUnbounded:   c.Worst.Unbounded,
	}
}

func reportOf(p plan.Plan, source string) planReport {
	r := planReport{
		Source:           source,
		BudgetMs:         ms(p.Budget),
		Steps:            p.Steps,
		ToolCallsPerStep: p.ToolCalls,
		Model:            callReportOf(p.Model),
		Tools:            []callReport{},
		PerStepMs:        msOrNull(p.PerStep),
		PerStepUnbounded: p.PerStep.Unbounded,
		TotalMs:          msOrNull(p.Total),
		TotalUnbounded:   p.Total.Unbounded,
		UnboundedBecause: append([]string{}, p.Unbounded...),
		Defaults:         []defaultReport{},
		Verdict:          p.Verdict(),
	}
	for _, t := range p.Tools {
		r.Tools = append(r.Tools, callReportOf(t))
	}
	if p.Slowest >= 0 {
		r.SlowestTool = &p.Tools[p.Slowest].Name
	}
	if ratio, ok := p.Ratio(); ok {
		r.Ratio = &ratio
	}
	ra := &r.RetryAfter
	ra.MaxWaitMs = ms(model.SDKMaxRetryAfter)
	ra.ModelWorstMs, ra.ModelWorstUnbounded = msOrNull(p.RetryAfterModel), p.RetryAfterModel.Unbounded
	ra.PerStepMs, ra.PerStepUnbounded = msOrNull(p.RetryAfterPerStep), p.RetryAfterPerStep.Unbounded
	ra.TotalMs, ra.TotalUnbounded = msOrNull(p.RetryAfterTotal), p.RetryAfterTotal.Unbounded
	g := &r.Glidepath
	g.BudgetMs, g.ReserveMs, g.FloorMs = ms(p.Budget), ms(p.Reserve), ms(p.Floor)
	g.WorkMs, g.WorstMs = ms(max(p.Work(), 0)), ms(p.Budget)
	for _, d := range p.Defaults {
		dr := defaultReport{Field: d.Field, Value: d.Value, Why: d.Why}
		if d.Tool != "" {
			dr.Tool = &d.Tool
		}
		r.Defaults = append(r.Defaults, dr)
	}
	return r
}
