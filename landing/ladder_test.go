package landing

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
)

func newLadder(t *testing.T, total time.Duration, changes *[]Change) *Ladder {
	t.Helper()
	b, err := budget.New(budget.Config{Total: total})
	if err != nil {
		t.Fatal(err)
	}
	return New(b, Config{OnChange: func(c Change) { *changes = append(*changes, c) }})
}

func TestPhaseBoundariesFollowTheBudgetAndItsReserve(t *testing.T) {
	cases := []struct {
		total time.Duration
		// at each elapsed time, the phase the ladder must be in
		steps []struct {
			at   time.Duration
			want Phase
		}
		changes []Phase // the phases entered, in order
	}{
		{ // R = 2.5s: the reserve starts at 7.5s, before 80%, so fit never comes.
			total: 10 * time.Second,
			steps: []struct {
				at   time.Duration
				want Phase
			}{
				{0, Explore}, {5999 * time.Millisecond, Explore}, {6 * time.Second, Narrow},
				{7499 * time.Millisecond, Narrow}, {7500 * time.Millisecond, Land}, {10 * time.Second, Land},
			},
			changes: []Phase{Narrow, Land},
		},
		{ // R = 20s: narrow 72s, fit 96s, land 100s.
			total: 2 * time.Minute,
			steps: []struct {
				at   time.Duration
				want Phase
			}{
				{71 * time.Second, Explore}, {72 * time.Second, Narrow}, {95 * time.Second, Narrow},
				{96 * time.Second, Fit}, {99999 * time.Millisecond, Fit}, {100 * time.Second, Land},
			},
			changes: []Phase{Narrow, Fit, Land},
		},
		{ // R = 60s: narrow 360s, fit 480s, land 540s.
			total: 10 * time.Minute,
			steps: []struct {
				at   time.Duration
				want Phase
			}{
				{359 * time.Second, Explore}, {360 * time.Second, Narrow}, {480 * time.Second, Fit},
				{539 * time.Second, Fit}, {540 * time.Second, Land},
			},
			changes: []Phase{Narrow, Fit, Land},
		},
	}
	for _, tc := range cases {
		t.Run(tc.total.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var changes []Change
				l := newLadder(t, tc.total, &changes)
				start := time.Now()
				for _, s := range tc.steps {
					time.Sleep(s.at - time.Since(start))
					if got := l.Phase(); got != s.want {
						t.Errorf("at %v: phase %v, want %v", s.at, got, s.want)
					}
				}
				var entered []Phase
				for i, c := range changes {
					entered = append(entered, c.To)
					if i > 0 && c.From != changes[i-1].To {
						t.Errorf("change %d from %v, previous went to %v", i, c.From, changes[i-1].To)
					}
					if c.Forced || c.Spent+c.Remaining != tc.total {
						t.Errorf("change %+v: not forced, spent + remaining = total", c)
					}
				}
				if !slices.Equal(entered, tc.changes) {
					t.Errorf("entered %v, want %v", entered, tc.changes)
				}
			})
		})
	}
}

func TestPhasesNeverGoBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var changes []Change
		l := newLadder(t, 2*time.Minute, &changes)
		if got := l.Advance(Fit); got != Fit {
			t.Fatalf("Advance(Fit) = %v", got)
		}
		if got := l.Advance(Narrow); got != Fit {
			t.Errorf("Advance(Narrow) after fit = %v, want fit", got)
		}
		if got := l.Phase(); got != Fit {
			t.Errorf("the clock (explore) moved a forced fit back to %v", got)
		}
		if l.MustLand() {
			t.Error("MustLand in fit")
		}
		l.Advance(Land)
		time.Sleep(time.Minute)
		if !l.MustLand() || l.Phase() != Land {
			t.Errorf("after landing: phase %v", l.Phase())
		}
		if len(changes) != 2 || !changes[0].Forced || changes[0].From != Explore || changes[1].To != Land {
			t.Errorf("changes %+v, want forced explore→fit, fit→land", changes)
		}
	})
}

func TestWideningIsAllowedOnlyWhileExploring(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var changes []Change
		l := newLadder(t, 10*time.Second, &changes)
		for _, w := range []Widening{Parallel, SubAgent, Speculative} {
			if err := l.MayWiden(w); err != nil {
				t.Errorf("explore refused %v: %v", w, err)
			}
		}
		time.Sleep(6 * time.Second)
		for _, w := range []Widening{Parallel, SubAgent, Speculative} {
			err := l.MayWiden(w)
			ge, ok := errors.AsType[*GateError](err)
			if !ok || !errors.Is(err, ErrGated) || !errors.Is(err, budget.ErrRefused) || ge.Phase != Narrow {
				t.Fatalf("narrow: MayWiden(%v) = %v, want a gate error", w, err)
			}
			if !strings.Contains(err.Error(), w.String()) || !strings.Contains(ge.Reason, "narrow phase allows no new parallel branches") {
				t.Errorf("message %q", err)
			}
		}
	})
}

