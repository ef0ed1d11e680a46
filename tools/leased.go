package tools

import (
	"context"

	"github.com/glidepath/glidepath/budget"
)

// AttemptOnLease makes one attempt of call with t on lease, away from a
// Registry's run (a Temporal activity makes each this way), and reads its
// answer as every host does: the attempt runs within lease's context
// ([RunAttempt]) and its answer is classified against it ([Classify]).
// call's Lease is set to lease; its Key, Args, N and Heard are the
// caller's. It blocks until the attempt ends, which is by lease's end
// whatever t does.
func AttemptOnLease(ctx context.Context, lease budget.Lease, t Tool, call *Call) AttemptEnd {
	actx, stop := lease.Context(ctx)
	defer stop()
	call.Lease = lease
	return Classify(actx, lease, RunAttempt(actx, t, call))
}
