package cancel

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/internal/inflight"
)

// CancelLease is the default ceiling of the short landing lease a cancel
// request runs on: long enough for a healthy tool on any network to say
// 202, short enough that a dead one costs little of the landing.
const CancelLease = 2 * time.Second

// A Canceller stops a call by its key. [Endpoint] is one, for a remote
// tool's DELETE U/tools/{name}/calls/{key}; a tool of another kind brings
// its own. Cancel returns nil when the tool accepted, and must return when
// ctx ends.
type Canceller interface {
	Cancel(ctx context.Context, key Key) error
}

// A StatusReader reads the state of a call by its key, which is what
// [Reconcile] needs. [Endpoint] is one; a tool with no way to be asked
// cannot be reconciled, and a write of it whose outcome is unknown is an
// orphan. Status reports a call the tool never received as [NeverReceived],
// and must return when ctx ends.
type StatusReader interface {
	Status(ctx context.Context, key Key) (Status, error)
}

// Send asks c to cancel the call with key, on its own lease, and returns
// the answer: nil when the tool accepted, else the error of the cancel, or
// a [*budget.RefusedError] when the budget has no time left even for a
// cancel (then nothing is sent).
//
// The request runs under context.WithoutCancel(ctx), bounded by a landing
// lease of b with ceiling [CancelLease]: a cancel is sent because the call's
// context ended (its lease ran out, the quiet clock fired, the run was
// cancelled), so it must not inherit that end, only ctx's values; and it may
// spend the reserve, as other cleanup does. Send blocks for the cancel
// alone, at most the lease. It does not wait for the call to end: that is
// [Reconcile]'s job, a separate call that waits. A run that must not wait
// even for the cancel's answer sends it with a [Group].
func Send(ctx context.Context, b *budget.Budget, c Canceller, key Key) error {
	lease, err := cancelLease(b, key)
	if err != nil {
		return err
	}
	return send(context.WithoutCancel(ctx), lease, c, key)
}

func cancelLease(b *budget.Budget, key Key) (budget.Lease, error) {
	lease, err := b.LandingLease(nil, CancelLease)
	if err != nil {
		return lease, fmt.Errorf("cancel: no cancel sent for %s: %w", key, err)
	}
	return lease, nil
}

// send sends the cancel on lease over ctx, which is already free of the
// cancellation of the call's context: Send's is, and a Group's may still be
// cut.
func send(ctx context.Context, lease budget.Lease, c Canceller, key Key) error {
	lctx, stop := lease.Context(ctx)
	defer stop()
	return c.Cancel(lctx, key)
}

// ErrNotWaited is matched by the answer done hears of a cancel its
// [Group] cut ([Group.Cut]) before it was answered: it went out, and the
// run has stopped waiting to hear more. It matches [ErrNoAnswer] too, so
// that the call's cancel stays "sent" (SPEC §3: a cancel unanswered when
// the grace ends is recorded as sent, with no answer).
var ErrNotWaited = fmt.Errorf("%w: its run stopped waiting for the answer", ErrNoAnswer)

// A Group sends the cancels of one run without waiting for their answers,
// and lets the run wait for those still outstanding once it has landed,
// for a grace, and then cut them ([Group.Cut]): cancelling is not
// waiting, so a tool whose cancel endpoint hangs costs the landing
// nothing, and holds the result no longer than the grace the run gives it
// (SPEC §3). The zero Group is ready to use; a Group must not be
// copied after first use.
type Group struct {
	g inflight.Group

	mu   sync.Mutex                         // guards the fields below
	next uint64                             // the id of the next cancel sent
	cuts map[uint64]context.CancelCauseFunc // the cancels in flight, and how to cut each; nil before the first
}

// Go sends the cancel of key as [Send] does, on a goroutine of its own, and
// returns at once with the lease it runs on; done, if not nil, is called
// with the answer when it comes (nil: accepted), from that goroutine. When
// the budget has no time left even for a cancel, nothing is sent, done is
// not called, and Go returns the [*budget.RefusedError].
//
// The goroutine ends when the cancel is answered or its lease ends, which
// is never after b's deadline, provided c returns when its context ends.
func (g *Group) Go(ctx context.Context, b *budget.Budget, c Canceller, key Key, done func(error)) (budget.Lease, error) {
	lease, err := cancelLease(b, key)
	if err != nil {
		return lease, err
	}
	g.GoOn(ctx, lease, c, key, done)
	return lease, nil
}

// GoOn sends the cancel of key as [Group.Go] does, on lease, a landing
// lease its caller was granted (a call machine's, tools.CallCommand's
// CancelLease), rather than one it takes of a budget: the rule of the
// lease is then the caller's, and nothing leases it twice (issue 25).
func (g *Group) GoOn(ctx context.Context, lease budget.Lease, c Canceller, key Key, done func(error)) {
	cctx, cut := context.WithCancelCause(context.WithoutCancel(ctx))
	g.mu.Lock()
	if g.cuts == nil {
		g.cuts = make(map[uint64]context.CancelCauseFunc)
	}
	id := g.next
	g.next++
	g.cuts[id] = cut
	g.mu.Unlock()
	g.g.Go(func() {
		defer func() {
			g.mu.Lock()
			delete(g.cuts, id)
			g.mu.Unlock()
			cut(nil)
		}()
		err := send(cctx, lease, c, key)
		if err != nil && errors.Is(context.Cause(cctx), ErrNotWaited) {
			err = context.Cause(cctx) // what the cut left the tool to say is not its answer
		}
		if done != nil {
			done(err)
		}
	})
}

// Cut stops the cancels still in flight: their requests' contexts end,
// with a cause matching [ErrNotWaited] and wrapping cause, which is what
// their done hears (provided the [Canceller] returns when its context
// ends, as it must). It returns at once; [Group.Wait] then waits for
// their goroutines to return. A run cuts its cancels once its result
// exists and their grace is over (SPEC §3: cancels never hold the
// answer); cancels sent after Cut are not cut by it.
func (g *Group) Cut(cause error) {
	err := ErrNotWaited
	if cause != nil {
		err = fmt.Errorf("%w (%w)", ErrNotWaited, cause)
	}
	g.mu.Lock()
	cuts := make([]context.CancelCauseFunc, 0, len(g.cuts))
	for _, cut := range g.cuts {
		cuts = append(cuts, cut)
	}
	g.mu.Unlock()
	for _, cut := range cuts {
		cut(err)
	}
}

// Idle reports whether no cancel sent with [Group.Go] is in flight now:
// then there is nothing to wait for or to cut.
func (g *Group) Idle() bool { return g.g.Idle() }

// Wait blocks until every cancel sent with [Group.Go] has been answered, or
// ctx ends; then it returns context.Cause(ctx). Bound ctx by the run's
// deadline: a call whose cancel is still unanswered then is left as it is.
func (g *Group) Wait(ctx context.Context) error { return g.g.Wait(ctx) }
