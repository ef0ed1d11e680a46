package durable

import (
	grun "github.com/glidepath/glidepath/internal/run"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	"go.temporal.io/sdk/workflow"
)

// land prepares the landing the run's machine asked for (the quiet clock
// stops, the ladder moves to land; a run its caller cancelled, the first
// Ctrl-C, lands on a context of its own) and tells the machine the
// landing's figures: it decides by landing.Plan, the rule the process
// applies too (issue 25).
func (r *run) land(root workflow.Context) grun.Command {
	r.quiet.stopped = true // landing is bounded by its lease, not by the quiet clock
	r.landCtx = root
	if root.Err() != nil {
		r.landCtx, _ = workflow.NewDisconnectedContext(root)
	}
	r.write(r.landCtx, r.frame.MoveTo(workflow.Now(r.landCtx), landing.Land))
	// The landing lease counts the server's timer resolution, as a work
	// lease does (landing.Frame.Armable).
	f := grun.Figures{Remaining: r.frame.Armable(workflow.Now(r.landCtx)), Reserve: r.frame.Reserve(), Floor: r.frame.Floor(), P50: r.model.P50(), Calls: r.settled()}
	if !r.cancelledAt.IsZero() {
		f.Cancelled, f.SinceCancel = true, workflow.Now(r.landCtx).Sub(r.cancelledAt)
	}
	e := grun.Event{Kind: grun.Landing, Figures: f}
	if r.quiet.fired {
		e.Stall = &r.quiet.stall // the boundary names the silent call
	}
	return r.m.Step(e)
}

// warned writes the quiet_warning record of a would-be stall of the
// run's quiet clock in warn mode: the run goes on (issue 27).
func (r *run) warned(ctx workflow.Context, st watchdog.StallError) {
	r.record(ctx, landing.Warning(st, r.step))
}

// noteCancel keeps the moment the run's caller cancelled it (root ended:
// the first Ctrl-C, or SignalLand), from which its landing counts R (SPEC
// §3), as a Session keeps it; it returns when watch ends, with the run.
func (r *run) noteCancel(root workflow.Context) func(watch workflow.Context) {
	return func(watch workflow.Context) {
		noted := func(workflow.ReceiveChannel, bool) {
			if root.Err() != nil { // watch ends with root too: either may be taken first
				r.cancelledAt = workflow.Now(watch)
			}
		}
		workflow.NewSelector(watch).AddReceive(root.Done(), noted).AddReceive(watch.Done(), noted).Select(watch)
	}
}

// landingCall sends the landing call as plan says: one model attempt with
// no tools, on a landing lease that may spend the reserve. A failed one
// is named by its attempt's error, as in process.
func (r *run) landingCall(plan landing.LandCommand) grun.Command {
	msgs := append(r.withNote(plan.Note), Message{Role: "user", Content: plan.Prompt})
	reply, why := r.modelAttempt(r.landCtx, 0, 1, plan.Lease, ModelRequest{Toolset: r.in.Toolset, Messages: msgs, Landing: true})
	return r.m.Step(grun.Event{Kind: grun.LandingEnded, Failed: reply.Outcome != trace.OK, Why: why,
		Reply: grun.Reply{Content: reply.Content}})
}

// done makes the run's result once its machine has it: the landing
// record, the cancels' grace (before the result, which a cancel accepted
// in its grace changes, as in process), and the result with what every
// result carries (its budget in workflow time).
func (r *run) done(ctx workflow.Context, cmd grun.Command) landing.Result {
	if r.landCtx != nil {
		ctx = r.landCtx
	}
	if cmd.Record != nil {
		r.record(ctx, *cmd.Record)
	}
	r.quiet.stopped = true
	r.settleCancels(ctx)
	spent, remaining, _ := r.clock(ctx)
	return landing.Finish(r.m.Result(r.settled()), landing.Totals{RunID: r.frame.RunID(), Steps: r.m.Steps(), Attempts: r.attempts,
		Unavailable: r.unavailable, Budget: landing.Report(r.frame.Total(), r.frame.Reserve(), spent, remaining)})
}

// over names why the run's work is over before its budget is:
// cancelled (root ended: the first Ctrl-C, or SignalLand) or stalled (the
// quiet clock fired); "" while it goes on.
func (r *run) over(root workflow.Context) landing.Cause {
	switch {
	case root.Err() != nil:
		return landing.CauseCancelled
	case r.quiet.fired:
		return landing.CauseQuiet
	}
	return ""
}

// stopped says, for the model, what stopped the run's work, in the words
// a call it cut is told in process (tools.Stopped).
func (r *run) stopped() string { return tools.Stopped(r.quiet.fired) }
