package cancel

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/glidepath/glidepath/budget"
)

// StatusLease is the ceiling of the work lease each status request of
// [Reconcile] runs on. A status is a cheap read; a tool that cannot answer
// it this fast is as good as unreachable.
const StatusLease = 5 * time.Second

// FinalAsk is the work time [Reconcile] keeps for its last status ask when
// the backoff's next sleep would outlast the budget: it sleeps only until
// FinalAsk (and the floor) are left, then asks once more.
const FinalAsk = 250 * time.Millisecond

// A Resolution is what reconciliation learned about a write whose attempt
// timed out (SPEC §5).
type Resolution struct {
	// State is the last state the tool reported: Done, Failed,
	// NeverReceived (the caller may send the call again with the same key),
	// or Running (then Orphan is true). It is empty when no ask was
	// answered.
	State State

	Output json.RawMessage // the tool's output, as sent with the final state: the result for Done

	// Orphan reports whether the outcome stays unknown: the call was still
	// running when the budget said stop, or the status endpoint was
	// unreachable, or there was no time to ask at all. The caller records an
	// orphan in the [Journal].
	Orphan bool

	Asks int   // status requests made
	Err  error // for an Orphan: why
}

// Reconcile learns the outcome of the call with key, a write whose attempt
// timed out, by asking its tool through s rather than sending it again: it
// never re-sends the call, it only reads its status (for an [Endpoint], a
// GET). It follows SPEC §5:
//
//   - done: State Done with the call's Output;
//   - failed: State Failed, a failed call, not to be retried;
//   - 404: State NeverReceived, the call never arrived, so the caller may
//     retry with the same key;
//   - running: ask again after a backoff sleep, until the call settles;
//   - still running when the budget says stop, or the status endpoint
//     unreachable ([ErrUnreachable]): an Orphan.
//
// Each ask runs on its own work lease of b with ceiling [StatusLease]; a
// refused lease makes an orphan, since a run inside its reserve is landing
// and does no more work. Before asking again, [budget.Budget.NextDelay]
// decides the sleep with bo; when the sleep would outlast the budget,
// Reconcile sleeps instead until [FinalAsk] and the floor are left and asks
// a last time, and a call still running then (or when there is not even
// that much time) is an orphan, with Err wrapping [ErrStillRunning]. So is a call still running when ctx ends. An
// unreachable answer (any error of s) makes an orphan at once, without asking again: the
// budget is better spent on landing than on a tool that does not answer.
//
// hear, if not nil, hears each backoff decision between asks before it is
// acted on, the asks made so far with it, and returns what to call once
// the sleep has ended (nil: nothing): a run records the decision and stops
// its quiet clock for the sleep, which is a wait it chose, not silence
// (SPEC §3). A give-up is heard too; it has no sleep to end.
//
// Reconcile blocks until it resolves. ctx bounds it all; pass
// context.WithoutCancel(runCtx) to let it outlive a cancelled run, bounded
// by b alone. b must not be nil.
func Reconcile(ctx context.Context, b *budget.Budget, bo budget.Backoff, s StatusReader, key Key, hear func(asks int, d budget.Delay) (woke func())) Resolution {
	var r Resolution
	last := false // the last ask, clamped to the budget, is made
	for {
		if ctx.Err() != nil {
			return r.orphan(context.Cause(ctx))
		}
		lease, err := b.Lease(nil, StatusLease)
		if err != nil {
			return r.orphan(err)
		}
		actx, stop := lease.Context(ctx)
		st, err := s.Status(actx, key)
		stop()
		r.Asks++
		if err != nil {
			r.Orphan, r.Err = true, err
			return r
		}
		switch st.State {
		case Done, Failed, NeverReceived:
			r.State, r.Output = st.State, st.Output
			return r
		case Running:
			r.State, r.Output = st.State, st.Output
		default:
			// A reader that answered nothing usable (the zero Status)
			// has not said how the call went: its outcome stays unknown.
			r.Orphan, r.Err = true, fmt.Errorf("%w: status reader answered state %q", ErrUnreachable, truncate(string(st.State)))
			return r
		}
		// No headers: the status answer's Retry-After is not part of the
		// protocol, so there is none to be malformed and no error.
		d, _ := b.NextDelay(bo, r.Asks, nil)
		if d.GiveUp && !last {
			// The doubling sleep would outlast the budget, but a shorter
			// one need not: ask once more as late as still leaves
			// FinalAsk for the answer, so that a call settling in the
			// time left is not made an orphan for the backoff's sake.
			if sleep := b.Available() - b.Floor() - FinalAsk; sleep > 0 {
				d, last = budget.Delay{Sleep: sleep, Source: budget.FromJitter}, true
			}
		}
		var woke func()
		if hear != nil {
			woke = hear(r.Asks, d)
		}
		if d.GiveUp {
			return r.orphan(fmt.Errorf("the next ask, after %v, would outlast the budget (%s)", d.Sleep, d.Reason))
		}
		err = d.Wait(ctx)
		if woke != nil {
			woke()
		}
		if err != nil {
			return r.orphan(err)
		}
	}
}

// orphan ends r as an orphan because of err, which is wrapped with
// ErrStillRunning when the tool had said running.
func (r Resolution) orphan(err error) Resolution {
	r.Orphan = true
	r.Err = err
	if r.State == Running {
		r.Err = fmt.Errorf("%w after %d asks: %w", ErrStillRunning, r.Asks, err)
	}
	return r
}
