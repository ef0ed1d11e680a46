package tools

import (
	"errors"
	"fmt"
	"testing"

	"github.com/glidepath/glidepath/cancel"
)

func TestDecideNamedCases(t *testing.T) {
	read, write := facts{effect: Read, n: 1, max: 3}, facts{effect: Write, n: 1, max: 3}
	with := func(f facts, set func(*facts)) facts { set(&f); return f }
	cases := []struct {
		name string
		f    facts
		want decision
	}{
		{"a success is the result", with(read, func(f *facts) { f.ok = true }), decision{next: succeed}},
		{"a retryable read is tried again",
			with(read, func(f *facts) { f.sent, f.retry = true, true }), decision{next: again}},
		{"a read that failed for good fails",
			with(read, func(f *facts) { f.sent, f.answered = true, true }), decision{next: fail}},
		{"a read out of attempts fails",
			with(read, func(f *facts) { f.n, f.sent, f.retry = 3, true, true }), decision{next: fail}},
		{"a read cut as the run ended is not retried",
			with(read, func(f *facts) { f.cut, f.sent, f.retry, f.runEnded = true, true, true, true }),
			decision{next: fail, state: StateAbandoned}},
		{"a cut remote read is cancelled and retried",
			with(read, func(f *facts) { f.cut, f.sent, f.retry, f.canCancel = true, true, true, true }),
			decision{next: again, cancel: true, state: StateAbandoned}},
		{"a cut read its tool cannot cancel is abandoned",
			with(read, func(f *facts) { f.cut, f.sent, f.runEnded = true, true, true }),
			decision{next: fail, state: StateAbandoned}},
		{"a cut local read whose work stopped is cancelled, no cancel sent",
			with(read, func(f *facts) { f.cut, f.sent, f.stopped, f.canCancel, f.runEnded = true, true, true, true, true }),
			decision{next: fail, state: StateCancelled}},
		{"a request cut before it went out leaves nothing in flight",
			with(read, func(f *facts) { f.cut, f.canCancel, f.runEnded = true, true, true }), decision{next: fail}},
		{"a cut write is cancelled and reconciled",
			with(write, func(f *facts) { f.cut, f.sent, f.canCancel, f.canStatus = true, true, true, true }),
			decision{next: ask, cancel: true}},
		{"a write whose stream broke is reconciled",
			with(write, func(f *facts) { f.sent, f.canStatus, f.retry = true, true, true }), decision{next: ask}},
		{"a cut write with no status to ask is an orphan",
			with(write, func(f *facts) { f.cut, f.sent, f.stopped = true, true, true }),
			decision{next: orphan, state: StateOrphaned}},
		{"a cut write when the run must land is an orphan without asking",
			with(write, func(f *facts) { f.cut, f.sent, f.canStatus, f.runEnded = true, true, true, true }),
			decision{next: orphan, state: StateOrphaned}},
		{"a write the tool refused fails, not retried",
			with(write, func(f *facts) { f.sent, f.answered, f.retry, f.canStatus = true, true, true, true }),
			decision{next: fail}},
		{"a write that never went out is tried again with its key: nothing of it can have happened",
			with(write, func(f *facts) { f.retry, f.canStatus = true, true }), decision{next: again}},
		{"a write that never went out, on the run's last attempt, fails",
			with(write, func(f *facts) { f.retry, f.canStatus, f.n = true, true, 3 }), decision{next: fail}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := decide(tc.f); got != tc.want {
				t.Errorf("decide(%+v) = %+v, want %+v", tc.f, got, tc.want)
			}
		})
	}
}

// What a tool that says nothing returns, Answer{Err: err}, must read as
// the case that keeps the promises (issue 17): it may have been sent and
// may still be running, so a cut write is reconciled or orphaned (never
// failed) and cancelled where its tool can be.
func TestTheZeroAnswerIsTheSafeOne(t *testing.T) {
	cut := facts{effect: Write, n: 1, max: 3, cut: true}
	cases := []struct {
		name string
		f    facts
		want decision
	}{
		{"a cut write of a tool that can say is cancelled and reconciled",
			facts{effect: Write, n: 1, max: 3, cut: true, canCancel: true, canStatus: true}, decision{next: ask, cancel: true}},
		{"a cut write of a tool that cannot say is an orphan", cut, decision{next: orphan, state: StateOrphaned}},
		{"a cut read of a tool that can cancel is cancelled and left abandoned until it says so",
			facts{effect: Read, n: 1, max: 3, cut: true, canCancel: true, runEnded: true}, decision{next: fail, cancel: true, state: StateAbandoned}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := decide(tc.f.heard(Answer{Err: errors.New("cut")})); got != tc.want {
				t.Errorf("decide = %+v, want %+v", got, tc.want)
			}
		})
	}
	// A write the tool knows it never sent cannot have happened: a
	// retryable failure is tried again with its key, as one whose status
	// says never received; any other is a plain failure, in no state.
	if d := decide(cut.heard(Answer{Err: errors.New("refused"), NotSent: true})); d.next != fail || d.state != "" {
		t.Errorf("a write the tool knows it never sent, not retryable: %+v, want a plain failure", d)
	}
	if d := decide(cut.heard(Answer{Err: errors.New("connection refused"), NotSent: true, Retry: true})); d.next != again || d.state != "" || d.cancel {
		t.Errorf("a write the tool knows it never sent, retryable: %+v, want it tried again", d)
	}
}

