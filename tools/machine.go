package tools

import (
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/watchdog"
)

// A CallMachine holds the rules of one logical tool call (SPEC §2, §5), and
// nothing else: the lease each attempt asks for, the choice after each
// attempt, the backoff and its Retry-After, the reconciliation of a cut
// write by its key, the cancel of a cut attempt, the orphan, and the state
// the call ends in. It does no I/O, starts no goroutine, reads no clock
// and takes no lock: its host feeds it [CallEvent]s, each with the
// budget's figures at that moment, and performs the [CallCommand] each
// [CallMachine.Step] returns. [DriveCall] is the one loop that does so:
// [Registry.Call] performs its effects in process, and the Temporal
// workflow of temporal/durable with activities and one timer, so that the
// two hosts keep one set of rules (issue 25).
//
// The zero CallMachine is not usable; make one with [NewCallMachine]. A
// step does not allocate unless the budget refuses a lease.
type CallMachine struct {
	rules CallRules
	n     int  // attempts started
	asks  int  // status asks of the current reconciliation
	final bool // the last ask, clamped to the budget, has been scheduled
	// asking reports whether the machine reconciles: a sleep it asked for
	// is one between status asks.
	asking bool
	capped bool // the current attempt's lease was set by the ceiling
	last   Attempted
	state  State
	done   bool
}

// CallRules are what a call's rules need to know of its tool, fixed for
// the call.
type CallRules struct {
	Kind        string        // the step kind, named in a refusal
	Effect      Effect        // Read, or a write (anything else)
	MaxAttempts int           // the most attempts; zero: DefaultMaxAttempts
	Ceiling     time.Duration // the tool's ceiling; zero: none
	// Slice reports a sub-agent's call: its lease is a slice of the run's
	// time ([budget.SliceLeaseAt]) that holds back budget.Figures.Keep, and is
	// not refused below the kind's p50.
	Slice     bool
	CanCancel bool // the tool is a [cancel.Canceller] and its spec did not turn it off
	CanStatus bool // the tool is a [cancel.StatusReader]: a cut write is asked, never sent again
	// Backoff is the sleep policy between attempts and between status
	// asks. Its Rand is the machine's only source of randomness: a host
	// that must replay (a workflow) seeds it once.
	Backoff budget.Backoff
	// Silence is what the call's allowance of silence on the quiet clock
	// is computed from, as the call starts ([watchdog.Expected]; issue 27).
	Silence watchdog.Expected
}

// NewCallMachine returns the machine of one call under r.
func NewCallMachine(r CallRules) CallMachine {
	if r.MaxAttempts <= 0 {
		r.MaxAttempts = DefaultMaxAttempts
	}
	return CallMachine{rules: r}
}

// CallEventKind names what happened.
type CallEventKind uint8

const (
	// CallStarted begins the call: the machine asks for its first attempt.
	CallStarted CallEventKind = iota + 1
	// AttemptEnded: the attempt the machine asked for has ended, as
	// CallEvent.Attempt says.
	AttemptEnded
	// StatusAnswered: the status ask has been answered (Status), or could
	// not be (Unreachable).
	StatusAnswered
	// SleepOver: the sleep the machine asked for is over, or was cut by
	// the run's end (Figures.Ended).
	SleepOver
)

// A CallEvent is what the host tells the machine.
type CallEvent struct {
	Kind    CallEventKind
	Figures budget.Figures
	Attempt Attempted // AttemptEnded

	// Status is the state the tool's status said (StatusAnswered).
	// Unreachable reports that no answer could be read: the tool or its
	// status endpoint failed.
	Status      cancel.State `json:",omitempty"`
	Unreachable bool         `json:",omitempty"`
}

// Attempted is how one attempt ended, as its [Answer] said and its host
// classified it. The zero value of each field is the safe one.
type Attempted struct {
	OK bool `json:",omitempty"` // the attempt succeeded
	// Cut reports that the attempt's context ended it, its lease or the
	// run, before the tool answered.
	Cut bool `json:",omitempty"`
	// GaveUp reports that its outcome is gave_up: its lease ran out. A cut
	// that gave up is retried (a per-attempt timeout, SPEC §2) only when
	// the tool's ceiling, not the budget, set the lease.
	GaveUp   bool `json:",omitempty"`
	Answered bool `json:",omitempty"` // the tool said how it failed
	NotSent  bool `json:",omitempty"` // [Answer.NotSent]
	Stopped  bool `json:",omitempty"` // [Answer.Stopped]
	Retry    bool `json:",omitempty"` // the failure may be tried again, by the tool's word or SPEC §2

	// RetryAfter is what the attempt's response said about when to come
	// back, read at the time it arrived.
	RetryAfter budget.RetryAfter `json:",omitzero"`
}

