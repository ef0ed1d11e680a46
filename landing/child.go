package landing

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/trace"
)

// A sub-agent (SPEC §5b) is a call that runs a child run on a slice of its
// parent's time. What a parent gives a child and makes of what comes back
// is decided here, once, as pure functions over plain values, and both
// hosts only perform it (issue 25): the process's harness.Agent and
// Temporal's child workflow. They live in landing because each of them
// ends in what landing owns — the child's labeled [Result], the parent's
// [Call] and in_flight ([Adopt]) — and the slice's arithmetic is budget's
// ([budget.SliceGrant]), which landing already builds on.

// A Slice is a sub-agent's share of its parent's time, as [SliceOf]
// decides it: the child's budget and how long the parent waits for it.
type Slice struct {
	// Granted is the child's B: min(ceiling, remaining − reserve − keep).
	// Its deadline is the instant the slice was granted plus Granted, on
	// the parent's clock: the time the child's start takes is spent from
	// it, never added to it.
	Granted time.Duration
	// Keep is what the parent holds back to receive and use the answer
	// ([budget.SliceKeep]).
	Keep time.Duration
	// Reserve and Floor are the child's R and F: the default reserve of
	// its B ([budget.DefaultReserve]) and the parent's floor, as
	// [budget.Budget.Child] makes them in process.
	Reserve, Floor time.Duration
	// Wait is how long the parent waits for the child's answer: the slice
	// and half of Keep. The child lands by the slice's end on the same
	// clock, so an answer later than that means the child's workers are
	// gone, and the parent needs the rest of Keep for itself.
	Wait time.Duration
	// Grace is how long the parent then waits for the child it gave up on
	// and cancelled to land with its partial: a quarter of Keep, at most
	// four floors.
	Grace time.Duration
}

// SliceOf is the slice of a sub-agent of ceiling (0: all the parent can
// spare) on a parent with remaining time, reserve and floor whose model
// turn takes modelP95, by [budget.SliceGrant]: refused, with the rule that
// refused it, when the child would get no more than the floor.
func SliceOf(remaining, reserve, floor, ceiling, modelP95 time.Duration) (Slice, budget.Rule) {
	granted, keep, _, rule := budget.SliceGrant(remaining, reserve, floor, ceiling, modelP95)
	if rule != 0 {
		return Slice{}, rule
	}
	return Slice{Granted: granted, Keep: keep, Reserve: budget.DefaultReserve(granted), Floor: floor,
		Wait: granted + keep/2, Grace: min(keep/4, floor*4)}, 0
}

// Inherited are the settings a sub-agent's run takes from its parent
// where it names none of its own.
type Inherited struct {
	Quiet    time.Duration // Q: the parent's, when the child's is zero
	Parallel int           // the parent's, when the child's is zero
	// ModelP50 and ModelP95 are the model's latency the child starts
	// from, declared until it has observations of its own: the parent's
	// estimate when the child runs on the parent's model, so that a turn
	// the parent knows cannot fit is refused in the child too; none when
	// it runs on another, whose latency the parent's says nothing of.
	ModelP50, ModelP95 time.Duration
}

// Inherit returns the settings of a child whose own are own and whose
// parent's are parent; sameModel says whether the child runs on its
// parent's model.
func Inherit(own, parent Inherited, sameModel bool) Inherited {
	c := Inherited{Quiet: own.Quiet, Parallel: own.Parallel}
	if c.Quiet == 0 {
		c.Quiet = parent.Quiet
	}
	if c.Parallel == 0 {
		c.Parallel = parent.Parallel
	}
	if sameModel {
		c.ModelP50, c.ModelP95 = parent.ModelP50, parent.ModelP95
	}
	return c
}

// ChildMessage is the tool message of a sub-agent's call whose child
// landed with res: res's `--json` object exactly, which is what the
// parent's model reads, and what [ChildCall] reads back.
func ChildMessage(res Result) (json.RawMessage, error) {
	msg, err := json.Marshal(res)
	if err != nil { // a Result is plain data: only a bug gets here
		return nil, fmt.Errorf("landing: encoding a child's result: %w", err)
	}
	return msg, nil
}

