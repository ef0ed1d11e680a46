package landing

import (
	"errors"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/trace"
)

// SetupStep is the step kind of the work a run does before its first
// model turn: fetching manifests, starting servers, listing a worker's
// tools (SPEC §3, §6).
const SetupStep = "setup"

// The rules of a run's setup step, which both hosts apply (issue 25): its
// lease, what its refusal records and leaves for the boundary, the words a
// piece that did not finish leaves, the cause a run that cannot go on
// without it lands with, and which failures are made again.

// SetupLease grants, at now, the work lease of one piece of setup that
// asks for ceiling asked (zero: none of its own) and whose kind's p50 is
// p50: the setup's share of the work time ([budget.SetupCeiling]: the
// smaller of 5s and a quarter of B − R), cut shorter by what the budget
// has left for a timer armed now ([Frame.Armable]). A refusal is a
// [*budget.RefusedError] of step setup.
func (f *Frame) SetupLease(now time.Time, asked, p50 time.Duration) (budget.Lease, error) {
	lease, refused := budget.LeaseAt(f.Armable(now), f.reserve, f.floor, budget.SetupCeiling(f.total-f.reserve, asked), p50, false)
	if refused != nil {
		refused.Step = SetupStep
		return budget.Lease{}, refused
	}
	lease.Deadline = now.Add(lease.Granted)
	return lease, nil
}

// SetupRefused is the refused record of attempt n of the piece of setup
// named what ("": the host's one setup step), which the budget refused
// with err, and the words it leaves for the boundary of a run that lands
// before its first model turn.
func SetupRefused(what string, n int, err error) (trace.Record, string) {
	rec := trace.Record{Event: trace.Refused, Step: SetupStep, Attempt: n, ResendCount: n - 1, Message: err.Error()}
	if re, ok := errors.AsType[*budget.RefusedError](err); ok {
		rec.Reason = re.Rule.String()
	}
	if what == "" {
		return rec, "setup was not started (not enough time)"
	}
	rec.Message = what + ": " + rec.Message
	return rec, what + " was not started (not enough time)"
}

// SetupEnd says what a piece of setup named what, that ended with outcome
// o on a lease of granted, leaves: the words for the boundary of a run that
// lands before its first model turn ("" when it finished), and the cause a
// run that cannot go on without it lands with (its time ran out: budget;
// a cancellation ended it: cancelled; the quiet clock: quiet; else
// upstream).
func SetupEnd(what string, o trace.Outcome, granted time.Duration) (left string, cause Cause) {
	switch o {
	case trace.OK:
		return "", ""
	case trace.GaveUp:
		return what + " did not finish in " + Human(granted), CauseBudget
	case trace.Cancelled:
		return what + " was cancelled", CauseCancelled
	case trace.Quiet:
		return what + " failed", CauseQuiet
	}
	return what + " failed", CauseUpstream
}

// SetupAgain reports whether attempt n of a piece of setup, one of at most
// max, is made again: only when the worker that made it died under it (a
// read, which another worker makes as well); a piece that failed, was cut
// by its lease or cancelled is not.
func SetupAgain(dead bool, n, max int) bool { return dead && n < max }
