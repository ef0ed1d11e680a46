package landing

import (
	"testing"
	"time"

	"github.com/glidepath/glidepath/trace"
)

// The words both hosts put in the boundary come from these functions
// (issue 25); the conformance suite compares the hosts, these pin the
// words themselves.
func TestUnansweredNamesWhatTheModelsStreamCarried(t *testing.T) {
	start := time.Unix(0, 0)
	at := func(o trace.Outcome, status int, chunks, keepalives int64) trace.Attempt {
		return trace.Attempt{Outcome: o, Status: status, Chunks: chunks, Keepalives: keepalives, Start: start, End: start.Add(3700 * time.Millisecond)}
	}
	for _, tc := range []struct {
		name  string
		a     trace.Attempt
		words string
		mute  bool
	}{
		{"a model that sent nothing until the quiet clock cut it is mute", at(trace.Quiet, 0, 0, 0), "the model sent nothing for 3.7s", true},
		{"a model that sent only keepalives until its lease ended is mute", at(trace.GaveUp, 0, 0, 5), "the model sent only keepalives for 3.7s", true},
		{"a model cut mid-answer never finished it", at(trace.Quiet, 0, 4, 1), "the model's answer was still streaming after 3.7s; it never finished", true},
		{"a model the caller cancelled mid-answer is named but not mute", at(trace.Cancelled, 0, 4, 0), "the model's answer was still streaming after 3.7s", false},
		{"a model that answered with a status says nothing here", at(trace.GaveUp, 503, 0, 0), "", false},
		{"a model that answered says nothing", at(trace.OK, 0, 9, 0), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			words, mute := Unanswered(tc.a)
			if words != tc.words || mute != tc.mute {
				t.Errorf("Unanswered = %q, %v; want %q, %v", words, mute, tc.words, tc.mute)
			}
		})
	}
}

func TestRetryAfterWordsSayTheWaitAndTheTimeLeft(t *testing.T) {
	for _, tc := range []struct {
		name        string
		asked, left time.Duration
		want        string
	}{
		{"a wait the run cannot afford is named", 30 * time.Second, 7400 * time.Millisecond,
			"the model's server asked to wait 30s before a retry, and the run had only 7.4s left before its reserve"},
		{"a wait too long to be meant is bounded in words", 0, 2 * time.Second,
			"the model's server asked to wait longer than 7 days before a retry, and the run had only 2s left before its reserve"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RetryAfterWords(tc.asked, tc.left); got != tc.want {
				t.Errorf("RetryAfterWords = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestACallCutByItsOwnLeaseWhileTheRunWentOnIsNotInFlight(t *testing.T) {
	for _, tc := range []struct {
		name     string
		state    string
		leaseCut bool
		want     bool
	}{
		{"an orphan is always in flight", StateOrphaned, true, true},
		{"an abandoned read its own lease cut failed", StateAbandoned, true, false},
		{"an abandoned read the run's end stopped is in flight", StateAbandoned, false, true},
		{"a cancelled call the run's end stopped is in flight", StateCancelled, false, true},
		{"a call with no state is not in flight", "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := StaysInFlight(tc.state, tc.leaseCut); got != tc.want {
				t.Errorf("StaysInFlight(%q, %v) = %v, want %v", tc.state, tc.leaseCut, got, tc.want)
			}
		})
	}
}

func TestASubAgentsPartialResultSaysTheCauseItLandedOn(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Result
		want Cause
	}{
		{"a complete result is done", Result{Status: Complete}, ""},
		{"a partial names its cause", Result{Status: Partial, Cause: CauseUnsettled}, CauseUnsettled},
		{"a partial that names no cause is still partial", Result{Status: Partial}, CauseBudget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Landed(); got != tc.want {
				t.Errorf("Landed = %q, want %q", got, tc.want)
			}
		})
	}
}
