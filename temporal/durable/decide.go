package durable

import "github.com/glidepath/glidepath/cancel"

// The choice after each tool attempt, as a pure function of what the
// workflow knows (SPEC §2, §5). It is package tools' call-loop decision
// (tools/decide.go), which is unexported there; it is repeated here rather
// than exported from tools while its API moves, and the two must agree
// (decide_test.go checks this one against the rules, case by case).

// facts are what the workflow knows once an attempt has ended.
type facts struct {
	write     bool // the tool's effect is write (or unstated)
	n, max    int  // the attempt that ended (1-based) and the most the call may make
	runEnded  bool // the run must land
	canCancel bool
	canStatus bool

	ok       bool // the attempt succeeded
	cut      bool // its lease, or a dead worker, ended it
	sent     bool // the call may have reached the tool
	stopped  bool // its work ended with the attempt
	answered bool // the tool said how it failed
	retry    bool // the failure may be tried again
}

type next uint8

const (
	succeed next = iota + 1 // the output is the call's result
	again                   // back off, then attempt n+1 with the same key
	ask                     // reconcile: ask the tool how the call went, by its key
	orphan                  // the outcome stays unknown
	fail                    // the call failed and no attempt follows
)

type decision struct {
	next   next
	cancel bool   // cancel the cut attempt's work first
	state  string // landing.StateCancelled, StateAbandoned or StateOrphaned, should the call end here
}

func decide(f facts) decision {
	if f.ok {
		return decision{next: succeed}
	}
	d := decision{cancel: f.cut && f.sent && !f.stopped && f.canCancel}
	if f.write && f.sent && (f.cut || !f.answered) {
		if f.runEnded || !f.canStatus {
			d.next, d.state = orphan, stateOrphaned
		} else {
			d.next = ask
		}
		return d
	}
	if f.cut && f.sent {
		d.state = stateAbandoned
		if f.stopped {
			d.state = stateCancelled
		}
	}
	d.next = fail
	// A write that never reached its tool may be sent again with its key,
	// as one whose status says never received (tools.decide's rule).
	if (!f.write || !f.sent) && f.retry && f.n < f.max && !f.runEnded {
		d.next = again
	}
	return d
}

// settled chooses what follows reconciling a write whose attempt n may
// have happened: done is the result, failed a failed call, never received
// is sent again with the same key if attempts are left, anything else an
// orphan.
func settled(state cancel.State, n, max int) decision {
	switch {
	case state == cancel.Done:
		return decision{next: succeed}
	case state == cancel.Failed:
		return decision{next: fail}
	case state == cancel.NeverReceived && n < max:
		return decision{next: again}
	case state == cancel.NeverReceived:
		return decision{next: fail}
	}
	return decision{next: orphan, state: stateOrphaned}
}
