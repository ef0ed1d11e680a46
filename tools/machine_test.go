package tools

import (
	"net/http"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
)

// plenty is a budget with time for anything: 60s left of which 10s are
// the reserve, a 100ms floor.
func plenty(ended bool) budget.Figures {
	return budget.Figures{Remaining: 60 * time.Second, Reserve: 10 * time.Second, Floor: 100 * time.Millisecond, Ended: ended}
}

// next names what a command does, as the rules of SPEC §2 and §5 say it.
func next(c CallCommand) string {
	switch {
	case c.Kind == CallSleep && !c.Reconciling:
		return "again"
	case c.Kind == CallAsk:
		return "ask"
	case c.Kind == CallDone && c.End == EndOK:
		return "succeed"
	case c.Kind == CallDone && c.End == EndOrphan:
		return "orphan"
	case c.Kind == CallDone && c.End == EndFailed:
		return "fail"
	}
	return c.Kind.String() + "/" + c.End.String()
}

// afterAttempt steps a machine under r whose attempt n (of 3) ended as a.
func afterAttempt(r CallRules, n int, ended bool, a Attempted) (CallMachine, CallCommand) {
	r.MaxAttempts = 3
	m := NewCallMachine(r)
	for range n {
		if c := m.attempt(plenty(false), CallCommand{}); c.Kind != CallAttempt {
			panic("no lease")
		}
	}
	return m, m.Step(CallEvent{Kind: AttemptEnded, Figures: plenty(ended), Attempt: a})
}

func TestWhatFollowsAnAttempt(t *testing.T) {
	read, write := CallRules{Effect: Read}, CallRules{Effect: Write}
	with := func(r CallRules, set func(*CallRules)) CallRules { set(&r); return r }
	cancels, asks := with(read, func(r *CallRules) { r.CanCancel = true }), with(write, func(r *CallRules) { r.CanStatus = true })
	both := with(write, func(r *CallRules) { r.CanCancel, r.CanStatus = true, true })
	cases := []struct {
		name   string
		r      CallRules
		n      int
		ended  bool
		a      Attempted
		next   string
		cancel bool
		state  State
	}{
		{"a success is the result", read, 1, false, Attempted{OK: true}, "succeed", false, ""},
		{"a retryable read is tried again", read, 1, false, Attempted{Retry: true}, "again", false, ""},
		{"a read that failed for good fails", read, 1, false, Attempted{Answered: true}, "fail", false, ""},
		{"a read out of attempts fails", read, 3, false, Attempted{Retry: true}, "fail", false, ""},
		{"a read cut as the run ended is not retried", read, 1, true, Attempted{Cut: true, Retry: true}, "fail", false, StateAbandoned},
		{"a cut remote read is cancelled and retried", cancels, 1, false, Attempted{Cut: true, Retry: true}, "again", true, StateAbandoned},
		{"a cut local read whose work stopped is cancelled, no cancel sent", cancels, 1, true, Attempted{Cut: true, Stopped: true}, "fail", false, StateCancelled},
		{"a request cut before it went out leaves nothing in flight", cancels, 1, true, Attempted{Cut: true, NotSent: true}, "fail", false, ""},
		{"a cut write is cancelled and reconciled", both, 1, false, Attempted{Cut: true}, "ask", true, ""},
		{"a write whose stream broke is reconciled", asks, 1, false, Attempted{Retry: true}, "ask", false, ""},
		{"a cut write with no status to ask is an orphan", write, 1, false, Attempted{Cut: true, Stopped: true}, "orphan", false, StateOrphaned},
		{"a cut write when the run must land is an orphan without asking", asks, 1, true, Attempted{Cut: true}, "orphan", false, StateOrphaned},
		{"a write the tool refused fails, not retried", asks, 1, false, Attempted{Answered: true, Retry: true}, "fail", false, ""},
		{"a write that never went out is tried again with its key", asks, 1, false, Attempted{NotSent: true, Retry: true}, "again", false, ""},
		{"a write that never went out, on the call's last attempt, fails", asks, 3, false, Attempted{NotSent: true, Retry: true}, "fail", false, ""},
		{"a read cut by a lease its ceiling set is a per-attempt timeout, tried again",
			with(read, func(r *CallRules) { r.Ceiling = time.Second }), 1, false, Attempted{Cut: true, GaveUp: true}, "again", false, StateAbandoned},
		{"a read cut by a lease the budget set is not tried again: there is no time", read, 1, false, Attempted{Cut: true, GaveUp: true, Retry: true}, "fail", false, StateAbandoned},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, c := afterAttempt(tc.r, tc.n, tc.ended, tc.a)
			if next(c) != tc.next || c.Cancel != tc.cancel {
				t.Errorf("after %+v: %s cancel %v (%+v), want %s cancel %v", tc.a, next(c), c.Cancel, c, tc.next, tc.cancel)
			}
			if c.Kind == CallDone && c.State != tc.state {
				t.Errorf("left %q, want %q", c.State, tc.state)
			}
			if c.Cancel && (c.CancelLease.Granted != cancel.CancelLease || !c.CancelLease.Landing) {
				t.Errorf("cancel lease %+v, want a landing lease of %v", c.CancelLease, cancel.CancelLease)
			}
			if c.Kind != CallDone && m.state != tc.state {
				t.Errorf("state %q, want %q", m.state, tc.state)
			}
		})
	}
}

