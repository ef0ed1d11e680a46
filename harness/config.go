package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/glidepath/glidepath/admit"
	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	"github.com/openai/openai-go/v3"
)

// Defaults of [Config].
const (
	DefaultMaxSteps = 50
	DefaultParallel = 4
	// DefaultMaxRepeats is how many repeated tool calls land a run stuck
	// (SPEC §3).
	DefaultMaxRepeats = 3
)

// Model is the chat model a run talks to; a [*model.Client] is one. Both
// calls lease their attempts from b themselves and report them to obs
// (which may be nil): Complete is a model turn on work leases, with the
// retries SPEC §2 allows; Land is the landing call, one attempt on a
// landing lease, offered no tools. A Model that also has CompletePointer,
// as [model.Client.CompletePointer], is called through it instead of
// Complete: a run waiting in a turn then keeps less on its stack.
type Model interface {
	Complete(ctx context.Context, b *budget.Budget, req model.Request, obs *trace.Observer) (model.Response, error)
	Land(ctx context.Context, b *budget.Budget, messages []openai.ChatCompletionMessageParamUnion, obs *trace.Observer) (model.Response, error)
}

// pointerModel is a [Model] that can return a turn's response by pointer;
// a [*model.Client] is one. The run's loop calls a Model through it when
// it can: a Response returned by value through an interface call takes
// twice its size in the caller's frame, which a run blocked in a model
// stream keeps on its stack (issue 13).
type pointerModel interface {
	CompletePointer(ctx context.Context, b *budget.Budget, req model.Request, obs *trace.Observer) (*model.Response, error)
}

// Tools are the tools a run offers its model; a [*tools.Registry] is one.
// Specs is read at every turn, so tools registered after [Start] (once a
// setup step has found them) are offered from the next turn on.
type Tools interface {
	Specs() []tools.Spec
	Call(ctx context.Context, run *tools.Run, name string, args json.RawMessage) tools.Result
}

// Config describes one run, beside the budget it runs on. Task is
// required, and Model for [Session.Run]; the zero value
// of every other field selects its documented default.
type Config struct {
	// Task is what the agent is asked to do: the user message of
	// [Session.Run]'s conversation, and what a landing summary is for.
	Task string

	// Instructions say what this agent is for, before the harness's own
	// system prompt, in the system message of [Session.Run]'s
	// conversation: a sub-agent's instructions (SPEC §5b). Empty: the
	// harness's prompt alone.
	Instructions string

	// Quiet is the quiet period Q of the run's watchdog (SPEC §3). Zero
	// selects watchdog.DefaultQuiet (60s); it must not be negative.
	Quiet time.Duration

	// QuietMode says what the quiet clock does when it fires: the zero
	// value, watchdog.Enforce, lands the run with cause quiet;
	// watchdog.Warn writes a quiet_warning record and lets the run go
	// on, still bounded by its leases and its deadline; watchdog.Off
	// never fires (issue 27).
	QuietMode watchdog.Mode

	// MaxSilence caps every call's allowance of silence: 2 × the p95 of
	// its kind, or what its tools-file entry states, held on the quiet
	// clock while the call is in flight (SPEC §3, issue 27). Zero
	// selects watchdog.DefaultMaxSilence (5m); it must not be negative.
	MaxSilence time.Duration

	// Model is the chat model. A Session driven by a loop of its own,
	// which calls its model itself through [Session.BeginTurn], may leave
	// it nil.
	Model Model

	// Tools are offered to the model. Nil offers none.
	Tools Tools

	// MaxSteps is the number of model turns before the run lands; the
	// landing call is not counted. Zero selects [DefaultMaxSteps].
	MaxSteps int

	// Parallel is the most tool calls of one step run at once. Zero
	// selects [DefaultParallel]; 1 runs them one by one.
	Parallel int

	// MaxRepeats is how many repeated tool calls the run makes before it
	// lands with cause [landing.CauseStuck]: a call repeats one of an
	// earlier step when it names the same tool with the same arguments
	// and gets the same result, and it is not a semantic event for the
	// quiet clock (SPEC §3). Zero selects [DefaultMaxRepeats]; there is
	// no setting that turns the limit off, only a higher one.
	MaxRepeats int

	// Sinks receive the run's records (SPEC §6), stamped once, in order:
	// a [trace.JSONL] for the trace file, a live status line, spans, logs.
	// A sink's failure does not stop the run; [Session.Close] reports the
	// first, as [ErrTrace].
	Sinks []trace.Sink

	// Secrets are values no record of the run may carry, whatever their
	// shape: the model's API key, and any other credential the caller
	// holds. Each is replaced by "[redacted]" in a record's free text
	// before any sink sees it, as patterns shaped like an sk- key, a
	// bearer token or an Authorization header always are; a tool given a
	// key through its entry's env may echo it back in its error or its
	// progress (issue 24). A sub-agent's run keeps its parent's. Nil: the
	// patterns alone; one shorter than 8 bytes is not used (it would
	// blank ordinary words).
	Secrets []string

	// Journal records orphaned writes (SPEC §5). Nil: an orphan is
	// reported in the result only.
	Journal *cancel.Journal

	// RunID names the run in the trace, the result and the journal. Empty
	// selects a fresh random id.
	RunID string

	// ParentRunID names the run this one is a sub-agent of: every record
	// of the run carries it (parent_run_id, SPEC §6), so that a report
	// finds the child's time inside its parent's agent step. Empty: a run
	// of its own. An [Agent] sets it.
	ParentRunID string

	// CallKey is the idempotency key of the call this run answers, for a
	// sub-agent, in-process or served by `harness serve`: its run_start
	// record carries it, so that the caller's trace and this run's agree
	// on which call it was.
	CallKey string

	// Admit is the process's door for runs (package admit): one
	// [*admit.Limiter] shared by the runs of a process. [Start] asks it
	// first, and refuses a run it cannot serve at once with a
	// [*admit.AtCapacityError]; [Run] returns that run's labeled result,
	// cause [landing.CauseAtCapacity], at once. An admitted run holds its
	// place until [Session.Close]. Nil: every run is admitted. A
	// sub-agent's run is part of its parent's and is not asked again.
	Admit *admit.Limiter

	// parent is the run this one is a sub-agent of, and its call, set by
	// an [Agent]; nil for a run of its own.
	parent *parentCall
}

