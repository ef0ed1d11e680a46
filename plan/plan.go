package plan

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/model"
)

// What a configuration gets when it leaves a value out: harness run's
// defaults for the run, and the defaults of the [Library] in charge for
// each call.
const (
	DefaultBudget    = 2 * time.Minute // harness run's --budget
	DefaultSteps     = 50              // harness run's --max-steps
	DefaultToolCalls = 1

	// MaxCount bounds steps, tool calls and retries: far above any real
	// configuration, and low enough that 1 + retries cannot overflow.
	MaxCount = 1_000_000
)

// A Library is what a client library does with the values a configuration
// leaves out: the per-attempt timeout it sets, the retries it makes and
// the sleeps before them. The ones a run meets are the variables below.
type Library struct {
	ceiling    time.Duration            // the per-attempt timeout it sets; 0: none
	whyCeiling string                   // why an unset ceiling is that
	unbounded  func(name string) string // why that makes the worst case unbounded
	retries    int
	whyRetries string

	// backoff bounds the sleeps before retries. openai-go's jitter only
	// shortens a sleep, so its longest sleep before retry n is exactly
	// min(8s, 0.5s·2^(n−1)): budget.Backoff's ceiling with that base and
	// cap. A tool's retries are taken to sleep as Glidepath's own backoff
	// does by default.
	backoff budget.Backoff
}

// The libraries in charge of a call without Glidepath: openai-go for the
// model, with the defaults package model records beside the client that
// turns them off; for a tool, what calls it. None of the tool libraries
// sets a timeout or retries.
var (
	OpenAI = Library{
		ceiling:    model.SDKRequestTimeout,
		whyCeiling: "openai-go sets no request timeout (RequestTimeout 0)",
		unbounded:  func(string) string { return "openai-go has no overall timeout by default" },
		retries:    model.SDKMaxRetries,
		whyRetries: fmt.Sprintf("openai-go's MaxRetries; backoff %gs·2^n, at most %v", model.SDKBackoffBase.Seconds(), model.SDKBackoffCap),
		backoff:    budget.Backoff{Base: model.SDKBackoffBase, Cap: model.SDKBackoffCap},
	}
	// NetHTTP calls a remote tool, and the tools of a plan file.
	NetHTTP = Library{
		whyCeiling: "net/http's client has no timeout",
		unbounded: func(name string) string {
			return "tool " + name + " has no ceiling and net/http sets no timeout"
		},
		whyRetries: "net/http does not retry",
	}
	// OSExec runs a command tool.
	OSExec = Library{
		whyCeiling: "os/exec sets no timeout: a subprocess runs until it exits",
		unbounded: func(name string) string {
			return "tool " + name + " has no ceiling and os/exec sets no timeout"
		},
		whyRetries: "os/exec does not retry",
	}
	// GoFunc calls a builtin, a Go function.
	GoFunc = Library{
		whyCeiling: "a Go function runs until it returns",
		unbounded: func(name string) string {
			return "tool " + name + " has no ceiling and a Go function runs until it returns"
		},
		whyRetries: "a function call does not retry",
	}
	// MCPSDK calls a tool of an MCP server (mcpServers): the MCP Go SDK's
	// CallTool, bounded by nothing but its context.
	MCPSDK = Library{
		whyCeiling: "the MCP SDK's CallTool has no timeout of its own",
		unbounded: func(name string) string {
			return "tool " + name + " has no ceiling and the MCP SDK sets no timeout"
		},
		whyRetries: "the MCP SDK does not retry",
	}
	// SubAgent runs a child agent: without one deadline, a child starts
	// a budget of its own, as agent frameworks' agent-as-tool does.
	SubAgent = Library{
		whyCeiling: "a sub-agent without a deadline of its parent's runs until its own turns run out",
		unbounded: func(name string) string {
			return "sub-agent " + name + " has no ceiling and runs on a budget of its own, not its parent's"
		},
		whyRetries: "a sub-agent is not retried",
	}
)

// Config is what a plan is computed from. A nil field was left out and
// gets the default of the library that would be in charge of it.
type Config struct {
	Budget           *time.Duration // nil: 2m, harness run's default
	Steps            *int           // max model turns; nil: 50, harness run's --max-steps default
	ToolCallsPerStep *int           // nil: 1
	Model            Limits
	Tools            []Tool

	// Origin says where each field was set, keyed by its path
	// ("tools[0].ceiling"): "agent.yaml:7" or "--tool-ceiling". It only
	// locates errors.
	Origin map[string]string

	// ToolsFile names the tool config Tools were read from; "" when they
	// were not. ToolFlags are the flags that override every tool's limits
	// ("--tool-ceiling", "--tool-retries"), as given.
	ToolsFile string
	ToolFlags []string
}

