package admit

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// ErrAtCapacity is what every refusal of a [Limiter] matches: the process
// could not serve the run at once, so it was not started.
var ErrAtCapacity = errors.New("admit: at capacity")

// AtCapacityError is a refused run, and why: Limit runs were running, or
// it waited longer than Late between its submission and the door. It
// matches [ErrAtCapacity].
type AtCapacityError struct {
	Running int           // runs running when it came; set when the limit refused it
	Limit   int           // the most runs at once ([Config.Limit]); 0 when the limit did not refuse it
	Waited  time.Duration // how long it waited from submission to the door; set when Late refused it
	Late    time.Duration // the most it may wait ([Config.Late]); 0 when the wait did not refuse it
}

func (e *AtCapacityError) Error() string {
	if e.Limit > 0 {
		return fmt.Sprintf("admit: at capacity: %d runs running, the process's limit is %d", e.Running, e.Limit)
	}
	return fmt.Sprintf("admit: at capacity: the run waited %v from its submission to start, more than the %v allowed",
		e.Waited.Round(time.Millisecond), e.Late)
}

func (e *AtCapacityError) Unwrap() error { return ErrAtCapacity }

// ConfigError reports a Config field that cannot be used.
type ConfigError struct {
	Field string
	Value string
	Err   error
}

func (e *ConfigError) Error() string { return fmt.Sprintf("admit: %s %s: %v", e.Field, e.Value, e.Err) }

func (e *ConfigError) Unwrap() error { return e.Err }

var errNegative = errors.New("must not be negative")

// Config is a process's admission rule. The zero value of each field
// limits nothing.
type Config struct {
	// Limit is the most runs running at once; a run that comes when Limit
	// are running is refused. Zero: no limit on the number.
	Limit int

	// Late is the most a run may wait between its submission (its
	// budget's start) and the door; a run that waited longer is refused:
	// the process is queueing its runs for the CPU, and one served now
	// would end past its deadline. Zero: no bound on the wait.
	Late time.Duration
}

// A Limiter is a process's door for runs: one, shared by every run of the
// process. It is safe for concurrent use. A nil *Limiter admits every run.
type Limiter struct {
	cfg     Config
	running atomic.Int64
}

// New returns a Limiter of cfg, or a [*ConfigError] when a field is
// negative.
func New(cfg Config) (*Limiter, error) {
	switch {
	case cfg.Limit < 0:
		return nil, &ConfigError{Field: "limit", Value: fmt.Sprint(cfg.Limit), Err: errNegative}
	case cfg.Late < 0:
		return nil, &ConfigError{Field: "late", Value: cfg.Late.String(), Err: errNegative}
	}
	return &Limiter{cfg: cfg}, nil
}

// Admit admits a run submitted at submitted that comes to the door at
// now, or refuses it at once with a [*AtCapacityError]. An admitted run
// must call [Limiter.Done] once it has ended; a refused one must not.
func (l *Limiter) Admit(now, submitted time.Time) error {
	if l == nil {
		return nil
	}
	if waited := now.Sub(submitted); l.cfg.Late > 0 && waited > l.cfg.Late {
		return &AtCapacityError{Waited: waited, Late: l.cfg.Late}
	}
	// A compare-and-swap, not an add taken back when over: a run refused
	// must never make another, which came while a place was free, refused.
	for {
		n := l.running.Load()
		if l.cfg.Limit > 0 && n >= int64(l.cfg.Limit) {
			return &AtCapacityError{Running: int(n), Limit: l.cfg.Limit}
		}
		if l.running.CompareAndSwap(n, n+1) {
			break
		}
	}
	return nil
}

// Done says that a run Admit admitted has ended: its place is free.
func (l *Limiter) Done() {
	if l == nil {
		return
	}
	if l.running.Add(-1) < 0 {
		panic("admit: Done without an admitted run")
	}
}

// Running returns the runs admitted and not done.
func (l *Limiter) Running() int {
	if l == nil {
		return 0
	}
	return int(l.running.Load())
}

// Config returns the Limiter's config; the zero Config for a nil one.
func (l *Limiter) Config() Config {
	if l == nil {
		return Config{}
	}
	return l.cfg
}