// Every combination of what an attempt can say, checked against the rules
// of SPEC §2 and §5.
func TestTheMachineKeepsTheRulesAfterEveryAttempt(t *testing.T) {
	const bools = 10
	for bits := range 1 << bools {
		b := func(i int) bool { return bits&(1<<i) != 0 }
		r := CallRules{Effect: Read, CanCancel: b(2), CanStatus: b(3)}
		if b(0) {
			r.Effect = Write
		}
		a := Attempted{OK: b(4), Cut: b(5), NotSent: !b(6), Stopped: b(7), Answered: b(8), Retry: b(9)}
		ended := b(1)
		for _, n := range []int{1, 3} {
			_, c := afterAttempt(r, n, ended, a)
			d := next(c)
			broke := func(rule string) { t.Errorf("%s: %+v %+v n=%d ended=%v: %s %+v", rule, r, a, n, ended, d, c) }
			write, sent := r.Effect == Write, !a.NotSent
			inDoubt := write && sent && (a.Cut || !a.Answered)
			switch {
			case a.OK && (d != "succeed" || c.Cancel):
				broke("a success is the result, with nothing else")
			case d == "again" && ((write && sent) || ended || n >= 3 || !a.Retry):
				broke("only a retryable read, or a write that never reached its tool, with attempts left in a running run is tried again")
			case !a.OK && (!write || !sent) && a.Retry && n < 3 && !ended && d != "again":
				broke("a retryable read, or a retryable write that never reached its tool, with attempts left in a running run is tried again")
			case !write && (d == "ask" || d == "orphan"):
				broke("a read is never reconciled or orphaned: it can be asked again")
			case !a.OK && inDoubt && d != "ask" && d != "orphan":
				broke("a write that may have happened is reconciled or orphaned, never failed or resent")
			case d == "ask" && (!r.CanStatus || ended || !inDoubt):
				broke("only a write in doubt is asked about, by a tool that can say, in a running run")
			case c.Cancel != (!a.OK && a.Cut && sent && !a.Stopped && r.CanCancel):
				broke("a cancel is sent exactly for a cut call still running at a tool that can cancel")
			case c.Kind == CallDone && (c.State == StateOrphaned) != (d == "orphan"):
				broke("an orphan, and only an orphan, is left orphaned")
			case c.State == StateCancelled && !(a.Cut && a.Stopped):
				broke("only a call whose work stopped is cancelled at once")
			case c.State != "" && !a.Cut && d != "orphan":
				broke("a call not cut is left in no state")
			}
		}
	}
}

