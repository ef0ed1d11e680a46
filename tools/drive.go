package tools

import (
	"encoding/json"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

// CallEffects are what a host does for [DriveCall]: the I/O of one call
// and its records, each the host's way. C is the host's context
// (context.Context in process, workflow.Context in a workflow). A host
// implements them on a pointer to the call's state, so that driving does
// not allocate.
type CallEffects[C any] interface {
	Figures(ctx C) budget.Figures // the run's budget now

	// Attempt makes attempt n with the call's key on lease (its Deadline
	// the host's to set), records it, and says how it ended. A cancel
	// sent for an earlier attempt no longer speaks for the call.
	Attempt(ctx C, n int, lease budget.Lease) AttemptSaid

	// Backoff records the sleep cmd carries, before an attempt or, when
	// cmd.Reconciling, an ask; unless it gave up (a CallDone's), it
	// sleeps it, the quiet clock paused as landing.Backoff says, until it
	// is over or the run's work has ended.
	Backoff(ctx C, cmd CallCommand)

	// Ask asks the tool the status of the call by its key on lease; an
	// error says no answer was read.
	Ask(ctx C, lease budget.Lease) (cancel.Status, error)

	// Cancel sends the cancel of the attempt that just ended cut on lease,
	// and records it, without waiting for its answer (SPEC §5) where the
	// host waits for it later; Cancelled is how it stands as the call
	// ends: whether it went out, and its answer so far ("" while none).
	Cancel(ctx C, lease budget.Lease)
	Cancelled() (out bool, state trace.CancelState)

	Stopped(ctx C) (trace.Outcome, error) // what ended the run's work, and a call it cut

	// Refused, Reconciled and Orphan record how the call ended: attempt n
	// refused; a reconciliation's end ([ReconcileState], [ReconcileWhy]);
	// an orphan, journaled with why, which returns it and, when it is in
	// no journal, why not ([NotJournaled]).
	Refused(ctx C, n int, err *budget.RefusedError)
	Reconciled(ctx C, state string, asks int, why error)
	Orphan(ctx C, why error) (*OrphanError, string)

	Succeeded()                    // the call ended OK
	Heard(ctx C, e watchdog.Event) // for the quiet clock: a tool call issued, or a tool result

	// Begin tells the quiet clock of the call in flight, with its
	// allowance of silence, right after its tool call is heard
	// ([watchdog.Clock.Begin]); the host ends it with the call.
	Begin(ctx C, call watchdog.Call)
}

// AttemptSaid is how one attempt ended, as its host made and read it: what
// the machine is told, and what [Said] keeps of it: Last is how it failed
// (nil when it did not), Failure that in the model's words ([Describe]).
type AttemptSaid struct {
	Attempted
	Last     *trace.AttemptError
	Failure  string
	Output   json.RawMessage
	CutShort bool
}

// DriveCall drives the [CallMachine] of the call of tool with key under
// rules until it ends, performing its commands through fx, and returns the
// Result [Ending] writes: the one loop of both hosts (issue 25), in process
// ([Registry.Call]) and in the Temporal workflow of temporal/durable. It
// is plain sequential code, with no goroutine, clock, map or lock, so that
// a workflow runs it as it is. Both hosts' traces follow its order: for
// each command, the cancel it carries, then the end of a reconciliation (a
// give-up, then the reconcile record), then the command; the quiet clock
// hears a tool call before attempt 1, and a tool result after the records
// of the end of a call that made an attempt.
func DriveCall[C any](ctx C, fx CallEffects[C], rules CallRules, tool string, key cancel.Key) Result {
	d := driver[C]{fx: fx, m: NewCallMachine(rules), s: Said{Tool: tool, Kind: rules.Kind, Key: key}}
	cmd := d.m.Step(CallEvent{Kind: CallStarted, Figures: fx.Figures(ctx)})
	for {
		if cmd.Cancel {
			fx.Cancel(ctx, cmd.CancelLease)
		}
		if cmd.Reconciled {
			d.reconciled(ctx, cmd)
		}
		if cmd.Kind == CallDone {
			return d.end(ctx, cmd)
		}
		cmd = d.m.Step(d.perform(ctx, cmd))
	}
}

// driver is the state of [DriveCall]: its machine, and what the call said.
type driver[C any] struct {
	fx     CallEffects[C]
	m      CallMachine
	s      Said
	answer cancel.Status // the last status ask's answer
	said   cancel.State  // the last state a status ask said
	ansErr error         // the last status ask's error
}

// perform does cmd, an attempt, a sleep or a status ask, and returns what
// came of it for the machine, keeping what the call said.
func (d *driver[C]) perform(ctx C, cmd CallCommand) CallEvent {
	fx := d.fx
	switch cmd.Kind {
	case CallAttempt:
		if cmd.N == 1 {
			fx.Heard(ctx, watchdog.ToolCall)
			fx.Begin(ctx, d.call(cmd))
		}
		a := fx.Attempt(ctx, cmd.N, cmd.Lease)
		d.s.Last, d.s.Failure, d.s.Output, d.s.CutShort = a.Last, a.Failure, a.Output, a.CutShort
		return CallEvent{Kind: AttemptEnded, Figures: fx.Figures(ctx), Attempt: a.Attempted}
	case CallSleep:
		fx.Backoff(ctx, cmd) // the run's end is read off the figures
		return CallEvent{Kind: SleepOver, Figures: fx.Figures(ctx)}
	}
	if cmd.N == 1 { // CallAsk, of a new reconciliation
		d.said, d.ansErr = "", nil
	}
	d.answer, d.ansErr = fx.Ask(ctx, cmd.Lease)
	if d.ansErr == nil {
		switch d.answer.State {
		case cancel.Done, cancel.Failed, cancel.NeverReceived, cancel.Running:
			d.said = d.answer.State
		}
	}
	return CallEvent{Kind: StatusAnswered, Figures: fx.Figures(ctx), Status: d.answer.State, Unreachable: d.ansErr != nil}
}

// call is the call in flight as the quiet clock knows it: its allowance
// of silence is computed once, at its first attempt, capped by that
// attempt's lease and the tool's ceiling (issue 27).
func (d *driver[C]) call(cmd CallCommand) watchdog.Call {
	r := &d.m.rules
	e, src := r.Silence.Allowance(r.Ceiling, cmd.Lease.Granted)
	return watchdog.Call{Key: string(d.s.Key), Step: r.Kind, Allowance: e, Source: src}
}

// reconciled records the end of the reconciliation cmd closes: a give-up
// that ended it, then what the status said and, for an orphan, why.
func (d *driver[C]) reconciled(ctx C, cmd CallCommand) {
	if cmd.Kind == CallDone && cmd.Reconciling && cmd.Delay.GiveUp {
		d.fx.Backoff(ctx, cmd)
	}
	var why error
	if cmd.End == EndOrphan {
		_, stopped := d.fx.Stopped(ctx)
		why = ReconcileWhy(cmd, d.said, d.ansErr, stopped)
	}
	d.fx.Reconciled(ctx, ReconcileState(d.said), cmd.Asks, why)
}

// end records how the machine ended the call (cmd), journals an orphan,
// and writes the call's Result.
func (d *driver[C]) end(ctx C, cmd CallCommand) Result {
	fx, s := d.fx, &d.s
	s.StatusOutput = d.answer.Output
	s.CancelOut, s.Cancel = fx.Cancelled()
	switch cmd.End {
	case EndOK:
		fx.Succeeded()
	case EndRefused:
		fx.Refused(ctx, cmd.N+1, cmd.Refused)
	case EndGaveUp:
		fx.Backoff(ctx, cmd) // records the give-up, sleeps nothing
	case EndRunEnded:
		s.StoppedOutcome, s.Stopped = fx.Stopped(ctx)
	case EndOrphan:
		s.Orphan, s.Unjournaled = fx.Orphan(ctx, d.orphanWhy(ctx, cmd))
	}
	if cmd.N > 0 {
		fx.Heard(ctx, watchdog.ToolResult) // at the call's end, not an attempt's (issue 25)
	}
	return Ending(cmd, *s)
}

// orphanWhy is why the call cmd ended is an orphan, for its journal entry:
// what its reconciliation left unknown when one was tried or cut short,
// else how its last attempt failed (an orphan always follows one that did).
func (d *driver[C]) orphanWhy(ctx C, cmd CallCommand) error {
	if cmd.Reconciling || cmd.Refused != nil || cmd.Status != "" || cmd.Unreachable || (cmd.Ended && d.said != "") {
		_, stopped := d.fx.Stopped(ctx)
		return ReconcileWhy(cmd, d.said, d.ansErr, stopped)
	}
	return d.s.Last
}
