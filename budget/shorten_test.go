package budget

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestShortenTakesTheReserveFromTheTimeTheRunHas(t *testing.T) {
	cases := []struct {
		name        string
		cfg         Config
		after       time.Duration // when Shorten is called, after New
		deadline    time.Duration // the earlier deadline, after New
		wantTotal   time.Duration
		wantReserve time.Duration
	}{
		{"a default reserve is recomputed on the new total",
			Config{Total: 20 * time.Second}, 0, 5 * time.Second, 5 * time.Second, 1250 * time.Millisecond},
		{"the total counts from the budget's start, not from the call",
			Config{Total: 2 * time.Minute}, 3 * time.Second, 40 * time.Second, 40 * time.Second, 10 * time.Second},
		{"a chosen reserve that still fits is kept",
			Config{Total: time.Minute, Reserve: 2 * time.Second}, 0, 10 * time.Second, 10 * time.Second, 2 * time.Second},
		{"a chosen reserve that no longer fits gives way to the rule",
			Config{Total: time.Minute, Reserve: 20 * time.Second}, 0, 10 * time.Second, 10 * time.Second, 2500 * time.Millisecond},
		{"a deadline already past leaves nothing remaining",
			Config{Total: time.Minute}, 2 * time.Second, time.Second, time.Second, 250 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := mustNew(t, tc.cfg)
				deadline := b.Start().Add(tc.deadline)
				time.Sleep(tc.after)

				s := b.Shorten(deadline)

				if s.Total() != tc.wantTotal || s.Reserve() != tc.wantReserve {
					t.Errorf("total %v, reserve %v; want %v, %v", s.Total(), s.Reserve(), tc.wantTotal, tc.wantReserve)
				}
				if !s.Start().Equal(b.Start()) || !s.Deadline().Equal(b.Start().Add(tc.wantTotal)) {
					t.Errorf("start %v, deadline %v; want the budget's start and start + %v", s.Start(), s.Deadline(), tc.wantTotal)
				}
				if want := max(tc.deadline-tc.after, 0); s.Remaining() != want {
					t.Errorf("remaining %v, want %v", s.Remaining(), want)
				}
				if s.Floor() != b.Floor() || s.Estimates() != b.Estimates() {
					t.Error("the floor or the estimates changed")
				}
				if b.Total() != tc.cfg.Total {
					t.Errorf("the original budget's total is %v now, want it untouched", b.Total())
				}
			})
		})
	}
}

func TestShortenKeepsTheBudgetWhenTheDeadlineIsNotEarlier(t *testing.T) {
	b := mustNew(t, Config{Total: time.Minute})
	for _, d := range []time.Time{b.Deadline(), b.Deadline().Add(time.Hour)} {
		if s := b.Shorten(d); s != b {
			t.Errorf("Shorten(%v) made a new budget; want the same one", d.Sub(b.Start()))
		}
	}
}

func TestABudgetShortenedToNothingRefusesEveryLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Config{Total: time.Minute})
		time.Sleep(time.Second)
		s := b.Shorten(b.Start().Add(-time.Second))
		if _, err := s.Lease(nil, 0); !errors.Is(err, ErrRefused) {
			t.Errorf("work lease: %v, want refused", err)
		}
		if _, err := s.LandingLease(nil, 0); !errors.Is(err, ErrRefused) {
			t.Errorf("landing lease: %v, want refused", err)
		}
		if f := s.FractionSpent(); f != 1 {
			t.Errorf("FractionSpent %v, want 1", f)
		}
	})
}

func TestReadAndUntilAnswerFromTheBudgetsOwnClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Config{Total: 10 * time.Second})
		time.Sleep(3 * time.Second)
		if spent, remaining := b.Read(); spent != 3*time.Second || remaining != 7*time.Second {
			t.Errorf("Read() = %v, %v; want 3s, 7s", spent, remaining)
		}
		if got := b.Until(6 * time.Second); got != 3*time.Second {
			t.Errorf("Until(6s) = %v, want 3s", got)
		}
		if got := b.Until(time.Second); got != -2*time.Second {
			t.Errorf("Until(1s) = %v, want -2s: that point has passed", got)
		}
		time.Sleep(time.Minute)
		if spent, remaining := b.Read(); spent != time.Minute+3*time.Second || remaining != 0 {
			t.Errorf("Read() past the deadline = %v, %v; want 1m3s, 0: the time that passed, nothing left", spent, remaining)
		}
	})
}

func TestWithinEndsTheBudgetAfterTheGivenTimeAtTheLatest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Config{Total: time.Minute}) // R = 15s
		time.Sleep(10 * time.Second)
		w := b.Within(b.Reserve())
		if w.Remaining() != 15*time.Second || w.Start() != b.Start() {
			t.Errorf("remaining %v, start %v; want 15s from now, from the same start", w.Remaining(), w.Start())
		}
		if b.Within(time.Hour) != b {
			t.Error("Within past the deadline made a new budget; want b itself")
		}
	})
}
