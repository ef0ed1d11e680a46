package model

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

// A TurnMachine holds the rules of one model turn (SPEC §2, §3), and
// nothing else: the lease each attempt asks for, the refusal before any
// I/O, which failures are tried again and how often, the backoff and its
// Retry-After, and how the turn ended as the run's landing reads it (its
// cause, the words of its failure, whether the landing call is sent). It
// does no I/O, starts no goroutine, reads no clock and takes no lock: its
// host feeds it [TurnEvent]s, each with the budget's figures at that
// moment, and performs the [TurnCommand] each [TurnMachine.Step] returns.
// [Client] drives it in process, as does the middleware of an embedded
// loop (harness.ClientOptions), and the Temporal workflow of
// temporal/durable with activities and one timer, so that the hosts keep
// one set of rules (issue 25), as [tools.CallMachine] does for a tool
// call.
//
// The zero TurnMachine is not usable; make one with [NewTurnMachine]. A
// step does not allocate unless the budget refuses a lease or the turn
// ends failed.
type TurnMachine struct {
	rules  TurnRules
	n      int  // attempts started
	capped bool // the current attempt's lease was set by the ceiling
	// What the turn's end says of the last attempt: its outcome, its
	// failure for a person, whether its server refused the run, and how
	// it went unanswered (landing.Unanswered), whether mute. Only these
	// are kept, not the whole TurnAttempted: the machine lives on the
	// stack of a run that waits on a stream (see # Stack at Client.call).
	outcome    trace.Outcome
	failure    string
	refused    bool
	unanswered string
	mute       bool
	done       bool
}

// TurnRules are what a turn's rules need to know, fixed for the turn.
type TurnRules struct {
	MaxAttempts int           // the most attempts, the first included; zero: DefaultMaxAttempts
	Ceiling     time.Duration // bounds each attempt; zero: only the budget does
	// Landing reports the landing call: one attempt on a landing lease,
	// which may spend the reserve, never retried (SPEC §3); it is no step,
	// so it hears no model call and says nothing of the boundary.
	Landing bool
	// Backoff is the sleep policy between attempts. Its Rand is the
	// machine's only source of randomness: a host that must replay (a
	// workflow) seeds it once.
	Backoff budget.Backoff
	// Silence is what the turn's allowance of silence on the quiet clock
	// is computed from, as the turn starts (issue 27).
	Silence watchdog.Expected
}

// NewTurnMachine returns the machine of one turn under r.
func NewTurnMachine(r TurnRules) TurnMachine {
	if r.MaxAttempts <= 0 {
		r.MaxAttempts = DefaultMaxAttempts
	}
	return TurnMachine{rules: r}
}

// TurnEventKind names what happened.
type TurnEventKind uint8

const (
	// TurnStarted begins the turn: the machine asks for its first attempt.
	TurnStarted TurnEventKind = iota + 1
	// TurnAttemptEnded: the attempt the machine asked for has ended, as
	// TurnEvent.Attempt says.
	TurnAttemptEnded
	// TurnSleepOver: the sleep the machine asked for is over, or was cut
	// by the turn's context (Figures.Ended).
	TurnSleepOver
)

// A TurnEvent is what the host tells the machine.
type TurnEvent struct {
	Kind    TurnEventKind
	Figures budget.Figures
	Attempt TurnAttempted `json:",omitzero"` // TurnAttemptEnded
}

// TurnAttempted is how one attempt ended, as its host classified it
// ([Classify], or the host's own cut). The zero value of each field but
// Outcome is the safe one.
type TurnAttempted struct {
	Outcome trace.Outcome // trace.OK, or how the attempt failed
	Status  int           `json:",omitempty"` // the HTTP status of an error answer
	Retry   bool          `json:",omitempty"` // SPEC §2 allows another attempt (trace.Retryable)
	// RetryAfter is what the answer said about when to come back, read
	// at the time it arrived.
	RetryAfter budget.RetryAfter `json:",omitzero"`
	Refused    bool              `json:",omitempty"` // the server refused the run itself ([Refused])
	Failure    string            `json:",omitempty"` // the failure for a person ([Describe])
	// What the attempt's stream carried before it ended, and how long it
	// took, for the boundary of one cut before its server finished
	// (landing.Unanswered) and for the model's latency.
	Chunks     int64         `json:",omitempty"`
	Keepalives int64         `json:",omitempty"`
	Took       time.Duration `json:",omitempty"`
}

