package durable

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
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

// record stamps rec in workflow time ([landing.Frame.Stamp]) and keeps it
// after the phase record of any change of phase.
func (r *run) record(ctx workflow.Context, rec trace.Record) {
	st := r.frame.Stamp(workflow.Now(ctx), rec)
	r.write(st.Change)
	r.write(st.Record)
}

// write keeps rec and forwards it to the parent, unless it is empty.
func (r *run) write(rec trace.Record) {
	if rec.Event == "" {
		return
	}
	r.keep(rec)
	r.forward(rec)
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
func (r *run) advance(ctx workflow.Context) { r.write(r.frame.Advance(workflow.Now(ctx))) }

// advanceTo moves the phase on record to p, ahead of the clock.
func (r *run) advanceTo(ctx workflow.Context, p landing.Phase) {
	r.write(r.frame.MoveTo(workflow.Now(ctx), p))
}

// phases records each change of phase when it happens, on one timer at
// a time armed at the frame's next wake, until the run is in land.
func (r *run) phases(ctx workflow.Context) {
	for {
		at, ok := r.frame.NextWake()
		if !ok {
			return
		}
		if err := workflow.Sleep(ctx, at.Sub(workflow.Now(ctx))); err != nil {
			return
		}
		r.advance(ctx)
	}
}

// options are an attempt's activity options: ScheduleToClose is its
// lease, one attempt (the workflow is the one retry layer), and a
// heartbeat only to find a dead worker.
func options(ctx workflow.Context, lease time.Duration) workflow.Context {
	o := workflow.ActivityOptions{
		ScheduleToCloseTimeout: lease,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
	}
	if lease > 2*DeadWorker {
		o.HeartbeatTimeout = DeadWorker
	}
	return workflow.WithActivityOptions(ctx, o)
}

// timedOut reports whether err is a timeout of the attempt's lease, or of
// its heartbeat: a dead worker.
func timedOut(err error) (lease, dead bool) {
	var te *temporal.TimeoutError
	if !errors.As(err, &te) {
		return false, false
	}
	switch te.TimeoutType() {
	case enumspb.TIMEOUT_TYPE_HEARTBEAT:
		return false, true
	}
	return true, false
}

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
		resume := r.quiet.pause(ctx)
		defer resume()
		r.tellParent(ctx, pauseSignal)
		defer r.tellParent(ctx, resumeSignal)
	}
	return workflow.Sleep(ctx, d.Sleep) == nil
}