// Limits are the per-attempt timeout and the retry count of one kind of call.
type Limits struct {
	Ceiling *time.Duration // nil: the library's default; 0: no timeout
	Retries *int           // nil: the library's default
}

// A Tool is one tool of a plan: from a plan file, a tools file
// ([FromTools]) or flags.
type Tool struct {
	Name string
	Limits

	// Caller is what calls the tool; nil: [NetHTTP], as for a plan
	// file's tools.
	Caller *Library

	// For a tool from a tools file, CeilingDefault says where a ceiling
	// its entry left out came from (nil: the entry gave it, or none was
	// found), and RetriesDefault how its effect and max_attempts became
	// the retries, a field a tools file does not have. Both are nil for a
	// plan file's tools; a caller that overrides the value (a flag) sets
	// them to nil.
	CeilingDefault, RetriesDefault *Default
}

// Errors of a plan configuration, matched by [FieldError].
var (
	ErrNotDuration = errors.New("not a duration (e.g. 90s, 2m)")
	ErrNotInteger  = errors.New("not a whole number")
	ErrNotPositive = errors.New("must be positive")
	ErrNegative    = errors.New("must not be negative")
	ErrNoName      = errors.New("required")
	ErrDuplicate   = errors.New("listed twice")
	ErrNoTools     = errors.New("no tools are listed")
	ErrTooMany     = fmt.Errorf("more than %d", MaxCount)
)

// A FieldError is a configuration value that cannot be used. It unwraps
// to one of the errors above.
type FieldError struct {
	Where string // "agent.yaml:7", a flag such as "--budget", or ""
	Field string // the value's path, e.g. "tools[0].ceiling"
	Value string // as written; "" when absent
	Err   error
}

func (e *FieldError) Error() string {
	val := ""
	switch {
	case e.Value == "":
	case strings.IndexFunc(e.Value, needsQuote) < 0:
		val = " " + e.Value
	default:
		val = " " + strconv.Quote(e.Value)
	}
	switch {
	case strings.HasPrefix(e.Where, "--"):
		return fmt.Sprintf("%s%s: %v", e.Where, val, e.Err)
	case e.Where != "" && e.Field == "":
		return fmt.Sprintf("%s:%s %v", e.Where, val, e.Err)
	case e.Where != "":
		return fmt.Sprintf("%s: %s%s: %v", e.Where, e.Field, val, e.Err)
	}
	return fmt.Sprintf("%s%s: %v", e.Field, val, e.Err)
}

func (e *FieldError) Unwrap() error { return e.Err }

// needsQuote reports whether a value holding r is quoted in a message:
// anything but what a number, a duration or a simple name is made of.
func needsQuote(r rune) bool {
	return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune(".+-_", r)
}

// A Bound is a duration that may be unbounded. Sums saturate at
// math.MaxInt64 (292 years), which is still a number, not "unbounded".
type Bound struct {
	D         time.Duration
	Unbounded bool
}

func (b Bound) String() string {
	switch {
	case b.Unbounded:
		return "unbounded"
	case b.D == math.MaxInt64:
		return "over 292 years"
	}
	return b.D.String()
}

func (b Bound) plus(d time.Duration) Bound {
	return Bound{D: budget.AddSat(b.D, d), Unbounded: b.Unbounded}
}

func (b Bound) add(o Bound) Bound {
	return Bound{D: budget.AddSat(b.D, o.D), Unbounded: b.Unbounded || o.Unbounded}
}

// times returns b·n; zero of anything, even of an unbounded call, is zero.
func (b Bound) times(n int) Bound {
	if n == 0 {
		return Bound{}
	}
	return Bound{D: budget.MulSat(b.D, n), Unbounded: b.Unbounded}
}

// A Call is the worst case of one logical call: every attempt runs to its
// ceiling and then fails in a way that is retried, and every sleep before a
// retry is its longest. (openai-go does not retry an attempt its own
// timeout ended, but a gateway's 504 just before the ceiling is retried, so
// the supremum is the same.)
type Call struct {
	Name    string
	Ceiling Bound
	Retries int
	Backoff time.Duration // the sum of the longest sleep before each retry
	Worst   Bound         // Ceiling × (1 + Retries) + Backoff

	DefaultCeiling, DefaultRetries bool // report whether the library's default was used
}

// Attempts returns 1 + Retries.
func (c Call) Attempts() int { return 1 + c.Retries }

