package landing

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Outcome is how a call in a run's record ended.
type Outcome uint8

const (
	Done        Outcome = iota + 1 // finished with an output
	Failed                         // finished with an error
	Refused                        // never started: no time for it
	Interrupted                    // in flight when the run landed
)

// Call is one tool call (or sub-agent) in a run's record.
type Call struct {
	Step    int     // the step (model turn, 1-based) that asked for it
	Tool    string  // the tool's name
	Key     string  // the idempotency key
	Outcome Outcome // how it ended
	Summary string  // a one-line account of its output or error
	State   string  // for Interrupted: StateCancelled, StateAbandoned or StateOrphaned

	// Landed is, for a sub-agent's call that answered with a partial
	// result, the cause its child landed on: the call is done, but what it
	// brought back is partial, and the boundary says so ("researcher
	// partial (budget)", "researcher cancelled") rather than "done".
	Landed Cause

	// Unreachable reports, for an orphan, that its tool cannot be asked
	// from outside the run (a local function, a subprocess, a tool with
	// no URL in the journal): `harness reconcile` cannot settle it, and
	// the boundary says to check it by hand.
	Unreachable bool

	// Next is, for an orphan in the journal, the command that settles
	// it: "harness reconcile --journal FILE" when its tool can be asked,
	// or, when it is Unreachable, "… --settle KEY=done", with which a
	// person records what they found by hand (issue 24). The boundary
	// names it. Empty: "harness reconcile" for one that can be asked, and
	// no command for one that cannot (it is in no journal).
	Next string
}

// Record is what a run knows about itself when it lands.
type Record struct {
	Task  string
	Cause Cause
	Step  int           // the step the run was in when it landed
	Quiet time.Duration // the quiet period, for CauseQuiet

	// Failure says, for a person, what stopped the run when the cause
	// alone would mislead: the model's failure for CauseUpstream ("401
	// Incorrect API key provided"), or a wait the budget could not afford
	// for CauseBudget ("the model's server asked to wait 30s before a
	// retry, and the run had only 7.4s left before its reserve"), or, for
	// CauseBudget, CauseQuiet and CauseCancelled, a model that never
	// answered ("the model sent nothing for 3.7s", SPEC §4; "the model
	// sent only keepalives for 3.7s", "the model's answer was still
	// streaming after 3.7s; it never finished", issue 24), or, for
	// CauseStuck, the call the run repeated (`search {"q":"x"}` gave
	// the same result 3 times over, issue 27). It is shown for
	// every cause but those of a run whose model answered (CauseUnsettled,
	// CauseToolsFailed). Empty: the cause says it all.
	Failure string

	// Doing says, for a boundary with no Failure and no call to list,
	// where the run was when it stopped: "no model turn had started", "the
	// model had not answered yet". Empty: the boundary says only that
	// nothing was established. A run with no tool calls never says
	// anything about tool calls (issue 24).
	Doing string

	Calls []Call

	// Setup names, for a run that landed before its first model turn,
	// the pieces of its setup that did not finish ("manifest of http://…
	// did not finish in 1.1s"): what the run was doing, which the boundary
	// says rather than that no tool call had finished (issue 24).
	Setup []string
}

