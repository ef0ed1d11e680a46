package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

// This file holds the rules around one call that its [CallMachine] does
// not: the gate before it starts, how many of a turn's calls run at once,
// the words of an attempt that failed, and the ending of a call the
// machine ended — the tool message the model reads and the call as the
// landing keeps it. Each is a pure function of plain data, written once
// for both hosts (issue 25): harness run and the Temporal workflow of
// temporal/durable read their clocks, ladders and tools, call these, and
// perform what they say.

// A Gate is what the gate before a call needs to know, read by its host
// at the moment the call would start.
type Gate struct {
	Tool  string // the name the model called
	Kind  string // the tool's step kind
	Phase landing.Phase
	// Stopping reports that the run's work has ended (its quiet clock, its
	// wall, a cancellation): no more work is started.
	Stopping bool
	// Known reports that the run offers the tool. An unknown one is let
	// through: its registry answers it at once, without any I/O, and the
	// model learns which tools there are ([Unknown]).
	Known       bool
	Speculative bool
	Agent       bool          // a sub-agent's call (SPEC §5b)
	P95         time.Duration // the kind's p95; zero: unknown
	Ceiling     time.Duration // the tool's; zero: none
	Left        time.Duration // the time before landing: remaining − reserve
}

// stopping is the reason a call is not started once the run's work ended.
const stopping = "the run is stopping: no more work is started"

// Admit returns nil if the call may start now, and else the refusal as
// the call's [Result] says it: not run, the gate's reason in its words
// (the refused record's message), its Cause a [*landing.GateError]. The
// rules, in order: nothing starts once the run stops; a speculative call
// or a sub-agent is a widening that only explore allows; and the phase
// admits the kind by its p95 or ceiling ([landing.AdmitAt]).
func (g Gate) Admit() (Result, bool) {
	reason := ""
	switch {
	case g.Stopping:
		reason = stopping
	case !g.Known:
		return Result{}, true
	default:
		err := error(nil)
		if g.Speculative {
			err = landing.WidenAt(g.Phase, landing.Speculative)
		}
		if err == nil && g.Agent {
			err = landing.WidenAt(g.Phase, landing.SubAgent)
		}
		if err == nil {
			err = landing.AdmitAt(g.Phase, g.Kind, g.P95, g.Ceiling, g.Left)
		}
		if err == nil {
			return Result{}, true
		}
		reason = landing.GateReason(err)
	}
	return Result{Tool: g.Tool, Outcome: trace.GaveUp, Refused: true, Err: "not run: " + reason,
		Cause: &landing.GateError{Phase: g.Phase, What: g.Kind, Reason: reason}}, false
}

// Refusal is the refused record of the call g refused with res, the
// model's call callID of step index: reason "gated", the gate's words.
func (g Gate) Refusal(res Result, index int, callID string) trace.Record {
	return trace.Record{Event: trace.Refused, Step: g.Kind, StepIndex: index, Attempt: 1, CallID: callID,
		Reason: "gated", Message: landing.GateReason(res.Cause)}
}

// Unknown is the Result of a call of name, which the run does not offer;
// names lists those it does, for the model.
func Unknown(name, names string) Result {
	err := fmt.Errorf("%w %q", ErrUnknownTool, clip(name, 64))
	msg := fmt.Sprintf("unknown tool %q; the tools are: %s", clip(name, 64), names)
	return Result{Tool: name, Outcome: trace.Invalid, Err: msg, Cause: err}
}

// Slots is how many of a turn's width slots (its parallel calls, at least
// one) a call that starts in phase p holds: one in explore; all of them
// after it, so that a call starting once the run left explore waits for
// the calls in flight to end and then runs alone, a new branch the run no
// longer has the budget for (SPEC §3). Each host takes a call's slots in
// call order, just before it starts, and gives them back when it ends:
// a sliding window, never fixed batches (issue 25).
func Slots(p landing.Phase, width int) int {
	width = max(width, 1)
	if landing.WidenAt(p, landing.Parallel) != nil {
		return width
	}
	return 1
}

