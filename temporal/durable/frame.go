package durable

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/internal/redact"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/trace"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// clock reads the budget at workflow time now ([landing.Frame.Clock]):
// spent, remaining and available.
func (r *run) clock(ctx workflow.Context) (spent, remaining, available time.Duration) {
	return r.frame.Clock(workflow.Now(ctx))
}

// figures are the budget's figures now for a turn's or a call's machine,
// p50 being its kind's, counting the server's timer resolution
// ([landing.Frame.Figures]).
func (r *run) figures(ctx workflow.Context, p50 time.Duration) budget.Figures {
	return r.frame.Figures(workflow.Now(ctx), p50, ctx.Err() != nil)
}

// record stamps rec in workflow time ([landing.Frame.Stamp]) and keeps it
// after the phase record of any change of phase.
func (r *run) record(ctx workflow.Context, rec trace.Record) {
	st := r.frame.Stamp(workflow.Now(ctx), rec)
	r.write(ctx, st.Change)
	r.write(ctx, st.Record)
}

// write keeps rec and forwards it to the parent, unless it is empty; a
// phase record also sets the run's phase attribute (search.go).
func (r *run) write(ctx workflow.Context, rec trace.Record) {
	if rec.Event == "" {
		return
	}
	r.keep(rec)
	r.forward(rec)
	if rec.Event == trace.PhaseChange {
		r.searchPhase(ctx, rec.To)
	}
}

// keep adds rec to the trace while it stays under MaxRecords and
// MaxTraceBytes, and counts it dropped past either; a landing and a
// run_end are always kept, since they say how the run ended.
func (r *run) keep(rec trace.Record) {
	size := encodedSize(rec)
	last := rec.Event == trace.Landing || rec.Event == trace.RunEnd
	if !last && (len(r.records) >= MaxRecords || r.traceBytes+size > MaxTraceBytes) {
		r.dropped++
		return
	}
	r.traceBytes += size
	r.records = append(r.records, rec)
}

// encodedSize is rec's size as the workflow's result carries it.
func encodedSize(rec trace.Record) int {
	b, err := json.Marshal(rec)
	if err != nil { // a Record is plain data: this is a bug
		panic(err)
	}
	return len(b) + 1
}

// advance moves the phase on record to the clock's.
func (r *run) advance(ctx workflow.Context) { r.write(ctx, r.frame.Advance(workflow.Now(ctx))) }

// phases records each change of phase when it happens, on one timer at
// a time armed at the frame's next wake, until the run is in land.
func (r *run) phases(ctx workflow.Context) {
	for at, ok := r.frame.NextWake(); ok; at, ok = r.frame.NextWake() {
		if workflow.Sleep(ctx, at.Sub(workflow.Now(ctx))) != nil {
			return
		}
		r.advance(ctx)
	}
}

// options are an attempt's activity options: ScheduleToClose is its
// lease, one attempt (the workflow is the one retry layer), and a
// heartbeat only to find a dead worker.
func options(ctx workflow.Context, lease time.Duration) workflow.Context {
	o := workflow.ActivityOptions{ScheduleToCloseTimeout: lease, RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}}
	if lease > 2*DeadWorker {
		o.HeartbeatTimeout = DeadWorker
	}
	return workflow.WithActivityOptions(ctx, o)
}

// An end is how an attempt's activity ended, a fact with no words: the
// core's functions name it (model.Attempted, tools.Describe,
// landing.SetupEnd) by the cause [run.cause] gives it, as they name the
// end of an attempt's context in process (issue 25).
type end uint8

const (
	answered   end = iota // it answered, and did not say its work was cut
	leaseEnded            // its lease ran out: its ScheduleToClose, or the worker's own cut
	runEnded              // the run's work ended: its quiet clock, its cancellation
	workerDied            // its heartbeat timed out: the worker making it died
	failed                // it failed with an error of its own
)

// endOf reads how an attempt's activity, made on the run's work context
// ctx, ended with err; cut reports that its answer says its work was cut.
func endOf(ctx workflow.Context, err error, cut bool) end {
	var te *temporal.TimeoutError
	timeout := errors.As(err, &te)
	switch {
	case err == nil && !cut:
		return answered
	case timeout && te.TimeoutType() == enumspb.TIMEOUT_TYPE_HEARTBEAT:
		return workerDied
	case ctx.Err() != nil && (err == nil || timeout || temporal.IsCanceledError(err)):
		return runEnded // even if its lease ran out while its answer was waited for
	case err == nil || timeout:
		return leaseEnded
	case temporal.IsCanceledError(err):
		return runEnded
	}
	return failed
}

// cause is the outcome and the cause of an attempt that ended as e, with
// err: its lease's end (capped: by its ceiling), what stopped the run, a
// dead worker, or err itself, redacted.
func (r *run) cause(e end, err error, capped bool) (trace.Outcome, error) {
	switch e {
	case leaseEnded:
		if capped {
			return trace.GaveUp, budget.ErrLeaseExpired
		}
		return trace.GaveUp, budget.ErrDeadline
	case runEnded:
		return r.stopCause()
	case workerDied:
		return trace.UpstreamError, errWorkerStopped
	}
	return trace.UpstreamError, errors.New(redact.Secrets(err.Error()))
}

// stopCause is the outcome of an attempt the run's end cut, and what
// ended the run's work: its quiet clock, or its cancellation.
func (r *run) stopCause() (trace.Outcome, error) {
	if r.quiet.fired {
		return trace.Quiet, &r.quiet.stall
	}
	return trace.Cancelled, harness.ErrInterrupted
}

// errWorkerStopped cut an attempt whose worker died: Temporal's own.
var errWorkerStopped = errors.New("durable: the worker making the call stopped")

// mintKey mints a logical call's idempotency key in a SideEffect, so that
// every attempt, on any worker and after any crash, sends the same key.
func mintKey(ctx workflow.Context) cancel.Key {
	var key cancel.Key
	if err := workflow.SideEffect(ctx, func(workflow.Context) any { return cancel.NewKey() }).Get(&key); err != nil {
		panic(err) // a string SideEffect always decodes
	}
	return key
}

// backoff records d, on rec, and sleeps it unless it gives up; it
// reports whether to go on. The quiet clocks, this run's and its
// parent's, pause when [landing.Backoff] says so.
func (r *run) backoff(ctx workflow.Context, rec trace.Record, d budget.Delay) bool {
	rec, waits := landing.Backoff(rec, d)
	r.record(ctx, rec)
	if d.GiveUp {
		return false
	}
	if waits {
		defer r.quiet.pause(ctx)()
		r.tellParent(ctx, pauseSignal)
		defer r.tellParent(ctx, resumeSignal)
	}
	return workflow.Sleep(ctx, d.Sleep) == nil
}
