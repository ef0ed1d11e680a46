package durable

import (
	"testing"

	"github.com/glidepath/glidepath/cancel"
)

// The rules of SPEC §2 and §5 for what follows a tool attempt, case by
// case, as package tools' call loop applies them (tools/decide.go).
func TestWhatFollowsAToolAttempt(t *testing.T) {
	cases := []struct {
		name string
		f    facts
		want decision
	}{
		{"a success is the result", facts{ok: true, write: true, sent: true}, decision{next: succeed}},
		{"a cut read with attempts left is retried", facts{n: 1, max: 3, cut: true, sent: true, retry: true}, decision{next: again, state: stateAbandoned}},
		{"a cut read is cancelled first when it can be", facts{n: 1, max: 3, cut: true, sent: true, retry: true, canCancel: true}, decision{next: again, cancel: true, state: stateAbandoned}},
		{"a cut read whose work stopped needs no cancel", facts{n: 1, max: 3, cut: true, sent: true, stopped: true, retry: true, canCancel: true}, decision{next: again, state: stateCancelled}},
		{"a read out of attempts fails", facts{n: 3, max: 3, cut: true, sent: true, retry: true}, decision{next: fail, state: stateAbandoned}},
		{"a read not retryable fails", facts{n: 1, max: 3, answered: true, sent: true}, decision{next: fail}},
		{"a read when the run must land fails", facts{n: 1, max: 3, cut: true, sent: true, retry: true, runEnded: true}, decision{next: fail, state: stateAbandoned}},
		{"a cut write with a status is reconciled", facts{write: true, n: 1, max: 3, cut: true, sent: true, canStatus: true, retry: true}, decision{next: ask}},
		{"a cut write without one is an orphan", facts{write: true, n: 1, max: 3, cut: true, sent: true, retry: true}, decision{next: orphan, state: stateOrphaned}},
		{"a cut write when the run must land is an orphan", facts{write: true, n: 1, max: 3, cut: true, sent: true, canStatus: true, runEnded: true}, decision{next: orphan, state: stateOrphaned}},
		{"a write with no answer is reconciled", facts{write: true, n: 1, max: 3, sent: true, canStatus: true, retry: true}, decision{next: ask}},
		{"a write the tool refused in words fails, never retried", facts{write: true, n: 1, max: 3, sent: true, answered: true, retry: true}, decision{next: fail}},
		{"a write never sent is tried again with its key: nothing of it can have happened", facts{write: true, n: 1, max: 3, retry: true}, decision{next: again}},
		{"a write never sent, on its last attempt, fails", facts{write: true, n: 3, max: 3, retry: true}, decision{next: fail}},
		{"a cut write that can be cancelled is cancelled and reconciled", facts{write: true, n: 1, max: 3, cut: true, sent: true, canCancel: true, canStatus: true}, decision{next: ask, cancel: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := decide(tc.f); got != tc.want {
				t.Errorf("decide(%+v) = %+v, want %+v", tc.f, got, tc.want)
			}
		})
	}
}

func TestWhatFollowsReconciling(t *testing.T) {
	cases := []struct {
		state cancel.State
		n     int
		want  next
	}{
		{cancel.Done, 1, succeed},
		{cancel.Failed, 1, fail},
		{cancel.NeverReceived, 1, again},
		{cancel.NeverReceived, 3, fail},
		{cancel.Running, 1, orphan},
		{"", 1, orphan},
	}
	for _, tc := range cases {
		t.Run(string(tc.state), func(t *testing.T) {
			if got := settled(tc.state, tc.n, 3); got.next != tc.want {
				t.Errorf("settled(%q, %d) = %v, want %v", tc.state, tc.n, got.next, tc.want)
			}
		})
	}
}
