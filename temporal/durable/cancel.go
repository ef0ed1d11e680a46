package durable

import "go.temporal.io/sdk/workflow"

// withCancel is [workflow.WithCancel] for a context that is one of
// several its parent cancels at once (the run's watch beside its work,
// sub-agents side by side). The SDK cancels a context's children in the
// order of a Go map (temporalio/sdk-go#1208; ordered only from v1.51,
// behind a flag, which the server this module tests on cannot build
// with), so that the cancels of two such contexts' timers and
// activities reach history in either order, and a worker replaying a
// run that landed on a signal failed with a nondeterminism error (1 run
// in 12 of TestARunIsListedByItsStatusPhaseAndDeadlineAndFoundByItsCause,
// its replay: "history event is ActivityTaskCancelRequested, replay
// command is CancelTimer"). The context made here is not its parent's
// child: a workflow goroutine, started now, cancels it once the parent
// is done, and workflow goroutines run in the order they were started.
func withCancel(parent workflow.Context) (workflow.Context, workflow.CancelFunc) {
	if parent.Done() == nil { // a parent that is never cancelled has no order to keep
		return workflow.WithCancel(parent)
	}
	d, _ := workflow.NewDisconnectedContext(parent)
	ctx, cancel := workflow.WithCancel(d)
	workflow.Go(parent, func(parent workflow.Context) {
		parent.Done().Receive(parent, nil)
		cancel()
	})
	return ctx, cancel
}
