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

// do runs the attempts of c until one succeeds or none may follow.
//
// The model client's call, this loop and [cancel.Reconcile] share one
// schedule — lease, attempt, classify, sleep as the budget decides, again —
// and its parts are package budget's ([budget.Budget.Lease],
// [budget.Budget.NextDelay], [budget.Delay.Wait]); the choice between the
// steps is [decide]'s. They are not one function: the landing call leases
// from the reserve and never sleeps; a write is reconciled inside this
// loop by a loop of its own, whose attempt is a status read and whose
// retry is "still running"; and each reports to its observer at points the
// others do not have. One loop would take all that as callbacks and flags,
// and read worse than the three short loops it would replace.
func (c *call) do(ctx context.Context) Result {
	spec, run, b := c.t.spec, c.run, c.run.Budget
	res := Result{Tool: spec.Name, Key: c.key}
	if err := context.Cause(ctx); err != nil {
		res.Key = ""
		res.Outcome = trace.OutcomeOfContext(ctx, watchdog.ErrQuiet)
		res.Err = "not started: the run has ended"
		res.Cause = &trace.AttemptError{Step: spec.Kind, Outcome: res.Outcome, Err: err}
		return res
	}
	est := b.Estimates()
	kind := est.Kind(spec.Kind)
	if est != c.reg.est {
		kind.Declare(spec.P50, spec.P95)
	}
	canceller, canCancel := c.t.impl.(cancel.Canceller)
	canCancel = canCancel && spec.Cancellable // as Register resolved it: the type's, unless turned off
	status, canStatus := c.t.impl.(cancel.StatusReader)
	defer func() {
		if res.Attempts > 0 {
			c.signal(trace.Signal{Event: watchdog.ToolResult})
		}
	}()

	var last ended
	for n := 1; ; n++ {
		var lease budget.Lease
		var err error
		if strings.HasPrefix(spec.Kind, AgentKindPrefix) {
			lease, err = b.SliceLease(kind, spec.Ceiling, run.Keep)
		} else {
			lease, err = b.Lease(kind, spec.Ceiling)
		}
		if err != nil {
			c.obs.OnRefused(spec.Kind, string(c.key), n, err)
			if last.err == nil {
				res.Key = ""
				res.Refused, res.Outcome, res.Err, res.Cause = true, trace.GaveUp, refusedMessage, err
				return res
			}
			return c.failed(res, last, "; no retry: "+refusedMessage, errors.Join(last.err, err))
		}
		if n == 1 {
			c.signal(trace.Signal{Event: watchdog.ToolCall})
		}
		res.Attempts = n
		last = c.attempt(ctx, n, lease)
		d := decide(facts{
			effect: spec.Effect, n: n, max: spec.MaxAttempts, runEnded: ctx.Err() != nil,
			canCancel: canCancel, canStatus: canStatus,
			ok: last.err == nil, cut: last.cut, answered: last.answered,
		}.heard(last.ans))
		res.Cancelling = false
		if d.cancel {
			switch c.cancel(ctx, canceller) {
			case trace.CancelStateSent:
				res.Cancelling = d.state == StateAbandoned
			case trace.CancelStateAccepted:
				if d.state == StateAbandoned {
					d.state = StateCancelled
				}
			}
		}
		res.State = d.state
		if d.next == ask {
			r := cancel.Reconcile(ctx, b, run.Backoff, status, c.key, c.heardBackoff)
			c.reconciled(r)
			d = settled(r, n, spec.MaxAttempts)
			res.State = d.state
			switch d.next {
			case succeed:
				last.ans.Output, last.ans.CutShort = r.Output, false
			case fail:
				res.Cancelling = false
				if r.State == cancel.NeverReceived {
					return c.failed(res, last, "; it never reached the tool, and no attempts are left", last.err)
				}
				res.Outcome = trace.UpstreamError
				res.Err = fmt.Sprintf("%s failed: its status says the call failed", spec.Name)
				res.Cause = &trace.AttemptError{Step: spec.Kind, Attempt: n, Outcome: trace.UpstreamError,
					Err: &ToolError{Message: "status: failed"}}
				return res
			case orphan:
				return c.orphaned(res, last, r.Err)
			}
		}
		switch d.next {
		case succeed:
			kind.Observe(last.took)
			res.Outcome, res.Output, res.CutShort, res.State, res.Cancelling = trace.OK, last.ans.Output, last.ans.CutShort, "", false
			return res
		case orphan:
			return c.orphaned(res, last, last.err)
		case fail:
			return c.failed(res, last, "", last.err)
		}
		// again: a read to retry, or a write its tool never received.
		if !c.backoff(ctx, n, last, &res) {
			return res
		}
	}
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

// reconciled reports what asking the call's status learned.
func (c *call) reconciled(r cancel.Resolution) {
	state := string(r.State)
	if state == "" {
		state = "unreachable" // no status request was answered
	}
	c.obs.OnReconcile(c.t.spec.Kind, string(c.key), state, r.Asks, r.Err)
}

// backoff sleeps before attempt n+1 as the budget decides. It reports
// whether to go on; when not, it has filled res with the last failure.
func (c *call) backoff(ctx context.Context, n int, last ended, res *Result) bool {
	spec, b := c.t.spec, c.run.Budget
	d, raErr := b.NextDelay(c.run.Backoff, n, last.ans.Header)
	c.obs.OnBackoff(spec.Kind, string(c.key), n, d, raErr)
	if d.GiveUp {
		*res = c.failed(*res, last, "; no retry: the next attempt would not fit in the time left",
			&trace.GaveUpError{Step: spec.Kind, Delay: d, Last: last.err})
		return false
	}
	err := d.Wait(ctx)
	c.obs.OnBackoffEnd(spec.Kind, string(c.key))
	if err != nil {
		*res = c.failed(*res, last, "; no retry: the run has ended", errors.Join(last.err, err))
		return false
	}
	return true
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
