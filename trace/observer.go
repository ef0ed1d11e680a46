package trace

import (
	"context"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cost"
	"github.com/glidepath/glidepath/watchdog"
)

// Attempt is one physical request of a run, as the model client and the
// tools report it alike: a model attempt, the landing call, one POST of a
// remote tool, one run of a subprocess, one call of a local function, a
// setup step.
type Attempt struct {
	Step       string       // the step kind: "model", "tool:NAME", "agent:NAME", "setup"
	Key        string       // the logical call's idempotency key; "" for a model attempt
	N          int          // 1-based; resend_count is N−1
	Lease      budget.Lease // its Granted is the Budget-Remaining-Ms sent
	Start, End time.Time    // End is set at the end
	Outcome    Outcome      // set at the end
	Status     int          // the HTTP status of an error answer, if any
	Err        error        // the failure, nil when OK
	Keepalives int64        // SSE comments (pings) seen during the attempt
	Chunks     int64        // streamed data chunks seen (model)
	Usage      Usage        // tokens the answer reported (model)
	Finish     string       // why the model stopped, as it said ("stop", "length", …) (model)
	Model      string       // the model the server says answered (model)
	Message    string       // what a setup step did, e.g. "manifest of http://…"
	CallID     string       // the model's id of the tool call the attempt answers, if any
}

// Usage is what an attempt's answer said it cost in tokens; zero when it
// said nothing. Cached is a part of Input, the input tokens read from the
// provider's cache (prompt_tokens_details.cached_tokens,
// input_tokens_details.cached_tokens), and Reasoning a part of Output
// (completion_tokens_details.reasoning_tokens,
// output_tokens_details.reasoning_tokens), as the providers report them
// and [cost.Usage] prices them (issue 28).
type Usage struct {
	Input, Output, Total int64
	Cached, Reasoning    int64
}

// Cost is u as package cost prices it: its input, cached, output and
// reasoning tokens. Total is not priced: it is the sum of the others.
func (u Usage) Cost() cost.Usage {
	return cost.Usage{Input: u.Input, Cached: u.Cached, Output: u.Output, Reasoning: u.Reasoning}
}

// Signal is something a call did that the run's watchdog hears: a
// semantic event (a tool call issued, a result returned, a model message
// completed, a progress heartbeat) or a sign of mere activity (a
// keepalive, a streamed token). Event names it in the watchdog's words.
//
// A progress heartbeat is reported as it was heard, Event
// [watchdog.Progress] with its Units, whether or not they grew: whether it
// is progress is the watchdog's to decide ([watchdog.Watchdog.Progress]),
// for the call's Key, in one place.
type Signal struct {
	Event   watchdog.Event
	Step    string // the step kind of the call
	Key     string // the call's idempotency key; "" for a model call
	Units   int64  // progress: work units done so far
	Total   int64  // progress: work units in all, if known
	Message string // progress: what the tool said it is doing

	// Allowance and Source are, for a call begun ([watchdog.Begun]), its
	// allowance of silence on the quiet clock and where it came from
	// ([watchdog.Call], issue 27).
	Allowance time.Duration
	Source    watchdog.Source
}

// CancelState is how a cancel the run sent ended, as a cancel_sent record
// writes it (SPEC §6).
type CancelState string

const (
	CancelStateSent     CancelState = "sent"     // it went out; for a tool that answers nothing more (MCP), that is all
	CancelStateAccepted CancelState = "accepted" // the tool accepted it
	CancelStateUnknown  CancelState = "unknown"  // the tool does not know the call (404)
	CancelStateFailed   CancelState = "failed"   // no usable answer: an error, or its lease ended
)

