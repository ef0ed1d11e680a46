package durable

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	grun "github.com/glidepath/glidepath/internal/run"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/watchdog"
)

// throughJSON is v after a trip through JSON, as a Carry makes it.
func throughJSON[T any](t *testing.T, v T) T {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// An estimate carried across estimates as the one it was taken from, and
// goes on as it would: its oldest observation is the next pushed out.
func TestACarriedEstimateGoesOnAsTheOneItWasTakenFrom(t *testing.T) {
	for _, n := range []int{0, 3, 64, 100} {
		var l budget.Latency
		l.Declare(time.Second, 2*time.Second)
		for i := range n {
			l.Observe(time.Duration(i%17+1) * 100 * time.Millisecond)
		}
		c := throughJSON(t, estimateOf(&l)).latency()
		for i := range 70 {
			if c.P50() != l.P50() || c.P95() != l.P95() {
				t.Fatalf("%d observations, %d more: carried p50 %v p95 %v, want %v %v", n, i, c.P50(), c.P95(), l.P50(), l.P95())
			}
			d := time.Duration(i%5+1) * time.Second
			l.Observe(d)
			c.Observe(d)
		}
	}
}

// A quiet clock carried across, paused and resumed before, fires when and
// as the one it was taken from.
func TestACarriedQuietClockFiresAsTheOneItWasTakenFrom(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c, err := watchdog.NewClock(watchdog.Config{Quiet: 3 * time.Second}, t0)
	if err != nil {
		t.Fatal(err)
	}
	c.Progress("k", 2, t0.Add(time.Second))
	c.Pause(t0.Add(2 * time.Second))
	c.Resume(t0.Add(5 * time.Second))
	c.Heard(watchdog.ToolResult, t0.Add(5500*time.Millisecond))
	d := watchdog.RestoreClock(throughJSON(t, c.State()))
	if d.Progress("k", 2, t0.Add(6*time.Second)) {
		t.Error("the carried clock took units it had heard for progress")
	}
	a, _ := c.Next()
	b, _ := d.Next()
	sa, fa := c.Fire(a)
	sb, fb := d.Fire(b)
	if !a.Equal(b) || fa != fb || sa != sb {
		t.Errorf("carried: fires at %v (%v, %+v), want %v (%v, %+v)", b, fb, sb, a, fa, sa)
	}
}

// A run's machine carried across between two turns lands with the words
// of the one it was taken from.
func TestACarriedMachineLandsAsTheOneItWasTakenFrom(t *testing.T) {
	rules := grun.Rules{Task: "t", Quiet: time.Second, MaxSteps: 2}
	m := grun.New(rules)
	m.Step(grun.Event{Kind: grun.Begun, Setup: []string{"listing"}})
	m.Step(grun.Event{Kind: grun.TurnEnded, Turn: model.TurnCommand{Kind: model.TurnDone, OK: true, N: 1, Unanswered: "u"}, Reply: grun.Reply{ToolCalls: 1}})
	c := grun.Resume(rules, throughJSON(t, m.State()))
	f := grun.Figures{Phase: landing.Explore}
	if a, b := m.Step(grun.Event{Kind: grun.CallsEnded, Figures: f}), c.Step(grun.Event{Kind: grun.CallsEnded, Figures: f}); a.Kind != b.Kind || a.Step != b.Step {
		t.Fatalf("carried: %+v, want %+v", b, a)
	}
	ended := model.TurnCommand{Kind: model.TurnDone, OK: true, N: 1}
	m.Step(grun.Event{Kind: grun.TurnEnded, Turn: ended, Reply: grun.Reply{ToolCalls: 1}})
	c.Step(grun.Event{Kind: grun.TurnEnded, Turn: ended, Reply: grun.Reply{ToolCalls: 1}})
	a, b := m.Step(grun.Event{Kind: grun.CallsEnded, Figures: f}), c.Step(grun.Event{Kind: grun.CallsEnded, Figures: f})
	if a.Kind != grun.Land || a.Kind != b.Kind || a.Cause != b.Cause || landing.Boundary(m.Record(a.Cause, nil)) != landing.Boundary(c.Record(b.Cause, nil)) {
		t.Errorf("carried: %+v, want %+v landing", b, a)
	}
}
