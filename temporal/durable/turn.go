package durable

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
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
	m := model.NewTurnMachine(model.TurnRules{MaxAttempts: r.in.MaxAttempts, Backoff: budget.Backoff{Rand: r.rng.Int64N,
		Resolution: r.frame.Resolution()}, Silence: r.expected(&r.model, 0)})
	var last ModelReply
	var base trace.Record  // whose backoff follows an attempt
	without := r.leftOut() // the tools on offer are fixed for the turn, as in process
	cmd := m.Step(model.TurnEvent{Kind: model.TurnStarted, Figures: r.figures(ctx, r.model.P50())})
	// The worker signals the server's headers when they matter: the
	// turn's allowance holds the clock from them, or a warning would
	// name the turn and must say whether its server had answered.
	headers, turn := false, 0
	if cmd.Begin.Key != "" && !r.quiet.stopped {
		cmd.Begin.Index = r.step
		r.quiet.clock.Begin(cmd.Begin, workflow.Now(ctx))
		headers = r.quiet.clock.Holds(cmd.Begin) || r.in.QuietMode == watchdog.Warn
	}
	if headers {
		turn = r.step + 1 // the request of a turn that asks nothing is as before
	}
	defer r.quiet.clock.End(model.Kind)
	for {
		if cmd.Heard != watchdog.None {
			r.heard(ctx, cmd.Heard)
		}
		switch cmd.Kind {
		case model.TurnAttempt:
			r.advance(ctx) // the note says the phase of now
			_, remaining, available := r.clock(ctx)
			began := workflow.Now(ctx)
			last, _ = r.modelAttempt(ctx, r.step, cmd.N, cmd.Lease.Granted, ModelRequest{
				Toolset:  r.in.Toolset,
				Messages: r.withNote(r.m.Note(landing.NoteFor(r.frame.Phase(), remaining, available))),
				Tools:    len(r.tools) > 0,
				Without:  without,
				Parallel: parallel, // the run machine's, fixed for the turn as in process

				Fingerprint: r.fingerprint,
				Headers:     headers,
				Turn:        turn,
				Thoughts:    r.quiet.clock.Units(model.ClockKey(model.Kind, "")),
			})
			last.Took = workflow.Now(ctx).Sub(began)
			base = trace.Record{Step: model.Kind, StepIndex: r.step, Attempt: cmd.N, RetryAfterInvalid: last.RetryAfterInvalid}
			cmd = m.Step(model.TurnEvent{Kind: model.TurnAttemptEnded, Figures: r.figures(ctx, r.model.P50()), Attempt: last.TurnAttempted})
		case model.TurnSleep:
			r.backoff(ctx, base, cmd.Delay) // a sleep the run's end cuts is told to the machine by its figures
			cmd = m.Step(model.TurnEvent{Kind: model.TurnSleepOver, Figures: r.figures(ctx, r.model.P50())})
		case model.TurnDone:
			if cmd.Refused != nil {
				r.record(ctx, trace.RefusedRecord(model.Kind, r.step, cmd.N+1, "", "", cmd.Refused))
			}
			if cmd.Delay.GiveUp {
				r.backoff(ctx, base, cmd.Delay) // records the give-up, sleeps nothing
			}
			if cmd.OK {
				r.model.Observe(cmd.Took)
			}
			return cmd, last
		}
	}
}