// A Default says which default filled a value the configuration left out.
type Default struct {
	Field string // the value's path, e.g. "tools[1].retries"
	Tool  string // the tool's name for a tool's value, else ""
	Value string
	Why   string
}

// A Plan is the worst case of a configuration without a budget, beside
// what the same configuration costs under Glidepath.
type Plan struct {
	Budget, Reserve, Floor time.Duration
	Steps, ToolCalls       int

	Model   Call
	Tools   []Call
	Slowest int // index in Tools of the tool with the largest worst case; -1 without tools

	PerStep Bound // Model.Worst + ToolCalls × Tools[Slowest].Worst
	Total   Bound // Steps × PerStep

	// The same with every model retry waiting the longest Retry-After
	// openai-go honors instead of its backoff.
	RetryAfterModel, RetryAfterPerStep, RetryAfterTotal Bound

	Defaults  []Default
	ToolsFile string   // where Tools were read from, as Config.ToolsFile
	ToolFlags []string // as Config.ToolFlags
	Unbounded []string // why Total is unbounded, one reason per unbounded ceiling that counts
}

// Work returns what work may spend under Glidepath: B − R.
func (p Plan) Work() time.Duration { return p.Budget - p.Reserve }

// Ratio returns Total/Budget, or false when Total is unbounded.
func (p Plan) Ratio() (float64, bool) {
	if p.Total.Unbounded {
		return 0, false
	}
	return float64(p.Total.D) / float64(p.Budget), true
}

// Make computes the plan of c, a pure function of it. It returns every
// invalid value at once, joined, each a [*FieldError].
func Make(c Config) (Plan, error) {
	if err := c.validate(); err != nil {
		return Plan{}, err
	}
	p := Plan{Floor: budget.DefaultFloor, Slowest: -1, ToolsFile: c.ToolsFile, ToolFlags: c.ToolFlags}

	p.Budget = orDefault(&p, c.Budget, "budget", "", DefaultBudget, "harness run's --budget default")
	p.Reserve = budget.DefaultReserve(p.Budget)
	p.Steps = orDefault(&p, c.Steps, "steps", "", DefaultSteps, "harness run's --max-steps default")
	if len(c.Tools) > 0 {
		p.ToolCalls = orDefault(&p, c.ToolCallsPerStep, "tool_calls_per_step", "", DefaultToolCalls, "one tool call per model turn")
	}

	var why string
	p.Model, why = p.call("model", "", c.Model, OpenAI)
	if why != "" {
		p.Unbounded = append(p.Unbounded, why)
	}
	for i, t := range c.Tools {
		lib := NetHTTP
		if t.Caller != nil {
			lib = *t.Caller
		}
		tp, why := p.call(fmt.Sprintf("tools[%d]", i), t.Name, t.Limits, lib)
		for _, n := range []*Default{t.CeilingDefault, t.RetriesDefault} {
			if n != nil {
				p.Defaults = append(p.Defaults, *n)
			}
		}
		p.Tools = append(p.Tools, tp)
		if p.Slowest < 0 || slower(tp.Worst, p.Tools[p.Slowest].Worst) {
			p.Slowest = i
		}
		// A tool that is never called costs nothing, unbounded or not.
		if why != "" && p.ToolCalls > 0 {
			p.Unbounded = append(p.Unbounded, why)
		}
	}

	var tools Bound
	if p.Slowest >= 0 {
		tools = p.Tools[p.Slowest].Worst.times(p.ToolCalls)
	}
	p.PerStep = p.Model.Worst.add(tools)
	p.Total = p.PerStep.times(p.Steps)

	p.RetryAfterModel = p.Model.Ceiling.times(p.Model.Attempts()).plus(budget.MulSat(model.SDKMaxRetryAfter, p.Model.Retries))
	p.RetryAfterPerStep = p.RetryAfterModel.add(tools)
	p.RetryAfterTotal = p.RetryAfterPerStep.times(p.Steps)
	return p, nil
}

// call fills in l's defaults from lib and computes the worst case of the
// model's calls (tool "") or a tool's. field is the path the notes name. It
// also returns why the call is unbounded, or "" when it is not.
func (p *Plan) call(field, tool string, l Limits, lib Library) (Call, string) {
	name := cmp.Or(tool, "model")
	c := Call{Name: name}
	var why string
	switch {
	case l.Ceiling == nil && lib.ceiling > 0:
		c.Ceiling.D = lib.ceiling
		c.DefaultCeiling = true
		p.Defaults = append(p.Defaults, Default{Field: field + ".ceiling", Tool: tool, Value: lib.ceiling.String(), Why: lib.whyCeiling})
	case l.Ceiling == nil:
		c.Ceiling.Unbounded = true
		c.DefaultCeiling = true
		p.Defaults = append(p.Defaults, Default{Field: field + ".ceiling", Tool: tool, Value: "none", Why: lib.whyCeiling})
		why = lib.unbounded(name)
	case *l.Ceiling == 0:
		c.Ceiling.Unbounded = true
		why = field + ".ceiling is 0, which means no timeout"
	default:
		c.Ceiling.D = *l.Ceiling
	}
	c.Retries = orDefault(p, l.Retries, field+".retries", tool, lib.retries, lib.whyRetries)
	c.DefaultRetries = l.Retries == nil
	c.Backoff = longestSleeps(lib.backoff, c.Retries)
	c.Worst = c.Ceiling.times(c.Attempts()).plus(c.Backoff)
	return c, why
}

