package budget

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func mustNew(t *testing.T, cfg Config) *Budget {
	t.Helper()
	b, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	return b
}

func TestDefaultReserveFollowsTheSpecRule(t *testing.T) {
	cases := []struct {
		total, want time.Duration
	}{
		{2 * time.Minute, 20 * time.Second},         // min(20s, 30s) beats 12s
		{10 * time.Second, 2500 * time.Millisecond}, // min(20s, 2.5s) beats 1s
		{10 * time.Minute, 60 * time.Second},        // 10% beats the 20s cap
		{100 * time.Second, 20 * time.Second},       // the 20s cap, above 10s
		{time.Second, 250 * time.Millisecond},
		{time.Hour, 6 * time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.total.String(), func(t *testing.T) {
			if got := DefaultReserve(tc.total); got != tc.want {
				t.Errorf("DefaultReserve(%v) = %v, want %v", tc.total, got, tc.want)
			}
		})
	}
}

func TestNewRejectsUnusableConfigNamingTheField(t *testing.T) {
	cases := []struct {
		name  string
		cfg   Config
		field string
	}{
		{"zero total", Config{}, "total"},
		{"negative total", Config{Total: -time.Second}, "total"},
		{"negative reserve", Config{Total: time.Second, Reserve: -1}, "reserve"},
		{"reserve as large as the total", Config{Total: time.Second, Reserve: time.Second}, "reserve"},
		{"negative floor", Config{Total: time.Second, Floor: -1}, "floor"},
		{"floor as large as the total", Config{Total: time.Second, Floor: time.Second}, "floor"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			ce, ok := errors.AsType[*ConfigError](err)
			if !ok {
				t.Fatalf("New(%+v) = %v, want a *ConfigError", tc.cfg, err)
			}
			if ce.Field != tc.field {
				t.Errorf("field = %q, want %q (%v)", ce.Field, tc.field, err)
			}
		})
	}
}

func TestNewFillsDefaults(t *testing.T) {
	b := mustNew(t, Config{Total: 2 * time.Minute})
	if b.Reserve() != 20*time.Second || b.Floor() != DefaultFloor || b.Total() != 2*time.Minute {
		t.Errorf("reserve %v floor %v total %v, want 20s 50ms 2m", b.Reserve(), b.Floor(), b.Total())
	}
	if b.Estimates() == nil {
		t.Error("a budget without Estimates must get its own")
	}
}

func TestTheDeadlineIsWrittenOnceAndNeverMoves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		b := mustNew(t, Config{Total: 10 * time.Second})
		want := start.Add(10 * time.Second)
		check := func(when string) {
			if !b.Deadline().Equal(want) {
				t.Errorf("%s: deadline %v, want %v", when, b.Deadline(), want)
			}
		}
		check("at start")
		if _, err := b.Lease(nil, time.Second); err != nil {
			t.Fatal(err)
		}
		check("after a lease")
		if _, err := b.Slice(time.Second, 0); err != nil {
			t.Fatal(err)
		}
		check("after a slice")
		time.Sleep(7 * time.Second)
		check("after 7s")
		if got := b.Remaining(); got != 3*time.Second {
			t.Errorf("Remaining = %v, want 3s", got)
		}
		if got := b.Spent(); got != 7*time.Second {
			t.Errorf("Spent = %v, want 7s", got)
		}
		if got := b.FractionSpent(); got != 0.7 {
			t.Errorf("FractionSpent = %v, want 0.7", got)
		}
		if got := b.Available(); got != 500*time.Millisecond {
			t.Errorf("Available = %v, want 3s − 2.5s", got)
		}
		time.Sleep(time.Hour)
		check("long after")
		// Past the deadline the time that passed is told as it is, not
		// rounded down to Total (SPEC §3): 10s of budget, 1h7s spent.
		if want := time.Hour + 7*time.Second; b.Remaining() != 0 || b.Spent() != want || b.FractionSpent() != float64(want)/float64(10*time.Second) {
			t.Errorf("after the deadline: remaining %v spent %v fraction %v; want 0, %v, %v", b.Remaining(), b.Spent(), b.FractionSpent(),
				want, float64(want)/float64(10*time.Second))
		}
	})
}