// Describe writes for the model how attempt e of the tool spec failed.
// why is what ended an attempt that gave up (the cause of its lease's
// context: [budget.ErrLeaseExpired] for the tool's ceiling,
// [budget.ErrDeadline] for the run's time for work; nil when unknown),
// and granted its lease. A call that gave up says what ended it (issue
// 18): its own ceiling, or the run's time for work; a tool that answered
// that its deadline passed is read the same way.
func Describe(spec Spec, e *trace.AttemptError, why error, granted time.Duration) string {
	name := spec.Name
	switch e.Outcome {
	case trace.GaveUp:
		switch {
		case errors.Is(why, watchdog.ErrQuiet):
			return name + ": stopped: " + Stopped(true)
		case errors.Is(why, budget.ErrLeaseExpired), why == nil && errors.Is(e.Err, budget.ErrLeaseExpired):
			ceiling := spec.Ceiling
			if ceiling <= 0 || ceiling > granted {
				ceiling = granted // a sub-agent's slice, or a lease its ceiling did not set
			}
			return fmt.Sprintf("%s: no answer within its ceiling of %v", name, ceiling)
		case why != nil && !errors.Is(why, budget.ErrDeadline) && !errors.Is(why, watchdog.ErrWall) &&
			!errors.Is(why, context.DeadlineExceeded):
			return name + ": stopped: " + Stopped(false)
		}
		return name + ": stopped: the run's time for work ran out"
	case trace.Quiet:
		return name + ": stopped: " + Stopped(true)
	case trace.Cancelled:
		return name + ": stopped: " + Stopped(false)
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
		return name + " failed: its answer ended before a result"
	case errors.Is(e.Err, ErrBadAnswer):
		return fmt.Sprintf("%s failed: its answer could not be read: %s", name, clip(e.Err.Error(), 512))
	case e.Err == nil:
		return name + " failed"
	}
	if ue, ok := errors.AsType[*url.Error](e.Err); ok {
		// The url.Error's own message repeats the URL, which may carry
		// credentials; the model gets the cause alone.
		return fmt.Sprintf("%s failed: could not reach the tool: %v", name, ue.Err)
	}
	return fmt.Sprintf("%s failed: %s", name, clip(e.Err.Error(), 512))
}

// Stopped says, for the model, what ended the run's work when it cut a
// call: its quiet clock (quiet), or its cancellation.
func Stopped(quiet bool) string {
	if quiet {
		return "the run stalled (its quiet clock ran out)"
	}
	return "the run was cancelled"
}

// ReconcileState is the state a reconcile record says: the last state a
// status ask said, said, or unreachable when none was answered.
func ReconcileState(said cancel.State) string {
	if said == "" {
		return "unreachable"
	}
	return string(said)
}

// ReconcileWhy says why the reconciliation that cmd ended left the call
// an orphan, as [cancel.Reconcile] words it: ansErr, the last status
// ask's error; said, the last state a status said; stopped, what ended
// the run's work.
func ReconcileWhy(cmd CallCommand, said cancel.State, ansErr, stopped error) error {
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
		err = stopped
	}
	if said == cancel.Running {
		return fmt.Errorf("%w after %d asks: %w", cancel.ErrStillRunning, cmd.Asks, err)
	}
	return err
}

// NotJournaled says, for the model and the orphan record, why an orphan
// is in no journal, err being the journal's failure; "" when it is in one.
func NotJournaled(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, errNoJournal):
		return "no orphan journal is configured"
	}
	return "the orphan journal could not be written"
}

// CancelStateOf is how a cancel that returned err stands, as its
// cancel_sent record says it: accepted (nil), unknown (the tool did not
// know the call: 404), sent (no answer will come: [cancel.ErrNoAnswer]),
// or failed.
func CancelStateOf(err error) trace.CancelState {
	switch {
	case err == nil:
		return trace.CancelStateAccepted
	case errors.Is(err, cancel.ErrUnknownCall):
		return trace.CancelStateUnknown
	case errors.Is(err, cancel.ErrNoAnswer):
		return trace.CancelStateSent
	}
	return trace.CancelStateFailed
}