// Boundary says where a run stopped and what that leaves out, e.g. "Ran
// out of allotted time at step 14: reconciliation done; supplier lookup was
// in flight and is not included." The wording is fixed and factual. A
// write whose outcome is unknown is named apart, with its key and what to
// do: "The outcome of payment (key gp_…) is unknown: it may or may not have
// happened; run `harness reconcile` to settle it." A run whose model
// answered while such a write was open (CauseUnsettled) says so first, and
// one whose model answered though every tool call failed or never started
// (CauseToolsFailed) says that: "Answered at step 2 without a tool's
// result: search failed."
func Boundary(rec Record) string {
	var head string
	switch rec.Cause {
	case CauseUnsettled:
		head = fmt.Sprintf("Answered at step %d", rec.Step)
	case CauseToolsFailed:
		head = fmt.Sprintf("Answered at step %d without a tool's result", rec.Step)
	case CauseQuiet:
		head = fmt.Sprintf("Stopped at step %d: no progress for %s", rec.Step, Human(rec.Quiet))
	case CauseCancelled:
		head = fmt.Sprintf("Cancelled at step %d", rec.Step)
	case CauseMaxSteps:
		head = fmt.Sprintf("Reached the step limit at step %d", rec.Step)
	case CauseStuck:
		head = fmt.Sprintf("Stopped at step %d, stuck repeating a call", rec.Step)
	case CauseCost:
		head = fmt.Sprintf("Reached its cost cap at step %d", rec.Step)
	case CauseUpstream:
		head = fmt.Sprintf("The model failed at step %d", rec.Step)
	default:
		head = fmt.Sprintf("Ran out of allotted time at step %d", rec.Step)
		if rec.Failure != "" {
			head = fmt.Sprintf("Stopped at step %d", rec.Step)
		}
	}
	var done, partial, failed, refused, inflight, orphans, byHand []string
	reconcile := "harness reconcile"
	var settle []string // the --settle commands of the orphans only a person can settle
	for _, c := range rec.Calls {
		switch {
		case c.Outcome == Done && c.Landed == CauseCancelled:
			partial = appendOnce(partial, c.Tool+" cancelled")
		case c.Outcome == Done && c.Landed != "":
			partial = appendOnce(partial, fmt.Sprintf("%s partial (%s)", c.Tool, c.Landed))
		case c.Outcome == Done:
			done = appendOnce(done, c.Tool)
		case c.Outcome == Failed:
			failed = appendOnce(failed, c.Tool)
		case c.Outcome == Refused:
			refused = appendOnce(refused, c.Tool)
		case c.Outcome == Interrupted && c.State == StateOrphaned && c.Unreachable:
			byHand = append(byHand, fmt.Sprintf("%s (key %s)", c.Tool, c.Key))
			if c.Next != "" {
				settle = append(settle, c.Next)
			}
		case c.Outcome == Interrupted && c.State == StateOrphaned:
			orphans = append(orphans, fmt.Sprintf("%s (key %s)", c.Tool, c.Key))
			if c.Next != "" {
				reconcile = c.Next // one journal per run: the same command for each
			}
		case c.Outcome == Interrupted:
			inflight = appendOnce(inflight, c.Tool)
		}
	}
	var parts []string
	if len(done) > 0 {
		parts = append(parts, list(done)+" done")
	}
	if len(partial) > 0 {
		// Each child's own word, not one verb for all: "a partial
		// (budget), b cancelled".
		parts = append(parts, strings.Join(partial, ", "))
	}
	if len(failed) > 0 {
		parts = append(parts, list(failed)+" failed")
	}
	if len(refused) > 0 {
		parts = append(parts, list(refused)+verb(refused, " was", " were")+" not started (not enough time)")
	}
	if len(inflight) > 0 {
		parts = append(parts, list(inflight)+verb(inflight, " was", " were")+" in flight and"+verb(inflight, " is", " are")+" not included")
	}
	var b strings.Builder
	b.WriteString(head)
	switch {
	case rec.Failure != "" && !answered(rec.Cause):
		fmt.Fprintf(&b, ": %s.", strings.TrimSuffix(rec.Failure, "."))
		if len(parts) > 0 {
			fmt.Fprintf(&b, " Before that: %s.", strings.Join(parts, "; "))
		}
	case len(parts) > 0:
		fmt.Fprintf(&b, ": %s.", strings.Join(parts, "; "))
	case len(orphans) > 0 || len(byHand) > 0:
		b.WriteString(".")
	case len(rec.Setup) > 0:
		fmt.Fprintf(&b, ": in setup, %s.", strings.Join(rec.Setup, "; "))
	case rec.Doing != "":
		fmt.Fprintf(&b, ": %s.", strings.TrimSuffix(rec.Doing, "."))
	default:
		// The catch-all says what is true of every such run, and nothing
		// about tool calls it may never have had (issue 24).
		b.WriteString(": nothing was established.")
	}
	if len(orphans) > 0 {
		fmt.Fprintf(&b, " The %s of %s %s unknown: %s may or may not have happened; run `%s` to settle %s.",
			verb(orphans, "outcome", "outcomes"), list(orphans), verb(orphans, "is", "are"), verb(orphans, "it", "they"),
			reconcile, verb(orphans, "it", "them"))
	}
	if len(byHand) > 0 {
		fmt.Fprintf(&b, " The %s of %s %s unknown: %s may or may not have happened, and %s cannot be asked from outside this run; check %s by hand",
			verb(byHand, "outcome", "outcomes"), list(byHand), verb(byHand, "is", "are"), verb(byHand, "it", "they"),
			verb(byHand, "its tool", "their tools"), verb(byHand, "it", "them"))
		if len(settle) > 0 {
			// Each command, whole, for a person to paste: with =done if
			// it happened, =failed if it did not.
			fmt.Fprintf(&b, ", then record what you found%s: `%s` if it happened, or =failed if not",
				verb(settle, "", " for each"), strings.Join(settle, "`, `"))
		}
		b.WriteString(".")
	}
	return b.String()
}

