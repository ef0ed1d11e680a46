package landing

import (
	"fmt"
	"strings"

	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

// QuietWords says, for the boundary of a run its quiet clock stopped
// ([Record.Failure]) and for a quiet_warning, which call was silent and
// what that means (issue 27), so that three cases a user must tell apart
// read apart: a model's server that never answered, a call silent past
// the allowance its known latency gave it, and a call cut with no
// allowance known, at the quiet period alone. unanswered is how the cut
// model attempt went ([Unanswered]), which says what a stream that was
// answered carried. Empty when no call was in flight: the cause says it
// all. Both hosts say it so.
func QuietWords(s watchdog.StallError, unanswered string) string {
	c := s.Call
	if c.Key == "" {
		return ""
	}
	name := callName(c.Step)
	switch {
	case c.AtHeaders && !c.Headers:
		return fmt.Sprintf("%s's server never answered: no response headers in %s", name, Human(c.For))
	case c.AtHeaders && !c.Held:
		// Its server sent headers: "sent nothing" would read as a server
		// that never answered (issue 27), as it did for a reasoning
		// model cut at Q while it thought.
		if unanswered == "" || strings.HasPrefix(unanswered, sentNothing) {
			unanswered = fmt.Sprintf("%s's server answered, but no message came in %s", name, Human(c.For))
		}
		return unanswered + " (" + unheld(c) + ")"
	case c.Held && c.AtHeaders:
		return fmt.Sprintf("%s was silent past its usual time after its server answered: its allowance is %s (%s)",
			name, Human(c.Allowance), sourceWords(c.Source))
	case c.Held:
		return fmt.Sprintf("%s was silent past its usual time: its allowance is %s (%s)",
			name, Human(c.Allowance), sourceWords(c.Source))
	case c.Progressed:
		return fmt.Sprintf("%s was silent for %s after its last progress", name, Human(c.For))
	}
	return fmt.Sprintf("%s was silent for %s (%s)", name, Human(c.For), unheld(c))
}

// unheld says why a call the quiet clock cut at the quiet period held
// nothing.
func unheld(c watchdog.Silent) string {
	if c.Allowance > 0 {
		return fmt.Sprintf("its allowance, %s from %s, is not above the quiet period", Human(c.Allowance), sourceWords(c.Source))
	}
	return "nothing is known of how long it usually takes: the quiet period alone applied"
}

// callName names a step kind for a person: "the model", or the kind as
// the trace names it ("tool:search").
func callName(step string) string {
	if step == "model" {
		return "the model"
	}
	return step
}

// sourceWords says where an allowance came from.
func sourceWords(s watchdog.Source) string {
	switch s {
	case watchdog.SourceObserved:
		return "2 × the p95 of this run's calls"
	case watchdog.SourceProfile:
		return "2 × the p95 of the latency profile"
	case watchdog.SourceDeclared:
		return "2 × its declared p95"
	case watchdog.SourceStated:
		return "the silence its entry states"
	case watchdog.SourceLearned:
		return "2 × the longest silence cut before"
	}
	return s.String()
}

// Warning is the quiet_warning record of s, a would-be stall of a quiet
// clock in warn mode: the silent call, its silence, its allowance and its
// source, and the words of [QuietWords]. It carries the step of the call
// it names ([watchdog.Call.Index]), as that call's own records do; step,
// the host's step now, when it names none.
func Warning(s watchdog.StallError, step int) trace.Record {
	c := s.Call
	if c.Key != "" && c.Index > 0 {
		step = c.Index
	}
	rec := trace.Record{Event: trace.QuietWarning, StepIndex: step, Step: c.Step, Key: c.Key,
		SilentMs: s.Since.Milliseconds(), Message: QuietWords(s, "")}
	if c.Key != "" {
		rec.SilentMs, rec.AllowanceMs, rec.Headers = c.For.Milliseconds(), c.Allowance.Milliseconds(), c.Headers
		if c.Source != watchdog.SourceNone {
			rec.Source = c.Source.String()
		}
		if c.Key == "model" {
			rec.Key = "" // a model call has no idempotency key
		}
	}
	if rec.Message == "" {
		rec.Message = fmt.Sprintf("no semantic event for %s (quiet %s)", Human(s.Since), Human(s.Quiet))
	}
	return rec
}

// HeldWarning is what a live line leads with once a held call has been
// silent for half its allowance or more (issue 27), on either host:
// "! model silent 3.1s of 6.0s". Empty otherwise.
func HeldWarning(c watchdog.Silent) string {
	if !c.Held || c.Allowance <= 0 || 2*c.For < c.Allowance {
		return ""
	}
	return fmt.Sprintf("! %s silent %s of %s", strings.TrimPrefix(c.Step, "tool:"), Rounded(c.For), Rounded(c.Allowance))
}