// Every combination of what the loop can know, checked against the rules
// of SPEC §2 and §5.
func TestDecideKeepsTheRulesInEveryCase(t *testing.T) {
	const bools = 10
	for bits := range 1 << bools {
		b := func(i int) bool { return bits&(1<<i) != 0 }
		// What the tool says comes through its Answer, as in the loop.
		f := facts{effect: Read, n: 1, max: 3,
			runEnded: b(1), canCancel: b(2), canStatus: b(3), ok: b(4),
			cut: b(5), answered: b(8)}.heard(Answer{NotSent: !b(6), Stopped: b(7), Retry: b(9)})
		if b(0) {
			f.effect = Write
		}
		for _, n := range []int{1, 3} {
			f.n = n
			d := decide(f)
			broke := func(rule string) { t.Errorf("%s: decide(%+v) = %+v", rule, f, d) }
			inDoubt := f.effect == Write && f.sent && (f.cut || !f.answered)
			switch {
			case d.next < succeed || d.next > fail:
				broke("no choice made")
			case f.ok && d != (decision{next: succeed}):
				broke("a success is the result, with nothing else")
			case d.next == again && ((f.effect == Write && f.sent) || f.runEnded || f.n >= f.max || !f.retry):
				broke("only a retryable read, or a write that never reached its tool, with attempts left in a running run is tried again")
			case !f.ok && (f.effect == Read || !f.sent) && f.retry && f.n < f.max && !f.runEnded && d.next != again:
				broke("a retryable read, or a retryable write that never reached its tool, with attempts left in a running run is tried again")
			case f.effect == Read && (d.next == ask || d.next == orphan):
				broke("a read is never reconciled or orphaned: it can be asked again")
			case !f.ok && inDoubt && d.next != ask && d.next != orphan:
				broke("a write that may have happened is reconciled or orphaned, never failed or resent")
			case d.next == ask && (!f.canStatus || f.runEnded || !inDoubt):
				broke("only a write in doubt is asked about, by a tool that can say, in a running run")
			case d.cancel != (!f.ok && f.cut && f.sent && !f.stopped && f.canCancel):
				broke("a cancel is sent exactly for a cut call still running at a tool that can cancel")
			case (d.state == StateOrphaned) != (d.next == orphan):
				broke("an orphan, and only an orphan, is left orphaned")
			case d.state == StateCancelled && !(f.cut && f.stopped):
				broke("only a call whose work stopped is cancelled at once")
			case d.state != "" && !f.cut && d.next != orphan:
				broke("a call not cut is left in no state")
			case d.next == succeed && !f.ok:
				broke("a failure is never the result")
			}
		}
	}
}

func TestSettledFollowsWhatTheStatusSays(t *testing.T) {
	cases := []struct {
		r    cancel.Resolution
		n    int
		want decision
	}{
		{cancel.Resolution{State: cancel.Done}, 1, decision{next: succeed}},
		{cancel.Resolution{State: cancel.Failed}, 1, decision{next: fail}},
		{cancel.Resolution{State: cancel.NeverReceived}, 1, decision{next: again}},
		{cancel.Resolution{State: cancel.NeverReceived}, 3, decision{next: fail}},
		{cancel.Resolution{State: cancel.Running, Orphan: true}, 1, decision{next: orphan, state: StateOrphaned}},
		{cancel.Resolution{Orphan: true}, 1, decision{next: orphan, state: StateOrphaned}},
		{cancel.Resolution{State: cancel.Running}, 1, decision{next: orphan, state: StateOrphaned}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s orphan=%v attempt %d", tc.r.State, tc.r.Orphan, tc.n), func(t *testing.T) {
			if got := settled(tc.r, tc.n, 3); got != tc.want {
				t.Errorf("settled = %+v, want %+v", got, tc.want)
			}
		})
	}
}
