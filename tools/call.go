package tools

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

// A Run is what a call needs to know of the run it belongs to. Budget is
// required: a call with a nil Run or Budget starts nothing and returns a
// Result whose Cause is [ErrNoBudget]. Every other field may be left zero,
// and its zero value is documented with it.
type Run struct {
	// ID names the run in orphan journal entries.
	ID string

	// Budget leases every attempt and decides every backoff sleep.
	Budget *budget.Budget

	// Journal records orphans, each appended and fsync'd before the call
	// returns. Nil: an orphan is still reported, in the [Result] and to the
	// Observer, but recorded nowhere, so nothing can reconcile it later.
	Journal *cancel.Journal

	// Backoff is the sleep policy between attempts and between status asks;
	// the zero value uses budget's defaults.
	Backoff budget.Backoff

	// Observer hears what the calls do. Nil hears nothing.
	Observer *trace.Observer

	// Keep is what the run holds back from a sub-agent's slice to receive
	// and use its answer (SPEC §5b): its p95 for one model turn. Zero, or
	// less than twice the floor: twice the floor.
	Keep time.Duration

	// Cancels sends the cancels of calls cut short, without waiting for
	// their answers: the run that owns it waits for them once it has
	// landed (SPEC §5: cancelling is not waiting). Nil: each Call sends its
	// cancel itself and waits for the answer before it returns.
	Cancels *cancel.Group

	// MaxSilence caps every call's allowance of silence on the quiet
	// clock ([watchdog.Expected.Max]); zero: [watchdog.DefaultMaxSilence].
	MaxSilence time.Duration
}

// expected is what the allowance of a call of spec is computed from, now:
// what its kind knows ([budget.Kind.Expected]), the silence it states,
// the run's cap.
func (r *Run) expected(spec *Spec, k *budget.Kind) watchdog.Expected {
	x := k.Expected()
	x.Stated, x.Max = spec.Silence, r.MaxSilence
	return x
}

// Result is how a logical call ended. Err is written for the model; Cause
// is the same failure as a Go error for the harness.
type Result struct {
	Tool string
	Key  cancel.Key // minted before the first attempt; empty when no attempt could be made

	// Output is the tool's output: the whole of it when Err is empty and
	// CutShort is not set; what came before the cut when CutShort (a
	// subprocess stopped by its lease, or whose output passed MaxOutput).
	Output json.RawMessage

	// Err is the failure as the model should read it; empty on success.
	Err   string
	Cause error

	// Outcome is how the call ended: the last attempt's outcome, or OK for
	// a write whose status said done. A call refused before any attempt is
	// GaveUp; one whose arguments were rejected is Invalid.
	Outcome trace.Outcome

	Attempts int  // attempts started, reconciled resends included
	CutShort bool // reports whether Output is partial: the tool was stopped before it finished
	Refused  bool // reports whether the budget refused the call before any attempt

	// State is "" for a call that finished, else where it was left:
	// StateCancelled, StateAbandoned or StateOrphaned.
	State State

	// Cancelling reports whether the cancel of the call went out through
	// [Run.Cancels] and was not answered when Call returned: State says
	// abandoned until the tool accepts it, which the Observer hears
	// (CancelSettled) and which makes it cancelled.
	Cancelling bool
}

// Content is what the model should read for r: the output, or the error
// with any output that came before a cut. Output cut short is labeled so,
// and an error begins with "error: ", since a chat tool message has no other
// way to say the call failed.
func (r Result) Content() string {
	switch {
	case r.Err == "" && r.CutShort:
		return string(r.Output) + "\n[output cut short]"
	case r.Err == "":
		return string(r.Output)
	case hasOutput(r.Output):
		// The error is a sentence of its own, ended before the output
		// begins: a reader that joins lines must not read "it was
		// cancelled Output before the cut" (issue 18).
		return "error: " + sentence(r.Err) + "\nOutput before the cut: " + string(r.Output)
	}
	return "error: " + r.Err
}

// hasOutput reports whether out says anything: not empty, not the empty
// JSON string a silent subprocess leaves, not null.
func hasOutput(out json.RawMessage) bool {
	switch s := strings.TrimSpace(string(out)); s {
	case "", `""`, "null":
		return false
	}
	return true
}

// sentence ends s with a full stop unless it already ends a sentence.
func sentence(s string) string {
	if s == "" || strings.ContainsAny(s[len(s)-1:], ".!?") {
		return s
	}
	return s + "."
}

// refusedMessage is what the model reads for a call the budget refused.
const refusedMessage = "not started: not enough time"