// Attempted reads err, how a model attempt failed, as the machine takes
// it: the outcome, status and verdict on retrying of its
// [*trace.AttemptError] ([Classify]), or, for a lease the budget refused,
// gave up; the failure for a person ([Describe]); whether the server
// refused the run ([Refused]); and the Retry-After its answer carried,
// read at now. A Retry-After it could not use is the error, for the
// backoff record. Took and what the stream carried are the host's to
// fill in. Every host reads its attempts through it (issue 25).
func Attempted(err error, now time.Time) (TurnAttempted, error) {
	a := TurnAttempted{Outcome: trace.UpstreamError, Failure: Describe(err), Refused: Refused(err)}
	ae, ok := errors.AsType[*trace.AttemptError](err)
	if !ok {
		// The run's time, not the model's failure: a refusal, or the
		// deadline a model of the caller's own met (issue 25).
		if errors.Is(err, budget.ErrRefused) || errors.Is(err, budget.ErrDeadline) {
			a.Outcome = trace.GaveUp
		}
		return a, nil
	}
	a.Outcome, a.Status, a.Retry = ae.Outcome, ae.Status, trace.Retryable(ae)
	var raErr error
	a.RetryAfter, raErr = budget.ReadRetryAfter(ae.Header, now)
	return a, raErr
}

// ClockKey is the key a call's progress is heard under on the quiet
// clock, by both hosts: a tool call's idempotency key; a model call's,
// which has none in the trace (its records' key is ""), the model's kind,
// the key of the call the turn begins (TurnCommand.Begin) and ends.
func ClockKey(step, key string) string {
	if key == "" && step == Kind {
		return Kind
	}
	return key
}

// TurnCommandKind names what the host is to do.
type TurnCommandKind uint8

const (
	// TurnAttempt: make attempt N on Lease (its Deadline left for the
	// host to set from its now), then send TurnAttemptEnded.
	TurnAttempt TurnCommandKind = iota + 1
	// TurnSleep: record the backoff Delay after attempt N and sleep it, a
	// wait the run chose, so the quiet clock is paused for it (SPEC §3),
	// then send TurnSleepOver.
	TurnSleep
	// TurnDone: the turn has ended as the command says; nothing follows.
	TurnDone
)

// A TurnCommand is what the machine asks of its host. Heard, with any
// kind, is an event the quiet clock hears now: a model request at the
// turn's start (once per turn, SPEC §3), a model message when it answered.
type TurnCommand struct {
	Kind  TurnCommandKind
	N     int              // the attempt (TurnAttempt), the one before the sleep (TurnSleep), the attempts made (TurnDone)
	Lease budget.Lease     `json:",omitzero"` // TurnAttempt
	Delay budget.Delay     `json:",omitzero"` // TurnSleep; TurnDone when the backoff gave up (Delay.GiveUp)
	Heard watchdog.Event   `json:",omitempty"`
	End   landing.ModelEnd `json:",omitzero"` // TurnDone: what the landing call rule reads (landing.ModelEnd.Call)
	// Begin is, with a turn's first attempt, the model call in flight the
	// quiet clock is told of, held once its server answers, for its
	// allowance from the turn's start ([watchdog.Clock.Begin], issue 27);
	// the host ends it with the turn.
	Begin watchdog.Call `json:",omitzero"`

	// OK reports a turn that answered (TurnDone): Took is its attempt's
	// duration, which informs the model's latency estimate.
	OK   bool          `json:",omitempty"`
	Took time.Duration `json:",omitempty"`
	// Outcome is the last attempt's, or trace.GaveUp when the budget
	// could not afford the wait before another (TurnDone, not OK).
	Outcome trace.Outcome `json:",omitempty"`
	// Refused is the refusal that ended the turn before attempt N+1; with
	// N zero nothing was sent.
	Refused *budget.RefusedError `json:",omitempty"`
	// RunEnded reports that the turn's context ended during a backoff
	// sleep: the run's end names why.
	RunEnded bool `json:",omitempty"`
	// Cause is why a failed turn lands the run, when the run itself has
	// not ended (which then names it): the budget (refused, gave up, an
	// attempt cut by the run's time) or the model (upstream); "" after
	// RunEnded, and for the landing call.
	Cause landing.Cause `json:",omitempty"`
	// Failure says, for the boundary, what stopped the run when the cause
	// alone would mislead ("" when Unanswered says it, or nothing need
	// be said); Doing, for a turn refused before anything was sent, that
	// there was no time for one (landing.Record.Doing); Unanswered how
	// the last attempt went unanswered (landing.Unanswered).
	Failure    string `json:",omitempty"`
	Doing      string `json:",omitempty"`
	Unanswered string `json:",omitempty"`
}

// Step feeds e to the machine and returns what the host does next. After
// a TurnDone every step returns a TurnDone with only N set.
func (m *TurnMachine) Step(e TurnEvent) TurnCommand {
	if m.done {
		return TurnCommand{Kind: TurnDone, N: m.n}
	}
	f := e.Figures
	switch e.Kind {
	case TurnStarted:
		c := m.attempt(f)
		if !m.rules.Landing {
			c.Heard = watchdog.ModelCall
			if c.Kind == TurnAttempt {
				e, src := m.rules.Silence.Allowance(m.rules.Ceiling, c.Lease.Granted)
				c.Begin = watchdog.Call{Key: Kind, Step: Kind, Allowance: e, Source: src, AtHeaders: true}
			}
		}
		return c
	case TurnAttemptEnded:
		return m.decide(f, e.Attempt)
	case TurnSleepOver:
		if f.Ended {
			return m.failed(f, TurnCommand{RunEnded: true})
		}
		return m.attempt(f)
	}
	return TurnCommand{}
}