// status steps m with a status answer on figures f.
func status(m *CallMachine, f budget.Figures, s cancel.State) CallCommand {
	return m.Step(CallEvent{Kind: StatusAnswered, Figures: f, Status: s})
}

func TestAReconciledWriteFollowsWhatItsStatusSays(t *testing.T) {
	cut := Attempted{Cut: true}
	rules := CallRules{Effect: Write, CanStatus: true}
	cases := []struct {
		name  string
		n     int
		state cancel.State
		want  string
	}{
		{"done is the result", 1, cancel.Done, "CallDone/ok"},
		{"failed is a failed call", 1, cancel.Failed, "CallDone/status_failed"},
		{"never received is sent again with its key after a backoff", 1, cancel.NeverReceived, "again"},
		{"never received on the last attempt fails", 3, cancel.NeverReceived, "CallDone/never_received"},
		{"running is asked again after a backoff", 1, cancel.Running, "CallSleep/"},
		{"a state no protocol has is an orphan", 1, "maybe", "orphan"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, c := afterAttempt(rules, tc.n, false, cut)
			if c.Kind != CallAsk || c.N != 1 || c.Lease.Granted != cancel.StatusLease {
				t.Fatalf("after a cut write: %+v, want ask 1 on a %v lease", c, cancel.StatusLease)
			}
			c = status(&m, plenty(false), tc.state)
			got := next(c)
			if got == "CallDone/ok" || got == "succeed" {
				got = "CallDone/ok"
			}
			if got != tc.want {
				t.Errorf("after %q: %s %+v, want %s", tc.state, got, c, tc.want)
			}
			if tc.state == cancel.Running && !c.Reconciling {
				t.Errorf("the sleep after running is not between asks: %+v", c)
			}
		})
	}
	t.Run("an unreachable status makes an orphan at once", func(t *testing.T) {
		m, _ := afterAttempt(rules, 1, false, cut)
		c := m.Step(CallEvent{Kind: StatusAnswered, Figures: plenty(false), Unreachable: true})
		if c.End != EndOrphan || !c.Unreachable || c.State != StateOrphaned {
			t.Errorf("%+v, want an unreachable orphan", c)
		}
	})
	t.Run("a write still running when the run ends is an orphan", func(t *testing.T) {
		m, _ := afterAttempt(rules, 1, false, cut)
		c := status(&m, plenty(false), cancel.Running)
		c = m.Step(CallEvent{Kind: SleepOver, Figures: plenty(true)})
		if c.End != EndOrphan || c.Status != cancel.Running || !c.Ended {
			t.Errorf("%+v, want an orphan still running, cut by the run's end", c)
		}
	})
	t.Run("a write still running when the backoff would outlast the budget is asked once more as late as leaves FinalAsk", func(t *testing.T) {
		m, _ := afterAttempt(rules, 1, false, cut)
		f := plenty(false)
		f.Remaining = f.Reserve + f.Floor + 400*time.Millisecond // 400ms of work time
		m.rules.Backoff = budget.Backoff{Base: time.Second, Rand: func(n int64) int64 { return n - 1 }}
		c := status(&m, f, cancel.Running)
		if c.Kind != CallSleep || c.Delay.Sleep != 400*time.Millisecond-cancel.FinalAsk {
			t.Fatalf("%+v, want a sleep of %v", c, 400*time.Millisecond-cancel.FinalAsk)
		}
		if c = m.Step(CallEvent{Kind: SleepOver, Figures: f}); c.Kind != CallAsk || c.N != 2 {
			t.Fatalf("%+v, want ask 2", c)
		}
		c = status(&m, f, cancel.Running)
		if c.End != EndOrphan || !c.Delay.GiveUp || c.Status != cancel.Running {
			t.Errorf("%+v, want an orphan whose next ask gave up", c)
		}
	})
	t.Run("no time to ask is an orphan", func(t *testing.T) {
		m := NewCallMachine(rules)
		m.attempt(plenty(false), CallCommand{})
		f := plenty(false)
		f.Remaining = f.Reserve // the run is landing
		c := m.Step(CallEvent{Kind: AttemptEnded, Figures: f, Attempt: cut})
		if c.End != EndOrphan || c.Refused == nil {
			t.Errorf("%+v, want an orphan the budget refused to ask about", c)
		}
	})
}

