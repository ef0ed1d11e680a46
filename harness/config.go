package harness

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/watchdog"
)

// Defaults of [Config].
const (
	DefaultMaxSteps = 50
	DefaultParallel = 4
)

// Config describes one run. Task, Budget and Model are required; the zero
// value of every other field selects its documented default.
type Config struct {
	// Task is what the agent is asked to do, sent as the user message.
	Task string

	// Budget is B, the whole time of the run, landing included. It must be
	// positive.
	Budget time.Duration

	// Quiet is the quiet period Q of the run's watchdog (SPEC §3). Zero
	// selects watchdog.DefaultQuiet (60s).
	Quiet time.Duration

	// Reserve is R, the tail kept for landing. Zero selects
	// budget.DefaultReserve(Budget).
	Reserve time.Duration

	// Floor is F: with less than this left, nothing is started. Zero
	// selects budget.DefaultFloor (50ms).
	Floor time.Duration

	// Model is the chat model the run talks to.
	Model *model.Client

	// Tools are offered to the model. Nil or empty offers none.
	Tools *tools.Registry

	// MaxSteps is the number of model turns before the run lands; the
	// landing call is not counted. Zero selects [DefaultMaxSteps].
	MaxSteps int

	// Parallel is the most tool calls of one step run at once. Zero
	// selects [DefaultParallel]; 1 runs them one by one.
	Parallel int

	// Trace, if not nil, receives the run's JSONL trace (SPEC §6). Pass a
	// buffered writer and flush it after Run returns.
	Trace io.Writer

	// Journal records orphaned writes (SPEC §5). Nil: an orphan is
	// reported in the result only.
	Journal *cancel.Journal

	// RunID names the run in the trace, the result and the journal. Empty
	// selects a fresh random id.
	RunID string

	// Estimates are the latency estimates the run's budget leases
	// against; share one set across runs. Nil selects a fresh set.
	Estimates *budget.Estimates

	// Status, if not nil, is called with the run's live status whenever it
	// changes: a phase change, a step start, a call starting or ending.
	// Calls are serialized; it must be quick.
	Status func(Status)
}

// Status is a run's live status, for a terminal line.
type Status struct {
	Spent, Total time.Duration
	Phase        landing.Phase
	Step         int    // the model turn in progress, from 1; 0 before the first
	InFlight     string // the calls in flight, e.g. "model" or "tool:search, tool:fetch"; "" for none
}

var (
	// ErrInterrupted is the cause the CLI cancels the run's context with on
	// the first Ctrl-C: the run lands now with cause "cancelled". Any other
	// cancellation of the context lands with cause "cancelled" too.
	ErrInterrupted = errors.New("harness: interrupted")

	// ErrConfig is matched by every [*ConfigError].
	ErrConfig = errors.New("harness: bad config")

	// ErrTrace is matched by the error [Run] returns beside its result when
	// the trace could not be written. The run itself went on: a trace is a
	// record of the run, not a reason to abandon it.
	ErrTrace = errors.New("harness: trace write failed")
)

// ConfigError reports a [Config] field that cannot be used. Field is named
// as the flag of `harness run` that sets it ("budget", "max-steps").
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
	errRequired    = errors.New("required")
	errNotPositive = errors.New("must be positive")
	errNegative    = errors.New("must not be negative")
	errNotBelow    = errors.New("must be below the budget")
)

// validate checks cfg before anything starts, so that a bad config sends
// nothing (SPEC §4: exit 2, nothing started).
func (cfg *Config) validate() error {
	dur := func(field string, d time.Duration, err error) error {
		return &ConfigError{Field: field, Value: d.String(), Err: err}
	}
	num := func(field string, n int, err error) error {
		return &ConfigError{Field: field, Value: fmt.Sprint(n), Err: err}
	}
	switch {
	case strings.TrimSpace(cfg.Task) == "":
		return &ConfigError{Field: "task", Err: errRequired}
	case cfg.Budget <= 0:
		return dur("budget", cfg.Budget, errNotPositive)
	case cfg.Quiet < 0:
		return dur("quiet", cfg.Quiet, errNegative)
	case cfg.Reserve < 0:
		return dur("reserve", cfg.Reserve, errNegative)
	case cfg.Reserve >= cfg.Budget:
		return dur("reserve", cfg.Reserve, errNotBelow)
	case cfg.Floor < 0:
		return dur("floor", cfg.Floor, errNegative)
	case cfg.Floor >= cfg.Budget:
		return dur("floor", cfg.Floor, errNotBelow)
	case cfg.Model == nil:
		return &ConfigError{Field: "model", Err: errRequired}
	case cfg.MaxSteps < 0:
		return num("max-steps", cfg.MaxSteps, errNegative)
	case cfg.Parallel < 0:
		return num("parallel", cfg.Parallel, errNegative)
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
	if cfg.Quiet == 0 {
		cfg.Quiet = watchdog.DefaultQuiet
	}
	if cfg.Tools == nil {
		// The zero Registry is ready to use: a model that calls a tool
		// it was never offered gets "unknown tool" back, not a panic.
		cfg.Tools = &tools.Registry{}
	}
	return cfg
}
