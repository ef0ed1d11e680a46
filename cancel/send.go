package cancel

import (
	"context"
	"fmt"
	"time"

	"github.com/glidepath/glidepath/budget"
)

// CancelLease is the default ceiling of the short landing lease a cancel
// request runs on: long enough for a healthy tool on any network to say
// 202, short enough that a dead one costs little of the landing.
const CancelLease = 2 * time.Second

// Send asks the tool to cancel the call with key, on its own lease, and
// returns the answer: nil when the tool accepted, else the error of
// [Endpoint.Cancel], or a [*budget.RefusedError] when the budget has no time
// left even for a cancel (then nothing is sent).
//
// The request runs under context.WithoutCancel(ctx), bounded by a landing
// lease of b with ceiling [CancelLease]: a cancel is sent because the call's
// context ended (its lease ran out, the quiet clock fired, the run was
// cancelled), so it must not inherit that end, only ctx's values; and it may
// spend the reserve, as other cleanup does. Send blocks for the DELETE
// alone, at most the lease. It does not wait for the call to end: that is
// [Reconcile]'s job, a separate call that waits.
func Send(ctx context.Context, b *budget.Budget, e Endpoint, key Key) error {
	lease, err := b.LandingLease(nil, CancelLease)
	if err != nil {
		return fmt.Errorf("cancel: no cancel sent for %s: %w", key, err)
	}
	lctx, stop := lease.Context(context.WithoutCancel(ctx))
	defer stop()
	return e.Cancel(lctx, key)
}