// modelAttempt schedules attempt n of a model turn of step index (0: the
// landing call) on a lease of granted and records it; an attempt
// Temporal ended is read by model.Attempted, as the process reads its own
// (issue 25). It returns the reply and the attempt_end record's message.
func (r *run) modelAttempt(ctx workflow.Context, index, n int, granted time.Duration, req ModelRequest) (ModelReply, string) {
	a := trace.Attempt{Step: model.Kind, N: n, Lease: budget.Lease{Granted: granted}}
	r.attemptStarted(ctx, index, a)
	var reply ModelReply
	var err error
	switch h := workflow.GetInfo(ctx).GetCurrentHistorySize(); {
	case r.uncarried != nil && !req.Landing: // the run could not continue as new (carry.go)
		err = r.uncarried
	case !fitted(req.Messages): // sent, it would fail the workflow task at every retry
		err = fmt.Errorf("%w: what is left of the conversation passes the %s a durable run's request carries", errTooLarge, mib(MaxRequestBytes))
	case h > MaxHistoryBytes: // past Temporal's limit the server ends the run, unlabeled
		err = fmt.Errorf("%w: the run's history is %s, past the %s a durable run keeps under Temporal's limit", errTooLarge, mib(h), mib(MaxHistoryBytes))
	default:
		err = r.await(ctx, granted, ModelActivity, req, &reply)
	}
	if p := reply.Progress; p != nil {
		// Its signal may come after the reply, and a run that ends with
		// the reply would leave it off the record, where the process has
		// it; taken twice, it is progress once (watchdog.Grew).
		r.progress(ctx, Progress{Step: p.Step, Key: p.Key, Units: p.Units, Total: p.Total, Message: p.Message})
	}
	var cause error // what ended a failed attempt, for its record
	switch e := endOf(ctx, err, reply.Outcome.Ours()); {
	case e == failed:
		reply = ModelReply{}
		reply.TurnAttempted, _ = model.Attempted(err, time.Time{}) // the activity's own error, not tried again
		cause = err
	case e != answered:
		seen := reply
		if st := &r.quiet.stall; r.quiet.fired && seen.Headers && st.Call.Key == model.Kind {
			// The worker saw the headers the workflow was not told of (a
			// turn whose allowance holds nothing asks for no signal): the
			// call the stall names had been answered.
			st.Call.Headers = true
		}
		var o trace.Outcome
		o, cause = r.cause(e, err, false) // a model lease has no ceiling of its own
		reply = ModelReply{}
		reply.TurnAttempted, _ = model.Attempted(&trace.AttemptError{Step: model.Kind, Attempt: n, Outcome: o, Err: cause}, time.Time{})
		// What the stream carried, for the boundary and the record.
		reply.Chunks, reply.Keepalives, reply.ResponseModel, reply.Headers = seen.Chunks, seen.Keepalives, seen.ResponseModel, seen.Headers
	case reply.Outcome != trace.OK:
		cause = errors.New(cmp.Or(reply.Cause, reply.Failure))
	}
	a.Outcome, a.Status, a.Usage = reply.Outcome, reply.Status, reply.Usage
	a.Usage.Total = cmp.Or(a.Usage.Total, reply.Tokens) // a reply recorded before Usage carries its total alone
	a.Finish, a.Model, a.Chunks, a.Keepalives = reply.FinishReason, reply.ResponseModel, reply.Chunks, reply.Keepalives
	return reply, r.attemptEnded(ctx, index, a, cause)
}

// withNote is the conversation with the budget note last, never kept.
func (r *run) withNote(note string) []Message {
	msgs := make([]Message, 0, len(r.conv)+1)
	return append(append(msgs, r.conv...), Message{Role: "system", Content: note})
}

// attemptStarted records the start of a, an attempt of step index, and
// counts it: an attempt on the record is counted, as in process.
func (r *run) attemptStarted(ctx workflow.Context, index int, a trace.Attempt) {
	r.record(ctx, trace.AttemptRecord(trace.AttemptStart, index, a))
	r.attempts++
}

// attemptEnded records the end of a, an attempt of step index, failed by
// cause (nil: it did not), as trace.AttemptError words it, and returns the
// record's message.
func (r *run) attemptEnded(ctx workflow.Context, index int, a trace.Attempt, cause error) string {
	if cause != nil {
		a.Err = &trace.AttemptError{Step: a.Step, Attempt: a.N, Outcome: a.Outcome, Status: a.Status, Err: cause}
	}
	rec := trace.AttemptRecord(trace.AttemptEnd, index, a)
	r.record(ctx, rec)
	return rec.Message
}

// leftOut is the names of the worker's tools a model turn does not offer:
// those tools.Usable leaves out by the run's estimates, each listed in
// the result's Unavailable, as a Session's step leaves them out (issue 25).
func (r *run) leftOut() []string {
	if len(r.tools) == 0 {
		return nil
	}
	specs := make([]tools.Spec, len(r.tools))
	for i, t := range r.tools {
		specs[i] = t.Spec
	}
	var out []string
	p50 := func(sp *tools.Spec) time.Duration {
		return r.estimate(cmp.Or(sp.Kind, tools.KindPrefix+sp.Name), *sp).P50()
	}
	tools.Usable(specs, p50, func(tool, why string) {
		out = append(out, tool)
		r.unavailable = landing.MarkUnavailable(r.unavailable, tool, why)
	})
	return out
}