// CallCommandKind names what the host is to do.
type CallCommandKind uint8

const (
	// CallAttempt: make attempt N with the call's key, on Lease (its
	// Deadline left for the host to set from its now), then send
	// AttemptEnded.
	CallAttempt CallCommandKind = iota + 1
	// CallSleep: sleep Delay.Sleep, a wait the run chose, so the quiet
	// clock is paused for it (SPEC §3), then send SleepOver. Reconciling
	// says it is a sleep between status asks (N is then the asks made).
	CallSleep
	// CallAsk: ask the tool the status of the call by its key, ask N, on
	// Lease, never sending the call again, then send StatusAnswered.
	CallAsk
	// CallDone: the call has ended as End says; nothing follows.
	CallDone
)

// A CallCommand is what the machine asks of its host. Cancel may come with
// any kind: first send the cancel of the attempt that just ended cut, on
// CancelLease, and do not wait for its answer (SPEC §5: cancelling is not
// waiting), not even before an attempt that follows under the same key
// (issue 25: a hung cancel must not hold the call).
type CallCommand struct {
	Kind CallCommandKind
	// N is the attempt (CallAttempt), the ask (CallAsk, and CallSleep
	// when Reconciling), the attempt before the sleep (CallSleep), or
	// the attempts made (CallDone).
	N     int
	Lease budget.Lease `json:",omitzero"` // CallAttempt, CallAsk
	// Delay is the sleep (CallSleep), or the one that gave up (CallDone
	// with End EndGaveUp, or EndOrphan after a running status).
	Delay       budget.Delay `json:",omitzero"`
	Reconciling bool         `json:",omitempty"`

	Cancel      bool         `json:",omitempty"`
	CancelLease budget.Lease `json:",omitzero"` // a landing lease: cleanup may spend the reserve

	End   CallEnd `json:",omitempty"` // CallDone
	State State   `json:",omitempty"` // CallDone: where the call is left; "" when it finished
	// Refused is the refusal that ended the call (EndRefused, or
	// EndOrphan when there was no time to ask), nil otherwise.
	Refused *budget.RefusedError `json:",omitempty"`
	// Status is the last state a status ask said (after reconciling);
	// Unreachable that one could not be read; Ended that the run's end
	// cut the call (EndRunEnded, or an orphan left by it).
	Status      cancel.State `json:",omitempty"`
	Unreachable bool         `json:",omitempty"`
	Ended       bool         `json:",omitempty"`

	// Reconciled reports that the reconciliation of a cut write ended
	// with this command, after Asks status asks (none when the budget
	// refused the first): the host records it once, with the last state a
	// status said and, for an orphan, [ReconcileWhy].
	Reconciled bool `json:",omitempty"`
	Asks       int  `json:",omitempty"`
}

// BackoffN is the number the record of c's sleep, or of its give-up, carries:
// the attempt it follows or, in a reconciliation, the ask; a
// reconciliation's give-up counts the asks made, as a sleep between asks
// does (issue 25: both hosts number it so).
func (c CallCommand) BackoffN() int {
	if c.Reconciling && c.Kind == CallDone {
		return c.Asks
	}
	return c.N
}

// CallEnd says how a call ended.
type CallEnd uint8

const (
	// EndOK: the call's result is the last attempt's output, or its
	// status's output (Status done) for a reconciled write.
	EndOK CallEnd = iota + 1
	// EndFailed: the last attempt failed and none follows.
	EndFailed
	// EndRefused: the budget refused attempt N+1 (Refused); with N zero
	// the call was not started.
	EndRefused
	// EndGaveUp: the backoff before the next attempt would outlast the
	// budget (Delay): the give-up's cause is the budget, not the tool.
	EndGaveUp
	// EndRunEnded: the run ended before the first attempt (N zero) or
	// during a backoff sleep.
	EndRunEnded
	// EndOrphan: a write whose outcome stays unknown; journal it.
	EndOrphan
	// EndStatusFailed: the write's status says the call failed.
	EndStatusFailed
	// EndNeverReceived: the write's status says it never reached the tool,
	// and no attempts are left to send it again.
	EndNeverReceived
)

