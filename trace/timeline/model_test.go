package timeline

import (
	"slices"
	"strconv"
	"testing"

	"github.com/glidepath/glidepath/trace"
)

// only is the one run shown on its own of records.
func only(t *testing.T, records []trace.Record) *run {
	t.Helper()
	top, _ := readRuns(records)
	if len(top) != 1 {
		t.Fatalf("%d runs shown on their own, want 1", len(top))
	}
	return top[0]
}

func laneOf(t *testing.T, r *run, step string) *lane {
	t.Helper()
	for _, l := range r.lanes {
		if l.step == step {
			return l
		}
	}
	t.Fatalf("no lane %s", step)
	return nil
}

func TestAttemptsBecomeCalls(t *testing.T) {
	cases := []struct {
		name  string
		build func(r *runRecs)
		check func(t *testing.T, r *run)
	}{
		{
			name: "a retry continues its call, the backoff a wait between its attempts",
			build: func(r *runRecs) {
				r.attempt("tool:fetch", 1, 1, "gp_f", 1000, 3, 1003, trace.GaveUp)
				r.at(1003, trace.Record{Event: trace.Backoff, Step: "tool:fetch", StepIndex: 1, Attempt: 1, Key: "gp_f", SleepMs: 46, Source: "jitter"})
				r.attempt("tool:fetch", 1, 2, "gp_f", 1000, 1051, 1303, trace.OK)
			},
			check: func(t *testing.T, r *run) {
				l := laneOf(t, r, "tool:fetch")
				if len(l.calls) != 1 {
					t.Fatalf("%d calls, want 1", len(l.calls))
				}
				c := l.calls[0]
				if len(c.attempts) != 2 || len(c.waits) != 1 || c.waits[0].from != 1003 || c.waits[0].to != 1049 {
					t.Errorf("attempts %d, waits %+v; want 2 attempts and a wait from 1003 to 1049", len(c.attempts), c.waits)
				}
				if from, to := c.span(); from != 3 || to != 1303 {
					t.Errorf("the call spans %d to %d, want 3 to 1303", from, to)
				}
			},
		},
		{
			name: "a backoff that gave up is a mark, not a wait",
			build: func(r *runRecs) {
				r.attempt("model", 1, 1, "", 5000, 0, 400, trace.RateLimited)
				r.at(400, trace.Record{Event: trace.Backoff, Step: "model", StepIndex: 1, Attempt: 1, SleepMs: 90000, Source: "retry_after", GaveUp: true, Reason: "retry_after_exceeds_budget"})
			},
			check: func(t *testing.T, r *run) {
				c := laneOf(t, r, "model").calls[0]
				if len(c.waits) != 0 || len(c.marks) != 1 || c.marks[0].kind != markGiveUp {
					t.Errorf("waits %v, marks %v; want one give-up mark", c.waits, c.marks)
				}
			},
		},
		{
			name: "each model turn is a call of its own",
			build: func(r *runRecs) {
				r.attempt("model", 1, 1, "", 5000, 0, 10, trace.OK)
				r.attempt("model", 2, 1, "", 5000, 10, 20, trace.OK)
			},
			check: func(t *testing.T, r *run) {
				if n := len(laneOf(t, r, "model").calls); n != 2 {
					t.Errorf("%d calls, want 2", n)
				}
			},
		},
		{
			name: "parallel setup calls are told apart by their lease and message",
			build: func(r *runRecs) {
				r.at(0, trace.Record{Event: trace.AttemptStart, Step: "setup", Attempt: 1, GrantedMs: 20000, Message: "mcp server demo"})
				r.at(0, trace.Record{Event: trace.AttemptStart, Step: "setup", Attempt: 1, GrantedMs: 44949, Message: "mcp server everything"})
				r.at(8, trace.Record{Event: trace.AttemptEnd, Step: "setup", Attempt: 1, GrantedMs: 44949, Message: "mcp server everything", Outcome: trace.OK})
				r.at(475, trace.Record{Event: trace.AttemptEnd, Step: "setup", Attempt: 1, GrantedMs: 20000, Message: "mcp server demo", Outcome: trace.OK})
			},
			check: func(t *testing.T, r *run) {
				l := laneOf(t, r, "setup")
				ends := map[string]int64{}
				for _, c := range l.calls {
					for _, a := range c.attempts {
						ends[a.startRec.Message] = a.end
					}
				}
				if ends["mcp server demo"] != 475 || ends["mcp server everything"] != 8 {
					t.Errorf("ends %v, want demo at 475 and everything at 8", ends)
				}
			},
		},
		{
			name: "an attempt never ended runs to the run's last record",
			build: func(r *runRecs) {
				r.at(100, trace.Record{Event: trace.AttemptStart, Step: "tool:pay", StepIndex: 1, Attempt: 1, GrantedMs: 5000, Key: "gp_p"})
				r.at(900, trace.Record{Event: trace.Progress, Step: "tool:pay", StepIndex: 1, Key: "gp_p", Units: 1})
			},
			check: func(t *testing.T, r *run) {
				a := laneOf(t, r, "tool:pay").calls[0].attempts[0]
				if a.ended || a.end != 2000 || len(a.progress) != 1 {
					t.Errorf("ended %v at %d with %d progress records; want open to the run's end at 2000 with 1", a.ended, a.end, len(a.progress))
				}
				if len(r.resets) != 1 {
					t.Errorf("%d quiet-clock resets, want the progress record", len(r.resets))
				}
			},
		},
		{
			name: "an end whose start is not in the trace is still an attempt",
			build: func(r *runRecs) {
				r.at(300, trace.Record{Event: trace.AttemptEnd, Step: "tool:search", StepIndex: 1, Attempt: 1, Key: "gp_s", Outcome: trace.OK})
			},
			check: func(t *testing.T, r *run) {
				a := laneOf(t, r, "tool:search").calls[0].attempts[0]
				if a.startRec != nil || a.start != 300 || a.end != 300 || !a.ended {
					t.Errorf("attempt %+v, want one ended at 300 with no start", a)
				}
			},
		},
		{
			name: "lanes are setup, the model, then the rest as first seen, and a refusal has its lane",
			build: func(r *runRecs) {
				r.attempt("model", 1, 1, "", 5000, 2, 3, trace.OK)
				r.attempt("tool:search", 1, 1, "gp_s", 1000, 3, 5, trace.OK)
				r.at(3, trace.Record{Event: trace.Refused, Step: "tool:deep_research", StepIndex: 1, Attempt: 1, Reason: "below p50"})
				r.attempt("setup", 0, 1, "", 1000, 0, 2, trace.OK)
			},
			check: func(t *testing.T, r *run) {
				var got []string
				for _, l := range r.lanes {
					got = append(got, l.step)
				}
				if want := []string{"setup", "model", "tool:search", "tool:deep_research"}; !slices.Equal(got, want) {
					t.Errorf("lanes %v, want %v", got, want)
				}
				if l := laneOf(t, r, "tool:deep_research"); len(l.refusals) != 1 || len(l.calls) != 0 {
					t.Errorf("refusals %d, calls %d; want 1 and 0", len(l.refusals), len(l.calls))
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRun("run-a", 20000)
			tc.build(r)
			r.end(2000, "", "complete")
			tc.check(t, only(t, r.recs))
		})
	}
}

func TestPhasesAndReserve(t *testing.T) {
	cases := []struct {
		name        string
		build       func(r *runRecs)
		wantPhases  []string
		wantReserve int64
		wantSet     bool
	}{
		{
			name: "a ladder that reached land on its own shows where the reserve begins",
			build: func(r *runRecs) {
				r.at(36000, trace.Record{Event: trace.PhaseChange, Phase: "narrow", From: "explore", To: "narrow"})
				r.at(45000, trace.Record{Event: trace.PhaseChange, Phase: "land", From: "narrow", To: "land"})
			},
			wantPhases:  []string{"explore 0-36000", "narrow 36000-45000", "land 45000-50000"},
			wantReserve: 15000,
			wantSet:     true,
		},
		{
			name: "a land forced early says nothing of the reserve: the default rule's",
			build: func(r *runRecs) {
				r.at(7450, trace.Record{Event: trace.PhaseChange, Phase: "land", From: "explore", To: "land", Reason: "forced"})
			},
			wantPhases:  []string{"explore 0-7450", "land 7450-50000 forced"},
			wantReserve: 15000,
		},
		{
			name: "a record that carries the next phase before its phase record moves the shading",
			build: func(r *runRecs) {
				r.at(36001, trace.Record{Event: trace.Progress, Phase: "narrow", Step: "tool:x", Key: "k"})
				r.at(36002, trace.Record{Event: trace.PhaseChange, Phase: "narrow", From: "explore", To: "narrow"})
			},
			wantPhases:  []string{"explore 0-36001", "narrow 36001-50000"},
			wantReserve: 15000,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRun("run-a", 60000)
			tc.build(r)
			r.at(50000, trace.Record{Event: trace.RunEnd, Phase: "land", TotalMs: 60000, Cause: "budget", Result: "partial"})
			got := only(t, r.recs)
			var phases []string
			for _, p := range got.phases {
				s := p.phase + " " + itoa(p.from) + "-" + itoa(p.to)
				if p.forced {
					s += " forced"
				}
				phases = append(phases, s)
			}
			if !slices.Equal(phases, tc.wantPhases) {
				t.Errorf("phases %v, want %v", phases, tc.wantPhases)
			}
			if got.reserve != tc.wantReserve || got.reserveSet != tc.wantSet {
				t.Errorf("reserve %d (seen %v), want %d (%v)", got.reserve, got.reserveSet, tc.wantReserve, tc.wantSet)
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestSubAgentsAreNestedUnderTheirCall(t *testing.T) {
	parent := newRun("run-parent", 20000)
	parent.attempt("model", 1, 1, "", 14000, 0, 3, trace.OK)
	parent.at(3, trace.Record{Event: trace.AttemptStart, Step: "agent:beta", StepIndex: 1, Attempt: 1, GrantedMs: 14000, Key: "gp_beta"})
	parent.at(3, trace.Record{Event: trace.AttemptStart, Step: "agent:remote", StepIndex: 1, Attempt: 1, GrantedMs: 14000, Key: "gp_remote"})
	// In process: parent_run_id and the key. Served elsewhere: the key
	// alone, and a clock that runs 50ms ahead of the parent's.
	beta := parent.child("run-beta", 4, 14000, "gp_beta", true)
	beta.attempt("model", 1, 1, "", 10000, 0, 300, trace.OK).end(300, "", "complete")
	remote := parent.child("run-remote", 400, 14000, "gp_remote", false)
	remote.attempt("model", 1, 1, "", 10000, 0, 100, trace.OK).end(100, "", "complete")
	parent.at(308, trace.Record{Event: trace.AttemptEnd, Step: "agent:beta", StepIndex: 1, Attempt: 1, GrantedMs: 14000, Key: "gp_beta", Outcome: trace.OK})
	parent.at(310, trace.Record{Event: trace.AttemptEnd, Step: "agent:remote", StepIndex: 1, Attempt: 1, GrantedMs: 14000, Key: "gp_remote", Outcome: trace.OK})
	parent.end(320, "", "complete")

	// Any order of records, from any number of traces.
	var all []trace.Record
	all = append(all, remote.recs...)
	all = append(all, parent.recs...)
	all = append(all, beta.recs...)
	slices.Reverse(all)
	top, byID := readRuns(all)
	if len(top) != 1 || top[0].id != "run-parent" {
		t.Fatalf("runs shown on their own: %d, want run-parent alone", len(top))
	}
	cases := []struct {
		name       string
		child      string
		wantStep   string
		wantOffset float64
	}{
		{"a child in the parent's process starts where its timestamps say", "run-beta", "agent:beta", 4},
		{"a child served elsewhere is found by its key and kept inside its call", "run-remote", "agent:remote", 310},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := byID[tc.child]
			if c.parent != top[0] || c.parentAttempt == nil || c.parentAttempt.rec().Step != tc.wantStep {
				t.Fatalf("nested under %v, want %s of run-parent", c.parentAttempt, tc.wantStep)
			}
			if c.offset != tc.wantOffset {
				t.Errorf("starts at %v on its parent's clock, want %v", c.offset, tc.wantOffset)
			}
		})
	}
}

func TestKeysThatLoopNestNoRunInItself(t *testing.T) {
	a := newRun("run-a", 1000)
	b := newRun("run-b", 1000)
	a.recs[0].Key = "gp_b" // a's run_start names b's call …
	b.recs[0].Key = "gp_a" // … and b's names a's
	a.attempt("agent:x", 1, 1, "gp_a", 500, 0, 10, trace.OK)
	b.attempt("agent:y", 1, 1, "gp_b", 500, 0, 10, trace.OK)
	self := newRun("run-self", 1000)
	self.recs[0].Key = "gp_self"
	self.attempt("agent:z", 1, 1, "gp_self", 500, 0, 10, trace.OK)
	top, _ := readRuns(slices.Concat(a.recs, b.recs, self.recs))
	var ids []string
	for _, r := range top {
		ids = append(ids, r.id)
	}
	slices.Sort(ids)
	if want := []string{"run-b", "run-self"}; !slices.Equal(ids, want) {
		t.Errorf("runs shown on their own %v, want %v: one of a loop nests in the other, and a run never in itself", ids, want)
	}
}

// cancelOf is a cancel_sent record of step's call of key, in state.
func cancelOf(step, key, state string) trace.Record {
	return trace.Record{Event: trace.CancelSent, Step: step, StepIndex: 1, Key: key, State: state}
}

func TestEachCancelIsOneMarkWhereItWasSentWithHowItSettled(t *testing.T) {
	type want struct {
		at    int64
		state string
	}
	cases := []struct {
		name  string
		build func(r *runRecs)
		want  []want
	}{
		{
			name: "a cancel sent and accepted is one mark, at its sending, accepted",
			build: func(r *runRecs) {
				r.attempt("tool:fetch", 1, 1, "gp_f", 1000, 0, 1000, trace.GaveUp)
				r.at(1000, cancelOf("tool:fetch", "gp_f", "sent"))
				r.at(1040, cancelOf("tool:fetch", "gp_f", "accepted"))
			},
			want: []want{{1000, "accepted"}},
		},
		{
			name: "a cancel the tool did not know is unknown",
			build: func(r *runRecs) {
				r.attempt("tool:fetch", 1, 1, "gp_f", 1000, 0, 1000, trace.GaveUp)
				r.at(1000, cancelOf("tool:fetch", "gp_f", "sent"))
				r.at(1010, cancelOf("tool:fetch", "gp_f", "unknown"))
			},
			want: []want{{1000, "unknown"}},
		},
		{
			name: "a cancel no answer came for stays sent",
			build: func(r *runRecs) {
				r.attempt("tool:mcp", 1, 1, "gp_m", 1000, 0, 1000, trace.GaveUp)
				r.at(1000, cancelOf("tool:mcp", "gp_m", "sent"))
			},
			want: []want{{1000, "sent"}},
		},
		{
			name: "a cancel that could not be sent is its failed record alone",
			build: func(r *runRecs) {
				r.attempt("tool:fetch", 1, 1, "gp_f", 1000, 0, 1000, trace.GaveUp)
				r.at(1000, cancelOf("tool:fetch", "gp_f", "failed"))
			},
			want: []want{{1000, "failed"}},
		},
		{
			name: "two cancels of one call are settled in the order they were sent",
			build: func(r *runRecs) {
				r.attempt("tool:fetch", 1, 1, "gp_f", 500, 0, 500, trace.GaveUp)
				r.at(500, cancelOf("tool:fetch", "gp_f", "sent"))
				r.at(520, trace.Record{Event: trace.Backoff, Step: "tool:fetch", StepIndex: 1, Attempt: 1, Key: "gp_f", SleepMs: 30})
				r.attempt("tool:fetch", 1, 2, "gp_f", 500, 550, 1050, trace.GaveUp)
				r.at(1050, cancelOf("tool:fetch", "gp_f", "sent"))
				r.at(1060, cancelOf("tool:fetch", "gp_f", "accepted"))
				r.at(1200, cancelOf("tool:fetch", "gp_f", "failed"))
			},
			want: []want{{500, "accepted"}, {1050, "failed"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRun("run-a", 20000)
			tc.build(r)
			r.end(2000, "", "complete")
			got := only(t, r.recs)
			var marks []want
			for _, l := range got.lanes {
				for _, c := range l.calls {
					for _, m := range c.marks {
						if m.kind == markCancel {
							marks = append(marks, want{m.at, m.cancelState()})
						}
					}
				}
			}
			if !slices.Equal(marks, tc.want) {
				t.Errorf("cancel marks %v, want %v", marks, tc.want)
			}
			if len(got.cancels) != len(tc.want) {
				t.Errorf("the run counts %d cancels, want %d", len(got.cancels), len(tc.want))
			}
		})
	}
}

func TestTheWaitForCancelAnswersIsFoundBetweenTheResultAndTheEnd(t *testing.T) {
	cases := []struct {
		name     string
		build    func(r *runRecs)
		wantWait bool
		from, to int64
		cancels  int
	}{
		{
			name: "a landing with a cancel unanswered waits for its answer",
			build: func(r *runRecs) {
				r.attempt("tool:fetch", 1, 1, "gp_f", 800, 0, 800, trace.GaveUp)
				r.at(800, cancelOf("tool:fetch", "gp_f", "sent"))
				r.attempt("model", 0, 1, "", 300, 800, 850, trace.OK)
				r.at(850, trace.Record{Event: trace.Landing, Cause: "budget", Result: "model"})
				r.at(930, cancelOf("tool:fetch", "gp_f", "accepted"))
				r.end(930, "budget", "partial")
			},
			wantWait: true, from: 850, to: 930, cancels: 1,
		},
		{
			name: "a run the model answered waits after its last turn",
			build: func(r *runRecs) {
				r.attempt("tool:fetch", 1, 1, "gp_f", 800, 0, 800, trace.GaveUp)
				r.at(800, cancelOf("tool:fetch", "gp_f", "sent"))
				r.attempt("model", 2, 1, "", 3000, 800, 1000, trace.OK)
				r.at(1100, cancelOf("tool:fetch", "gp_f", "failed"))
				r.end(1100, "", "complete")
			},
			wantWait: true, from: 1000, to: 1100, cancels: 1,
		},
		{
			name: "a cancel answered before the result is no wait",
			build: func(r *runRecs) {
				r.attempt("tool:fetch", 1, 1, "gp_f", 800, 0, 800, trace.GaveUp)
				r.at(800, cancelOf("tool:fetch", "gp_f", "sent"))
				r.at(801, cancelOf("tool:fetch", "gp_f", "accepted"))
				r.at(850, trace.Record{Event: trace.Landing, Cause: "budget", Result: "harness"})
				r.end(850, "budget", "partial")
			},
		},
		{
			name: "a cancel no answer is expected for, and a run_end at once, is no wait",
			build: func(r *runRecs) {
				r.attempt("tool:mcp", 1, 1, "gp_m", 800, 0, 800, trace.GaveUp)
				r.at(800, cancelOf("tool:mcp", "gp_m", "sent"))
				r.at(850, trace.Record{Event: trace.Landing, Cause: "budget", Result: "harness"})
				r.end(850, "budget", "partial")
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRun("run-a", 1200)
			tc.build(r)
			w := only(t, r.recs).cancelWait
			switch {
			case !tc.wantWait && w != nil:
				t.Errorf("a wait from %d to %d, want none", w.from, w.to)
			case tc.wantWait && w == nil:
				t.Errorf("no wait, want one from %d to %d", tc.from, tc.to)
			case tc.wantWait && (w.from != tc.from || w.to != tc.to || len(w.cancels) != tc.cancels):
				t.Errorf("a wait from %d to %d for %d cancels, want %d to %d for %d", w.from, w.to, len(w.cancels), tc.from, tc.to, tc.cancels)
			}
		})
	}
}
