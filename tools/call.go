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

// call is one logical call: one key, any number of attempts.
type call struct {
	reg  *Registry
	run  *Run
	t    *registered
	key  cancel.Key
	args json.RawMessage // compacted, exactly as sent
	obs  *trace.Observer

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

// ended is an attempt that has ended, as [Classify] read it, and how long
// it took.
type ended struct {
	AttemptEnd
	took time.Duration
}

// do drives c's [CallMachine] until the call ends: it makes the attempts,
// sleeps, status asks and cancels the machine asks for, feeds back what
// came of each, and returns the Result [Ending] writes from the machine's
// end. The rules and the words are package-level pure parts (issue 25);
// what is here is I/O and the Observer's records.
func (c *call) do(ctx context.Context) Result {
	spec, run, b := c.t.spec, c.run, c.run.Budget
	est := b.Estimates()
	kind := est.Kind(spec.Kind)
	if est != c.reg.est {
		kind.Declare(spec.P50, spec.P95)
	}
	canceller, canCancel := c.t.impl.(cancel.Canceller)
	canCancel = canCancel && spec.Cancellable // as Register resolved it: the type's, unless turned off
	status, canStatus := c.t.impl.(cancel.StatusReader)
	m := NewCallMachine(CallRules{Kind: spec.Kind, Effect: spec.Effect, MaxAttempts: spec.MaxAttempts,
		Ceiling: spec.Ceiling, Slice: strings.HasPrefix(spec.Kind, AgentKindPrefix),
		CanCancel: canCancel, CanStatus: canStatus, Backoff: run.Backoff})
	var (
		last   ended
		answer cancel.Status
		ansErr error        // the last status ask's error
		said   cancel.State // the last state a status ask said
		sent   bool         // the last attempt's cancel went out through the run's group
	)
	cmd := m.Step(CallEvent{Kind: CallStarted, Figures: c.figures(ctx, kind)})
	for {
		if cmd.Cancel {
			sent = c.cancel(ctx, canceller, cmd.CancelLease) == trace.CancelStateSent
		}
		if cmd.Reconciled {
			// The reconciliation has ended: report what it learned.
			if cmd.Kind == CallDone && cmd.Reconciling && cmd.Delay.GiveUp {
				c.heardBackoff(cmd.Asks, cmd.Delay)
			}
			var why error
			if cmd.End == EndOrphan {
				why = ReconcileWhy(cmd, said, ansErr, context.Cause(ctx))
			}
			c.obs.OnReconcile(spec.Kind, string(c.key), ReconcileState(said), cmd.Asks, why)
		}
		switch cmd.Kind {
		case CallAttempt:
			if cmd.N == 1 {
				c.signal(trace.Signal{Event: watchdog.ToolCall})
			}
			lease := cmd.Lease
			lease.Deadline = time.Now().Add(lease.Granted)
			c.answer.Store(nil) // the cancel sent so far, answered or not, was another attempt's
			last, sent = c.attempt(ctx, cmd.N, lease), false
			cmd = m.Step(CallEvent{Kind: AttemptEnded, Figures: c.figures(ctx, kind), Attempt: last.Attempted()})
		case CallSleep:
			if cmd.Reconciling {
				c.heardBackoff(cmd.N, cmd.Delay)
			} else {
				c.obs.OnBackoff(spec.Kind, string(c.key), cmd.N, cmd.Delay, last.RetryAfterErr)
			}
			cmd.Delay.Wait(ctx) // the run's end is read off ctx with the figures
			c.obs.OnBackoffEnd(spec.Kind, string(c.key))
			cmd = m.Step(CallEvent{Kind: SleepOver, Figures: c.figures(ctx, kind)})
		case CallAsk:
			if cmd.N == 1 {
				said, ansErr = "", nil // a new reconciliation
			}
			lease := cmd.Lease
			lease.Deadline = time.Now().Add(lease.Granted)
			actx, stop := lease.Context(ctx)
			answer, ansErr = status.Status(actx, c.key)
			stop()
			if ansErr == nil {
				switch answer.State {
				case cancel.Done, cancel.Failed, cancel.NeverReceived, cancel.Running:
					said = answer.State
				}
			}
			cmd = m.Step(CallEvent{Kind: StatusAnswered, Figures: c.figures(ctx, kind), Status: answer.State,
				Unreachable: ansErr != nil})
		case CallDone:
			res := c.end(ctx, last, cmd, kind, answer, ansErr, said, sent)
			if cmd.N > 0 {
				c.signal(trace.Signal{Event: watchdog.ToolResult})
			}
			return res
		}
	}
}

// figures reads the run's budget now, for the machine.
func (c *call) figures(ctx context.Context, kind *budget.Kind) budget.Figures {
	b := c.run.Budget
	_, remaining := b.Read()
	return budget.Figures{Remaining: remaining, Reserve: b.Reserve(), Floor: b.Floor(), P50: kind.P50(),
		Keep: c.run.Keep, Ended: ctx.Err() != nil}
}

// end fills res as the machine's last command says the call ended: the
// orphan journaled, the records written, and the rest by [Ending].
func (c *call) end(ctx context.Context, last ended, cmd CallCommand, kind *budget.Kind,
	answer cancel.Status, ansErr error, said cancel.State, sent bool) Result {
	spec := c.t.spec
	s := Said{Tool: spec.Name, Kind: spec.Kind, Key: c.key, Output: last.Answer.Output, CutShort: last.Answer.CutShort,
		StatusOutput: answer.Output, CancelOut: sent, Stopped: context.Cause(ctx), Failure: last.Failure(spec)}
	if last.Err != nil {
		s.Last = last.Err
	}
	if a := c.answer.Load(); a != nil {
		if st := a.state.Load(); st != nil {
			s.Cancel = *st // as it stands now (issue 18): a cancel sent through the run's group may have been answered since
		}
	}
	switch cmd.End {
	case EndOK:
		kind.Observe(last.took)
	case EndRefused:
		c.obs.OnRefused(spec.Kind, string(c.key), cmd.N+1, cmd.Refused)
	case EndGaveUp:
		c.obs.OnBackoff(spec.Kind, string(c.key), cmd.N, cmd.Delay, last.RetryAfterErr)
	case EndRunEnded:
		s.StoppedOutcome = trace.OutcomeOfContext(ctx, watchdog.ErrQuiet)
	case EndOrphan:
		why := error(last.Err)
		if cmd.Reconciling || cmd.Refused != nil || cmd.Status != "" || cmd.Unreachable || (cmd.Ended && said != "") {
			why = ReconcileWhy(cmd, said, ansErr, context.Cause(ctx))
		}
		var jerr error
		s.Orphan, s.Unjournaled, jerr = orphan(c.run, c.t, c.key, c.args, why)
		c.obs.OnOrphan(spec.Kind, string(c.key), jerr)
	}
	return Ending(cmd, s)
}

// cancel sends the cancel of the call's cut attempt on lease, the
// machine's (issue 25), and returns how it stands: sent, through the
// run's group, which does not wait for the answer; or, with no group, the
// answer itself, which the call waits for on the cancel's lease. The
// Observer hears it go out and settle.
func (c *call) cancel(ctx context.Context, t cancel.Canceller, lease budget.Lease) trace.CancelState {
	step, key := c.t.spec.Kind, string(c.key)
	a := new(cancelAnswer)
	c.answer.Store(a)
	if lease.Granted <= 0 {
		failed := trace.CancelStateFailed
		a.state.Store(&failed)
		c.obs.OnCancelSettled(step, key, failed, ErrNoCancelTime)
		return failed
	}
	lease.Deadline = time.Now().Add(lease.Granted)
	group, own := c.run.Cancels, c.run.Cancels == nil
	if own {
		group = &cancel.Group{}
	}
	state := trace.CancelStateSent
	sent := make(chan struct{}) // the answer is heard after the sending
	group.GoOn(ctx, lease, t, c.key, func(err error) {
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
	return state
}

// heardBackoff reports a sleep between two status asks, as a sleep
// between attempts is reported: recorded, and the quiet clock stopped for
// it, until the returned func says it has ended.
func (c *call) heardBackoff(asks int, d budget.Delay) func() {
	step, key := c.t.spec.Kind, string(c.key)
	c.obs.OnStatusBackoff(step, key, asks, d)
	if d.GiveUp {
		return nil
	}
	return func() { c.obs.OnBackoffEnd(step, key) }
}

// attempt makes attempt n on lease and classifies how it ended.
func (c *call) attempt(ctx context.Context, n int, lease budget.Lease) ended {
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
	e := ended{AttemptEnd: Classify(actx, lease, ans), took: info.End.Sub(info.Start)}
	info.Outcome = trace.OK
	if e.Err != nil {
		e.Err.Step, e.Err.Attempt = kind, n
		info.Outcome, info.Err = e.Err.Outcome, e.Err
	}
	info.Status, info.Keepalives = e.Answer.Status, tc.keepalives.Load()
	c.obs.OnAttemptEnd(info)
	return e
}