var endNames = [...]string{"", "ok", "failed", "refused", "gave_up", "run_ended", "orphan", "status_failed", "never_received"}

func (e CallEnd) String() string {
	if int(e) < len(endNames) {
		return endNames[e]
	}
	return "CallEnd(?)"
}

// Step feeds e to the machine and returns what the host does next. After
// a CallDone every step returns the same CallDone's kind with End zero.
func (m *CallMachine) Step(e CallEvent) CallCommand {
	if m.done {
		return CallCommand{Kind: CallDone, N: m.n, State: m.state}
	}
	f := e.Figures
	switch e.Kind {
	case CallStarted:
		if f.Ended {
			return m.end(CallCommand{End: EndRunEnded, Ended: true})
		}
		return m.attempt(f, CallCommand{})
	case AttemptEnded:
		m.last = e.Attempt
		return m.decide(f)
	case StatusAnswered:
		return m.answered(e)
	case SleepOver:
		switch {
		case m.asking && f.Ended:
			return m.orphan(CallCommand{Status: cancel.Running, Ended: true})
		case m.asking:
			return m.ask(f, CallCommand{})
		case f.Ended:
			return m.end(CallCommand{End: EndRunEnded, State: m.state, Ended: true})
		}
		return m.attempt(f, CallCommand{})
	}
	return CallCommand{}
}

// end finishes the call with c.
func (m *CallMachine) end(c CallCommand) CallCommand {
	m.settle(&c)
	m.done = true
	m.state = c.State
	c.Kind, c.N = CallDone, m.n
	return c
}

// attempt asks for the next attempt's lease: a slice for a sub-agent, a
// work lease under the ceiling and the kind's p50 for any other tool.
func (m *CallMachine) attempt(f budget.Figures, c CallCommand) CallCommand {
	var l budget.Lease
	var refused *budget.RefusedError
	if m.rules.Slice {
		l, refused = budget.SliceLeaseAt(f.Remaining, f.Reserve, f.Floor, m.rules.Ceiling, f.Keep)
	} else {
		l, refused = budget.LeaseAt(f.Remaining, f.Reserve, f.Floor, m.rules.Ceiling, f.P50, false)
	}
	if refused != nil {
		if m.rules.Kind != "" {
			refused.Step = m.rules.Kind
		}
		c.End, c.Refused, c.State = EndRefused, refused, m.state
		return m.end(c)
	}
	m.n++
	m.capped = l.Capped
	c.Kind, c.N, c.Lease = CallAttempt, m.n, l
	return c
}

// decide chooses what follows an attempt:
//
//   - a success is the result;
//   - a cut attempt whose work may still be running is cancelled, when the
//     tool can be;
//   - a write that may have happened (cut, or sent and not answered) is
//     never sent again blindly: it is reconciled when the tool can say how
//     it went and the run goes on, and is an orphan otherwise;
//   - anything else is retried only if it is a read, or a write that
//     never reached its tool (NotSent: nothing of it can have happened, as
//     when its status says never received), the failure is retryable,
//     attempts are left and the run goes on, with the same key; else it
//     fails, leaving a cut call cancelled (its work stopped, or a cancel
//     sent that the tool may accept) or abandoned (a read we stopped
//     waiting for that nothing could stop).
func (m *CallMachine) decide(f budget.Figures) CallCommand {
	a := m.last
	if a.OK {
		return m.end(CallCommand{End: EndOK})
	}
	sent := !a.NotSent
	var c CallCommand
	if a.Cut && sent && !a.Stopped && m.rules.CanCancel {
		c.Cancel = true
		c.CancelLease, _ = budget.LeaseAt(f.Remaining, f.Reserve, f.Floor, cancel.CancelLease, 0, true)
	}
	if m.rules.Effect != Read && sent && (a.Cut || !a.Answered) {
		if f.Ended || !m.rules.CanStatus {
			c.Ended = f.Ended
			return m.orphan(c)
		}
		m.asking, m.asks, m.final = true, 0, false
		return m.ask(f, c)
	}
	m.state = ""
	if a.Cut && sent {
		m.state = StateAbandoned
		if a.Stopped {
			m.state = StateCancelled
		}
	}
	retry := a.Retry
	if a.Cut && a.GaveUp {
		retry = m.capped
	}
	if (m.rules.Effect == Read || !sent) && retry && m.n < m.rules.MaxAttempts && !f.Ended {
		return m.backoff(f, c)
	}
	c.End, c.State = EndFailed, m.state
	return m.end(c)
}