var (
	// ErrInterrupted is the cause the CLI cancels the run's context with on
	// the first Ctrl-C: the run lands now with cause "cancelled". Any other
	// cancellation of the context lands with cause "cancelled" too.
	ErrInterrupted = errors.New("harness: interrupted")

	// ErrConfig is matched by every [*ConfigError].
	ErrConfig = errors.New("harness: bad config")

	// ErrTrace is matched by the error [Run] and [Session.Close] return
	// when a sink could not take the run's records. The run itself went
	// on: a trace is a record of the run, not a reason to abandon it.
	ErrTrace = errors.New("harness: trace write failed")

	// ErrNoModel is the error of a model turn, or of an [Agent]'s call,
	// when the Config has no Model.
	ErrNoModel = errors.New("harness: no model configured")

	// ErrEnded is returned by a Session's methods that would start work
	// once the run has its result or is landing: a model turn (but the
	// landing call), setup.
	ErrEnded = errors.New("harness: the run has ended")

	// ErrUnavailable is matched by every [*UnavailableError].
	ErrUnavailable = errors.New("harness: tool unavailable")

	// ErrTurnOpen is the failure of a result asked for while a model turn
	// begun with [Session.BeginTurn] is not ended ([Session.Answer]): its
	// answer is not the run's yet, and the run lands instead (issue 25).
	ErrTurnOpen = errors.New("harness: a model turn is still open")

	// ErrLandingCallMade is [Session.BeginTurn]'s error for a second model
	// request while the run lands: a landing is one landing call (SPEC §4).
	ErrLandingCallMade = errors.New("harness: the landing call has been made: a landing makes one")

	// ErrCallerEnded is matched by a refusal whose cause is the caller's
	// own context, which had ended: not the run's time.
	ErrCallerEnded = errors.New("harness: the caller's context ended")
)