// attempt asks for the next attempt's lease: a work lease under the
// ceiling and the model's p50, or for the landing call a landing lease.
func (m *TurnMachine) attempt(f budget.Figures) TurnCommand {
	l, refused := budget.LeaseAt(f.Remaining, f.Reserve, f.Floor, m.rules.Ceiling, f.P50, m.rules.Landing)
	if refused != nil {
		refused.Step = Kind
		return m.failed(f, TurnCommand{Refused: refused})
	}
	m.n++
	m.capped = l.Capped
	return TurnCommand{Kind: TurnAttempt, N: m.n, Lease: l}
}

// decide chooses what follows an attempt: an answer ends the turn; a
// failure SPEC §2 retries is tried again after the backoff the budget
// allows, while attempts are left and the turn's context has not ended;
// the landing call is never tried again.
func (m *TurnMachine) decide(f budget.Figures, a TurnAttempted) TurnCommand {
	m.outcome, m.failure, m.refused = a.Outcome, a.Failure, a.Refused
	if !m.rules.Landing {
		m.unanswered, m.mute = landing.Unanswered(trace.Attempt{Outcome: a.Outcome, Status: a.Status,
			Chunks: a.Chunks, Keepalives: a.Keepalives, End: time.Time{}.Add(a.Took)})
	}
	if a.Outcome == trace.OK {
		m.done = true
		return TurnCommand{Kind: TurnDone, N: m.n, OK: true, Took: a.Took, Outcome: trace.OK, Heard: watchdog.ModelMessage}
	}
	if m.rules.Landing || !a.Retry || m.n >= m.rules.MaxAttempts || f.Ended {
		return m.failed(f, TurnCommand{})
	}
	d := m.rules.Backoff.Next(m.n, a.RetryAfter, f.Remaining-f.Reserve, f.Floor)
	if d.GiveUp {
		return m.failed(f, TurnCommand{Delay: d})
	}
	return TurnCommand{Kind: TurnSleep, N: m.n, Delay: d}
}

// failed ends the turn unanswered, and says how the run that lands on it
// names it, by the rules of harness.CauseOf and the harness's boundary.
func (m *TurnMachine) failed(f budget.Figures, c TurnCommand) TurnCommand {
	m.done = true
	c.Kind, c.N = TurnDone, m.n
	if m.n == 0 {
		if c.Refused != nil && !m.rules.Landing {
			// Nothing was sent: the boundary says there was no time for a
			// turn, and why.
			c.Cause, c.Doing = landing.CauseBudget, landing.NoModelTurn(c.Refused)
		}
		return c
	}
	c.Outcome, c.Unanswered = m.outcome, m.unanswered
	c.End = landing.ModelEnd{Refused: m.refused, Mute: m.mute}
	// An attempt we ended (our lease, the quiet clock, a cancellation) is
	// named by what its stream carried, Unanswered; a server's failure by
	// its own words.
	cut := m.outcome == trace.GaveUp || m.outcome == trace.Quiet || m.outcome == trace.Cancelled
	left := f.Remaining - f.Reserve // what a retry's work lease could have had, before the reserve
	switch {
	case c.Delay.GiveUp:
		c.Outcome, c.Cause = trace.GaveUp, landing.CauseBudget
		switch {
		case c.Delay.Source == budget.FromRetryAfter:
			// The server asked for a wait the run cannot afford: the
			// landing call would be answered the same. A Sleep of zero is
			// a wait too long to be meant (Backoff.Next).
			c.End.RetryAfter = cmp.Or(c.Delay.Sleep, budget.MaxRetryAfter)
			c.Failure = landing.RetryAfterWords(c.Delay.Sleep, left)
		case !cut:
			c.Failure = landing.GaveUpWords(m.failure, left)
		}
	case c.Refused != nil:
		c.Cause = landing.CauseBudget
		if !cut {
			c.Failure = NoRetryWords(m.failure, c.Refused)
		}
	case c.RunEnded:
		// The run's end names the cause, and what the attempt carried.
	case m.outcome == trace.GaveUp && !m.capped:
		// Cut by the run's time, not by a ceiling of its own: the time
		// ran out, the model did not fail.
		c.Cause = landing.CauseBudget
	default:
		c.Cause, c.Failure = landing.CauseUpstream, m.failure
	}
	return c
}

// NoRetryWords says, for the boundary, why a run stopped after its model
// failed, failed being that failure for a person ([Describe]), when the
// budget refused the next attempt with re.
func NoRetryWords(failed string, re *budget.RefusedError) string {
	return fmt.Sprintf("the model failed (%s), and there was no time for another attempt: %s", failed, landing.RefusedWords(re))
}

var turnKindNames = [...]string{"", "TurnAttempt", "TurnSleep", "TurnDone"}

func (k TurnCommandKind) String() string {
	if int(k) < len(turnKindNames) {
		return turnKindNames[k]
	}
	return "TurnCommandKind(?)"
}
