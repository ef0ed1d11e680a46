package landing

import (
	"errors"
	"time"

	"github.com/glidepath/glidepath/budget"
)

// ErrGated is matched by every [GateError]: the ladder refused work in the
// current phase.
var ErrGated = errors.New("landing: refused by the phase")

// GateError reports work refused by a gate of the ladder. It matches both
// [ErrGated] and [budget.ErrRefused], since like a lease refusal it stops a
// call before any I/O. Reason is written to be shown to the model.
type GateError struct {
	Phase    Phase
	What     string        // what was refused: a step kind or a kind of widening
	Reason   string        // why, in words for the model
	Estimate time.Duration // the estimate that did not fit, if any
	Left     time.Duration // the time before landing it was compared with, if any
}

func (e *GateError) Error() string {
	return "landing: refused " + e.What + " in the " + e.Phase.String() + " phase: " + e.Reason
}

// Is reports whether target is [ErrGated] or [budget.ErrRefused].
func (e *GateError) Is(target error) bool {
	return target == ErrGated || target == budget.ErrRefused
}