func TestTheFitGateAdmitsOnlyCallsWhoseP95Fits(t *testing.T) {
	// 2m budget, 20s reserve; at 97s, 23s remain and 3s are left before landing.
	cases := []struct {
		name    string
		p95     time.Duration
		ceiling time.Duration
		admit   bool
		reason  string
	}{
		{"p95 fits", 2 * time.Second, 0, true, ""},
		{"p95 just below", 2999 * time.Millisecond, 0, true, ""},
		{"p95 equal does not fit", 3 * time.Second, 0, false, "its p95 3s does not fit in the 3s left before landing"},
		{"p95 beyond", 10 * time.Second, time.Second, false, "its p95 10s does not fit"},
		{"no p95: the ceiling stands in", 0, time.Second, true, ""},
		{"no p95: a ceiling that does not fit", 0, 5 * time.Second, false, "its ceiling 5s does not fit"},
		{"nothing known", 0, 0, false, "no latency estimate says it fits"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var changes []Change
				l := newLadder(t, 2*time.Minute, &changes)
				k := l.Budget().Estimates().Kind("tool:search")
				k.Declare(0, tc.p95)
				if err := l.Admit(k, tc.ceiling); err != nil {
					t.Errorf("explore refused: %v", err)
				}
				time.Sleep(97 * time.Second)
				if l.Phase() != Fit {
					t.Fatalf("phase %v, want fit", l.Phase())
				}
				err := l.Admit(k, tc.ceiling)
				if tc.admit {
					if err != nil {
						t.Errorf("refused: %v", err)
					}
					return
				}
				if !errors.Is(err, ErrGated) || !strings.Contains(err.Error(), tc.reason) {
					t.Errorf("Admit = %v, want a refusal saying %q", err, tc.reason)
				}
			})
		})
	}
}

func TestNothingIsAdmittedOnceLanding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var changes []Change
		l := newLadder(t, 2*time.Minute, &changes)
		l.Advance(Land)
		k := l.Budget().Estimates().Kind("model")
		k.Declare(time.Millisecond, time.Millisecond)
		err := l.Admit(k, 0)
		if ge, ok := errors.AsType[*GateError](err); !ok || ge.Phase != Land || ge.What != "model" {
			t.Errorf("Admit while landing = %v", err)
		}
	})
}

func TestTheBudgetNoteSaysTimePhaseAndWhatIsForbidden(t *testing.T) {
	cases := []struct {
		at   time.Duration
		want string
	}{
		{0, "Budget: 2m0s left until the deadline, 1m40s until landing begins. Phase: explore. Not allowed now: nothing yet; parallel tool calls and sub-agents are allowed."},
		{80 * time.Second, "Budget: 40s left until the deadline, 20s until landing begins. Phase: narrow. Not allowed now: no new parallel tool calls, no sub-agents, no speculative calls."},
		{98500 * time.Millisecond, "Budget: 21s left until the deadline, 1.5s until landing begins. Phase: fit. Not allowed now: only calls whose usual duration (p95) fits in the time before landing; no parallel calls, sub-agents or speculative calls."},
		{119750 * time.Millisecond, "Budget: 250ms left until the deadline, 0s until landing begins. Phase: land. Not allowed now: no more tool calls; summarize now."},
	}
	for _, tc := range cases {
		t.Run(tc.at.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var changes []Change
				l := newLadder(t, 2*time.Minute, &changes)
				time.Sleep(tc.at)
				if got := l.Note(); got != tc.want {
					t.Errorf("note\n got %q\nwant %q", got, tc.want)
				}
			})
		})
	}
}

func TestPhaseNames(t *testing.T) {
	for p, want := range map[Phase]string{Explore: "explore", Narrow: "narrow", Fit: "fit", Land: "land", 9: "Phase(9)"} {
		if got, _ := p.MarshalText(); string(got) != want {
			t.Errorf("%d: %q, want %q", p, got, want)
		}
	}
}

func TestTheNoteOfARunLandedEarlySaysLandingHasBegun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var changes []Change
		l := newLadder(t, 2*time.Minute, &changes)
		time.Sleep(10 * time.Second)
		l.Advance(Land)
		want := "Budget: 1m50s left until the deadline, 0s until landing begins. Phase: land. Not allowed now: no more tool calls; summarize now."
		if got := l.Note(); got != want {
			t.Errorf("note\n got %q\nwant %q", got, want)
		}
	})
}

