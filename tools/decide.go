package tools

import "github.com/glidepath/glidepath/cancel"

// The call loop's choice after each attempt is made here, as a pure
// function of what the loop knows (SPEC §2, §5), so that it can be tested
// for every combination; the loop in call.go only performs it.

// facts are what the call loop knows once an attempt has ended.
type facts struct {
	effect    Effect
	n, max    int  // the attempt that ended (1-based) and the most the call may make
	runEnded  bool // the run's context has ended: the run must land
	canCancel bool // the tool is a [cancel.Canceller] and its spec says Cancellable
	canStatus bool // the tool is a [cancel.StatusReader]

	ok       bool // the attempt succeeded
	cut      bool // the attempt's context ended it: its lease, or the run
	sent     bool // the call may have reached the tool: not [Answer.NotSent]
	stopped  bool // its work ended with the attempt ([Answer.Stopped])
	answered bool // the tool said how it failed: an error status, event or exit
	retry    bool // the failure may be tried again, by the tool's word or SPEC §2
}

// heard fills in what the attempt's Answer says. Its zero fields are the
// safe ones: a call that does not say it was not sent may have been, and
// one that does not say its work stopped may still be running.
func (f facts) heard(a Answer) facts {
	f.sent, f.stopped, f.retry = !a.NotSent, a.Stopped, a.Retry
	return f
}

// next is what the loop does after an attempt.
type next uint8

const (
	succeed next = iota + 1 // the output is the call's result
	again                   // sleep as the budget decides, then attempt n+1 with the same key
	ask                     // reconcile: ask the tool how the call went, by its key
	orphan                  // the outcome stays unknown: journal it and end the call
	fail                    // the call failed and no attempt follows
)

var nextNames = [...]string{"", "succeed", "again", "ask", "orphan", "fail"}

func (n next) String() string { return nextNames[n] }

// decision is the loop's choice: what to do next, whether to cancel the
// attempt's work first (sending never waits), and the state the call is
// left in should it end here.
type decision struct {
	next   next
	cancel bool
	state  State
}

// decide chooses what follows an attempt:
//
//   - a success is the result;
//   - a cut attempt whose work may still be running is cancelled, when the
//     tool can be;
//   - a write that may have happened (cut, or sent and not answered) is
//     never sent again blindly: it is reconciled when the tool can say how
//     it went and the run has time to ask, and is an orphan otherwise;
//   - anything else is retried only if it is a read, or a write that
//     never reached its tool (NotSent: nothing of it can have happened, as
//     when its status says never received), the failure is retryable,
//     attempts are left and the run goes on, with the same key; else it fails,
//     leaving a cut call cancelled (its work stopped, or a cancel sent
//     that the tool may accept) or abandoned (a read we stopped waiting
//     for that nothing could stop).
func decide(f facts) decision {
	if f.ok {
		return decision{next: succeed}
	}
	d := decision{cancel: f.cut && f.sent && !f.stopped && f.canCancel}
	if f.effect == Write && f.sent && (f.cut || !f.answered) {
		switch {
		case f.runEnded || !f.canStatus:
			d.next, d.state = orphan, StateOrphaned
		default:
			d.next = ask
		}
		return d
	}
	if f.cut && f.sent {
		d.state = StateAbandoned
		if f.stopped {
			d.state = StateCancelled
		}
	}
	d.next = fail
	if (f.effect == Read || !f.sent) && f.retry && f.n < f.max && !f.runEnded {
		d.next = again
	}
	return d
}

// settled chooses what follows reconciling the write whose attempt n may
// have happened: done is the result; failed is a failed call; never
// received is sent again with the same key, if attempts are left (the tool
// has no record of it, so it cannot happen twice); anything else is an
// orphan.
func settled(r cancel.Resolution, n, max int) decision {
	switch {
	case r.Orphan:
		return decision{next: orphan, state: StateOrphaned}
	case r.State == cancel.Done:
		return decision{next: succeed}
	case r.State == cancel.Failed:
		return decision{next: fail}
	case r.State == cancel.NeverReceived && n < max:
		return decision{next: again}
	case r.State == cancel.NeverReceived:
		return decision{next: fail}
	}
	return decision{next: orphan, state: StateOrphaned}
}