func TestWithBudgetEndsAtTheDeadlineWithCauseDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		b := mustNew(t, Config{Total: 3 * time.Second})
		ctx, cancel := WithBudget(t.Context(), b)
		defer cancel()
		if got, ok := FromContext(ctx); !ok || got != b {
			t.Fatalf("FromContext = %v, %v", got, ok)
		}
		<-ctx.Done()
		if got := time.Since(start); got != 3*time.Second {
			t.Errorf("ended after %v, want 3s", got)
		}
		if !errors.Is(context.Cause(ctx), ErrDeadline) || ctx.Err() != context.DeadlineExceeded {
			t.Errorf("cause %v err %v", context.Cause(ctx), ctx.Err())
		}
	})
	if _, ok := FromContext(context.Background()); ok {
		t.Error("FromContext found a budget in a bare context")
	}
}

func TestLeaseGrantsMinOfCeilingAndAvailableMinusFloor(t *testing.T) {
	// Each case waits until `remaining` is left of a 2s budget with a 0.2s
	// reserve and 0.05s floor, then asks for a lease.
	cases := []struct {
		name       string
		remaining  time.Duration
		ceiling    time.Duration
		landing    bool
		want       time.Duration
		wantCapped bool
	}{
		{"budget binds: 1.000s left gives exactly 0.75s", time.Second, 0, false, 750 * time.Millisecond, false},
		{"ceiling binds", time.Second, 500 * time.Millisecond, false, 500 * time.Millisecond, true},
		{"ceiling equal to the budget's grant is not capped", time.Second, 750 * time.Millisecond, false, 750 * time.Millisecond, false},
		{"ceiling above the budget's grant", time.Second, 5 * time.Second, false, 750 * time.Millisecond, false},
		{"landing lease spends the reserve", time.Second, 0, true, 950 * time.Millisecond, false},
		{"landing lease inside the reserve", 150 * time.Millisecond, 0, true, 100 * time.Millisecond, false},
		{"landing lease with a ceiling", time.Second, 300 * time.Millisecond, true, 300 * time.Millisecond, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := mustNew(t, Config{Total: 2 * time.Second, Reserve: 200 * time.Millisecond, Floor: 50 * time.Millisecond})
				time.Sleep(2*time.Second - tc.remaining)
				lease := b.Lease
				if tc.landing {
					lease = b.LandingLease
				}
				l, err := lease(nil, tc.ceiling)
				if err != nil {
					t.Fatal(err)
				}
				if l.Granted != tc.want || l.Capped != tc.wantCapped || l.Landing != tc.landing {
					t.Errorf("granted %v capped %v landing %v, want %v %v %v", l.Granted, l.Capped, l.Landing, tc.want, tc.wantCapped, tc.landing)
				}
				if l.Remaining != tc.remaining {
					t.Errorf("Remaining = %v, want %v", l.Remaining, tc.remaining)
				}
				if want := time.Now().Add(tc.want); !l.Deadline.Equal(want) {
					t.Errorf("Deadline = %v, want %v", l.Deadline, want)
				}
				if l.Millis() != FormatRemaining(tc.want) {
					t.Errorf("Millis = %q", l.Millis())
				}
			})
		})
	}
}