// Settle is the result of a run whose model answered: complete, unless a
// write of the run is still orphaned, whose outcome nobody knows. Then the
// answer is kept but the result is partial, with cause [CauseUnsettled], a
// boundary that names the write and says to reconcile it, and the write in
// InFlight: an answer given while a payment may or may not have happened is
// not one a script should act on as complete.
//
// An answer given after tool calls of which none brought a result — each
// failed, was not started, or was cut — is kept too, and partial with
// cause [CauseToolsFailed] (issue 24): whatever it says did not come from
// a tool, and a run whose tools all failed is not presented as complete.
// A run that made no tool call at all is complete.
func Settle(rec Record, answer string) Result {
	open, results := false, false
	for _, c := range rec.Calls {
		open = open || c.Outcome == Interrupted && c.State == StateOrphaned
		results = results || c.Outcome == Done
	}
	switch {
	case open:
		rec.Cause = CauseUnsettled
	case len(rec.Calls) > 0 && !results:
		rec.Cause = CauseToolsFailed
	default:
		return Result{Status: Complete, Answer: answer, Steps: rec.Step}
	}
	rec.Failure, rec.Doing = "", ""
	r := Summarize(rec)
	r.Answer = answer
	return r
}

// answered reports whether cause is one of a run whose model answered:
// its boundary says what the answer lacks, not what stopped the run.
func answered(cause Cause) bool {
	return cause == CauseUnsettled || cause == CauseToolsFailed
}

// PartialLine is the one line a command prints on stderr for a partial
// result of cause, beside the exit code that says it: that the run
// landed early, or, for the causes of a run whose model answered, what
// the answer lacks. reconcile is the command that settles the run's
// orphans, for CauseUnsettled; "": the boundary names it. Every host's
// command says the same (issue 24).
func PartialLine(cause Cause, reconcile string) string {
	switch cause {
	case CauseUnsettled:
		// It did not land early: the model answered (SPEC §4, issue 18).
		next := "the boundary names the command that settles it"
		if reconcile != "" {
			next = "run " + reconcile
		}
		return "partial result: the model answered, but whether a write took effect is unknown (cause unsettled); " + next
	case CauseToolsFailed:
		// Nor did this one: the model answered without a tool's result.
		return "partial result: the model answered, but every tool call it made failed or never started (cause tools_failed)"
	case CauseAtCapacity:
		// Nor did this one: it never took off.
		return "partial result: the run was not started, the process is at capacity (cause at_capacity); submit it again later"
	}
	return "partial result: the run landed early (cause " + string(cause) + ")"
}

// Summarize builds the deterministic landing summary from a run's record,
// for when there is no time or no model to summarize: the answer says what
// is established and what is not, and is labeled as built by the harness.
func Summarize(rec Record) Result {
	r := Result{Status: Partial, Cause: rec.Cause, Boundary: Boundary(rec), Steps: rec.Step}
	if r.Cause == "" {
		r.Cause = CauseBudget
	}
	for _, c := range rec.Calls {
		switch c.Outcome {
		case Done:
			tool := c.Tool
			if c.Landed != "" {
				tool += " (partial: " + string(c.Landed) + ")"
			}
			r.Established = append(r.Established, tool+": "+c.Summary)
		case Failed:
			r.NotEstablished = append(r.NotEstablished, c.Tool+": failed: "+c.Summary)
		case Refused:
			r.NotEstablished = append(r.NotEstablished, c.Tool+": not started, not enough time")
		case Interrupted:
			r.NotEstablished = append(r.NotEstablished, c.Tool+": in flight, not included")
			r.InFlight = append(r.InFlight, InFlight{Tool: c.Tool, IdempotencyKey: c.Key, State: c.State})
			if c.State == StateOrphaned {
				r.Orphans++
			}
		}
	}
	var a strings.Builder
	a.WriteString("Partial answer, summarized by the harness from its own record (no model summary)")
	if rec.Task != "" {
		fmt.Fprintf(&a, " for: %s", rec.Task)
	}
	a.WriteString(".\nEstablished:")
	writeList(&a, r.Established)
	a.WriteString("\nNot established:")
	writeList(&a, r.NotEstablished)
	r.Answer = a.String()
	return r
}

func writeList(b *strings.Builder, items []string) {
	if len(items) == 0 {
		b.WriteString(" nothing.")
		return
	}
	for _, it := range items {
		b.WriteString("\n- ")
		b.WriteString(it)
	}
}

func appendOnce(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

func list(s []string) string {
	switch len(s) {
	case 1:
		return s[0]
	case 2:
		return s[0] + " and " + s[1]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

func verb(s []string, one, many string) string {
	if len(s) == 1 {
		return one
	}
	return many
}