func TestTheLeaseOfEachAttemptFollowsTheBudget(t *testing.T) {
	f := plenty(false)
	t.Run("the ceiling caps a lease", func(t *testing.T) {
		m := NewCallMachine(CallRules{Ceiling: 2 * time.Second})
		c := m.Step(CallEvent{Kind: CallStarted, Figures: f})
		if c.Kind != CallAttempt || c.N != 1 || c.Lease.Granted != 2*time.Second || !c.Lease.Capped {
			t.Errorf("%+v, want attempt 1 on a capped 2s lease", c)
		}
	})
	t.Run("with no ceiling the lease is the work time less the floor", func(t *testing.T) {
		m := NewCallMachine(CallRules{})
		if c := m.Step(CallEvent{Kind: CallStarted, Figures: f}); c.Lease.Granted != 50*time.Second-100*time.Millisecond || c.Lease.Capped {
			t.Errorf("%+v", c)
		}
	})
	t.Run("a lease below the kind's p50 is refused before any attempt", func(t *testing.T) {
		m := NewCallMachine(CallRules{Kind: "tool:slow", Ceiling: time.Second})
		g := f
		g.P50 = 2 * time.Second
		c := m.Step(CallEvent{Kind: CallStarted, Figures: g})
		if c.Kind != CallDone || c.End != EndRefused || c.N != 0 || c.Refused == nil || c.Refused.Rule != budget.BelowP50 || c.Refused.Step != "tool:slow" {
			t.Errorf("%+v, want a refusal below p50 for tool:slow", c)
		}
	})
	t.Run("a sub-agent's slice holds back the run's keep and is not refused below p50", func(t *testing.T) {
		m := NewCallMachine(CallRules{Slice: true})
		g := f
		g.Keep, g.P50 = 5*time.Second, time.Hour
		if c := m.Step(CallEvent{Kind: CallStarted, Figures: g}); c.Kind != CallAttempt || c.Lease.Granted != 45*time.Second {
			t.Errorf("%+v, want a slice of 45s", c)
		}
	})
	t.Run("a run that has ended starts nothing", func(t *testing.T) {
		m := NewCallMachine(CallRules{})
		if c := m.Step(CallEvent{Kind: CallStarted, Figures: plenty(true)}); c.Kind != CallDone || c.End != EndRunEnded || c.N != 0 {
			t.Errorf("%+v", c)
		}
	})
}