// UnavailableError says that a tool the config names cannot be used by
// the run, and why (SPEC §4): what a [Toolset] warns about when a tool
// server or MCP server is down, and what `harness run` warns about for
// each entry of the result's Unavailable. It matches [ErrUnavailable].
type UnavailableError struct {
	Tool string
	Why  string
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("tool %s is unavailable: %s", e.Tool, e.Why)
}

// Is reports whether target is [ErrUnavailable].
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// SetupError reports a piece of a run's setup ([Session.Setup]) that its
// lease, or the run's deadline, ended before it finished: a tool server
// whose manifest did not arrive, an MCP server that did not come up in
// time. Granted is the lease it had; Err is what the piece returned.
type SetupError struct {
	What    string // the piece of setup, as the trace names it ("manifest of http://…")
	Granted time.Duration
	Err     error
}

func (e *SetupError) Error() string {
	return fmt.Sprintf("harness: setup: %s did not finish in %s: %v", e.What, landing.Human(e.Granted), e.Err)
}

func (e *SetupError) Unwrap() error { return e.Err }

// ConfigError reports a [Config] field, or an argument of [Start], that
// cannot be used. Field is named as the flag of `harness run` that sets it
// ("quiet", "max-steps") where there is one, and otherwise as the field
// ("task", "model", "budget").
type ConfigError struct {
	Field string
	Value string // as given, when there is one
	Err   error
}

func (e *ConfigError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("harness: %s: %v", e.Field, e.Err)
	}
	return fmt.Sprintf("harness: %s %s: %v", e.Field, e.Value, e.Err)
}

// Is reports whether target is ErrConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrConfig }

func (e *ConfigError) Unwrap() error { return e.Err }

var (
	errRequired  = errors.New("required")
	errNegative  = errors.New("must not be negative")
	errQuietMode = errors.New("not a quiet mode: want enforce, warn or off")
)

// Validate reports the first field of cfg that [Start] would reject, as a
// [*ConfigError], before anything starts or is sent. The quiet period is
// the watchdog's to judge ([watchdog.Config.Validate]); the budget's
// numbers were judged by [budget.New], which made the budget.
func (cfg Config) Validate() error {
	num := func(field string, n int, err error) error {
		return &ConfigError{Field: field, Value: fmt.Sprint(n), Err: err}
	}
	switch {
	case strings.TrimSpace(cfg.Task) == "":
		return &ConfigError{Field: "task", Err: errRequired}
	case cfg.MaxSteps < 0:
		return num("max-steps", cfg.MaxSteps, errNegative)
	case cfg.Parallel < 0:
		return num("parallel", cfg.Parallel, errNegative)
	case cfg.MaxRepeats < 0:
		return num("max-repeats", cfg.MaxRepeats, errNegative)
	case cfg.MaxSilence < 0:
		return &ConfigError{Field: "max-silence", Value: cfg.MaxSilence.String(), Err: errNegative}
	case cfg.QuietMode > watchdog.Off:
		return &ConfigError{Field: "quiet-mode", Value: cfg.QuietMode.String(), Err: errQuietMode}
	}
	if err := (watchdog.Config{Quiet: cfg.Quiet}).Validate(); err != nil {
		// The reason alone: the ConfigError names the field again.
		reason := err
		if we, ok := errors.AsType[*watchdog.ConfigError](err); ok {
			reason = we.Err
		}
		return &ConfigError{Field: "quiet", Value: cfg.Quiet.String(), Err: reason}
	}
	return nil
}

// withDefaults returns cfg with its zero fields set to their defaults.
func (cfg Config) withDefaults() Config {
	if cfg.MaxSteps == 0 {
		cfg.MaxSteps = DefaultMaxSteps
	}
	if cfg.Parallel == 0 {
		cfg.Parallel = DefaultParallel
	}
	if cfg.MaxRepeats == 0 {
		cfg.MaxRepeats = DefaultMaxRepeats
	}
	if cfg.Quiet == 0 {
		cfg.Quiet = watchdog.DefaultQuiet
	}
	if cfg.Tools == nil {
		// The zero Registry is ready to use: a model that calls a tool
		// it was never offered gets "unknown tool" back, not a panic.
		cfg.Tools = &noTools
	}
	return cfg
}

// noTools is the Tools of a run whose config has none: one empty Registry
// for all, which a run only reads (issue 25 item 6).
var noTools tools.Registry