// Said is what a call's attempts, status asks and cancels said, as its
// host read them: what [Ending] writes the call's end from.
type Said struct {
	Tool string
	Kind string
	Key  cancel.Key

	// Last is how the last attempt failed; nil when it succeeded or none
	// was made. Failure is Last in the model's words ([Describe]).
	Last    *trace.AttemptError
	Failure string
	// Output and CutShort are the last attempt's; StatusOutput is what a
	// status that said done carried.
	Output       json.RawMessage
	CutShort     bool
	StatusOutput json.RawMessage

	// CancelOut reports that the cancel of the last cut attempt went out;
	// Cancel is its answer as it stands when the call ends, "" while none
	// came. A cancel answered later leaves the words saying what was
	// known (issue 18): the run's in_flight follows its trace.
	CancelOut bool
	Cancel    trace.CancelState

	// Stopped is what ended the run's work, for a call its end cut
	// (EndRunEnded); StoppedOutcome is how, for one it cut before any
	// attempt.
	Stopped        error
	StoppedOutcome trace.Outcome

	// Orphan is the orphan as its host journaled it (EndOrphan), and
	// Unjournaled says, for the model, why it is in no journal when it
	// is not.
	Orphan      *OrphanError
	Unjournaled string
}

// Ending is how the call ended, as the machine's CallDone command cmd
// says and s tells: the tool message ([Result.Content]), the call's
// outcome, state and cause, and through [Result.Landing] the landing's
// record of it. Both hosts end their calls with it, so that the words the
// model and the boundary read are written once (issue 25).
func Ending(cmd CallCommand, s Said) Result {
	res := Result{Tool: s.Tool, Key: s.Key, Attempts: cmd.N, State: cmd.State}
	switch cmd.End {
	case EndOK:
		res.Outcome, res.Output, res.CutShort, res.State = trace.OK, s.Output, s.CutShort, ""
		if cmd.Status == cancel.Done {
			res.Output, res.CutShort = s.StatusOutput, false
		}
		return res
	case EndFailed:
		return failed(res, s, "", s.Last)
	case EndRefused:
		if cmd.N == 0 {
			res.Key, res.Refused, res.Outcome, res.Err, res.Cause = "", true, trace.GaveUp, refusedMessage, cmd.Refused
			return res
		}
		return failed(res, s, "; no retry: "+refusedMessage, errors.Join(s.Last, cmd.Refused))
	case EndGaveUp:
		return failed(res, s, "; no retry: the next attempt would not fit in the time left",
			&trace.GaveUpError{Step: s.Kind, Delay: cmd.Delay, Last: s.Last})
	case EndRunEnded:
		if cmd.N == 0 {
			res.Key, res.Outcome, res.Err = "", s.StoppedOutcome, "not started: the run has ended"
			res.Cause = &trace.AttemptError{Step: s.Kind, Outcome: res.Outcome, Err: s.Stopped}
			return res
		}
		return failed(res, s, "; no retry: the run has ended", errors.Join(s.Last, s.Stopped))
	case EndStatusFailed:
		res.Outcome = trace.UpstreamError
		res.Err = s.Tool + " failed: its status says the call failed"
		res.Cause = &trace.AttemptError{Step: s.Kind, Attempt: cmd.N, Outcome: trace.UpstreamError,
			Err: &ToolError{Message: "status: failed"}}
		return res
	case EndNeverReceived:
		s.CancelOut = false
		return failed(res, s, "; it never reached the tool, and no attempts are left", s.Last)
	}
	// EndOrphan: a write whose outcome is unknown.
	res.State, res.Outcome, res.Cause = StateOrphaned, s.Last.Outcome, s.Orphan
	if s.CutShort {
		res.CutShort, res.Output = true, s.Output // what it said before the cut, which may tell
	}
	// The model is told "recorded" only when the journal holds it: a
	// write nobody will check later must not read as taken care of.
	if s.Orphan != nil && s.Orphan.Journaled {
		res.Err = fmt.Sprintf("%s: no answer in time, and whether it took effect is unknown; "+
			"it is recorded for reconciliation under key %s: do not repeat it", s.Tool, s.Key)
	} else {
		res.Err = fmt.Sprintf("%s: no answer in time, and whether it took effect is unknown; "+
			"it was NOT recorded for reconciliation (%s), so nothing will check it later: "+
			"do not repeat it; tell the user it may have happened, under key %s", s.Tool, s.Unjournaled, s.Key)
	}
	return res
}

