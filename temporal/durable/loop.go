package durable

import (
	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	grun "github.com/glidepath/glidepath/internal/run"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/trace"
	"go.temporal.io/sdk/workflow"
)

// run drives the run's machine (internal/run, issue 25): setup, then the
// model turns and the tool calls it asks for, until the model answers or
// it lands the run; this performs each command with activities. Work
// happens on ctx, which the quiet clock cancels when it fires; root is the
// workflow's own context, which only the run's cancellation ends, and the
// run lands on it.
func (r *run) run(root, ctx workflow.Context) landing.Result {
	r.m = grun.New(grun.Rules{Task: r.in.Task, Quiet: r.quiet.q, MaxSteps: r.in.MaxSteps, Parallel: r.in.Parallel > 1})
	var cmd grun.Command
	if stop, ok := r.setup(ctx); !ok {
		stop.Kind, stop.Figures.Ended, stop.NoCall = grun.Stopped, r.ended(root), true
		cmd = r.m.Step(stop)
	} else {
		r.conv = []Message{{Role: "system", Content: landing.System(r.in.Instructions)}, {Role: "user", Content: r.in.Task}}
		cmd = r.m.Step(grun.Event{Kind: grun.Begun, Figures: r.loopFigures(root, ctx)})
	}
	for {
		switch cmd.Kind {
		case grun.MakeTurn:
			r.step = cmd.Step // the step the records of this turn and its calls name
			done, reply := r.turn(ctx, cmd.Parallel)
			if done.OK && (reply.Content != "" || len(reply.ToolCalls) > 0) {
				r.conv = append(r.conv, Message{Role: "assistant", Content: reply.Content, ToolCalls: reply.ToolCalls})
			}
			r.calling = reply.ToolCalls
			cmd = r.m.Step(grun.Event{Kind: grun.TurnEnded, Figures: grun.Figures{Ended: r.ended(root)}, Turn: done,
				Reply: grun.Reply{Content: reply.Content, ToolCalls: len(reply.ToolCalls), FinishReason: reply.FinishReason}})
		case grun.MakeCalls:
			for i, content := range r.callAll(ctx, r.calling) {
				r.conv = append(r.conv, Message{Role: "tool", Content: content, ToolCallID: r.calling[i].ID})
			}
			cmd = r.m.Step(grun.Event{Kind: grun.CallsEnded, Figures: r.loopFigures(root, ctx)})
		case grun.Land:
			cmd = r.land(root)
		case grun.MakeLandingCall:
			cmd = r.landingCall(cmd.Plan)
		case grun.Done:
			return r.done(ctx, cmd)
		}
	}
}

// loopFigures are the run's figures before a turn: why its work ended, and
// the ladder's phase, moved to now while the work goes on.
func (r *run) loopFigures(root, ctx workflow.Context) grun.Figures {
	ended := r.ended(root)
	if ended == "" {
		r.advance(ctx)
	}
	return grun.Figures{Ended: ended, Phase: r.frame.Phase()}
}

// setup lists the worker's tools: the run's setup step, on its budget
// (SPEC §3), by the setup rules harness run's Setup applies (landing's
// SetupLease, SetupRefused, SetupEnd, SetupAgain; issue 25). It reports
// whether the run may go on, and if not, why it lands, as the Stopped
// event the run's machine is told: its cause, the failure, and the piece
// of setup that did not finish, in words.
func (r *run) setup(ctx workflow.Context) (grun.Event, bool) {
	// Setup is not silence: the quiet clock starts when the loop does, as
	// a Session's does after its Setup.
	resume := r.quiet.pause(ctx)
	defer resume()
	for n := 1; ; n++ {
		lease, err := r.frame.SetupLease(workflow.Now(ctx), 0, 0)
		if err != nil {
			rec, left := landing.SetupRefused("", n, err)
			r.record(ctx, rec)
			return grun.Event{Cause: landing.CauseBudget, Setup: []string{left}}, false
		}
		start := trace.Record{Event: trace.AttemptStart, Step: landing.SetupStep, Attempt: n, ResendCount: n - 1,
			GrantedMs: lease.Granted.Milliseconds()}
		r.record(ctx, start)
		r.attempts++ // an attempt on the record is counted, as in process (issue 25)
		var list ToolList
		err = workflow.ExecuteActivity(options(ctx, lease.Granted), ToolsActivity, r.in.Toolset).Get(ctx, &list)
		r.tools, r.unavailable = list.Tools, list.Unavailable
		end := start
		end.Event, end.Outcome = trace.AttemptEnd, trace.OK
		if err == nil {
			r.record(ctx, end)
			r.fetched(ctx, list.Fetches)
			return grun.Event{}, true
		}
		cut, dead := timedOut(err)
		end.Outcome = trace.UpstreamError
		switch {
		case ctx.Err() != nil:
			end.Outcome, err = trace.Cancelled, harness.ErrInterrupted // the run says why: its caller's or its clock's
		case cut:
			end.Outcome, err = trace.GaveUp, budget.ErrLeaseExpired // its ceiling is SetupCeiling's
		}
		end.Message = attemptWords(end, err)
		r.record(ctx, end)
		if end.Outcome == trace.UpstreamError && landing.SetupAgain(dead, n, DefaultMaxAttempts) {
			continue
		}
		left, cause := landing.SetupEnd(setupWhat, end.Outcome, lease.Granted)
		stop := grun.Event{Cause: cause, Setup: []string{left}}
		if cause == landing.CauseUpstream {
			stop.Failure = left + ": " + err.Error()
		}
		return stop, false
	}
}

// setupWhat names the run's setup on Temporal, for the boundary.
const setupWhat = "listing the worker's tools"

// fetched records the worker's fetches of its tool servers' manifests as
// this run's setup attempts, as a run in process records
// the fetches of its setup (issue 25).
func (r *run) fetched(ctx workflow.Context, fetches []Fetch) {
	for _, f := range fetches {
		r.attempts++
		start := trace.Record{Event: trace.AttemptStart, Step: landing.SetupStep, Attempt: 1, Message: f.What}
		r.record(ctx, start)
		end := start
		end.Event, end.Outcome = trace.AttemptEnd, f.Outcome
		if f.Err != "" {
			end.Message = f.Err
		}
		r.record(ctx, end)
	}
}