// backoff asks for the sleep before the next attempt, or gives up when it
// would outlast the budget.
func (m *CallMachine) backoff(f budget.Figures, c CallCommand) CallCommand {
	d := m.rules.Backoff.Next(m.n, m.last.RetryAfter, f.Available(), f.Floor)
	c.Delay = d
	if d.GiveUp {
		c.End, c.State = EndGaveUp, m.state
		return m.end(c)
	}
	c.Kind, c.N = CallSleep, m.n
	return c
}

// ask asks the status of the cut write, on a work lease of at most
// cancel.StatusLease; no time to ask makes an orphan, since a run inside
// its reserve is landing and does no more work.
func (m *CallMachine) ask(f budget.Figures, c CallCommand) CallCommand {
	l, refused := budget.LeaseAt(f.Remaining, f.Reserve, f.Floor, cancel.StatusLease, 0, false)
	if refused != nil {
		c.Refused = refused
		if m.asks > 0 {
			c.Status = cancel.Running
		}
		return m.orphan(c)
	}
	m.asks++
	c.Kind, c.N, c.Lease, c.Reconciling = CallAsk, m.asks, l, true
	return c
}

// answered chooses what follows a status answer (SPEC §5): done is the
// result; failed a failed call; never received is sent again with the
// same key, after a backoff, if attempts are left (the tool has no record
// of it, so it cannot happen twice); running is asked again after a
// backoff on the budget, and when the next sleep would outlast it, once
// more as late as leaves [cancel.FinalAsk]; anything else is an orphan.
func (m *CallMachine) answered(e CallEvent) CallCommand {
	f := e.Figures
	c := CallCommand{Status: e.Status}
	if e.Unreachable {
		c.Unreachable = true
		return m.orphan(c)
	}
	switch e.Status {
	case cancel.Done:
		c.End = EndOK
		return m.end(c)
	case cancel.Failed:
		c.End = EndStatusFailed
		return m.end(c)
	case cancel.NeverReceived:
		m.settle(&c)
		m.state = ""
		if m.n < m.rules.MaxAttempts {
			return m.backoff(f, c)
		}
		c.End = EndNeverReceived
		return m.end(c)
	case cancel.Running:
	default:
		// A reader that answered nothing usable has not said how the
		// call went: its outcome stays unknown.
		c.Unreachable = true
		return m.orphan(c)
	}
	if f.Ended {
		c.Ended = true
		return m.orphan(c)
	}
	d := m.rules.Backoff.Next(m.asks, budget.RetryAfter{}, f.Available(), f.Floor)
	if d.GiveUp && !m.final {
		// The doubling sleep would outlast the budget, but a shorter one
		// need not: ask once more as late as still leaves FinalAsk for
		// the answer, so that a call settling in the time left is not
		// made an orphan for the backoff's sake.
		if sleep := f.Available() - f.Floor - cancel.FinalAsk; sleep > 0 {
			d, m.final = budget.Delay{Sleep: sleep, Source: budget.FromJitter}, true
		}
	}
	c.Delay, c.N, c.Reconciling = d, m.asks, true
	if d.GiveUp {
		return m.orphan(c)
	}
	c.Kind = CallSleep
	return c
}

// settle marks c as the end of the reconciliation under way, if any.
func (m *CallMachine) settle(c *CallCommand) {
	if m.asking {
		c.Reconciled, c.Asks, m.asking = true, m.asks, false
	}
}

// orphan ends the call as an orphan: a write whose outcome is unknown.
func (m *CallMachine) orphan(c CallCommand) CallCommand {
	c.End, c.State = EndOrphan, StateOrphaned
	return m.end(c)
}

var kindNames = [...]string{"", "CallAttempt", "CallSleep", "CallAsk", "CallDone"}

func (k CallCommandKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "CallCommandKind(?)"
}