func TestLeaseRefusesLocallyByRule(t *testing.T) {
	cases := []struct {
		name      string
		remaining time.Duration
		ceiling   time.Duration
		p50       time.Duration
		landing   bool
		rule      Rule
		left      time.Duration
		need      time.Duration
		msg       string
	}{
		{"at the floor", 250 * time.Millisecond, 0, 0, false, BelowFloor, 50 * time.Millisecond, 50 * time.Millisecond,
			"budget: refused tool:search: 50ms left, below floor 50ms"},
		{"inside the reserve", 100 * time.Millisecond, 0, 0, false, BelowFloor, 0, 50 * time.Millisecond, ""},
		{"after the deadline", 0, 0, 0, false, BelowFloor, 0, 50 * time.Millisecond, ""},
		{"landing at the floor", 50 * time.Millisecond, 0, 0, true, BelowFloor, 50 * time.Millisecond, 50 * time.Millisecond, ""},
		{"below the kind's p50", 420 * time.Millisecond, 0, 300 * time.Millisecond, false, BelowP50, 170 * time.Millisecond, 300 * time.Millisecond,
			"budget: refused tool:search: 170ms left, below p50 300ms"},
		{"a ceiling below the p50", time.Second, 100 * time.Millisecond, 300 * time.Millisecond, false, BelowP50, 100 * time.Millisecond, 300 * time.Millisecond, ""},
		{"landing below the p50", 200 * time.Millisecond, 0, 300 * time.Millisecond, true, BelowP50, 150 * time.Millisecond, 300 * time.Millisecond, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := mustNew(t, Config{Total: 2 * time.Second, Reserve: 200 * time.Millisecond, Floor: 50 * time.Millisecond})
				k := b.Estimates().Kind("tool:search")
				k.Declare(tc.p50, 0)
				time.Sleep(2*time.Second - tc.remaining)
				lease := b.Lease
				if tc.landing {
					lease = b.LandingLease
				}
				l, err := lease(k, tc.ceiling)
				if !errors.Is(err, ErrRefused) {
					t.Fatalf("lease = %+v, %v; want a refusal", l, err)
				}
				re, _ := errors.AsType[*RefusedError](err)
				if re.Rule != tc.rule || re.Left != tc.left || re.Need != tc.need || re.Remaining != tc.remaining || re.Step != "tool:search" {
					t.Errorf("refusal %+v, want rule %v left %v need %v remaining %v", *re, tc.rule, tc.left, tc.need, tc.remaining)
				}
				if tc.msg != "" && err.Error() != tc.msg {
					t.Errorf("message %q, want %q", err.Error(), tc.msg)
				}
				if l != (Lease{}) {
					t.Errorf("a refusal returned a lease %+v", l)
				}
			})
		})
	}
}

func TestLeaseAdmitsACallWhoseGrantMeetsTheP50(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Config{Total: 2 * time.Second, Reserve: 200 * time.Millisecond, Floor: 50 * time.Millisecond})
		k := b.Estimates().Kind("model")
		k.Declare(750*time.Millisecond, 0)
		time.Sleep(time.Second)
		l, err := b.Lease(k, 0)
		if err != nil || l.Granted != 750*time.Millisecond {
			t.Errorf("lease %+v, %v; want exactly 750ms granted", l, err)
		}
	})
}

func TestLeaseContextSaysWhetherTheLeaseOrTheRunEndedIt(t *testing.T) {
	cases := []struct {
		name    string
		ceiling time.Duration
		wantAt  time.Duration
		want    error
	}{
		{"the ceiling ends it", 300 * time.Millisecond, 300 * time.Millisecond, ErrLeaseExpired},
		{"the run's work time ends it", 0, 1750 * time.Millisecond, ErrDeadline},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := mustNew(t, Config{Total: 2 * time.Second, Reserve: 200 * time.Millisecond, Floor: 50 * time.Millisecond})
				start := time.Now()
				l, err := b.Lease(nil, tc.ceiling)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := l.Context(t.Context())
				defer cancel()
				<-ctx.Done()
				if got := time.Since(start); got != tc.wantAt {
					t.Errorf("ended after %v, want %v", got, tc.wantAt)
				}
				if !errors.Is(context.Cause(ctx), tc.want) || ctx.Err() != context.DeadlineExceeded {
					t.Errorf("cause %v err %v, want %v", context.Cause(ctx), ctx.Err(), tc.want)
				}
			})
		})
	}
}

func TestLeaseContextCarriesTheParentsCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Config{Total: 2 * time.Second})
		stalled := errors.New("stalled")
		parent, stop := context.WithCancelCause(t.Context())
		l, err := b.Lease(nil, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := l.Context(parent)
		defer cancel()
		time.Sleep(100 * time.Millisecond)
		stop(stalled)
		<-ctx.Done()
		if !errors.Is(context.Cause(ctx), stalled) {
			t.Errorf("cause %v, want the parent's", context.Cause(ctx))
		}
	})
}