func TestNextNamesEachChangeAndTheInstantItHappens(t *testing.T) {
	cases := []struct {
		total time.Duration
		want  []struct {
			p  Phase
			at time.Duration
		}
	}{
		{10 * time.Second, []struct {
			p  Phase
			at time.Duration
		}{{Narrow, 6 * time.Second}, {Land, 7500 * time.Millisecond}}},
		{2 * time.Minute, []struct {
			p  Phase
			at time.Duration
		}{{Narrow, 72 * time.Second}, {Fit, 96 * time.Second}, {Land, 100 * time.Second}}},
		{time.Nanosecond * 7, []struct {
			p  Phase
			at time.Duration
		}{{Narrow, 5}, {Land, 6}}}, // R = 1ns: fit's rung, at 5.6ns rounded up to 6ns, is already land's
	}
	for _, tc := range cases {
		t.Run(tc.total.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var changes []Change
				l := newLadder(t, tc.total, &changes)
				for _, w := range tc.want {
					p, at, ok := l.Next()
					if !ok || p != w.p || at != w.at {
						t.Fatalf("Next() = %v at %v (%v), want %v at %v", p, at, ok, w.p, w.at)
					}
					time.Sleep(l.Budget().Until(at))
					if got := l.Phase(); got != w.p {
						t.Fatalf("at %v the ladder is in %v, want %v", w.at, got, w.p)
					}
				}
				if p, _, ok := l.Next(); ok {
					t.Errorf("Next() after landing = %v, want none", p)
				}
			})
		})
	}
}

func TestPeekReadsThePhaseOfAnInstantWithoutMovingTheLadder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var changes []Change
		l := newLadder(t, 10*time.Second, &changes) // narrow at 6s, land at 7.5s
		time.Sleep(7 * time.Second)
		if got := l.Peek(l.Budget().Spent()); got != Narrow {
			t.Errorf("Peek at 7s = %v, want narrow", got)
		}
		if got := l.Peek(5 * time.Second); got != Explore {
			t.Errorf("Peek(5s) before any move = %v, want explore", got)
		}
		if len(changes) != 0 {
			t.Errorf("Peek reported changes %v, want none: it does not move the ladder", changes)
		}
		l.Advance(Land)
		if got := l.Peek(time.Second); got != Land {
			t.Errorf("Peek(1s) after a forced landing = %v, want land: phases only move forward", got)
		}
	})
}

func TestALadderWithoutABudgetRefusesAllWorkAndNeverPanics(t *testing.T) {
	for name, l := range map[string]*Ladder{"zero": new(Ladder), "nil": nil} {
		t.Run(name, func(t *testing.T) {
			if p := l.Phase(); p != Land || !l.MustLand() || l.Peek(0) != Land || l.Advance(Land) != Land {
				t.Errorf("phase %v, want land", p)
			}
			if _, _, ok := l.Next(); ok || l.Budget() != nil {
				t.Error("a ladder without a budget has a next phase or a budget")
			}
			for _, err := range []error{l.MayWiden(Parallel), l.Admit(nil, time.Second)} {
				if ge, ok := errors.AsType[*GateError](err); !ok || !strings.Contains(ge.Reason, "no budget") {
					t.Errorf("gate %v, want refused: no budget", err)
				}
			}
			if note := l.Note(); !strings.HasPrefix(note, "Budget: 0s left until the deadline") {
				t.Errorf("note %q", note)
			}
		})
	}
}

// The pure rules both hosts call (issue 25) say what the ladder says.
func TestThePureRulesOfThePhaseSayWhatTheLadderSays(t *testing.T) {
	const total, reserve = 10 * time.Second, time.Second
	tests := []struct {
		name   string
		p      Phase
		spent  time.Duration
		reason string
	}{
		{"a phase the clock reached is not forced", Narrow, 6 * time.Second, ""},
		{"a phase ahead of the clock is forced", Land, 6 * time.Second, "forced"},
		{"explore at the start is not forced", Explore, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PhaseReason(tt.p, tt.spent, total, reserve); got != tt.reason {
				t.Errorf("PhaseReason(%v, %v) = %q, want %q", tt.p, tt.spent, got, tt.reason)
			}
		})
	}
	for p := Explore; p <= Land; p++ {
		next, at, ok := NextPhaseAt(p, total, reserve)
		if p == Land {
			if ok {
				t.Errorf("NextPhaseAt(land) = %v at %v, want none", next, at)
			}
			continue
		}
		if !ok || next <= p || PhaseAt(at, total, reserve) != next || PhaseAt(at-1, total, reserve) != p {
			t.Errorf("NextPhaseAt(%v) = %v at %v, %v: not the instant the clock leaves %v", p, next, at, ok, p)
		}
	}
	if err := WidenAt(Explore, SubAgent); err != nil {
		t.Errorf("WidenAt(explore) = %v, want nil", err)
	}
	err := WidenAt(Narrow, SubAgent)
	if ge, ok := errors.AsType[*GateError](err); !ok || GateReason(err) != ge.Reason || ge.Phase != Narrow {
		t.Errorf("WidenAt(narrow) = %v, GateReason %q", err, GateReason(err))
	}
	if got := GateReason(errors.New("other")); got != "other" {
		t.Errorf("GateReason of a plain error = %q, want its words", got)
	}
}