// orDefault returns *v, or def when v is nil, noting the default used.
func orDefault[T time.Duration | int](p *Plan, v *T, field, tool string, def T, why string) T {
	if v != nil {
		return *v
	}
	p.Defaults = append(p.Defaults, Default{Field: field, Tool: tool, Value: fmt.Sprint(def), Why: why})
	return def
}

// longestSleeps returns the sum of bo's longest sleep before each of
// retries retries. Once the sleeps reach the cap every further one adds the
// cap, so it loops a few times at most, whatever retries is.
func longestSleeps(bo budget.Backoff, retries int) time.Duration {
	var sum time.Duration
	for n := 1; n <= retries; n++ {
		d := bo.Ceiling(n)
		if d == bo.Ceiling(n+1) {
			return budget.AddSat(sum, budget.MulSat(d, retries-n+1))
		}
		sum += d
	}
	return sum
}

// slower reports whether a is a strictly larger worst case than b.
func slower(a, b Bound) bool {
	if a.Unbounded != b.Unbounded {
		return a.Unbounded
	}
	return a.D > b.D
}

// validate returns every value of c that cannot be used.
func (c Config) validate() error {
	var errs []error
	flagged := make(map[string]bool)
	bad := func(field, value string, err error) {
		where := c.Origin[field]
		if strings.HasPrefix(where, "--") {
			// --tool-retries sets every tool; one message is enough.
			if flagged[where] {
				return
			}
			flagged[where] = true
		}
		errs = append(errs, &FieldError{Where: where, Field: field, Value: value, Err: err})
	}
	if c.Budget != nil && *c.Budget <= 0 {
		bad("budget", c.Budget.String(), ErrNotPositive)
	}
	count := func(field string, n *int, positive bool) {
		switch {
		case n == nil:
		case positive && *n <= 0:
			bad(field, strconv.Itoa(*n), ErrNotPositive)
		case *n < 0:
			bad(field, strconv.Itoa(*n), ErrNegative)
		case *n > MaxCount:
			bad(field, strconv.Itoa(*n), ErrTooMany)
		}
	}
	count("steps", c.Steps, true)
	count("tool_calls_per_step", c.ToolCallsPerStep, false)
	if n := c.ToolCallsPerStep; n != nil && *n > 0 && len(c.Tools) == 0 {
		bad("tool_calls_per_step", strconv.Itoa(*n), ErrNoTools)
	}
	checkLimits := func(field string, l Limits) {
		if l.Ceiling != nil && *l.Ceiling < 0 {
			bad(field+".ceiling", l.Ceiling.String(), ErrNegative)
		}
		count(field+".retries", l.Retries, false)
	}
	checkLimits("model", c.Model)
	seen := make(map[string]bool)
	for i, t := range c.Tools {
		field := fmt.Sprintf("tools[%d]", i)
		switch {
		case t.Name == "":
			bad(field+".name", "", ErrNoName)
		case seen[t.Name]:
			bad(field+".name", t.Name, ErrDuplicate)
		}
		seen[t.Name] = true
		checkLimits(field, t.Limits)
	}
	return errors.Join(errs...)
}

// Verdict says in one line how the unbudgeted worst case compares with the
// budget, and what Glidepath makes of it.
func (p Plan) Verdict() string {
	lands := fmt.Sprintf("under Glidepath the run lands by %v", p.Budget)
	ratio, ok := p.Ratio()
	switch {
	case !ok:
		return fmt.Sprintf("unbudgeted worst case is unbounded (%s); %s", strings.Join(p.Unbounded, "; "), lands)
	case ratio > 1:
		return fmt.Sprintf("unbudgeted worst case is %v, %.1f× the %v budget; %s", p.Total, ratio, p.Budget, lands)
	}
	return fmt.Sprintf("unbudgeted worst case is %v, within the %v budget; %s", p.Total, p.Budget, lands)
}
