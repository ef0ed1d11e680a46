package watchdog_test

import (
	"cmp"
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/watchdog"
)

// holdStep is one thing that happens to a Clock with calls in flight.
type holdStep struct {
	at   at
	do   string // "begin", "headers", "progress", "end", "heard", "pause", "resume"
	call watchdog.Call
	n    int64
	key  string // progress's source; empty: "k1"
}

func TestHolds(t *testing.T) {
	const q = 2 * time.Second
	tool := watchdog.Call{Key: "k1", Step: "tool:slow", Allowance: 7 * time.Second, Source: watchdog.SourceDeclared}
	model := watchdog.Call{Key: "model", Step: "model", Allowance: 6 * time.Second, Source: watchdog.SourceProfile, AtHeaders: true}
	cases := []struct {
		name     string
		mode     watchdog.Mode
		wall     at
		steps    []holdStep
		wantFire at // when the clock fires; -1: it never does
		wantHeld bool
		wantHead bool
		wantStep string
		wantFor  at // the named call's silence
	}{
		{
			name:     "a tool call is held for its allowance from its start",
			steps:    []holdStep{{at: time.Second, do: "heard"}, {at: time.Second, do: "begin", call: tool}},
			wantFire: 8 * time.Second, wantHeld: true, wantStep: "tool:slow", wantFor: 7 * time.Second,
		},
		{
			name: "an allowance not above the quiet window holds nothing",
			steps: []holdStep{{at: time.Second, do: "heard"},
				{at: time.Second, do: "begin", call: watchdog.Call{Key: "k1", Step: "tool:quick", Allowance: q}}},
			wantFire: 3 * time.Second, wantStep: "tool:quick", wantFor: 2 * time.Second,
		},
		{
			name:     "a model call is not held before its server answers: a server that never does is caught at Q",
			steps:    []holdStep{{at: time.Second, do: "heard"}, {at: time.Second, do: "begin", call: model}},
			wantFire: 3 * time.Second, wantStep: "model", wantFor: 2 * time.Second,
		},
		{
			name: "a model call is held once its server answers, for its allowance from its start",
			steps: []holdStep{{at: time.Second, do: "heard"}, {at: time.Second, do: "begin", call: model},
				{at: 1500 * time.Millisecond, do: "headers"}},
			wantFire: 7 * time.Second, wantHeld: true, wantHead: true, wantStep: "model", wantFor: 6 * time.Second,
		},
		{
			name: "a model call whose headers came late is still caught at its allowance from its start",
			steps: []holdStep{{at: time.Second, do: "heard"}, {at: time.Second, do: "begin", call: model},
				{at: 2900 * time.Millisecond, do: "headers"}},
			wantFire: 7 * time.Second, wantHeld: true, wantHead: true, wantStep: "model", wantFor: 6 * time.Second,
		},
		{
			name: "a held model call's progress counts its allowance again from the progress",
			steps: []holdStep{{at: time.Second, do: "heard"}, {at: time.Second, do: "begin", call: model},
				{at: 1500 * time.Millisecond, do: "headers"}, {at: 5 * time.Second, do: "progress", n: 1, key: "model"}},
			wantFire: 11 * time.Second, wantHeld: true, wantHead: true, wantStep: "model", wantFor: 6 * time.Second,
		},
		{
			name: "a tool's first progress ends its hold: its silence is measured from the progress",
			steps: []holdStep{{at: time.Second, do: "heard"}, {at: time.Second, do: "begin", call: tool},
				{at: 4 * time.Second, do: "progress", n: 1}},
			wantFire: 6 * time.Second, wantStep: "tool:slow", wantFor: 2 * time.Second,
		},
		{
			name: "a hold that ends resets nothing: a call that ended silent past Q leaves the run stalled",
			steps: []holdStep{{at: time.Second, do: "heard"}, {at: time.Second, do: "begin", call: tool},
				{at: 5 * time.Second, do: "end"}},
			wantFire: 3 * time.Second, // past: the host fires at once
		},
		{
			name:     "a hold never reaches past the wall",
			wall:     6 * time.Second,
			steps:    []holdStep{{at: time.Second, do: "heard"}, {at: time.Second, do: "begin", call: tool}},
			wantFire: -1,
		},
		{
			name:     "a clock that is off never fires, held or not",
			mode:     watchdog.Off,
			steps:    []holdStep{{at: time.Second, do: "heard"}},
			wantFire: -1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Unix(1e9, 0)
			cfg := watchdog.Config{Quiet: q, Mode: tc.mode}
			if tc.wall > 0 {
				cfg.Wall = start.Add(tc.wall)
			}
			c, err := watchdog.NewClock(cfg, start)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.steps {
				now := start.Add(s.at)
				switch s.do {
				case "heard":
					c.Heard(watchdog.ToolCall, now)
				case "begin":
					c.Begin(s.call, now)
				case "headers":
					c.Headers("model", now)
				case "progress":
					c.Progress(cmp.Or(s.key, "k1"), s.n, now)
				case "end":
					c.End("k1")
				}
			}
			next, ok := c.Next()
			if tc.wantFire < 0 {
				if ok {
					t.Fatalf("Next = %v, want no wake-up", next.Sub(start))
				}
				return
			}
			if !ok || next.Sub(start) != tc.wantFire {
				t.Fatalf("Next = %v, %v; want %v", next.Sub(start), ok, tc.wantFire)
			}
			if _, fired := c.Fire(next.Add(-time.Nanosecond)); fired {
				t.Fatal("fired before its deadline")
			}
			stall, fired := c.Fire(next)
			if !fired {
				t.Fatal("did not fire at its deadline")
			}
			if got := stall.Call; got.Step != tc.wantStep || got.Held != tc.wantHeld || got.Headers != tc.wantHead ||
				(tc.wantStep != "" && got.For != tc.wantFor) {
				t.Errorf("stall names %+v; want step %q held %v headers %v silent %v", got, tc.wantStep, tc.wantHeld, tc.wantHead, tc.wantFor)
			}
		})
	}
}