// An Observer hears what one run's calls do, in one vocabulary for model
// turns and tool calls alike: attempts, backoff decisions, refusals,
// cancels, reconciliations, orphans and signals. The run turns them into
// trace records and watchdog events. Every field may be nil, and so may
// the Observer: a zero or nil Observer hears nothing, and its OnContext
// gives back the context it was handed. An Observer whose Listener is set
// hears through it alone; its func fields are not called.
//
// Callbacks run on the goroutine that made the call, except Signal's, which
// may also run on the goroutine reading a stream or of a local tool
// reporting progress, and CancelSettled's, which runs on the goroutine that
// waited for the cancel's answer. They must be quick and must not call back
// into what called them.
type Observer struct {
	// Listener, if set, hears every event, as one value's methods named
	// as the fields below are: what a run makes once per turn and call,
	// where the fields are a closure per event (issue 25: thirteen of
	// them for each turn and call of a run).
	Listener Listener

	AttemptStart func(Attempt)
	AttemptEnd   func(Attempt)

	// Context, if set, is called right after AttemptStart by a caller
	// that has the attempt's context, and returns the context the attempt
	// runs on: the run's span for it, for a tool to pass on as traceparent.
	Context func(ctx context.Context, a Attempt) context.Context

	// Backoff is called before each retry with the decision taken: a
	// sleep, or giving up because the sleep would outlast the budget. err
	// is the server's Retry-After that could not be read, if any; the
	// sleep is then the jittered one.
	Backoff func(step, key string, after int, d budget.Delay, err error)

	// BackoffEnd is called when the sleep a Backoff or StatusBackoff
	// decided has ended, slept out or cut by the run's end; never after a
	// give-up.
	BackoffEnd func(step, key string)

	// Pause is called when the call waits by a choice of its own that is
	// not silence (SPEC §3) — a sub-agent in a backoff sleep — and returns
	// what to call when the wait ends. The run stops its quiet clock until
	// then.
	Pause func(step, key string) (resume func())

	// StatusBackoff is called between two status asks of a write being
	// reconciled, after asks of them, with the decision taken: a sleep
	// before asking again, or giving up because the next ask would not fit.
	// It is not a retry: nothing is sent again.
	StatusBackoff func(step, key string, asks int, d budget.Delay)

	// Refused is called when the budget refused the lease of attempt n.
	Refused func(step, key string, n int, err error)

	// CancelSent is called when the cancel of a call cut short goes out,
	// on its own lease; CancelSettled when it is answered, with the state
	// it ended in and the error of a failed one.
	CancelSent    func(step, key string, lease budget.Lease)
	CancelSettled func(step, key string, state CancelState, err error)

	// Reconcile is called with what asking a write's status learned, in
	// asks requests: state is done, failed, never_received or running, or
	// unreachable when no ask was answered.
	Reconcile func(step, key, state string, asks int, err error)

	// Orphan is called once a write whose outcome is unknown is recorded;
	// err is non-nil when it could not be journaled.
	Orphan func(step, key string, err error)

	Signal func(Signal)
}

// A Listener hears what an [Observer] does, as one value: each method is
// the Observer's field of the same name, and is called where that field
// would be. It is for a host that hears many turns and calls, such as the
// harness's run; a caller that hears a few sets the fields it needs.
type Listener interface {
	AttemptStart(Attempt)
	AttemptEnd(Attempt)
	Context(ctx context.Context, a Attempt) context.Context
	Backoff(step, key string, after int, d budget.Delay, err error)
	BackoffEnd(step, key string)
	Pause(step, key string) (resume func())
	StatusBackoff(step, key string, asks int, d budget.Delay)
	Refused(step, key string, n int, err error)
	CancelSent(step, key string, lease budget.Lease)
	CancelSettled(step, key string, state CancelState, err error)
	Reconcile(step, key, state string, asks int, err error)
	Orphan(step, key string, err error)
	Signal(Signal)
}

// OnAttemptStart calls o.AttemptStart, or the Listener's AttemptStart when there is one.
func (o *Observer) OnAttemptStart(a Attempt) {
	switch {
	case o == nil:
	case o.Listener != nil:
		o.Listener.AttemptStart(a)
	case o.AttemptStart != nil:
		o.AttemptStart(a)
	}
}

// OnContext returns ctx as o.Context makes it for attempt a, or ctx itself
// when it is not set.
func (o *Observer) OnContext(ctx context.Context, a Attempt) context.Context {
	switch {
	case o == nil:
	case o.Listener != nil:
		return o.Listener.Context(ctx, a)
	case o.Context != nil:
		return o.Context(ctx, a)
	}
	return ctx
}

