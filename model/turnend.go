package model

import (
	"context"
	"errors"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/trace"
)

// A TurnError is how a turn of a [Client] failed: Err is the failure as
// the turn met it — a [*trace.AttemptError], a [*trace.GaveUpError], a
// [*budget.RefusedError] (joined with the attempt before it) —, which
// errors.Is and errors.As find through the TurnError, and Turn is the
// TurnDone its [TurnMachine] ended the turn with: how the run that lands
// on it names it. A host reads it with [TurnOf], so that it takes the
// machine's word rather than read the error again (issue 25).
type TurnError struct {
	Turn TurnCommand
	Err  error
}

func (e *TurnError) Error() string { return e.Err.Error() }

func (e *TurnError) Unwrap() error { return e.Err }

// TurnFailure is the error of a turn its machine ended as c, a TurnDone
// that did not answer, as a [Client] returns it: a [*TurnError] carrying
// c and the failure the turn met — the refusal of the attempt after last,
// joined with last when there was one; the give-up of the backoff after
// last ([*trace.GaveUpError]); for a turn whose context ctx ended during a
// backoff sleep, that end, as [Classify] names it (waitErr is what the
// sleep returned); else last, the turn's last attempt's failure. The
// harness's middleware fails the turns of a loop of its own with it too.
func TurnFailure(ctx context.Context, c TurnCommand, last *trace.AttemptError, waitErr error) error {
	var err error
	switch {
	case c.Refused != nil && last != nil:
		err = errors.Join(c.Refused, last)
	case c.Refused != nil:
		err = c.Refused
	case c.Delay.GiveUp:
		err = &trace.GaveUpError{Step: Kind, Delay: c.Delay, Last: last}
	case c.RunEnded:
		err = Classify(ctx, c.N, waitErr)
	default:
		err = last
	}
	return &TurnError{Turn: c, Err: err}
}

// ServerSaid is c, a TurnDone, with the failure of a turn its server
// failed in the server's own words: err is that failure as a client read
// the answer's body, after a machine that heard only the status ended the
// turn (the harness's middleware for a loop of the caller's own). Any
// other end is returned as it is.
func ServerSaid(c TurnCommand, err error) TurnCommand {
	if c.Kind == TurnDone && c.Cause == landing.CauseUpstream && err != nil {
		c.Failure, c.End.Refused = Describe(err), Refused(err)
	}
	return c
}

// TurnOf returns the TurnDone of the turn that failed with err, and
// whether err carries one: a [*TurnError] anywhere in its chain.
func TurnOf(err error) (TurnCommand, bool) {
	te, ok := errors.AsType[*TurnError](err)
	if !ok {
		return TurnCommand{}, false
	}
	return te.Turn, true
}

// Ended returns the TurnDone of a turn that failed with err, on the
// budget's figures f: the one its machine ended it with, when err carries
// it ([TurnOf]); else, for a model that is not a [Client] (one of the
// caller's own), the end a [TurnMachine] makes of err by its own rules. A
// [*budget.RefusedError] with no attempt in it refused the turn before
// anything was sent; otherwise err is the failure of the turn's one
// attempt, read by [Attempted], after which a [*trace.GaveUpError]'s
// backoff or a refusal ended the turn for want of time, or that attempt's
// failure did. How the attempt's stream went unanswered is not known
// from an error: Unanswered is empty and End.Mute false.
func Ended(err error, f budget.Figures) TurnCommand {
	if c, ok := TurnOf(err); ok {
		return c
	}
	m := NewTurnMachine(TurnRules{MaxAttempts: 1})
	re, refused := errors.AsType[*budget.RefusedError](err)
	if _, attempted := errors.AsType[*trace.AttemptError](err); refused && !attempted {
		return m.failed(f, TurnCommand{Refused: re})
	}
	a, _ := Attempted(err, time.Time{})
	m.n, m.outcome, m.failure, m.refused = 1, a.Outcome, a.Failure, a.Refused
	// A lease cut by its ceiling is the model's slowness, not the run's
	// time: the error says which lease it was (budget.Lease.Context).
	m.capped = errors.Is(err, budget.ErrLeaseExpired)
	var end TurnCommand
	if ge, ok := errors.AsType[*trace.GaveUpError](err); ok {
		end.Delay = ge.Delay
	} else if refused {
		end.Refused = re
	}
	return m.failed(f, end)
}
