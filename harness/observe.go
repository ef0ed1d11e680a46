package harness

import (
	"context"
	"errors"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

// observer turns what the calls of step index report into trace records
// and watchdog events: the one place where model turns and tool calls,
// which report in one vocabulary, become the run's record. w is the
// watchdog that hears the signals: the run's, or the landing call's own.
// The calls of a model turn hear it as they are.
func (s *Session) observer(index int, w *watchdog.Watchdog) *trace.Observer {
	return s.observerFor(index, w, "")
}

// observerFor is [Session.observer] for the attempts of a tool call the
// model named callID ("": none): they are recorded with it.
func (s *Session) observerFor(index int, w *watchdog.Watchdog, callID string) *trace.Observer {
	return s.turnObserver(index, w, callID, nil)
}

// turnObserver is [Session.observerFor] that keeps in h how the model
// attempts of a step went unanswered.
//
// A loop's turn is heard by the observer in h, made again in place: the
// loop makes one turn at a time, and its turn's observer was an object of
// every idle run's own (issue 25 item 6).
func (s *Session) turnObserver(index int, w *watchdog.Watchdog, callID string, h *heard) *trace.Observer {
	var o *observer
	if h != nil {
		o = &h.obs
	} else {
		o = new(observer)
	}
	*o = observer{s: s, index: index, w: w, callID: callID, heard: h}
	o.obs.Listener = o
	return &o.obs
}

// heard is how the last model attempt of a turn of the harness's loop
// went unanswered until it was ended ([landing.Unanswered]): a Model of
// someone else's says only how the turn failed, so its observer keeps what
// the attempt's record says, for the turn's end as the run's machine takes
// it (loop.done). A [*model.Client]'s machine, and a Turn's, know it
// without.
type heard struct {
	unanswered string
	mute       bool
	obs        observer // the observer of the loop's turn in progress
}

// observer is what hears one turn or call of a run, as one object: the
// trace.Observer handed to the call is a field of it, whose Listener it
// is. A turn and each call then cost one allocation, where a closure per
// event cost fourteen (issue 25 item 6).
type observer struct {
	s      *Session
	index  int                // the step
	w      *watchdog.Watchdog // hears the signals
	callID string             // the model's id of the call, on its attempts' records; "" for a turn
	heard  *heard             // a loop's turn: keeps how its model attempts went unanswered; nil for others
	obs    trace.Observer
}

// repeatObserver hears a tool call that repeats the tool and arguments of
// a call of an earlier step: its issue and its result are not semantic
// events (SPEC §3), and the Session hears a result that is news
// (Session.call). A type of its own rather than a flag of observer's,
// which a loop holds in place and is kept small (issue 25 item 6).
type repeatObserver struct{ observer }

func (o *repeatObserver) Signal(sig trace.Signal) {
	switch sig.Event {
	case watchdog.ToolCall, watchdog.Begun: // activity, not progress: not held either (issue 27)
	case watchdog.ToolResult:
		o.w.End(sig.Key)
	default:
		o.observer.Signal(sig)
	}
}

func (o *observer) AttemptStart(a trace.Attempt) {
	if o.callID != "" {
		a.CallID = o.callID
	}
	s := o.s
	s.attempts.Add(1)
	s.record(trace.AttemptRecord(trace.AttemptStart, o.index, a))
}

func (o *observer) Context(ctx context.Context, a trace.Attempt) context.Context {
	return o.s.attemptContext(ctx, trace.AttemptRecord(trace.AttemptStart, o.index, a))
}

func (o *observer) AttemptEnd(a trace.Attempt) {
	if o.callID != "" {
		a.CallID = o.callID
	}
	o.s.record(trace.AttemptRecord(trace.AttemptEnd, o.index, a))
	if o.heard != nil && a.Step == model.Kind {
		unanswered, mute := landing.Unanswered(a)
		o.s.mu.Lock()
		o.heard.unanswered, o.heard.mute = unanswered, mute
		o.s.mu.Unlock()
	}
}

func (o *observer) Backoff(step, key string, after int, d budget.Delay, err error) {
	rec := trace.Record{Step: step, StepIndex: o.index, Attempt: after, Key: key}
	if re, ok := errors.AsType[*budget.RetryAfterError](err); ok {
		rec.RetryAfterInvalid = re.Value
	}
	o.backoff(step, key, rec, d)
}

func (o *observer) StatusBackoff(step, key string, asks int, d budget.Delay) {
	o.backoff(step, key, trace.Record{Step: step, StepIndex: o.index, Attempt: asks, Key: key, Reconciling: true}, d)
}

// backoff records the backoff d of the call step/key, and pauses the quiet
// clock, and a parent's for its sub-agent, while it sleeps, when
// [landing.Backoff] says the sleep is a wait the run chose: the rule the
// workflow pauses by too (issue 25). BackoffEnd resumes it.
func (o *observer) backoff(step, key string, rec trace.Record, d budget.Delay) {
	rec, waits := landing.Backoff(rec, d)
	o.s.record(rec)
	if waits {
		o.s.paused(o.w, step, key, o.s.pause(o.w))
	}
}

func (o *observer) Pause(step, key string) func() { return o.s.pause(o.w) }

func (o *observer) BackoffEnd(step, key string) { o.s.resumed(o.w, step, key) }

func (o *observer) Refused(step, key string, n int, err error) {
	rec := trace.RefusedRecord(step, o.index, n, key, o.callID, err)
	if errors.Is(err, landing.ErrGated) {
		rec.Reason = "gated"
	}
	o.s.record(rec)
}

func (o *observer) CancelSent(step, key string, lease budget.Lease) {
	o.s.record(trace.CancelSentRecord(step, o.index, key, lease.Granted))
}

func (o *observer) CancelSettled(step, key string, state trace.CancelState, err error) {
	if state == trace.CancelStateAccepted {
		o.s.cancelAccepted(key)
	}
	o.s.record(trace.CancelSettledRecord(step, o.index, key, state, err))
}

func (o *observer) Reconcile(step, key, state string, asks int, err error) {
	o.s.record(trace.ReconcileRecord(step, o.index, key, state, asks, err))
}

func (o *observer) Orphan(step, key string, err error) {
	o.s.orphans.Add(1)
	o.s.record(trace.OrphanRecord(step, o.index, key, tools.NotJournaled(err)))
}

func (o *observer) Signal(sig trace.Signal) {
	switch sig.Event {
	case watchdog.Progress:
		// The watchdog decides whether the units grew for this call;
		// only a heartbeat that is progress is on the record.
		if o.w.Progress(model.ClockKey(sig.Step, sig.Key), sig.Units) {
			o.s.record(trace.Record{Event: trace.Progress, Step: sig.Step, StepIndex: o.index, Key: sig.Key,
				Units: sig.Units, Total: sig.Total, Message: sig.Message})
		}
	case watchdog.ToolResult:
		o.w.Mark(watchdog.ToolResult)
		o.w.End(sig.Key)
	case watchdog.Begun:
		// A model call is held once its server's headers came, a tool
		// call at once; each for its allowance from its start.
		o.w.Begin(watchdog.Call{Key: sig.Key, Step: sig.Step, Index: o.index, Allowance: sig.Allowance, Source: sig.Source,
			AtHeaders: sig.Step == model.Kind})
	case watchdog.Headers:
		o.w.Headers(sig.Key)
	case watchdog.Token:
		o.w.Token(1)
	default:
		o.w.Mark(sig.Event)
	}
}

// pause stops w's quiet clock, and the parent's for this run's call when
// the run is a sub-agent's, and returns what starts them again.
func (s *Session) pause(w *watchdog.Watchdog) (resume func()) {
	own := w.Pause()
	if s.cfg.parent == nil || s.cfg.parent.pause == nil {
		return own
	}
	theirs := s.cfg.parent.pause()
	return func() { own(); theirs() }
}

// attemptContext is ctx as the sinks that keep a context for an attempt
// make it for rec, its attempt_start: a span, for a tool to pass on.
func (s *Session) attemptContext(ctx context.Context, rec trace.Record) context.Context {
	rec.RunID, rec.ParentRunID = s.id, s.cfg.ParentRunID
	// Through the Recorder, which recovers a sink's panic and switches it
	// off, rather than let a user's sink crash the run.
	return s.rec.AttemptContext(ctx, rec)
}

// warned writes the quiet_warning record of a would-be stall of the run's
// quiet clock in warn mode: the run goes on (issue 27).
func (s *Session) warned(st watchdog.StallError) {
	s.record(landing.Warning(st, s.steps()))
}
