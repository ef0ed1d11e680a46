package durable

import (
	"errors"

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
// run lands on it. Between two turns the run may continue as new instead
// (carry.go): run then returns the error that does.
func (r *run) run(root, ctx workflow.Context) (landing.Result, error) {
	var cmd grun.Command
	if r.in.Carry != nil { // continued as new between two turns (carry.go): its setup was made
		cmd = r.m.Step(grun.Event{Kind: grun.CallsEnded, Figures: r.loopFigures(root, ctx)})
	} else {
		r.m = grun.New(r.rules())
		cmd = r.m.Step(r.setup(root, ctx))
		r.conv = r.prompts()
	}
	for {
		switch cmd.Kind {
		case grun.MakeTurn:
			if err := r.continueAsNew(root, ctx); err != nil {
				return landing.Result{}, err
			}
			r.step = cmd.Step // the step the records of this turn and its calls name
			done, reply := r.turn(ctx, cmd.Parallel)
			if done.OK && (reply.Content != "" || len(reply.ToolCalls) > 0) {
				r.conv = append(r.conv, reply.Message()) // with the output items a Responses reply came in, to carry
			}
			r.calling = reply.ToolCalls
			cmd = r.m.Step(grun.Event{Kind: grun.TurnEnded, Figures: grun.Figures{Ended: r.over(root)}, Turn: done,
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
			return r.done(ctx, cmd), nil
		}
	}
}

// loopFigures are the run's figures before a turn: why its work ended, and
// the ladder's phase, moved to now while the work goes on.
func (r *run) loopFigures(root, ctx workflow.Context) grun.Figures {
	ended := r.over(root)
	if ended == "" {
		r.advance(ctx)
	}
	return grun.Figures{Ended: ended, Phase: r.frame.Phase()}
}

// setup lists the worker's tools: the run's setup step, on its budget
// (SPEC §3), by the setup rules harness run's Setup applies (landing's
// SetupLease, SetupRefused, SetupEnd, SetupAgain; issue 25). It returns
// the event the run's machine is told: Begun, or Stopped with the cause,
// the failure, and the piece of setup that did not finish, in words.
func (r *run) setup(root, ctx workflow.Context) grun.Event {
	// Setup is not silence: the quiet clock starts when the loop does, as
	// a Session's does after its Setup.
	defer r.quiet.pause(ctx)()
	for n := 1; ; n++ {
		lease, err := r.frame.SetupLease(workflow.Now(ctx), 0, 0)
		if err != nil {
			rec, left := landing.SetupRefused("", n, err)
			r.record(ctx, rec)
			return r.setupStopped(root, landing.CauseBudget, left, "")
		}
		a := trace.Attempt{Step: landing.SetupStep, N: n, Lease: lease}
		r.attemptStarted(ctx, 0, a)
		var list ToolList
		err = workflow.ExecuteActivity(options(ctx, lease.Granted), ToolsActivity, r.in.Toolset).Get(ctx, &list)
		r.tools, r.unavailable, r.fingerprint = list.Tools, list.Unavailable, list.Fingerprint
		e := endOf(ctx, err, false)
		if e == answered && list.Fingerprint == "" {
			// Only a worker of a build before fingerprints says none: the
			// run's steps could not be checked against it (issue 26).
			e, err = failed, errOlderWorker
		}
		if e == answered {
			a.Outcome, a.Message = trace.OK, toolsetMessage(list.Fingerprint)
			r.attemptEnded(ctx, 0, a, nil)
			r.fetched(ctx, list.Fetches)
			return grun.Event{Kind: grun.Begun, Figures: r.loopFigures(root, ctx)}
		}
		a.Outcome, err = r.cause(e, err, lease.Capped)
		r.attemptEnded(ctx, 0, a, err)
		if landing.SetupAgain(e == workerDied, n, DefaultMaxAttempts) {
			continue
		}
		left, cause := landing.SetupEnd(setupWhat, a.Outcome, lease.Granted)
		failure := ""
		if cause == landing.CauseUpstream {
			failure = left + ": " + err.Error()
		}
		return r.setupStopped(root, cause, left, failure)
	}
}

// toolsetMessage is the message of the setup's attempt_end: the toolset
// the run was set up with, which each of its tool steps is checked
// against, for a trace reader to compare with the workers' (empty: a
// worker of a build before fingerprints).
func toolsetMessage(fp Fingerprint) string {
	if fp == "" {
		return ""
	}
	return "toolset " + fp.Label()
}

// setupStopped is the Stopped event of a setup that did not finish (left, in
// words), for cause, with its failure.
func (r *run) setupStopped(root workflow.Context, cause landing.Cause, left, failure string) grun.Event {
	return grun.Event{Kind: grun.Stopped, Cause: cause, Setup: []string{left}, Failure: failure, NoCall: true,
		Figures: grun.Figures{Ended: r.over(root)}}
}

// errOlderWorker fails a setup that a worker of an older build answered.
var errOlderWorker = errors.New("the worker that listed the tools is of an older build, which does not say its toolset; every worker of the task queue must run this build")

// setupWhat names the run's setup on Temporal, for the boundary.
const setupWhat = "listing the worker's tools"

// fetched records the worker's fetches of its tool servers' manifests as
// this run's setup attempts, as a run in process records the fetches of
// its setup (issue 25).
func (r *run) fetched(ctx workflow.Context, fetches []Fetch) {
	for _, f := range fetches {
		a := trace.Attempt{Step: landing.SetupStep, N: 1, Message: f.What}
		r.attemptStarted(ctx, 0, a)
		a.Outcome = f.Outcome
		if f.Err != "" {
			a.Err = errors.New(f.Err)
		}
		r.record(ctx, trace.AttemptRecord(trace.AttemptEnd, 0, a))
	}
}
