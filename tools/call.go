package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/trace"
)

// A Run is what a call needs to know of the run it belongs to. Budget is
// required; every other field may be left zero.
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

	// Observer hears what the calls do.
	Observer Observer

	// Quiet is the cause the run's quiet clock ends the run context with
	// (watchdog.ErrQuiet): an attempt cut by a cause matching it ends with
	// outcome quiet. Nil: such an attempt counts as cancelled.
	Quiet error
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
	case len(r.Output) > 0:
		return "error: " + r.Err + "\nOutput before the cut: " + string(r.Output)
	}
	return "error: " + r.Err
}

// refusedMessage is what the model reads for a call the budget refused.
const refusedMessage = "not started: not enough time"

// Call calls the tool name with the model's arguments, on leases of
// run.Budget, and returns how it ended; it never panics on bad input and
// reports every failure in the Result. ctx is the run's context: its end
// (the quiet clock, the wall, a cancellation) stops the call, and its cause
// names the outcome. Call blocks until the call has ended, the cancel of an
// in-flight remote call has been answered (on its own short lease), and any
// orphan has been journaled.
func (r *Registry) Call(ctx context.Context, run *Run, name string, args json.RawMessage) Result {
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
	c := &call{reg: r, run: run, t: reg, key: cancel.NewKey(), args: sent}
	return c.do(ctx)
}

// call is one logical call: one key, any number of attempts.
type call struct {
	reg  *Registry
	run  *Run
	t    *registered
	key  cancel.Key
	args json.RawMessage // compacted, exactly as sent

	// units is the highest progress units seen on any attempt of the call.
	// It starts at zero: a heartbeat saying nothing is done yet is not
	// progress, and a retry that starts counting again is not either until
	// it passes what an earlier attempt reached.
	units atomic.Int64
}

func (c *call) event(e Event) {
	e.Tool, e.Key = c.t.spec.Name, c.key
	c.run.Observer.event(e)
}

// advance records a heartbeat and reports whether its units strictly
// increased: the only heartbeat that is progress (SPEC §3).
func (c *call) advance(units int64) bool {
	for {
		prev := c.units.Load()
		if units <= prev {
			return false
		}
		if c.units.CompareAndSwap(prev, units) {
			return true
		}
	}
}

// attempt is one attempt in progress, as a tool implementation sees it.
type attempt struct {
	c          *call
	n          int
	lease      budget.Lease
	keepalives atomic.Int64
	progress   atomic.Int64
	ended      atomic.Bool // reports whether the attempt has ended: late reports are dropped
}

func (a *attempt) keepalive() {
	a.keepalives.Add(1)
	a.c.event(Event{Kind: Keepalive})
}

// report records a progress heartbeat. It is cheap and never blocks.
func (a *attempt) report(units, total int64, msg string) {
	if a.ended.Load() {
		return
	}
	kind := StaleHeartbeat
	if a.c.advance(units) {
		kind = Heartbeat
		a.progress.Add(1)
	}
	a.c.event(Event{Kind: kind, Units: units, Total: total, Message: msg})
}

// answer is what one attempt came back with.
type answer struct {
	output json.RawMessage
	err    error // nil when the attempt succeeded

	// outcome is set by a tool implementation for a failure the tool
	// answered (an error status, an error event, an exit code, a bad
	// answer). It is left empty for one where no answer came: a transport
	// error, a stream cut short, the attempt's context ending.
	outcome trace.Outcome
	status  int
	header  http.Header

	// retry reports whether the failure may be tried again. A tool
	// implementation sets it for a failure the tool answered: by its
	// status as SPEC §2 says, or as the tool itself said. The loop sets it
	// for one where no answer came ([trace.Retryable]).
	retry bool

	cutShort bool // reports whether output is what came before a cut
	sent     bool // reports whether a remote request went out, so the tool may have it

	// Set by the loop, not by tools:
	cut bool // reports whether the attempt's context ended it
}

