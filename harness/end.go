package harness

import (
	"context"

	"github.com/glidepath/glidepath/budget"
)

// group is what a run waits for at its end: its tool calls and setup
// work, its sub-agent calls, the cancels it sent.
type group interface {
	Idle() bool
	Wait(ctx context.Context) error
}

// waitUntil waits for g's goroutines to return, until b's deadline. With
// none in flight, as most runs end, it returns at once and makes no
// context and no timer for the wait (issue 25 item 6: a completed run made
// three such waits and the cancels' grace, 34 objects and 2.5 KB, to
// wait for nothing).
func waitUntil(g group, b *budget.Budget) {
	if g.Idle() {
		return
	}
	ctx, stop := budget.WithBudget(context.Background(), b)
	defer stop()
	g.Wait(ctx)
}
