package cancel

import (
	"context"
	"fmt"
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
	return send(ctx, lease, c, key)
}

func cancelLease(b *budget.Budget, key Key) (budget.Lease, error) {
	lease, err := b.LandingLease(nil, CancelLease)
	if err != nil {
		return lease, fmt.Errorf("cancel: no cancel sent for %s: %w", key, err)
	}
	return lease, nil
}

func send(ctx context.Context, lease budget.Lease, c Canceller, key Key) error {
	lctx, stop := lease.Context(context.WithoutCancel(ctx))
	defer stop()
	return c.Cancel(lctx, key)
}

// A Group sends the cancels of one run without waiting for their answers,
// and lets the run wait for those still outstanding once it has landed:
// cancelling is not waiting, so a tool whose cancel endpoint hangs costs
// the landing nothing. The zero Group is ready to use; a Group must not be
// copied after first use.
type Group struct {
	g inflight.Group
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
	g.g.Go(func() {
		err := send(ctx, lease, c, key)
		if done != nil {
			done(err)
		}
	})
	return lease, nil
}

// Wait blocks until every cancel sent with [Group.Go] has been answered, or
// ctx ends; then it returns context.Cause(ctx). Bound ctx by the run's
// deadline: a call whose cancel is still unanswered then is left as it is.
func (g *Group) Wait(ctx context.Context) error { return g.g.Wait(ctx) }