// OnAttemptEnd calls o.AttemptEnd, or the Listener's AttemptEnd when there is one.
func (o *Observer) OnAttemptEnd(a Attempt) {
	switch {
	case o == nil:
	case o.Listener != nil:
		o.Listener.AttemptEnd(a)
	case o.AttemptEnd != nil:
		o.AttemptEnd(a)
	}
}

// OnBackoff calls o.Backoff, or the Listener's Backoff when there is one.
func (o *Observer) OnBackoff(step, key string, after int, d budget.Delay, err error) {
	switch {
	case o == nil:
	case o.Listener != nil:
		o.Listener.Backoff(step, key, after, d, err)
	case o.Backoff != nil:
		o.Backoff(step, key, after, d, err)
	}
}

// OnPause calls o.Pause, if it is set, and returns its resume; without
// one, a resume that does nothing.
func (o *Observer) OnPause(step, key string) (resume func()) {
	var r func()
	switch {
	case o == nil:
	case o.Listener != nil:
		r = o.Listener.Pause(step, key)
	case o.Pause != nil:
		r = o.Pause(step, key)
	}
	if r == nil {
		return func() {}
	}
	return r
}

// OnStatusBackoff calls o.StatusBackoff, or the Listener's StatusBackoff when there is one.
func (o *Observer) OnStatusBackoff(step, key string, asks int, d budget.Delay) {
	switch {
	case o == nil:
	case o.Listener != nil:
		o.Listener.StatusBackoff(step, key, asks, d)
	case o.StatusBackoff != nil:
		o.StatusBackoff(step, key, asks, d)
	}
}

// OnBackoffEnd calls o.BackoffEnd, or the Listener's BackoffEnd when there is one.
func (o *Observer) OnBackoffEnd(step, key string) {
	switch {
	case o == nil:
	case o.Listener != nil:
		o.Listener.BackoffEnd(step, key)
	case o.BackoffEnd != nil:
		o.BackoffEnd(step, key)
	}
}

// OnRefused calls o.Refused, or the Listener's Refused when there is one.
func (o *Observer) OnRefused(step, key string, n int, err error) {
	switch {
	case o == nil:
	case o.Listener != nil:
		o.Listener.Refused(step, key, n, err)
	case o.Refused != nil:
		o.Refused(step, key, n, err)
	}
}

// OnCancelSent calls o.CancelSent, or the Listener's CancelSent when there is one.
func (o *Observer) OnCancelSent(step, key string, lease budget.Lease) {
	switch {
	case o == nil:
	case o.Listener != nil:
		o.Listener.CancelSent(step, key, lease)
	case o.CancelSent != nil:
		o.CancelSent(step, key, lease)
	}
}

// OnCancelSettled calls o.CancelSettled, or the Listener's CancelSettled when there is one.
func (o *Observer) OnCancelSettled(step, key string, state CancelState, err error) {
	switch {
	case o == nil:
	case o.Listener != nil:
		o.Listener.CancelSettled(step, key, state, err)
	case o.CancelSettled != nil:
		o.CancelSettled(step, key, state, err)
	}
}

// OnReconcile calls o.Reconcile, or the Listener's Reconcile when there is one.
func (o *Observer) OnReconcile(step, key, state string, asks int, err error) {
	switch {
	case o == nil:
	case o.Listener != nil:
		o.Listener.Reconcile(step, key, state, asks, err)
	case o.Reconcile != nil:
		o.Reconcile(step, key, state, asks, err)
	}
}

// OnOrphan calls o.Orphan, or the Listener's Orphan when there is one.
func (o *Observer) OnOrphan(step, key string, err error) {
	switch {
	case o == nil:
	case o.Listener != nil:
		o.Listener.Orphan(step, key, err)
	case o.Orphan != nil:
		o.Orphan(step, key, err)
	}
}

// OnSignal calls o.Signal, or the Listener's Signal when there is one.
func (o *Observer) OnSignal(s Signal) {
	switch {
	case o == nil:
	case o.Listener != nil:
		o.Listener.Signal(s)
	case o.Signal != nil:
		o.Signal(s)
	}
}
