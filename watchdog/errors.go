package watchdog

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrQuiet is matched by every [StallError]: the quiet clock fired
	// because no semantic event came in time.
	ErrQuiet = errors.New("watchdog: quiet clock fired")

	// ErrWall is the cause of a run context that reached [Config.Wall].
	ErrWall = errors.New("watchdog: wall reached")

	// ErrStopped is the cause of a run context ended by [Watchdog.Stop].
	ErrStopped = errors.New("watchdog: stopped")

	errNegative    = errors.New("must not be negative")
	errNotSemantic = errors.New("not a semantic event, so it opens no quiet window")
	errMode        = errors.New("not a quiet mode (enforce, warn or off)")
)

// StallError is the report of a stall, and the cause of the run context
// when the quiet clock fires. It matches [ErrQuiet].
type StallError struct {
	// Last is the last semantic event before the stall; None when there was
	// none since Start.
	Last Event
	// Since is how long before the stall Last happened (or Start, when Last
	// is None).
	Since time.Duration
	// Quiet is the quiet window that ran out.
	Quiet time.Duration
	// Window is the event whose window ran out. It is Last unless an earlier
	// event had opened a longer window that outlasted Last's own (see
	// [Config.QuietAfter]).
	Window Event
	// Call is the call in flight that was silent (issue 27); zero when
	// none was.
	Call Silent
	// Warning reports a would-be stall of a clock in [Warn] mode: the run
	// went on.
	Warning bool `json:",omitempty"`
}

func (e *StallError) Error() string {
	if c := e.Call; c.Key != "" {
		switch {
		case c.Held:
			return fmt.Sprintf("watchdog: stalled: %s silent for %v, past its allowance %v (%v)", c.Step, c.For, c.Allowance, c.Source)
		case c.AtHeaders && !c.Headers:
			return fmt.Sprintf("watchdog: stalled: %s sent no headers in %v (quiet %v)", c.Step, c.For, e.Quiet)
		}
		return fmt.Sprintf("watchdog: stalled: %s silent for %v (quiet %v)", c.Step, c.For, e.Quiet)
	}
	if e.Last == None {
		return fmt.Sprintf("watchdog: stalled: no semantic event in %v since start (quiet %v)", e.Since, e.Quiet)
	}
	if e.Window != e.Last {
		return fmt.Sprintf("watchdog: stalled: last semantic event %v was %v ago (quiet %v after %v)", e.Last, e.Since, e.Quiet, e.Window)
	}
	return fmt.Sprintf("watchdog: stalled: last semantic event %v was %v ago (quiet %v)", e.Last, e.Since, e.Quiet)
}

// Is reports whether target is [ErrQuiet].
func (e *StallError) Is(target error) bool { return target == ErrQuiet }

// ConfigError reports a [Config] field that cannot be used.
type ConfigError struct {
	Field string // e.g. "quiet" or "quiet_after[keepalive]"
	Value time.Duration
	Err   error
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("watchdog: %s %v: %v", e.Field, e.Value, e.Err)
}

func (e *ConfigError) Unwrap() error { return e.Err }