// do runs the attempts of c until one succeeds or none may follow.
func (c *call) do(ctx context.Context) Result {
	spec, run, b := c.t.spec, c.run, c.run.Budget
	res := Result{Tool: spec.Name, Key: c.key}
	if err := context.Cause(ctx); err != nil {
		res.Key = ""
		res.Outcome = trace.OutcomeOfContext(ctx, run.Quiet)
		res.Err = "not started: the run has ended"
		res.Cause = &trace.AttemptError{Step: c.t.kind, Outcome: res.Outcome, Err: err}
		return res
	}
	est := b.Estimates()
	kind := est.Kind(c.t.kind)
	if est != c.reg.est {
		kind.Declare(spec.P50, spec.P95)
	}
	ep, remote := c.t.tool.endpoint()
	defer func() {
		if res.Attempts > 0 {
			c.event(Event{Kind: ResultReturned})
		}
	}()

	var last *trace.AttemptError
	var lastAns answer
	for n := 1; ; n++ {
		lease, err := b.Lease(kind, spec.Ceiling)
		if err != nil {
			run.Observer.refused(spec.Name, n, err)
			if last == nil {
				res.Key = ""
				res.Refused, res.Outcome, res.Err, res.Cause = true, trace.GaveUp, refusedMessage, err
				return res
			}
			return c.failed(res, lastAns, last, "; no retry: "+refusedMessage, errors.Join(last, err))
		}
		if n == 1 {
			c.event(Event{Kind: CallIssued})
		}
		res.Attempts = n
		ans, ae, took := c.attempt(ctx, n, lease)
		if ae == nil {
			kind.Observe(took)
			res.Outcome, res.Output, res.CutShort, res.State = trace.OK, ans.output, ans.cutShort, ""
			return res
		}
		last, lastAns = ae, ans
		res.State = ""
		runEnded := ctx.Err() != nil

		// A remote request that never went out is not in flight.
		switch {
		case ans.cut && !remote:
			res.State = StateCancelled
		case ans.cut && ans.sent:
			res.State = c.cancelRemote(ctx, ep)
		}

		if remote && spec.Effect == Write && ans.sent && unanswered(ans) {
			if runEnded {
				return c.orphaned(res, ans, ep, context.Cause(ctx))
			}
			var again bool
			if res, again = c.settle(ctx, n, res, ans, last, ep); !again {
				return res
			}
			continue
		}

		if spec.Effect != Read || !ans.retry || n >= spec.MaxAttempts || runEnded {
			return c.failed(res, ans, last, "", last)
		}
		if !c.backoff(ctx, n, ans.header, &res, ans, last) {
			return res
		}
	}
}

// settle learns by its key how a write whose attempt n ended without an
// answer went (SPEC §5): done, its output; failed, a failed call; never
// received, send it again with the same key, which it reports, after the
// backoff; still running when the budget says stop, or no status to be had,
// an orphan. It never sends the write itself. When it does not report
// again, its Result is final.
func (c *call) settle(ctx context.Context, n int, res Result, ans answer, last *trace.AttemptError, ep cancel.Endpoint) (Result, bool) {
	spec := c.t.spec
	rec := cancel.Reconcile(ctx, c.run.Budget, c.run.Backoff, ep, c.key)
	c.run.Observer.reconcile(spec.Name, c.key, rec)
	switch {
	case rec.Orphan:
		return c.orphaned(res, ans, ep, rec.Err), false
	case rec.State == cancel.Done:
		res.Outcome, res.Output, res.State = trace.OK, rec.Output, ""
		return res, false
	case rec.State == cancel.Failed:
		res.Outcome, res.State = trace.UpstreamError, ""
		res.Err = fmt.Sprintf("%s failed: its status says the call failed", spec.Name)
		res.Cause = &trace.AttemptError{Step: c.t.kind, Attempt: n, Outcome: trace.UpstreamError, Err: &ToolError{Message: "status: failed"}}
		return res, false
	case rec.State == cancel.NeverReceived:
		// The tool has no record of the key: sending it again, with the
		// same key, cannot do the work twice.
		res.State = ""
		if n >= spec.MaxAttempts {
			return c.failed(res, ans, last, "; it never reached the tool, and no attempts are left", last), false
		}
		if !c.backoff(ctx, n, nil, &res, ans, last) {
			return res, false
		}
		return res, true
	}
	return c.orphaned(res, ans, ep, fmt.Errorf("reconcile ended in state %q", rec.State)), false
}

// unanswered reports whether an attempt failed without the tool saying how
// it ended: then a write may or may not have happened.
func unanswered(ans answer) bool {
	return ans.cut || ans.outcome == trace.UpstreamError && ans.status == 0 && !isToolError(ans.err)
}

func isToolError(err error) bool {
	_, ok := errors.AsType[*ToolError](err)
	return ok
}

// backoff sleeps before retry n+1 as the budget decides. It reports whether
// to go on; when not, it has filled res with the last failure.
func (c *call) backoff(ctx context.Context, n int, h http.Header, res *Result, ans answer, last *trace.AttemptError) bool {
	spec, b := c.t.spec, c.run.Budget
	d, _ := b.NextDelay(c.run.Backoff, n, h)
	c.run.Observer.backoff(spec.Name, c.key, n, d)
	if d.GiveUp {
		*res = c.failed(*res, ans, last, "; no retry: the next attempt would not fit in the time left",
			&trace.GaveUpError{Step: c.t.kind, Delay: d, Last: last})
		return false
	}
	if err := d.Wait(ctx); err != nil {
		*res = c.failed(*res, ans, last, "; no retry: the run has ended", errors.Join(last, err))
		return false
	}
	return true
}