func TestAllowance(t *testing.T) {
	cases := []struct {
		name           string
		x              watchdog.Expected
		ceiling, lease time.Duration
		want           time.Duration
		wantSource     watchdog.Source
	}{
		{name: "it is twice the p95, from where the p95 came", x: watchdog.Expected{P95: 3 * time.Second, From: watchdog.SourceProfile},
			want: 6 * time.Second, wantSource: watchdog.SourceProfile},
		{name: "nothing known is no allowance", want: 0, wantSource: watchdog.SourceNone},
		{name: "a stated silence replaces twice the p95", x: watchdog.Expected{P95: 3 * time.Second, From: watchdog.SourceObserved, Stated: 20 * time.Second},
			want: 20 * time.Second, wantSource: watchdog.SourceStated},
		{name: "a cut learned before raises it to twice the cut", x: watchdog.Expected{P95: time.Second, From: watchdog.SourceObserved, Learned: 4 * time.Second},
			want: 8 * time.Second, wantSource: watchdog.SourceLearned},
		{name: "a shorter learned cut changes nothing", x: watchdog.Expected{P95: 5 * time.Second, From: watchdog.SourceDeclared, Learned: time.Second},
			want: 10 * time.Second, wantSource: watchdog.SourceDeclared},
		{name: "the ceiling caps it", x: watchdog.Expected{P95: 3 * time.Second, From: watchdog.SourceDeclared}, ceiling: 4 * time.Second,
			want: 4 * time.Second, wantSource: watchdog.SourceDeclared},
		{name: "the lease caps it", x: watchdog.Expected{P95: 3 * time.Second, From: watchdog.SourceDeclared}, lease: 5 * time.Second,
			want: 5 * time.Second, wantSource: watchdog.SourceDeclared},
		{name: "max silence caps it, five minutes by default", x: watchdog.Expected{P95: time.Hour, From: watchdog.SourceDeclared},
			want: watchdog.DefaultMaxSilence, wantSource: watchdog.SourceDeclared},
		{name: "a max silence of the user's caps it", x: watchdog.Expected{P95: time.Hour, From: watchdog.SourceDeclared, Max: time.Minute},
			want: time.Minute, wantSource: watchdog.SourceDeclared},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, src := tc.x.Allowance(tc.ceiling, tc.lease)
			if got != tc.want || src != tc.wantSource {
				t.Errorf("Allowance = %v (%v); want %v (%v)", got, src, tc.want, tc.wantSource)
			}
		})
	}
}

func TestAWarningClockWarnsOnceAndGoesOn(t *testing.T) {
	start := time.Unix(1e9, 0)
	c, err := watchdog.NewClock(watchdog.Config{Quiet: 2 * time.Second, Mode: watchdog.Warn}, start)
	if err != nil {
		t.Fatal(err)
	}
	stall, fired := c.Fire(start.Add(2 * time.Second))
	if !fired || !stall.Warning {
		t.Fatalf("Fire at Q = %+v, %v; want a warning", stall, fired)
	}
	if _, ok := c.Next(); ok {
		t.Fatal("a clock that warned arms again with nothing new")
	}
	if !c.Heard(watchdog.ToolResult, start.Add(5*time.Second)) {
		t.Fatal("an event after a warning did not count: the run goes on")
	}
	next, ok := c.Next()
	if !ok || next.Sub(start) != 7*time.Second {
		t.Fatalf("Next = %v, %v; want 7s: an event arms the warning again", next.Sub(start), ok)
	}
	if c.Fired() {
		t.Fatal("a warning clock fired for good")
	}
}

