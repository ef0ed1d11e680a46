package landing

import (
	"cmp"
	"strings"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/trace"
)

// The landing and when to land, as pure functions over plain data: when a
// run's loop must stop and with which cause ([MustLand], [TurnCause]),
// whether the landing call is sent, on which lease and with which prompt
// ([Plan]), the words of how it went ([LandCommand.Landed]), and the
// figures every result carries ([Finish]). Time is passed in as figures
// read off the host's clock. The harness's Session and the Temporal
// workflow of temporal/durable both perform what these say, and hold no
// copy of them (issue 25).

// Loop is what a run's loop knows of itself when it asks [MustLand].
type Loop struct {
	// Ended is why the run's work ended before the loop asked: its
	// quiet clock ([CauseQuiet]), its wall ([CauseBudget]) or its caller
	// ([CauseCancelled]); "" while it goes on.
	Ended    Cause
	Phase    Phase // the ladder's phase now
	Steps    int   // the model turns made
	MaxSteps int
	// Repeats are the run's repeated tool calls so far (SPEC §3); at
	// MaxRepeats the run is stuck. MaxRepeats zero sets no limit.
	Repeats, MaxRepeats int
	// CostOut reports that the run's cost budget is in [Land]
	// ([CostPhase]): what is left of its cap is its landing's reserve.
	CostOut bool
}

// MustLand reports whether a run must stop working and land now, and
// with which cause: its work ended (Ended's cause), it repeated a call
// MaxRepeats times ([CauseStuck]: the more telling cause, were its time
// or its steps running out too), its cost budget is down to its reserve
// ([CauseCost]: nothing more can be paid for, whatever time is left), the
// ladder is in [Land] ([CauseBudget]), or MaxSteps turns were made
// ([CauseMaxSteps]). Both
// hosts' loops ask it before each model turn.
func MustLand(l Loop) (Cause, bool) {
	switch {
	case l.Ended != "":
		return l.Ended, true
	case l.MaxRepeats > 0 && l.Repeats >= l.MaxRepeats:
		return CauseStuck, true
	case l.CostOut:
		return CauseCost, true
	case l.Phase == Land:
		return CauseBudget, true
	case l.Steps >= l.MaxSteps:
		return CauseMaxSteps, true
	}
	return "", false
}

// TurnCause names the cause a run lands on when its model turn did not
// answer: ended, when the run's work ended (its own end is the cause,
// whatever the turn says); [CauseBudget] when outOfTime — the budget
// refused the turn, a backoff would have outlasted it, or its deadline
// cut an attempt: the time ran out, the model did not fail —; else
// [CauseUpstream].
func TurnCause(ended Cause, outOfTime bool) Cause {
	switch {
	case ended != "":
		return ended
	case outOfTime:
		return CauseBudget
	}
	return CauseUpstream
}

// EmptyAnswer is [Record.Failure] of a run whose model's reply had no
// tool call and said nothing (empty, or only white space): it is not an
// answer, and the run lands with cause upstream (SPEC §3).
const EmptyAnswer = "its answer was empty"

// Landing is what a run knows when it lands, for [Plan].
type Landing struct {
	Record Record // the run's record as it lands
	// Unanswered is how the run's last model attempt went unanswered
	// ([Unanswered]): the failure the boundary names when the record has
	// none of its own.
	Unanswered string
	// Summarizer reports whether the host has a landing call to make: a
	// conversation to send, a summarize function of its caller's.
	Summarizer bool
	End        ModelEnd // how the run's last model attempt ended

	// The figures of the landing's budget now: the time until its
	// deadline, the floor, and the model's p50, below which a lease is
	// refused. The lease of a run its caller cancelled is at most Reserve
	// (SPEC §3: "land now" is an answer within R).
	Remaining, Reserve, Floor, P50 time.Duration
}

// A LandCommand is what a landing run does: send the landing call, with
// Prompt last after a budget note (Note), on a lease of Lease; or not,
// and the landing record says Words.
type LandCommand struct {
	Call   bool
	Lease  time.Duration // Call: the landing lease, which may spend the reserve
	Prompt string        // the landing call's last message, which carries the boundary
	Note   string        // the budget note of the landing call
	// Failure is the run's failure as the landing has it: the record's
	// own, or Unanswered's. The host keeps it: every record it builds
	// from now on carries it.
	Failure string
	// Words is the landing record's message when no call is sent: the
	// boundary, or that there was no time for the call and why.
	Words string
}

// Plan decides a landing: the call is sent when the host has one to make,
// the model's last attempt does not say it would not answer
// ([ModelEnd.Call]), and a landing lease of remaining − floor (capped at
// the reserve for a cancelled run) is granted; otherwise the harness
// summarizes from the run's record ([Summarize]).
func Plan(l Landing) LandCommand {
	rec := l.Record
	rec.Failure = cmp.Or(rec.Failure, l.Unanswered)
	boundary := Boundary(rec)
	c := LandCommand{Prompt: Prompt(boundary), Failure: rec.Failure, Words: boundary}
	if !l.Summarizer || !l.End.Call() {
		return c
	}
	var ceiling time.Duration
	if rec.Cause == CauseCancelled {
		ceiling = l.Reserve
	}
	granted, _, rule := budget.Grant(l.Remaining, l.Floor, ceiling, l.P50)
	if rule != 0 {
		c.Words = "no time for a landing call: " + rule.String()
		return c
	}
	c.Call, c.Lease, c.Note = true, granted, NoteFor(Land, l.Remaining, 0)
	return c
}

// Landed returns the landing record of a run that landed for cause as c
// says, and the landing call's answer ("" for none, when the harness's
// summary is the answer): failed, with why, when the call failed, and
// text what it answered. A call that answered nothing is no answer.
func (c LandCommand) Landed(cause Cause, failed bool, why, text string) (trace.Record, string) {
	rec := trace.Record{Event: trace.Landing, Cause: string(cause), Result: "harness", Message: c.Words}
	switch {
	case !c.Call:
	case failed:
		rec.Message = "landing call failed: " + why
	case strings.TrimSpace(text) == "":
		rec.Message = "landing call answered nothing"
	default:
		rec.Result = "model"
		return rec, text
	}
	return rec, ""
}

// SummarizeWith is the result of a landed run: [Summarize] of rec, its
// answer the landing call's when answer is not empty.
func SummarizeWith(rec Record, answer string) Result {
	res := Summarize(rec)
	if answer != "" {
		res.Answer = answer
	}
	return res
}

// Totals are what every result carries beside its answer, read by the
// host as run_end is stamped.
type Totals struct {
	RunID       string
	Steps       int // the model turns made
	Attempts    int // the physical requests started, the landing call and setup's among them
	Unavailable []Unavailable
	Budget      BudgetReport
}

// Finish fills res's totals.
func Finish(res Result, t Totals) Result {
	res.RunID, res.Steps, res.Attempts = t.RunID, t.Steps, t.Attempts
	res.Unavailable, res.Budget = t.Unavailable, t.Budget
	return res
}

// Report is the budget's report of a run of total with reserve, spent
// having passed and remaining left (never negative).
func Report(total, reserve, spent, remaining time.Duration) BudgetReport {
	return BudgetReport{TotalMs: total.Milliseconds(), SpentMs: spent.Milliseconds(),
		ReserveMs: reserve.Milliseconds(), RemainingMs: remaining.Milliseconds()}
}