// attempt makes attempt n on lease. It returns what came back, the
// attempt's failure (nil when it succeeded) and how long it took.
func (c *call) attempt(ctx context.Context, n int, lease budget.Lease) (answer, *trace.AttemptError, time.Duration) {
	actx, stop := lease.Context(ctx)
	defer stop()
	a := &attempt{c: c, n: n, lease: lease}
	info := Attempt{Tool: c.t.spec.Name, Key: c.key, N: n, Lease: lease, Start: time.Now()}
	c.run.Observer.attemptStart(info)
	ans := c.t.tool.attempt(actx, a)
	a.ended.Store(true)
	info.End = time.Now()
	var ae *trace.AttemptError
	if ans.err == nil {
		ans.outcome = trace.OK
	} else {
		// No outcome: no answer came, so the attempt's context, or else a
		// transport error or a stream cut short, ended it.
		noAnswer := ans.outcome == ""
		if noAnswer && actx.Err() != nil {
			ans.cut = true
			ans.err = context.Cause(actx)
			ans.outcome = trace.OutcomeOfContext(actx, c.run.Quiet)
		} else if noAnswer {
			ans.outcome = trace.UpstreamError
		}
		ae = &trace.AttemptError{Step: c.t.kind, Attempt: n, Outcome: ans.outcome, Status: ans.status, Header: ans.header, Err: ans.err}
		if noAnswer {
			ans.retry = trace.Retryable(ae)
		}
		info.Err = ae
	}
	info.Outcome, info.Status = ans.outcome, ans.status
	info.Keepalives, info.Progress = a.keepalives.Load(), a.progress.Load()
	c.run.Observer.attemptEnd(info)
	return ans, ae, info.End.Sub(info.Start)
}

// cancelRemote sends the cancel of a remote call cut short, if the tool
// serves one, and returns the state the call is left in.
func (c *call) cancelRemote(ctx context.Context, ep cancel.Endpoint) State {
	spec := c.t.spec
	if spec.Cancellable {
		err := cancel.Send(ctx, c.run.Budget, ep, c.key)
		c.run.Observer.cancelSent(spec.Name, c.key, err)
		if err == nil {
			return StateCancelled
		}
	}
	if spec.Effect == Write {
		return StateOrphaned // until reconciliation says otherwise
	}
	return StateAbandoned
}

// failed fills res with the final failure ans; suffix adds why there is no
// further attempt, and cause is the Go error.
func (c *call) failed(res Result, ans answer, last *trace.AttemptError, suffix string, cause error) Result {
	res.Outcome = last.Outcome
	res.Cause = cause
	res.Err = c.describe(last) + suffix
	if ans.cutShort {
		res.CutShort, res.Output = true, ans.output
	}
	switch res.State {
	case StateCancelled:
		res.Err += "; it was cancelled"
	case StateAbandoned:
		res.Err += "; it could not be cancelled and may still be running"
	}
	return res
}

// describe writes an attempt's failure for the model.
func (c *call) describe(e *trace.AttemptError) string {
	name := c.t.spec.Name
	switch e.Outcome {
	case trace.GaveUp:
		if errors.Is(e.Err, budget.ErrLeaseExpired) {
			return fmt.Sprintf("%s: no answer within its time limit", name)
		}
		return fmt.Sprintf("%s: stopped: the run's time for work ran out", name)
	case trace.Quiet:
		return fmt.Sprintf("%s: stopped: the run stalled", name)
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
func (c *call) orphaned(res Result, ans answer, ep cancel.Endpoint, why error) Result {
	e := cancel.Entry{
		TS:             time.Now(),
		RunID:          c.run.ID,
		Tool:           c.t.spec.Name,
		URL:            ep.URL,
		IdempotencyKey: c.key,
		ArgsSHA256:     cancel.ArgsSHA256(c.args),
		State:          "open",
	}
	oe := &OrphanError{Entry: e, Err: why}
	var jerr error
	if c.run.Journal == nil {
		jerr = errNoJournal
	} else if jerr = c.run.Journal.Append(e); jerr == nil {
		oe.Journaled = true
	} else {
		oe.Err = errors.Join(why, jerr)
	}
	c.run.Observer.orphan(e, jerr)
	res.State = StateOrphaned
	res.Outcome = ans.outcome
	res.Cause = oe
	res.Err = fmt.Sprintf("%s: no answer in time, and whether it took effect is unknown; "+
		"it is recorded for reconciliation under key %s: do not repeat it", c.t.spec.Name, c.key)
	return res
}

var errNoJournal = errors.New("tools: no orphan journal")
