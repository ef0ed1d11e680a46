package watchdog_test

import (
	"testing"
	"time"

	"github.com/glidepath/glidepath/watchdog"
)

// at is an instant of a clock's test, as an offset from its start.
type at = time.Duration

// clockStep is one thing that happens to a Clock at an offset from its start.
type clockStep struct {
	at     at
	do     string // "heard", "progress", "pause", "resume"
	units  int64
	source string
}

func TestClock(t *testing.T) {
	const q = 4 * time.Second
	cases := []struct {
		name     string
		cfg      watchdog.Config
		steps    []clockStep
		wantNext at     // when Next says to wake up after the steps; -1: no wake-up
		wantLast string // the StallError's Last at the firing
	}{
		{
			name:     "with no event the clock fires Q after its start",
			cfg:      watchdog.Config{Quiet: q},
			wantNext: q,
			wantLast: "none",
		},
		{
			name:     "an event moves the deadline to Q after it",
			cfg:      watchdog.Config{Quiet: q},
			steps:    []clockStep{{at: time.Second, do: "heard"}},
			wantNext: time.Second + q,
			wantLast: "tool_result",
		},
		{
			name:     "a pause resumes with the quiet time it had left",
			cfg:      watchdog.Config{Quiet: q},
			steps:    []clockStep{{at: 3 * time.Second, do: "pause"}, {at: 6 * time.Second, do: "resume"}},
			wantNext: 7 * time.Second,
			wantLast: "none",
		},
		{
			// Issue 25: Temporal restarted the pause at the event and so
			// gave it all of Q after the resume: it fired at 10.6s, 3s
			// after the process's 7.6s.
			name: "an event inside a pause opens its window at the event, not at the resume",
			cfg:  watchdog.Config{Quiet: q},
			steps: []clockStep{
				{at: 3500 * time.Millisecond, do: "pause"},
				{at: 3600 * time.Millisecond, do: "heard"},
				{at: 6600 * time.Millisecond, do: "resume"},
			},
			wantNext: 7600 * time.Millisecond,
			wantLast: "tool_result",
		},
		{
			name: "an event early in a long pause leaves the quiet time left at the pause",
			cfg:  watchdog.Config{Quiet: q},
			steps: []clockStep{
				{at: 3 * time.Second, do: "pause"},
				{at: 3100 * time.Millisecond, do: "heard"},
				{at: 9 * time.Second, do: "resume"},
			},
			wantNext: 10 * time.Second,
			wantLast: "tool_result",
		},
		{
			name:     "a paused clock has no wake-up",
			cfg:      watchdog.Config{Quiet: q},
			steps:    []clockStep{{at: time.Second, do: "pause"}},
			wantNext: -1,
		},
		{
			name: "overlapping pauses run the clock again at the last resume",
			cfg:  watchdog.Config{Quiet: q},
			steps: []clockStep{
				{at: time.Second, do: "pause"}, {at: 2 * time.Second, do: "pause"},
				{at: 3 * time.Second, do: "resume"}, {at: 5 * time.Second, do: "resume"},
			},
			wantNext: 8 * time.Second,
			wantLast: "none",
		},
		{
			name:     "a pause after the deadline revives nothing",
			cfg:      watchdog.Config{Quiet: q},
			steps:    []clockStep{{at: q, do: "pause"}, {at: q + time.Second, do: "heard"}},
			wantNext: q,
			wantLast: "none",
		},
		{
			name: "progress counts only when its source's units grow",
			cfg:  watchdog.Config{Quiet: q},
			steps: []clockStep{
				{at: time.Second, do: "progress", source: "k", units: 2},
				{at: 2 * time.Second, do: "progress", source: "k", units: 2},
				{at: 3 * time.Second, do: "progress", source: "k", units: 1},
			},
			wantNext: time.Second + q,
			wantLast: "progress",
		},
		{
			name:     "a deadline at the wall has no wake-up: the wall wins",
			cfg:      watchdog.Config{Quiet: q, Wall: time.Unix(0, 0).Add(q)},
			wantNext: -1,
		},
	}
	start := time.Unix(0, 0)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := watchdog.NewClock(tc.cfg, start)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.steps {
				now := start.Add(s.at)
				switch s.do {
				case "heard":
					c.Heard(watchdog.ToolResult, now)
				case "progress":
					c.Progress(s.source, s.units, now)
				case "pause":
					c.Pause(now)
				case "resume":
					c.Resume(now)
				}
			}
			next, ok := c.Next()
			if tc.wantNext < 0 {
				if ok {
					t.Fatalf("Next = %v, want no wake-up", next.Sub(start))
				}
				return
			}
			if !ok || next.Sub(start) != tc.wantNext {
				t.Fatalf("Next = %v, %t; want %v", next.Sub(start), ok, tc.wantNext)
			}
			if _, fired := c.Fire(next.Add(-time.Nanosecond)); fired {
				t.Error("fired a nanosecond before its deadline")
			}
			stall, fired := c.Fire(next)
			if !fired || stall.Last.String() != tc.wantLast {
				t.Fatalf("Fire at the deadline = %+v, %t; want a stall after %s", stall, fired, tc.wantLast)
			}
			if _, again := c.Fire(next.Add(time.Second)); again || !c.Fired() {
				t.Error("the clock fired twice")
			}
			if _, ok := c.Next(); ok {
				t.Error("a fired clock still asks to be woken")
			}
		})
	}
}

func TestNewClockRejectsANegativeQuiet(t *testing.T) {
	if _, err := watchdog.NewClock(watchdog.Config{Quiet: -time.Second}, time.Unix(0, 0)); err == nil {
		t.Fatal("NewClock accepted a negative quiet period")
	}
}

func TestClockStepsDoNotAllocate(t *testing.T) {
	start := time.Unix(0, 0)
	c, _ := watchdog.NewClock(watchdog.Config{Quiet: time.Hour}, start)
	c.Progress("k", 1, start)
	var units int64 = 1
	allocs := testing.AllocsPerRun(100, func() {
		units++
		now := start.Add(time.Duration(units) * time.Millisecond)
		c.Heard(watchdog.ModelMessage, now)
		c.Progress("k", units, now)
		if c.Pause(now) {
			c.Resume(now)
		}
		c.Next()
		c.Fire(now)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per step, want 0", allocs)
	}
}