func TestBackoffAndRetryAfter(t *testing.T) {
	read := CallRules{Effect: Read}
	retryAfter := func(v string) budget.RetryAfter {
		ra, _ := budget.ReadRetryAfter(http.Header{"Retry-After": {v}}, time.Unix(0, 0))
		return ra
	}
	t.Run("a Retry-After too large to be meaningful gives up at once, its cause the budget's", func(t *testing.T) {
		_, c := afterAttempt(read, 1, false, Attempted{Retry: true, RetryAfter: retryAfter("999999999")})
		if c.Kind != CallDone || c.End != EndGaveUp || c.Delay.Reason != budget.RetryAfterExceedsBudget {
			t.Errorf("%+v, want a give-up with %s", c, budget.RetryAfterExceedsBudget)
		}
	})
	t.Run("a Retry-After longer than the time left gives up", func(t *testing.T) {
		_, c := afterAttempt(read, 1, false, Attempted{Retry: true, RetryAfter: retryAfter("120")})
		if c.End != EndGaveUp || c.Delay.Reason != budget.RetryAfterExceedsBudget {
			t.Errorf("%+v", c)
		}
	})
	t.Run("a backoff longer than the time left gives up with the backoff's reason", func(t *testing.T) {
		r := read
		r.Backoff = budget.Backoff{Base: time.Minute, Cap: time.Minute, Rand: func(n int64) int64 { return n - 1 }}
		_, c := afterAttempt(r, 1, false, Attempted{Retry: true})
		if c.End != EndGaveUp || c.Delay.Reason != budget.BackoffExceedsBudget {
			t.Errorf("%+v", c)
		}
	})
	t.Run("a Retry-After of 1s is a floor, spread by the machine's source", func(t *testing.T) {
		seen := map[time.Duration]bool{}
		src := uint64(1)
		r := read
		r.Backoff.Rand = func(n int64) int64 { src = src*6364136223846793005 + 1442695040888963407; return int64(src>>1) % n }
		for range 1000 {
			_, c := afterAttempt(r, 1, false, Attempted{Retry: true, RetryAfter: retryAfter("1")})
			if c.Kind != CallSleep || c.Delay.Sleep < time.Second || c.Delay.Sleep > time.Second+budget.DefaultBase {
				t.Fatalf("%+v, want a sleep in [1s, 1s+%v]", c, budget.DefaultBase)
			}
			seen[c.Delay.Sleep] = true
		}
		if len(seen) < 100 {
			t.Errorf("1000 calls told Retry-After: 1 sleep %d distinct times, want them spread", len(seen))
		}
	})
	t.Run("the same source replays the same sleeps", func(t *testing.T) {
		sleeps := func() (out []time.Duration) {
			src := int64(7)
			r := read
			r.Backoff.Rand = func(n int64) int64 { src = (src*48271 + 11) % 2147483647; return src % n }
			for range 5 {
				_, c := afterAttempt(r, 1, false, Attempted{Retry: true})
				out = append(out, c.Delay.Sleep)
			}
			return out
		}
		a, b := sleeps(), sleeps()
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%v then %v", a, b)
			}
		}
	})
	t.Run("a run that ends during the sleep ends the call", func(t *testing.T) {
		m, _ := afterAttempt(read, 1, false, Attempted{Retry: true})
		if c := m.Step(CallEvent{Kind: SleepOver, Figures: plenty(true)}); c.End != EndRunEnded || c.N != 1 {
			t.Errorf("%+v", c)
		}
	})
	t.Run("after the sleep comes the next attempt", func(t *testing.T) {
		m, _ := afterAttempt(read, 1, false, Attempted{Retry: true})
		if c := m.Step(CallEvent{Kind: SleepOver, Figures: plenty(false)}); c.Kind != CallAttempt || c.N != 2 {
			t.Errorf("%+v", c)
		}
	})
}

// A call's steps allocate nothing: the machine is on every call of every
// run (issue 25).
func TestAStepDoesNotAllocate(t *testing.T) {
	f := plenty(false)
	rules := CallRules{Effect: Write, CanCancel: true, CanStatus: true, Backoff: budget.Backoff{Rand: func(n int64) int64 { return n / 2 }}}
	allocs := testing.AllocsPerRun(100, func() {
		m := NewCallMachine(rules)
		m.Step(CallEvent{Kind: CallStarted, Figures: f})
		m.Step(CallEvent{Kind: AttemptEnded, Figures: f, Attempt: Attempted{Cut: true}})
		m.Step(CallEvent{Kind: StatusAnswered, Figures: f, Status: cancel.Running})
		m.Step(CallEvent{Kind: SleepOver, Figures: f})
		m.Step(CallEvent{Kind: StatusAnswered, Figures: f, Status: cancel.NeverReceived})
		m.Step(CallEvent{Kind: SleepOver, Figures: f})
		m.Step(CallEvent{Kind: AttemptEnded, Figures: f, Attempt: Attempted{OK: true}})
	})
	if allocs != 0 {
		t.Errorf("%v allocations per call, want none", allocs)
	}
}
