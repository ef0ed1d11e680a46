package cost

import (
	"errors"
	"fmt"

	"github.com/glidepath/glidepath/budget"
)

var (
	// ErrRefused is matched by every [RefusedError]: a call was refused
	// locally, before any I/O, because what it is expected to spend does
	// not fit in the cost budget left.
	ErrRefused = errors.New("cost: refused")

	// ErrBadPrices is matched by every [PriceError]: a price table that
	// cannot be read.
	ErrBadPrices = errors.New("cost: bad price table")

	// ErrNoPrice is matched by every [NoPriceError]: a run under a cost
	// cap uses a model whose price is not known.
	ErrNoPrice = errors.New("cost: no price")
)

// RefusedError reports a lease refused by the cost budget. It matches
// [ErrRefused] and also [budget.ErrRefused], since like a time refusal it
// stops a call before any I/O; a host that labels the run's cause asks
// for [ErrRefused] first. Left and Need are in Unit's measure:
// picodollars ([Money]) or tokens.
type RefusedError struct {
	Step string      // the step kind, e.g. "model", "tool:search", "agent"
	Rule budget.Rule // which rule refused: BelowFloor, BelowP50 or ParentKeep
	Unit Unit        // which cap refused
	Left int64       // what was left of that cap after the reserve (and, for ParentKeep, the parent's keep)
	Need int64       // what the rule required: the call's expected cost, or the least a slice may be
}

func (e *RefusedError) Error() string {
	step := e.Step
	if step == "" {
		step = "call"
	}
	left, need := e.Unit.Format(e.Left), e.Unit.Format(e.Need)
	switch e.Rule {
	case budget.BelowP50:
		return fmt.Sprintf("cost: refused %s: %s left, below its expected %s (p50 output)", step, left, need)
	case budget.ParentKeep:
		return fmt.Sprintf("cost: refused %s: %s left, parent keeps %s", step, left, need)
	}
	return fmt.Sprintf("cost: refused %s: %s left, below its least %s", step, left, need)
}

// Is reports whether target is [ErrRefused] or [budget.ErrRefused].
func (e *RefusedError) Is(target error) bool {
	return target == ErrRefused || target == budget.ErrRefused
}

// PriceError reports a model's entry in a price table that cannot be
// read: the entry (Field empty) or one field of it. It matches
// [ErrBadPrices] and unwraps to the reason.
type PriceError struct {
	Model string // the model whose entry is bad
	Field string // the field, e.g. "output_cost_per_token"; "" when the entry is not an object
	Value string // the value as written, cut to 64 bytes
	Err   error  // the reason: not a number, negative, too large, …
}

func (e *PriceError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("cost: bad price of %q: %s: %v", e.Model, e.Value, e.Err)
	}
	return fmt.Sprintf("cost: bad price of %q: %s %s: %v", e.Model, e.Field, e.Value, e.Err)
}

// Is reports whether target is [ErrBadPrices].
func (e *PriceError) Is(target error) bool { return target == ErrBadPrices }

func (e *PriceError) Unwrap() error { return e.Err }

// NoPriceError reports a model whose price a run under a cost cap needs
// and does not have. It matches [ErrNoPrice].
type NoPriceError struct {
	Model string // the model, as asked for or as found
	Field string // the price its entry leaves out; "" when no table knows the model
}

func (e *NoPriceError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("cost: no price for model %q: not in the price table (--prices FILE)", e.Model)
	}
	return fmt.Sprintf("cost: no price for model %q: its entry has no %s", e.Model, e.Field)
}

// Is reports whether target is [ErrNoPrice].
func (e *NoPriceError) Is(target error) bool { return target == ErrNoPrice }

// ConfigError reports an unusable [Config] field. It unwraps to the
// reason.
type ConfigError struct {
	Field string // "cap.cost", "reserve.tokens", …
	Value string
	Err   error
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("cost: %s %s: %v", e.Field, e.Value, e.Err)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// Unit names what a cap counts.
type Unit uint8

const (
	// USD: money, counted in picodollars ([Money]).
	USD Unit = iota + 1
	// Tokens: input and output tokens together.
	Tokens
)

// String returns the unit's name as --json writes it: "usd" or "tokens".
func (u Unit) String() string {
	switch u {
	case USD:
		return "usd"
	case Tokens:
		return "tokens"
	}
	return fmt.Sprintf("Unit(%d)", uint8(u))
}

// Format writes n of the unit: "$0.0012" or "1200 tokens".
func (u Unit) Format(n int64) string {
	if u == USD {
		return Money(n).String()
	}
	return fmt.Sprintf("%d tokens", n)
}
