package budget

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrRefused is matched by every [RefusedError]: a call was refused
	// locally, before any I/O, because it could not finish in time.
	ErrRefused = errors.New("budget: refused")

	// ErrLeaseExpired is the cause of a lease context that ended because the
	// lease's ceiling ran out while the run still had time.
	ErrLeaseExpired = errors.New("budget: lease expired")

	// ErrDeadline is the cause of a context that ended because the run ran
	// out of time: at the deadline itself for a run context or a landing
	// lease, at the start of the reserve for a work lease, whose budget-limited
	// grant ends there.
	ErrDeadline = errors.New("budget: run deadline reached")

	// ErrBadHeader is matched by every [HeaderError].
	ErrBadHeader = errors.New("budget: bad Budget-Remaining-Ms")

	// ErrBadRetryAfter is matched by every [RetryAfterError].
	ErrBadRetryAfter = errors.New("budget: bad Retry-After")

	errNotPositive   = errors.New("must be positive")
	errNegative      = errors.New("must not be negative")
	errNotBelowTotal = errors.New("must be less than the total")
)

// Rule names the rule by which a lease was refused.
type Rule uint8

const (
	// BelowFloor: after the reserve, what is left does not exceed the floor.
	BelowFloor Rule = iota + 1
	// BelowP50: the lease that could be granted is shorter than the p50
	// latency known for the step kind, so the call would likely be wasted.
	BelowP50
	// ParentKeep: a sub-agent slice would leave the parent less than the
	// minimum it keeps for itself.
	ParentKeep
)

func (r Rule) String() string {
	switch r {
	case BelowFloor:
		return "below floor"
	case BelowP50:
		return "below p50"
	case ParentKeep:
		return "parent keep"
	}
	return fmt.Sprintf("Rule(%d)", uint8(r))
}

// RefusedError reports a lease that was refused. It matches [ErrRefused].
type RefusedError struct {
	Step      string        // the step kind, e.g. "tool:search"
	Rule      Rule          // which rule refused
	Remaining time.Duration // time left until the deadline when refused
	Left      time.Duration // what the rule compared: time after the reserve (BelowFloor, ParentKeep) or the grant it would have made (BelowP50)
	Need      time.Duration // what the rule required: the floor, the p50, or the parent's keep plus the floor
}

func (e *RefusedError) Error() string {
	step := e.Step
	if step == "" {
		step = "call"
	}
	switch e.Rule {
	case BelowP50:
		return fmt.Sprintf("budget: refused %s: %v left, below p50 %v", step, e.Left, e.Need)
	case ParentKeep:
		return fmt.Sprintf("budget: refused %s: %v left, parent keeps %v", step, e.Left, e.Need)
	}
	return fmt.Sprintf("budget: refused %s: %v left, below floor %v", step, e.Left, e.Need)
}

// Is reports whether target is [ErrRefused].
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }
