package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
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
		err := fmt.Errorf("%w %q", ErrUnknownTool, clip(name, 64))
		msg := fmt.Sprintf("unknown tool %q; the tools are: %s", clip(name, 64), r.names())
		return Result{Tool: name, Outcome: trace.Invalid, Err: msg, Cause: err}
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

	// answer is how the latest cancel of the call was answered, stored by
	// the cancel's callback, which may run after the call returned; nil
	// until it is answered. The tool message says what it held when the
	// message was written (issue 18).
	answer atomic.Pointer[trace.CancelState]
}

// signal reports s for the call, filling in its step and key.
func (c *call) signal(s trace.Signal) {
	s.Step, s.Key = c.t.spec.Kind, string(c.key)
	c.obs.OnSignal(s)
}

// ended is an attempt that has ended, as the loop classified it.
type ended struct {
	ans      Answer
	err      *trace.AttemptError // nil when the attempt succeeded
	cut      bool                // the attempt's context ended it
	answered bool                // the tool said how it failed (it set the outcome)
	took     time.Duration
	lease    budget.Lease // the attempt's lease

	// why is what ended an attempt that gave up: the cause of its lease's
	// context ([budget.ErrLeaseExpired] for the tool's ceiling,
	// [budget.ErrDeadline] for the run's time for work), or, when the tool
	// itself answered that its deadline passed before our context ended,
	// the same cause read from the lease. Nil for other outcomes.
	why error
}

// do drives c's [CallMachine] until the call ends: it makes the attempts,
// sleeps, status asks and cancels the machine asks for, feeds back what
// came of each, and fills the Result as the machine's end says. The rules
// are all the machine's (issue 25); what is here is I/O, the Observer's
// records and the words the model reads.
func (c *call) do(ctx context.Context) Result {
	spec, run, b := c.t.spec, c.run, c.run.Budget
	res := Result{Tool: spec.Name, Key: c.key}
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
	defer func() {
		if res.Attempts > 0 {
			c.signal(trace.Signal{Event: watchdog.ToolResult})
		}
	}()

	var (
		last     ended
		raErr    error // the last attempt's malformed Retry-After, for its backoff record
		answer   cancel.Status
		ansErr   error        // the last status ask's error
		said     cancel.State // the last state a status ask said
		asking   bool         // a reconciliation is under way
		asks     int          // the status asks it made
		sent     bool         // the last attempt's cancel went out through the run's group
		accepted bool         // the last attempt's cancel was answered accepted
	)
	cmd := m.Step(CallEvent{Kind: CallStarted, Figures: c.figures(ctx, kind)})
	for {
		if cmd.Cancel {
			switch c.cancel(ctx, canceller) {
			case trace.CancelStateSent:
				sent = true
			case trace.CancelStateAccepted:
				accepted = true
			}
		}
		// A first ask the budget refused ends a reconciliation too.
		noAsk := cmd.End == EndOrphan && cmd.Refused != nil && !asking
		if noAsk || asking && cmd.Kind != CallAsk && !(cmd.Kind == CallSleep && cmd.Reconciling) {
			// The reconciliation has ended: report what it learned.
			asking = false
			if cmd.Kind == CallDone && cmd.Reconciling && cmd.Delay.GiveUp {
				c.heardBackoff(asks, cmd.Delay)
			}
			state := string(said)
			if state == "" {
				state = "unreachable" // no status request was answered
			}
			var why error
			if cmd.End == EndOrphan {
				why = c.orphanWhy(ctx, cmd, said, ansErr, asks)
			}
			c.obs.OnReconcile(spec.Kind, string(c.key), state, asks, why)
		}
		switch cmd.Kind {
		case CallAttempt:
			if cmd.N == 1 {
				c.signal(trace.Signal{Event: watchdog.ToolCall})
			}
			res.Attempts = cmd.N
			lease := cmd.Lease
			lease.Deadline = time.Now().Add(lease.Granted)
			last, sent, accepted = c.attempt(ctx, cmd.N, lease), false, false
			var ra budget.RetryAfter
			ra, raErr = budget.ReadRetryAfter(last.ans.Header, time.Now())
			cmd = m.Step(CallEvent{Kind: AttemptEnded, Figures: c.figures(ctx, kind), Attempt: Attempted{
				OK: last.err == nil, Cut: last.cut, GaveUp: last.err != nil && last.err.Outcome == trace.GaveUp,
				Answered: last.answered, NotSent: last.ans.NotSent, Stopped: last.ans.Stopped, Retry: last.ans.Retry,
				RetryAfter: ra}})
		case CallSleep:
			if cmd.Reconciling {
				c.heardBackoff(cmd.N, cmd.Delay)
			} else {
				c.obs.OnBackoff(spec.Kind, string(c.key), cmd.N, cmd.Delay, raErr)
			}
			cmd.Delay.Wait(ctx) // the run's end is read off ctx with the figures
			c.obs.OnBackoffEnd(spec.Kind, string(c.key))
			cmd = m.Step(CallEvent{Kind: SleepOver, Figures: c.figures(ctx, kind)})
		case CallAsk:
			if !asking {
				asking, said, ansErr, asks = true, "", nil, 0
			}
			asks = cmd.N
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
			return c.end(ctx, res, last, cmd, kind, answer, ansErr, said, asks, raErr, sent, accepted)
		}
	}
}

// figures reads the run's budget now, for the machine.
func (c *call) figures(ctx context.Context, kind *budget.Kind) Figures {
	b := c.run.Budget
	_, remaining := b.Read()
	return Figures{Remaining: remaining, Reserve: b.Reserve(), Floor: b.Floor(), P50: kind.P50(),
		Keep: c.run.Keep, Ended: ctx.Err() != nil}
}

// end fills res as the machine's last command says the call ended.
func (c *call) end(ctx context.Context, res Result, last ended, cmd CallCommand, kind *budget.Kind,
	answer cancel.Status, ansErr error, said cancel.State, asks int, raErr error, sent, accepted bool) Result {
	spec := c.t.spec
	res.State = cmd.State
	if accepted && res.State == StateAbandoned {
		res.State = StateCancelled
	}
	res.Cancelling = sent && res.State == StateAbandoned
	switch cmd.End {
	case EndOK:
		kind.Observe(last.took)
		if cmd.Status == cancel.Done {
			last.ans.Output, last.ans.CutShort = answer.Output, false
		}
		res.Outcome, res.Output, res.CutShort, res.State, res.Cancelling = trace.OK, last.ans.Output, last.ans.CutShort, "", false
		return res
	case EndFailed:
		return c.failed(res, last, "", last.err)
	case EndRefused:
		c.obs.OnRefused(spec.Kind, string(c.key), cmd.N+1, cmd.Refused)
		if cmd.N == 0 {
			res.Key = ""
			res.Refused, res.Outcome, res.Err, res.Cause = true, trace.GaveUp, refusedMessage, cmd.Refused
			return res
		}
		return c.failed(res, last, "; no retry: "+refusedMessage, errors.Join(last.err, cmd.Refused))
	case EndGaveUp:
		c.obs.OnBackoff(spec.Kind, string(c.key), cmd.N, cmd.Delay, raErr)
		return c.failed(res, last, "; no retry: the next attempt would not fit in the time left",
			&trace.GaveUpError{Step: spec.Kind, Delay: cmd.Delay, Last: last.err})
	case EndRunEnded:
		if cmd.N == 0 {
			res.Key = ""
			res.Outcome = trace.OutcomeOfContext(ctx, watchdog.ErrQuiet)
			res.Err = "not started: the run has ended"
			res.Cause = &trace.AttemptError{Step: spec.Kind, Outcome: res.Outcome, Err: context.Cause(ctx)}
			return res
		}
		return c.failed(res, last, "; no retry: the run has ended", errors.Join(last.err, context.Cause(ctx)))
	case EndStatusFailed:
		res.Cancelling = false
		res.Outcome = trace.UpstreamError
		res.Err = fmt.Sprintf("%s failed: its status says the call failed", spec.Name)
		res.Cause = &trace.AttemptError{Step: spec.Kind, Attempt: cmd.N, Outcome: trace.UpstreamError,
			Err: &ToolError{Message: "status: failed"}}
		return res
	case EndNeverReceived:
		res.Cancelling = false
		return c.failed(res, last, "; it never reached the tool, and no attempts are left", last.err)
	}
	// EndOrphan
	why := error(last.err)
	if cmd.Reconciling || cmd.Refused != nil || cmd.Status != "" || cmd.Unreachable || (cmd.Ended && said != "") {
		why = c.orphanWhy(ctx, cmd, said, ansErr, asks)
	}
	return c.orphaned(res, last, why)
}

// orphanWhy says why a reconciliation left the call an orphan, as
// [cancel.Reconcile] words it.
func (c *call) orphanWhy(ctx context.Context, cmd CallCommand, said cancel.State, ansErr error, asks int) error {
	var err error
	switch {
	case ansErr != nil:
		return ansErr
	case cmd.Unreachable:
		return fmt.Errorf("%w: status reader answered state %q", cancel.ErrUnreachable, clip(string(cmd.Status), 64))
	case cmd.Refused != nil:
		err = cmd.Refused
	case cmd.Delay.GiveUp:
		err = fmt.Errorf("the next ask, after %v, would outlast the budget (%s)", cmd.Delay.Sleep, cmd.Delay.Reason)
	default:
		err = context.Cause(ctx)
	}
	if said == cancel.Running {
		return fmt.Errorf("%w after %d asks: %w", cancel.ErrStillRunning, asks, err)
	}
	return err
}

// cancel sends the cancel of the call's cut attempt and returns how it
// stands: sent, through the run's group, which does not wait for the
// answer; or, with no group, the answer itself, which the call waits for
// on the cancel's own lease. The Observer hears it go out and settle.
func (c *call) cancel(ctx context.Context, t cancel.Canceller) trace.CancelState {
	step, key := c.t.spec.Kind, string(c.key)
	group, own := c.run.Cancels, c.run.Cancels == nil
	if own {
		group = &cancel.Group{}
	}
	state := trace.CancelStateSent
	c.answer.Store(nil)         // a new cancel: the last one's answer is not this one's
	sent := make(chan struct{}) // the answer is heard after the sending
	lease, err := group.Go(ctx, c.run.Budget, t, c.key, func(err error) {
		<-sent
		if errors.Is(err, cancel.ErrNoAnswer) {
			st := state
			c.answer.Store(&st) // sent is all there is to say
			return
		}
		answered := trace.CancelStateAccepted
		switch {
		case errors.Is(err, cancel.ErrUnknownCall):
			answered = trace.CancelStateUnknown
		case err != nil:
			answered = trace.CancelStateFailed
		}
		if own {
			state = answered // read after Wait below
		}
		c.answer.Store(&answered)
		c.obs.OnCancelSettled(step, key, answered, err)
	})
	if err != nil {
		failed := trace.CancelStateFailed
		c.answer.Store(&failed)
		c.obs.OnCancelSettled(step, key, failed, err)
		return failed
	}
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
	e := ended{ans: RunAttempt(actx, c.t.tool, tc)}
	tc.ended.Store(true)
	info.End = time.Now()
	if e.ans.Err == nil {
		info.Outcome = trace.OK
	} else {
		// No outcome: no answer came, so the attempt's context, or else a
		// transport error or a stream cut short, ended it.
		noAnswer := e.ans.Outcome == ""
		e.answered = !noAnswer
		if noAnswer && actx.Err() != nil {
			e.cut = true
			e.ans.Err = context.Cause(actx)
			e.ans.Outcome = trace.OutcomeOfContext(actx, watchdog.ErrQuiet)
		} else if noAnswer {
			e.ans.Outcome = trace.UpstreamError
		}
		e.err = &trace.AttemptError{Step: kind, Attempt: n, Outcome: e.ans.Outcome, Status: e.ans.Status,
			Header: e.ans.Header, Err: e.ans.Err}
		if noAnswer {
			e.ans.Retry = trace.Retryable(e.err)
		}
		if e.err.Outcome == trace.GaveUp {
			switch {
			case actx.Err() != nil:
				e.why = context.Cause(actx)
			case lease.Capped:
				e.why = budget.ErrLeaseExpired
			default:
				e.why = budget.ErrDeadline
			}
			if !e.cut && !errors.Is(e.ans.Err, e.why) {
				// The tool said its deadline passed, a moment before our
				// lease ended: the record names our cause first, as a
				// cut attempt's does, then what the tool said (issue 18).
				e.err.Err = fmt.Errorf("%w: the tool said: %w", e.why, e.ans.Err)
			}
		}
		info.Outcome, info.Err = e.ans.Outcome, e.err
	}
	e.lease = lease
	info.Status, info.Keepalives = e.ans.Status, tc.keepalives.Load()
	c.obs.OnAttemptEnd(info)
	e.took = info.End.Sub(info.Start)
	return e
}

// failed fills res with the final failure, the attempt last; suffix adds
// why there is no further attempt, and cause is the Go error.
func (c *call) failed(res Result, last ended, suffix string, cause error) Result {
	res.Outcome = last.err.Outcome
	res.Cause = cause
	res.Err = c.describe(last) + suffix
	if last.ans.CutShort {
		res.CutShort, res.Output = true, last.ans.Output
	}
	// The words follow the cancel's state as it stands now (issue 18): a
	// cancel sent through the run's group may have been answered since,
	// and the trace will say so; one answered later leaves these words
	// saying what was known, and the run's in_flight follows the trace.
	var answer trace.CancelState
	if a := c.answer.Load(); a != nil {
		answer = *a
	}
	if res.State == StateAbandoned && res.Cancelling && answer != "" {
		res.Cancelling = false
		if answer == trace.CancelStateAccepted {
			res.State = StateCancelled
		}
	}
	switch {
	case res.State == StateCancelled:
		res.Err += "; it was cancelled"
	case res.State != StateAbandoned:
	case answer == trace.CancelStateSent:
		res.Err += "; a cancel was sent, which its tool does not answer, so it may still be running"
	case res.Cancelling:
		res.Err += "; a cancel was sent, with no answer yet, so it may still be running"
	case answer == trace.CancelStateUnknown:
		res.Err += "; a cancel was sent, and the tool did not know the call"
	case answer == trace.CancelStateFailed:
		res.Err += "; its cancel failed, so it may still be running"
	default:
		res.Err += "; it could not be cancelled and may still be running"
	}
	return res
}

// describe writes an attempt's failure for the model. A call that gave
// up says what ended it, as its lease's context cause says (issue 18):
// its own ceiling, or the run's time for work; a tool that answered that
// its deadline passed is read the same way, from the lease.
func (c *call) describe(last ended) string {
	name, e := c.t.spec.Name, last.err
	switch e.Outcome {
	case trace.GaveUp:
		switch why := last.why; {
		case errors.Is(why, watchdog.ErrQuiet):
			return fmt.Sprintf("%s: stopped: the run stalled (its quiet clock ran out)", name)
		case errors.Is(why, budget.ErrLeaseExpired), why == nil && errors.Is(e.Err, budget.ErrLeaseExpired):
			ceiling := c.t.spec.Ceiling
			if ceiling <= 0 || ceiling > last.lease.Granted {
				ceiling = last.lease.Granted // a sub-agent's slice, or a lease its ceiling did not set
			}
			return fmt.Sprintf("%s: no answer within its ceiling of %v", name, ceiling)
		case why != nil && !errors.Is(why, budget.ErrDeadline) && !errors.Is(why, watchdog.ErrWall) &&
			!errors.Is(why, context.DeadlineExceeded):
			return fmt.Sprintf("%s: stopped: the run was cancelled", name)
		}
		return fmt.Sprintf("%s: stopped: the run's time for work ran out", name)
	case trace.Quiet:
		return fmt.Sprintf("%s: stopped: the run stalled (its quiet clock ran out)", name)
	case trace.Cancelled:
		return fmt.Sprintf("%s: stopped: the run was cancelled", name)
	}
	te, isTool := errors.AsType[*ToolError](e.Err)
	switch {
	case isTool && e.Status != 0:
		return fmt.Sprintf("%s failed: HTTP %d: %s", name, e.Status, clip(te.Message, 1024))
	case isTool:
		return fmt.Sprintf("%s failed: %s", name, clip(te.Message, 1024))
	case e.Status != 0:
		return fmt.Sprintf("%s failed: HTTP %d %s", name, e.Status, http.StatusText(e.Status))
	case errors.Is(e.Err, ErrIncomplete):
		return fmt.Sprintf("%s failed: its answer ended before a result", name)
	case errors.Is(e.Err, ErrBadAnswer):
		return fmt.Sprintf("%s failed: its answer could not be read: %s", name, clip(e.Err.Error(), 512))
	}
	if ue, ok := errors.AsType[*url.Error](e.Err); ok {
		// The url.Error's own message repeats the URL, which may carry
		// credentials; the model gets the cause alone.
		return fmt.Sprintf("%s failed: could not reach the tool: %v", name, ue.Err)
	}
	return fmt.Sprintf("%s failed: %s", name, clip(e.Err.Error(), 512))
}