func TestAWatchdogInWarnModeHearsTheStallAndKeepsTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var heard []watchdog.StallError
		w, ctx, err := watchdog.Start(t.Context(), watchdog.Config{Quiet: time.Second, Mode: watchdog.Warn,
			Warn: func(s watchdog.StallError) { heard = append(heard, s) }})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		w.Begin(watchdog.Call{Key: "k", Step: "tool:slow", Allowance: 3 * time.Second, Source: watchdog.SourceStated})
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if ctx.Err() != nil {
			t.Fatalf("the run ended: %v", context.Cause(ctx))
		}
		if len(heard) != 1 || !heard[0].Call.Held || heard[0].Call.Source != watchdog.SourceStated {
			t.Fatalf("heard %+v; want one warning naming the held call", heard)
		}
	})
}

func TestAHeldWatchdogEndsTheRunWhenTheAllowanceRunsOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, ctx, err := watchdog.Start(t.Context(), watchdog.Config{Quiet: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		start := time.Now()
		w.Mark(watchdog.ModelCall)
		w.Begin(watchdog.Call{Key: "model", Step: "model", Allowance: 4 * time.Second, Source: watchdog.SourceObserved, AtHeaders: true})
		time.Sleep(500 * time.Millisecond)
		w.Headers("model")
		<-ctx.Done()
		if got := time.Since(start); got != 4*time.Second {
			t.Errorf("the run ended at %v; want 4s, the allowance from the call's start", got)
		}
		var stall *watchdog.StallError
		if !errors.As(context.Cause(ctx), &stall) || !stall.Call.Held || !stall.Call.Headers || stall.Call.For != 4*time.Second {
			t.Fatalf("cause %v; want a stall of the held model call", context.Cause(ctx))
		}
	})
}

func TestEndingAHoldBringsTheDeadlineBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, ctx, err := watchdog.Start(t.Context(), watchdog.Config{Quiet: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		start := time.Now()
		w.Begin(watchdog.Call{Key: "k", Step: "tool:slow", Allowance: time.Minute, Source: watchdog.SourceDeclared})
		time.Sleep(time.Second)
		w.End("k")
		<-ctx.Done()
		if got := time.Since(start); got != 2*time.Second {
			t.Errorf("the run ended at %v; want 2s: its own window, once the hold ended", got)
		}
	})
}

func TestParseMode(t *testing.T) {
	for _, m := range []watchdog.Mode{watchdog.Enforce, watchdog.Warn, watchdog.Off} {
		if got, err := watchdog.ParseMode(m.String()); err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v", m, got, err)
		}
	}
	if _, err := watchdog.ParseMode("strict"); err == nil {
		t.Error("ParseMode(strict) did not fail")
	}
}

func TestAHoldRevivesNoRunThatHasStalled(t *testing.T) {
	start := time.Unix(1e9, 0)
	c, err := watchdog.NewClock(watchdog.Config{Quiet: time.Second}, start)
	if err != nil {
		t.Fatal(err)
	}
	// The deadline, 1s, has passed; the host has not fired the clock yet.
	c.Begin(watchdog.Call{Key: "k", Step: "tool:slow", Allowance: time.Minute}, start.Add(2*time.Second))
	if next, ok := c.Next(); !ok || next.Sub(start) != time.Second {
		t.Fatalf("Next = %v, %v; want 1s: a call begun after the deadline holds nothing", next.Sub(start), ok)
	}
	c.Begin(watchdog.Call{Key: "model", Step: "model", Allowance: time.Minute, AtHeaders: true}, start)
	c.Headers("model", start.Add(3*time.Second))
	if next, ok := c.Next(); !ok || next.Sub(start) != time.Second {
		t.Fatalf("Next = %v, %v; want 1s: headers after the deadline hold nothing", next.Sub(start), ok)
	}
}

func TestAToolsFirstProgressBringsTheWatchdogsDeadlineBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, ctx, err := watchdog.Start(t.Context(), watchdog.Config{Quiet: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		start := time.Now()
		w.Begin(watchdog.Call{Key: "k", Step: "tool:t", Allowance: time.Minute})
		time.Sleep(6 * time.Second) // past Q: the timer is armed for the hold's end
		w.Progress("k", 1)
		<-ctx.Done()
		if got := time.Since(start); got != 11*time.Second {
			t.Errorf("the run stalled at %v, want 11s: Q after the progress that ended the hold, as the Clock says", got)
		}
	})
}