// ChildCall is the call on the parent's record, at step, of tool (key)
// whose child answered message ([ChildMessage], or the same object from a
// sub-agent `harness serve` serves): done, summed up by the message's
// first line ([OneLine]), with the cause the child landed on when it is
// partial ([Result.Landed]).
func ChildCall(step int, tool, key string, message json.RawMessage) Call {
	var res Result
	_ = json.Unmarshal(message, &res) // an object that is not a result landed on nothing the parent can name
	return Call{Step: step, Tool: tool, Key: key, Outcome: Done, Summary: OneLine(string(message)), Landed: res.Landed()}
}

// MaxSummary bounds a call's one-line summary on the landing record.
const MaxSummary = 200

// OneLine is the first line of s, cut to [MaxSummary] bytes on a rune
// boundary: how a call's output or error is summed up on the landing
// record.
func OneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i]) + " …"
	}
	if len(s) <= MaxSummary {
		return s
	}
	cut := MaxSummary
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// ChildWork reports whether a sub-agent's record r is one of work (an
// attempt's start or end, a progress, its landing), which is one more
// unit of progress for its parent, and the words of it the parent
// records. Keepalives and tokens make no records, so a child that only
// streams them does not keep its parent's quiet clock from firing.
func ChildWork(r trace.Record) (message string, ok bool) {
	var msg string
	switch r.Event {
	case trace.AttemptStart:
		msg = fmt.Sprintf("step %d: %s", r.StepIndex, r.Step)
	case trace.AttemptEnd:
		msg = fmt.Sprintf("step %d: %s %s", r.StepIndex, r.Step, r.Outcome)
	case trace.Progress:
		msg = fmt.Sprintf("step %d: %s: %s", r.StepIndex, r.Step, r.Message)
	case trace.Landing:
		msg = "landing (" + r.Cause + ")"
	default:
		return "", false
	}
	return strings.TrimSpace(msg), true
}

// A ChildLoss is how a parent's wait for its sub-agent ended with no
// result, which in process never happens (the child is the parent's own
// goroutine, and always lands with one) and on Temporal does when the
// child's workflow is lost to its parent.
type ChildLoss uint8

// The ways a child is lost.
const (
	// ChildSilent: no result within the parent's wait (Slice.Wait), so
	// the parent gave up on it and cancelled it.
	ChildSilent ChildLoss = iota + 1
	// ChildStopped: the parent's own run stopped it, by its quiet clock
	// (quiet true) or a cancellation.
	ChildStopped
	// ChildFailed: the child's run failed without a result.
	ChildFailed
)

// ChildLost is how the call of tool (key, at step) whose child was lost
// ends: its attempt's outcome and message on the parent's record, the
// tool message the model reads, and the call on the parent's record, in
// flight and cancelled, since what the child did is not known. granted is
// the child's slice (for ChildSilent), why says what stopped or failed it
// (ChildStopped: the run's words of its stop; ChildFailed: the error).
func ChildLost(step int, tool, key string, loss ChildLoss, quiet bool, why string, granted time.Duration) (outcome trace.Outcome, message, toolMessage string, c Call) {
	switch {
	case loss == ChildSilent:
		outcome, message = trace.GaveUp, tool+": the sub-agent sent no result within its slice of "+Human(granted)
	case loss == ChildStopped:
		outcome, message = trace.Cancelled, tool+": stopped: "+why
		if quiet {
			outcome = trace.Quiet
		}
	default:
		outcome, message = trace.UpstreamError, tool+" failed: "+clipped(why, 512)
	}
	return outcome, message, "error: " + message + "; it was cancelled",
		Call{Step: step, Tool: tool, Key: key, Outcome: Interrupted, State: StateCancelled, Summary: clipped(message, MaxSummary)}
}

// clipped is s cut to n bytes on a rune boundary, marked when cut.
func clipped(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