// Call calls the tool name with the model's arguments, on leases of
// run.Budget, and returns how it ended; it never panics on bad input and
// reports every failure in the Result. ctx is the run's context: its end
// (the quiet clock, the wall, a cancellation) stops the call, and its cause
// names the outcome. Call blocks until the call has ended and any orphan
// has been journaled; the cancel of a call cut short goes out through
// [Run.Cancels] and is not waited for, unless Run.Cancels is nil.
func (r *Registry) Call(ctx context.Context, run *Run, name string, args json.RawMessage) Result {
	if run == nil || run.Budget == nil {
		// Nothing can be leased: no attempt starts (the zero Run is not
		// a run, and says so rather than panic).
		return Result{Tool: name, Outcome: trace.GaveUp, Err: "not started: the call has no budget", Cause: ErrNoBudget}
	}
	reg, ok := r.lookup(name)
	if !ok {
		return Unknown(name, r.names())
	}
	sent, err := reg.validate(args)
	if err != nil {
		return Result{Tool: name, Outcome: trace.Invalid, Err: err.Error(), Cause: err}
	}
	c := &call{reg: r, run: run, t: reg, key: cancel.NewKey(), args: sent, obs: run.Observer}
	if c.obs == nil {
		c.obs = &trace.Observer{}
	}
	return c.do(ctx)
}

// call is one logical call: one key, any number of attempts. It is the
// in-process host's [CallEffects]: attempts and asks on contexts of their
// leases, cancels through the run's group, records through the Observer.
type call struct {
	reg  *Registry
	run  *Run
	t    *registered
	key  cancel.Key
	args json.RawMessage // compacted, exactly as sent
	obs  *trace.Observer

	kind      *budget.Kind // the estimates of the tool's kind
	canceller cancel.Canceller
	status    cancel.StatusReader
	last      AttemptEnd    // the last attempt's
	took      time.Duration // how long it took
	sent      bool          // the last attempt's cancel went out through the run's group

	// answer is how the cancel of the call's last attempt was answered:
	// nil while that attempt sent none. Each cancel has its own, stored
	// by its callback, which may run after the call returned, or after a
	// later attempt began: a late answer of an earlier attempt's cancel
	// speaks for that attempt only (issue 25). The tool message says what
	// it held when the message was written (issue 18).
	answer atomic.Pointer[cancelAnswer]
}

// A cancelAnswer is how one cancel was answered; its zero value: not yet.
type cancelAnswer struct {
	state atomic.Pointer[trace.CancelState]
}

// signal reports s for the call, filling in its step and key.
func (c *call) signal(s trace.Signal) {
	s.Step, s.Key = c.t.spec.Kind, string(c.key)
	c.obs.OnSignal(s)
}

// do drives c's [CallMachine] through [DriveCall] until the call ends. The
// rules, the loop and the words are package-level pure parts (issue 25);
// what is here is I/O and the Observer's records.
func (c *call) do(ctx context.Context) Result {
	spec := c.t.spec
	est := c.run.Budget.Estimates()
	c.kind = est.Kind(spec.Kind)
	if est != c.reg.est {
		c.kind.Declare(spec.P50, spec.P95)
	}
	var canCancel, canStatus bool
	c.canceller, canCancel = c.t.impl.(cancel.Canceller)
	c.status, canStatus = c.t.impl.(cancel.StatusReader)
	return DriveCall(ctx, c, CallRules{Kind: spec.Kind, Effect: spec.Effect, MaxAttempts: spec.MaxAttempts,
		Ceiling: spec.Ceiling, Slice: strings.HasPrefix(spec.Kind, AgentKindPrefix),
		CanCancel: canCancel && spec.Cancellable, // as Register resolved it: the type's, unless turned off
		CanStatus: canStatus, Backoff: c.run.Backoff, Silence: c.run.expected(&spec, c.kind)}, spec.Name, c.key)
}

func (c *call) Figures(ctx context.Context) budget.Figures {
	b := c.run.Budget
	_, remaining := b.Read()
	return budget.Figures{Remaining: remaining, Reserve: b.Reserve(), Floor: b.Floor(), P50: c.kind.P50(),
		Keep: c.run.Keep, Ended: ctx.Err() != nil}
}

// Attempt makes attempt n on lease, from now, and classifies how it
// ended.
func (c *call) Attempt(ctx context.Context, n int, lease budget.Lease) AttemptSaid {
	lease.Deadline = time.Now().Add(lease.Granted)
	c.answer.Store(nil) // the cancel sent so far, answered or not, was another attempt's
	c.sent = false
	actx, stop := lease.Context(ctx)
	defer stop()
	kind := c.t.spec.Kind
	tc := &Call{Key: c.key, Args: c.args, N: n, Lease: lease, Budget: c.run.Budget, c: c}
	info := trace.Attempt{Step: kind, Key: string(c.key), N: n, Lease: lease, Start: time.Now()}
	c.obs.OnAttemptStart(info)
	actx = c.obs.OnContext(actx, info)
	ans := RunAttempt(actx, c.t.tool, tc)
	tc.ended.Store(true)
	info.End = time.Now()
	e := Classify(actx, lease, ans)
	c.last, c.took = e, info.End.Sub(info.Start)
	info.Outcome = trace.OK
	if e.Err != nil {
		e.Err.Step, e.Err.Attempt = kind, n
		info.Outcome, info.Err = e.Err.Outcome, e.Err
	}
	info.Status, info.Keepalives = e.Answer.Status, tc.keepalives.Load()
	c.obs.OnAttemptEnd(info)
	return AttemptSaid{Attempted: e.Attempted(), Last: e.Err, Failure: e.Failure(c.t.spec), Output: e.Answer.Output,
		CutShort: e.Answer.CutShort}
}