func TestAPauseInsideAHoldMovesTheHoldOn(t *testing.T) {
	start := time.Unix(1e9, 0)
	c, err := watchdog.NewClock(watchdog.Config{Quiet: 5 * time.Second}, start)
	if err != nil {
		t.Fatal(err)
	}
	c.Begin(watchdog.Call{Key: "k", Step: "tool:t", Allowance: 40 * time.Second}, start)
	if !c.Pause(start.Add(30 * time.Second)) { // a Retry-After of 15s
		t.Fatal("the pause did not take")
	}
	c.Resume(start.Add(45 * time.Second))
	next, ok := c.Next()
	if !ok || next.Sub(start) != 55*time.Second {
		t.Fatalf("Next = %v, %v; want 55s: the hold's 10s left after the wait the run chose", next.Sub(start), ok)
	}
	if st, _ := c.Fire(next); st.Call.For != 40*time.Second {
		t.Errorf("the stall says the call was silent %v, want 40s: the wait was not silence", st.Call.For)
	}
}

func TestAWarningWatchdogWarnsAgain(t *testing.T) {
	cases := []struct {
		name  string
		after func(w *watchdog.Watchdog) // at 1.5s, half a second after the first warning
	}{
		{"after an event, Q after it", func(w *watchdog.Watchdog) { w.Mark(watchdog.ToolResult) }},
		{"after a new call, when its allowance has run out", func(w *watchdog.Watchdog) {
			w.Mark(watchdog.ToolCall)
			w.Begin(watchdog.Call{Key: "k", Step: "tool:slow", Allowance: 3 * time.Second})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				warnings := 0
				w, _, err := watchdog.Start(t.Context(), watchdog.Config{Quiet: time.Second, Mode: watchdog.Warn,
					Warn: func(watchdog.StallError) { warnings++ }})
				if err != nil {
					t.Fatal(err)
				}
				defer w.Stop()
				time.Sleep(1500 * time.Millisecond) // warned at 1s; nothing armed since
				tc.after(w)
				time.Sleep(5 * time.Second)
				synctest.Wait()
				if warnings != 2 {
					t.Errorf("%d warnings, want 2: one at Q, and one after", warnings)
				}
			})
		})
	}
}

// Review of issue 27: in warn mode a model whose headers came after its
// allowance had run out was warned of at once, at the instant its server
// answered, before any silence after it.
func TestHeadersAfterTheAllowanceHoldNothingInWarnMode(t *testing.T) {
	start := time.Unix(1e9, 0)
	c, err := watchdog.NewClock(watchdog.Config{Quiet: time.Second, Mode: watchdog.Warn}, start)
	if err != nil {
		t.Fatal(err)
	}
	c.Begin(watchdog.Call{Key: "model", Step: "model", Allowance: 6 * time.Second, AtHeaders: true}, start)
	if st, ok := c.Fire(start.Add(time.Second)); !ok || st.Call.Headers {
		t.Fatalf("Fire at Q = %+v, %v; want a warning of a server that never answered", st, ok)
	}
	c.Headers("model", start.Add(7*time.Second))
	if next, ok := c.Next(); ok {
		t.Errorf("Next = %v after headers past the allowance; want no wake-up, nothing held", next.Sub(start))
	}
}

// Review of issue 27: the live line counted a pause as silence, and
// warned of a held call while the clock was paused, or off.
func TestAHeldCallsSilenceStopsAtAPauseAndAnOffClockHoldsNothing(t *testing.T) {
	start := time.Unix(1e9, 0)
	call := watchdog.Call{Key: "k", Step: "tool:slow", Allowance: 6 * time.Second}
	c, err := watchdog.NewClock(watchdog.Config{Quiet: time.Second}, start)
	if err != nil {
		t.Fatal(err)
	}
	c.Begin(call, start)
	if !c.Pause(start.Add(time.Second)) {
		t.Fatal("the pause did not take")
	}
	if s, ok := c.Held(start.Add(9 * time.Second)); !ok || s.For != time.Second {
		t.Errorf("Held during the pause = %+v, %v; want silent 1s, as at the pause", s, ok)
	}
	c.Resume(start.Add(9 * time.Second))
	if s, ok := c.Held(start.Add(10 * time.Second)); !ok || s.For != 2*time.Second {
		t.Errorf("Held after the resume = %+v, %v; want silent 2s", s, ok)
	}
	off, err := watchdog.NewClock(watchdog.Config{Quiet: time.Second, Mode: watchdog.Off}, start)
	if err != nil {
		t.Fatal(err)
	}
	off.Begin(call, start)
	if s, ok := off.Held(start.Add(5 * time.Second)); ok {
		t.Errorf("an off clock's Held = %+v; want nothing held", s)
	}
}
