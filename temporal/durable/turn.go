package durable

import (
	"cmp"
	"errors"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// turn makes one model turn. Its rules — each attempt's lease, the
// refusal, the retries, the backoff, and how a failed turn lands — are
// model.TurnMachine's, the very ones harness run follows (issue 25); this
// drives it with activities, one timer and the run's records. It returns
// the machine's TurnDone, for the run's machine, and the last attempt's
// reply; a turn the budget refused before any attempt has the zero reply.
// parallel is the run machine's word on the turn's parallel calls.
func (r *run) turn(ctx workflow.Context, parallel bool) (model.TurnCommand, ModelReply) {
	m := model.NewTurnMachine(model.TurnRules{MaxAttempts: r.in.MaxAttempts, Backoff: budget.Backoff{Rand: r.rng.Int64N}})
	var last ModelReply
	var base trace.Record
	cmd := m.Step(model.TurnEvent{Kind: model.TurnStarted, Figures: r.turnFigures(ctx)})
	for {
		if cmd.Heard != watchdog.None {
			r.heard(ctx, cmd.Heard)
		}
		switch cmd.Kind {
		case model.TurnAttempt:
			r.advance(ctx) // the note says the phase of now
			_, remaining, available := r.clock(ctx)
			base = trace.Record{Step: model.Kind, StepIndex: r.step, Attempt: cmd.N, ResendCount: cmd.N - 1}
			began := workflow.Now(ctx)
			last = r.modelAttempt(ctx, base, cmd.Lease.Granted, ModelRequest{
				Toolset:  r.in.Toolset,
				Messages: r.withNote(landing.NoteFor(r.frame.Phase(), remaining, available)),
				Tools:    len(r.tools) > 0,
				Parallel: parallel, // the run machine's, fixed for the turn as in process
			})
			last.Took = workflow.Now(ctx).Sub(began)
			base.RetryAfterInvalid = last.RetryAfterInvalid // for the backoff that may follow
			cmd = m.Step(model.TurnEvent{Kind: model.TurnAttemptEnded, Figures: r.turnFigures(ctx), Attempt: last.TurnAttempted})
		case model.TurnSleep:
			r.backoff(ctx, base, cmd.Delay) // a sleep the run's end cuts is told to the machine by its figures
			cmd = m.Step(model.TurnEvent{Kind: model.TurnSleepOver, Figures: r.turnFigures(ctx)})
		case model.TurnDone:
			return r.turnEnded(ctx, cmd, base, last)
		}
	}
}

// turnFigures reads the run's budget now, for the turn machine.
func (r *run) turnFigures(ctx workflow.Context) budget.Figures {
	_, remaining, _ := r.clock(ctx)
	return budget.Figures{Remaining: remaining, Reserve: r.frame.Reserve(), Floor: r.frame.Floor(), P50: r.model.P50(), Ended: ctx.Err() != nil}
}

// turnEnded records how the machine ended the turn, cmd, after the
// attempt of base whose reply was last; what the landing reads of it is
// the run's machine's to keep.
func (r *run) turnEnded(ctx workflow.Context, cmd model.TurnCommand, base trace.Record, last ModelReply) (model.TurnCommand, ModelReply) {
	if cmd.Refused != nil {
		r.record(ctx, trace.Record{Event: trace.Refused, Step: model.Kind, StepIndex: r.step, Attempt: cmd.N + 1,
			ResendCount: cmd.N, Reason: cmd.Refused.Rule.String(), Message: cmd.Refused.Error()})
	}
	if cmd.Delay.GiveUp {
		r.backoff(ctx, base, cmd.Delay) // records the give-up, sleeps nothing
	}
	if cmd.OK {
		r.model.Observe(cmd.Took)
	}
	return cmd, last
}

// modelAttempt schedules one model attempt on a lease of granted and
// records it; an attempt Temporal ended (a cancellation, a timeout, a
// dead worker) is given its outcome here.
func (r *run) modelAttempt(ctx workflow.Context, base trace.Record, granted time.Duration, req ModelRequest) ModelReply {
	start := base
	start.Event, start.GrantedMs = trace.AttemptStart, granted.Milliseconds()
	if req.Landing {
		start.StepIndex = 0 // the landing call is no step of the loop: its records have none, as in process
	}
	r.record(ctx, start)
	r.attempts++
	var reply ModelReply
	var cause error // what ended a failed attempt, for its record
	err := r.await(ctx, granted, ModelActivity, req, &reply)
	if err == nil && reply.Outcome != trace.OK && ctx.Err() != nil {
		err = temporal.NewCanceledError() // the run cut it: the run names the cut
	}
	if err != nil {
		seen := reply
		lease, dead := timedOut(err)
		switch {
		case temporal.IsCanceledError(err) && r.quiet.fired:
			reply.TurnAttempted = model.TurnAttempted{Outcome: trace.Quiet, Failure: "stopped: nothing happened for " + landing.Human(r.quiet.q)}
			cause = &r.quiet.stall
		case temporal.IsCanceledError(err):
			reply.TurnAttempted = model.TurnAttempted{Outcome: trace.Cancelled, Failure: "the run was cancelled"}
			cause = harness.ErrInterrupted
		case lease:
			reply.TurnAttempted = model.TurnAttempted{Outcome: trace.GaveUp, Failure: "the model sent no answer within its lease of " + landing.Human(granted)}
			cause = budget.ErrDeadline // a model lease has no ceiling of its own
		case dead:
			reply.TurnAttempted = model.TurnAttempted{Outcome: trace.UpstreamError, Retry: true, Failure: "the worker making the call stopped"}
			cause = errWorkerStopped
		default:
			reply.TurnAttempted = model.TurnAttempted{Outcome: trace.UpstreamError, Failure: err.Error()}
			cause = err
		}
		reply.Chunks, reply.Keepalives = seen.Chunks, seen.Keepalives // what the stream carried, for the boundary
	} else if reply.Outcome != trace.OK {
		cause = errors.New(cmp.Or(reply.Cause, reply.Failure))
	}
	end := start
	end.Event, end.Outcome, end.Status, end.Tokens = trace.AttemptEnd, reply.Outcome, reply.Status, reply.Tokens
	end.FinishReason, end.ResponseModel = reply.FinishReason, reply.ResponseModel
	if reply.Outcome != trace.OK {
		end.Message = attemptWords(end, cause)
	}
	r.record(ctx, end)
	return reply
}

// withNote is the conversation with the budget note last, never kept.
func (r *run) withNote(note string) []Message {
	msgs := make([]Message, 0, len(r.conv)+1)
	return append(append(msgs, r.conv...), Message{Role: "system", Content: note})
}