// Backoff reports the sleep (or the give-up) of cmd, and sleeps it: the
// Observer's listener pauses the quiet clock until BackoffEnd.
func (c *call) Backoff(ctx context.Context, cmd CallCommand) {
	step, key := c.t.spec.Kind, string(c.key)
	if cmd.Reconciling {
		c.obs.OnStatusBackoff(step, key, cmd.BackoffN(), cmd.Delay)
	} else {
		c.obs.OnBackoff(step, key, cmd.BackoffN(), cmd.Delay, c.last.RetryAfterErr)
	}
	if cmd.Delay.GiveUp {
		return
	}
	cmd.Delay.Wait(ctx) // the run's end is read off ctx with the figures
	c.obs.OnBackoffEnd(step, key)
}

// Ask asks the tool's status of the call on lease, from now.
func (c *call) Ask(ctx context.Context, lease budget.Lease) (cancel.Status, error) {
	lease.Deadline = time.Now().Add(lease.Granted)
	actx, stop := lease.Context(ctx)
	defer stop()
	return c.status.Status(actx, c.key)
}

// Cancelled is how the last attempt's cancel stands now (issue 18): one
// sent through the run's group may have been answered since.
func (c *call) Cancelled() (bool, trace.CancelState) {
	if a := c.answer.Load(); a != nil {
		if st := a.state.Load(); st != nil {
			return c.sent, *st
		}
	}
	return c.sent, ""
}

func (c *call) Stopped(ctx context.Context) (trace.Outcome, error) {
	return trace.OutcomeOfContext(ctx, watchdog.ErrQuiet), context.Cause(ctx)
}

func (c *call) Refused(_ context.Context, n int, err *budget.RefusedError) {
	c.obs.OnRefused(c.t.spec.Kind, string(c.key), n, err)
}

func (c *call) Reconciled(_ context.Context, state string, asks int, why error) {
	c.obs.OnReconcile(c.t.spec.Kind, string(c.key), state, asks, why)
}

// Orphan journals the call as an orphan in the run's journal.
func (c *call) Orphan(_ context.Context, why error) (*OrphanError, string) {
	oe, unjournaled, err := orphan(c.run, c.t, c.key, c.args, why)
	c.obs.OnOrphan(c.t.spec.Kind, string(c.key), err)
	return oe, unjournaled
}

// Succeeded teaches the kind's estimates the last attempt's time.
func (c *call) Succeeded() { c.kind.Observe(c.took) }

func (c *call) Heard(_ context.Context, e watchdog.Event) { c.signal(trace.Signal{Event: e}) }

func (c *call) Begin(_ context.Context, call watchdog.Call) {
	c.signal(trace.Signal{Event: watchdog.Begun, Allowance: call.Allowance, Source: call.Source})
}

// Cancel sends the cancel of the call's cut attempt on lease, the
// machine's (issue 25): through the run's group, which does not wait for
// the answer (c.sent); or, with no group, on a group of its own whose
// answer the call waits for on the cancel's lease. The Observer hears it
// go out and settle.
func (c *call) Cancel(ctx context.Context, lease budget.Lease) {
	step, key := c.t.spec.Kind, string(c.key)
	a := new(cancelAnswer)
	c.answer.Store(a)
	if lease.Granted <= 0 {
		failed := trace.CancelStateFailed
		a.state.Store(&failed)
		c.obs.OnCancelSettled(step, key, failed, ErrNoCancelTime)
		return
	}
	lease.Deadline = time.Now().Add(lease.Granted)
	group, own := c.run.Cancels, c.run.Cancels == nil
	if own {
		group = &cancel.Group{}
	}
	state := trace.CancelStateSent
	sent := make(chan struct{}) // the answer is heard after the sending
	group.GoOn(ctx, lease, c.canceller, c.key, func(err error) {
		<-sent
		answered := CancelStateOf(err)
		if answered == trace.CancelStateSent {
			a.state.Store(&answered) // sent is all there is to say
			return
		}
		if own {
			state = answered // read after Wait below
		}
		a.state.Store(&answered)
		c.obs.OnCancelSettled(step, key, answered, err)
	})
	c.obs.OnCancelSent(step, key, lease)
	close(sent)
	if own {
		group.Wait(context.WithoutCancel(ctx))
	}
	c.sent = state == trace.CancelStateSent
}