// failed ends a call with its last attempt's failure; suffix says why no
// attempt follows, and cause is the Go error. A call left abandoned says
// how its cancel stands: a cancel accepted makes it cancelled.
func failed(res Result, s Said, suffix string, cause error) Result {
	res.Outcome, res.Cause, res.Err = s.Last.Outcome, cause, s.Failure+suffix
	if s.CutShort {
		res.CutShort, res.Output = true, s.Output
	}
	if res.State == StateAbandoned && s.Cancel == trace.CancelStateAccepted {
		res.State = StateCancelled
	}
	res.Cancelling = res.State == StateAbandoned && s.CancelOut && s.Cancel == ""
	switch {
	case res.State == StateCancelled:
		res.Err += "; it was cancelled"
	case res.State != StateAbandoned:
	case s.Cancel == trace.CancelStateSent:
		res.Err += "; a cancel was sent, which its tool does not answer, so it may still be running"
	case res.Cancelling:
		res.Err += "; a cancel was sent, with no answer yet, so it may still be running"
	case s.Cancel == trace.CancelStateUnknown:
		res.Err += "; a cancel was sent, and the tool did not know the call"
	case s.Cancel == trace.CancelStateFailed:
		res.Err += "; its cancel failed, so it may still be running"
	default:
		res.Err += "; it could not be cancelled and may still be running"
	}
	return res
}

// Landing is the call r as the landing record of step keeps it, kind
// being its tool's step kind. A call left unfinished by the run's end
// (its deadline, the quiet clock, a cancellation) was in flight; one cut
// by its own ceiling while the run went on failed, and the run knew it
// ([landing.StaysInFlight]). An orphaned write is always listed in
// flight: nobody knows yet whether it happened. A sub-agent's call (kind
// agent:NAME) that answered a partial result is done, with the cause its
// child landed on.
func (r Result) Landing(step int, kind string) landing.Call {
	c := landing.Call{Step: step, Tool: r.Tool, Key: string(r.Key)}
	switch {
	case landing.StaysInFlight(string(r.State), errors.Is(r.Cause, budget.ErrLeaseExpired)):
		c.Outcome, c.State = landing.Interrupted, string(r.State)
		if oe, ok := errors.AsType[*OrphanError](r.Cause); ok {
			// harness reconcile settles it only when the journal holds it
			// and names a way to ask its tool (issue 17).
			c.Unreachable = !oe.Journaled || !oe.Reachable
			c.Next = oe.Next
		}
	case r.Refused:
		c.Outcome, c.Summary = landing.Refused, oneLine(r.Err)
	case r.Err != "":
		c.Outcome, c.Summary = landing.Failed, oneLine(r.Err)
	default:
		c.Outcome, c.Summary = landing.Done, oneLine(outputText(r.Output))
		c.Landed = landedOf(kind, r.Output)
	}
	return c
}

// landedOf is the cause a sub-agent's child landed on, read from its
// labeled result, the call's output; empty when the call is not a
// sub-agent's or its child answered complete. A sub-agent that `harness
// serve` serves is of that kind too, and answers the same object.
func landedOf(kind string, output json.RawMessage) landing.Cause {
	if !strings.HasPrefix(kind, AgentKindPrefix) {
		return ""
	}
	var r struct {
		Status landing.Status `json:"status"`
		Cause  landing.Cause  `json:"cause"`
	}
	if json.Unmarshal(output, &r) != nil {
		return ""
	}
	return landing.Result{Status: r.Status, Cause: r.Cause}.Landed()
}

// outputText is a tool's output as a person reads it: a JSON string
// unquoted, anything else as sent.
func outputText(out json.RawMessage) string {
	var s string
	if json.Unmarshal(out, &s) == nil {
		return s
	}
	return string(out)
}

// maxSummary bounds a call's one-line summary in the landing record.
const maxSummary = 200

// oneLine is the first line of s, cut to maxSummary bytes on a rune
// boundary.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i]) + " …"
	}
	if len(s) <= maxSummary {
		return s
	}
	cut := maxSummary
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