// orphaned records the call as an orphan: a write whose outcome is
// unknown. The journal entry is appended and fsync'd before it returns
// (SPEC §5: a crash loses no orphan already reported).
func (c *call) orphaned(res Result, last ended, why error) Result {
	e := cancel.Entry{
		TS:             time.Now(),
		RunID:          c.run.ID,
		Tool:           c.t.spec.Name,
		Kind:           c.t.spec.Kind,
		IdempotencyKey: c.key,
		ArgsSHA256:     cancel.ArgsSHA256(c.args),
		State:          cancel.Open,
	}
	// How to reach the tool again, from outside this run (issue 17): its
	// URL, and the tools file that built it, made absolute against this
	// process's directory, which a later harness reconcile may not share.
	if b, ok := c.t.impl.(baseURLer); ok {
		e.URL = b.baseURL()
	}
	for _, t := range [...]Tool{c.t.tool, c.t.impl} {
		if f, ok := t.(ToolsFiler); ok && f.ToolsFile() != "" {
			e.ToolsFile = f.ToolsFile()
			if abs, err := filepath.Abs(e.ToolsFile); err == nil {
				e.ToolsFile = abs
			}
			break
		}
	}
	_, asks := c.t.impl.(cancel.StatusReader)
	_, builtin := c.t.tool.(respec)
	oe := &OrphanError{Entry: e, Err: why, Reachable: e.URL != "" || e.ToolsFile != "" && asks && !builtin}
	var jerr error
	if c.run.Journal == nil {
		jerr = errNoJournal
	} else if jerr = c.run.Journal.Append(e); jerr == nil {
		oe.Journaled = true
		oe.Next = cancel.SettleCommand(c.run.Journal.Path(), c.key, cancel.Done)
		if oe.Reachable {
			oe.Next = cancel.ReconcileCommand(c.run.Journal.Path())
		}
	} else {
		oe.Err = errors.Join(why, jerr)
	}
	c.obs.OnOrphan(c.t.spec.Kind, string(c.key), jerr)
	res.State, res.Cancelling = StateOrphaned, false
	res.Outcome = last.err.Outcome
	if last.ans.CutShort {
		res.CutShort, res.Output = true, last.ans.Output // what it said before the cut, which may tell
	}
	res.Cause = oe
	// The model is told "recorded" only when the journal holds it: a
	// write nobody will check later must not read as taken care of.
	if oe.Journaled {
		res.Err = fmt.Sprintf("%s: no answer in time, and whether it took effect is unknown; "+
			"it is recorded for reconciliation under key %s: do not repeat it", c.t.spec.Name, c.key)
	} else {
		res.Err = fmt.Sprintf("%s: no answer in time, and whether it took effect is unknown; "+
			"it was NOT recorded for reconciliation (%s), so nothing will check it later: "+
			"do not repeat it; tell the user it may have happened, under key %s", c.t.spec.Name, notJournaled(jerr), c.key)
	}
	return res
}

// notJournaled says, for the model, why an orphan is in no journal.
func notJournaled(err error) string {
	if errors.Is(err, errNoJournal) {
		return "no orphan journal is configured"
	}
	return "the orphan journal could not be written"
}

var errNoJournal = errors.New("tools: no orphan journal")