func TestEstimatesUseDeclaredHintsUntilEnoughObservations(t *testing.T) {
	k := NewEstimates().Kind("tool:fetch")
	if k.P50() != 0 || k.P95() != 0 {
		t.Fatalf("a new kind knows p50 %v p95 %v", k.P50(), k.P95())
	}
	k.Declare(200*time.Millisecond, time.Second)
	for i := range MinObserved - 1 {
		k.Observe(time.Duration(i+1) * time.Millisecond)
		if k.P50() != 200*time.Millisecond || k.P95() != time.Second {
			t.Fatalf("after %d observations p50 %v p95 %v, want the declared hints", i+1, k.P50(), k.P95())
		}
	}
	k.Observe(5 * time.Millisecond) // observations 1..5ms
	if k.P50() != 3*time.Millisecond || k.P95() != 5*time.Millisecond {
		t.Errorf("p50 %v p95 %v, want 3ms 5ms", k.P50(), k.P95())
	}
	k.Observe(-time.Second) // ignored
	if k.P50() != 3*time.Millisecond {
		t.Errorf("a negative observation changed p50 to %v", k.P50())
	}
}

func TestEstimatesKeepOnlyTheLastWindowOfObservations(t *testing.T) {
	e := NewEstimates()
	k := e.Kind("model")
	if e.Kind("model") != k {
		t.Fatal("the same name gave two kinds")
	}
	for range window {
		k.Observe(10 * time.Second)
	}
	for i := range window {
		k.Observe(time.Duration(i+1) * time.Millisecond) // 1..64ms push out every 10s sample
	}
	if k.P50() != 32*time.Millisecond || k.P95() != 61*time.Millisecond {
		t.Errorf("p50 %v p95 %v, want 32ms 61ms", k.P50(), k.P95())
	}
}

func TestEstimatesAreSafeForConcurrentUse(t *testing.T) {
	e := NewEstimates()
	done := make(chan struct{})
	for i := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			k := e.Kind("tool:x")
			for j := range 200 {
				k.Observe(time.Duration((i+1)*(j+1)) * time.Microsecond) // never zero: any last window has a positive p95
				_ = k.P95()
			}
		}()
	}
	for range 4 {
		<-done
	}
	if p := e.Kind("tool:x").P95(); p <= 0 {
		t.Errorf("p95 after 800 observations = %v", p)
	}
}

func TestWarmedDurationsRankAsObservationsAndYieldToNewOnes(t *testing.T) {
	k := NewEstimates().Kind("model")
	k.Declare(time.Second, 2*time.Second)
	k.Warm([]time.Duration{100 * time.Millisecond, 200 * time.Millisecond})
	if k.P50() != time.Second {
		t.Errorf("p50 %v with 2 warm samples, want the declared 1s: too few to rank", k.P50())
	}
	k.Warm([]time.Duration{300 * time.Millisecond, 400 * time.Millisecond, 500 * time.Millisecond})
	if k.P50() != 300*time.Millisecond || k.P95() != 500*time.Millisecond {
		t.Errorf("p50 %v, p95 %v with 5 warm samples, want 300ms and 500ms", k.P50(), k.P95())
	}
	k.Declare(0, 0) // a tool's hints declared again do not undo history
	if k.P50() != 300*time.Millisecond {
		t.Errorf("p50 %v after a Declare, want the observed 300ms", k.P50())
	}
}

func TestTheZeroEstimatesGivesOneKindPerName(t *testing.T) {
	var e Estimates
	model, tool := e.Kind("model"), e.Kind("tool:search")
	if model == tool {
		t.Fatal("two names share one *Kind")
	}
	if again := e.Kind("model"); again != model {
		t.Error("the same name gave a second *Kind: its observations would be split")
	}
	if model.Name() != "model" || tool.Name() != "tool:search" {
		t.Errorf("names %q and %q", model.Name(), tool.Name())
	}
}
