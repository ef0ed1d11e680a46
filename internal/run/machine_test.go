package run_test

import (
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/internal/run"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/trace"
)

var rules = run.Rules{Task: "find it", Quiet: 30 * time.Second, MaxSteps: 2, Parallel: true}

// enough is a landing's budget with room for the landing call.
var enough = run.Figures{Remaining: 10 * time.Second, Reserve: 2 * time.Second, Floor: 100 * time.Millisecond}

func ok(content string, calls int) run.Event {
	return run.Event{Kind: run.TurnEnded, Turn: model.TurnCommand{Kind: model.TurnDone, N: 1, OK: true},
		Reply: run.Reply{Content: content, ToolCalls: calls, FinishReason: "stop"}}
}

func TestMachine(t *testing.T) {
	refused := &budget.RefusedError{Rule: budget.BelowFloor}
	for _, tc := range []struct {
		name   string
		events []run.Event
		want   []run.CommandKind
		cause  landing.Cause
		steps  int
		check  func(m *run.Machine) string // a line when the record is wrong
	}{
		{
			name:   "a run whose model answers is done with its answer",
			events: []run.Event{{Kind: run.Begun}, ok("It is here.", 0)},
			want:   []run.CommandKind{run.MakeTurn, run.Done},
			steps:  1,
			check: func(m *run.Machine) string {
				if res := m.Result(nil); res.Status != landing.Complete || res.Answer != "It is here." {
					return "result " + string(res.Status) + " " + res.Answer
				}
				return ""
			},
		},
		{
			name:   "a reply with calls has them made, and the step limit lands the run",
			events: []run.Event{{Kind: run.Begun}, ok("", 1), {Kind: run.CallsEnded}, ok("", 2), {Kind: run.CallsEnded}},
			want:   []run.CommandKind{run.MakeTurn, run.MakeCalls, run.MakeTurn, run.MakeCalls, run.Land},
			cause:  landing.CauseMaxSteps, steps: 2,
		},
		{
			name: "a turn the budget refused before anything was sent is no step and says there was no time",
			events: []run.Event{{Kind: run.Begun}, {Kind: run.TurnEnded, Turn: model.TurnCommand{Kind: model.TurnDone,
				Refused: refused, Cause: landing.CauseBudget, Doing: landing.NoModelTurn(refused)}}},
			want:  []run.CommandKind{run.MakeTurn, run.Land},
			cause: landing.CauseBudget, steps: 0,
			check: func(m *run.Machine) string {
				if rec := m.Record(landing.CauseBudget, nil); rec.Doing != landing.NoModelTurn(refused) {
					return "doing " + rec.Doing
				}
				return ""
			},
		},
		{
			name: "a reply cut at its token limit has none of its calls made: one may be cut short",
			events: []run.Event{{Kind: run.Begun}, {Kind: run.TurnEnded, Turn: model.TurnCommand{Kind: model.TurnDone, N: 1, OK: true},
				Reply: run.Reply{ToolCalls: 2, FinishReason: "length"}}},
			want:  []run.CommandKind{run.MakeTurn, run.Land},
			cause: landing.CauseUpstream, steps: 1,
		},
		{
			name:   "a reply that says nothing lands upstream and says its answer was empty",
			events: []run.Event{{Kind: run.Begun}, ok("  ", 0)},
			want:   []run.CommandKind{run.MakeTurn, run.Land},
			cause:  landing.CauseUpstream, steps: 1,
			check: func(m *run.Machine) string {
				if rec := m.Record(landing.CauseUpstream, nil); rec.Failure != landing.EmptyAnswer {
					return "failure " + rec.Failure
				}
				return ""
			},
		},
		{
			name: "a run cancelled in a backoff lands cancelled and says the model had not answered yet",
			events: []run.Event{{Kind: run.Begun}, {Kind: run.TurnEnded, Figures: run.Figures{Ended: landing.CauseCancelled},
				Turn: model.TurnCommand{Kind: model.TurnDone, N: 1, RunEnded: true, Outcome: trace.UpstreamError}}},
			want:  []run.CommandKind{run.MakeTurn, run.Land},
			cause: landing.CauseCancelled, steps: 1,
			check: func(m *run.Machine) string {
				if b := landing.Boundary(m.Record(landing.CauseCancelled, nil)); b != "Cancelled at step 1: the model had not answered yet." {
					return "boundary " + b
				}
				return ""
			},
		},
		{
			name:   "a run whose work ended before its first turn lands and says no model turn had started",
			events: []run.Event{{Kind: run.Begun, Figures: run.Figures{Ended: landing.CauseQuiet}}},
			want:   []run.CommandKind{run.Land},
			cause:  landing.CauseQuiet,
			check: func(m *run.Machine) string {
				if rec := m.Record(landing.CauseQuiet, nil); rec.Doing != "no model turn had started" {
					return "doing " + rec.Doing
				}
				return ""
			},
		},
		{
			name:   "a landing with time for it sends the landing call and takes its answer",
			events: []run.Event{{Kind: run.Begun, Figures: run.Figures{Phase: landing.Land}}, {Kind: run.Landing, Figures: enough}, {Kind: run.LandingEnded, Reply: run.Reply{Content: "Partly."}}},
			want:   []run.CommandKind{run.Land, run.MakeLandingCall, run.Done},
			cause:  landing.CauseBudget,
			check: func(m *run.Machine) string {
				if res := m.Result(nil); res.Status != landing.Partial || res.Answer != "Partly." {
					return "result " + string(res.Status) + " " + res.Answer
				}
				return ""
			},
		},
		{
			name:   "a landing with no time for its call is the harness's summary",
			events: []run.Event{{Kind: run.Begun, Figures: run.Figures{Phase: landing.Land}}, {Kind: run.Landing, Figures: run.Figures{Remaining: 50 * time.Millisecond, Floor: 100 * time.Millisecond}}},
			want:   []run.CommandKind{run.Land, run.Done},
			cause:  landing.CauseBudget,
		},
		{
			name: "a setup that did not finish is named by the boundary, with no landing call",
			events: []run.Event{{Kind: run.Stopped, Cause: landing.CauseBudget, NoCall: true, Setup: []string{"listing the tools did not finish in 1s"}},
				{Kind: run.Landing, Figures: enough}},
			want:  []run.CommandKind{run.Land, run.Done},
			cause: landing.CauseBudget,
			check: func(m *run.Machine) string {
				if b := m.Result(nil).Boundary; !strings.Contains(b, "in setup, listing the tools did not finish in 1s") {
					return "boundary " + b
				}
				return ""
			},
		},
		{
			name:   "a setup that stopped once the run's work had ended lands on the run's end",
			events: []run.Event{{Kind: run.Stopped, Cause: landing.CauseUpstream, NoCall: true, Figures: run.Figures{Ended: landing.CauseCancelled}}},
			want:   []run.CommandKind{run.Land},
			cause:  landing.CauseCancelled,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := run.New(rules)
			var got []run.CommandKind
			var last run.Command
			for _, e := range tc.events {
				last = m.Step(e)
				got = append(got, last.Kind)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("commands %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("commands %v, want %v", got, tc.want)
				}
			}
			if last.Cause != tc.cause {
				t.Errorf("cause %q, want %q", last.Cause, tc.cause)
			}
			if m.Steps() != tc.steps {
				t.Errorf("steps %d, want %d", m.Steps(), tc.steps)
			}
			if tc.check != nil {
				if line := tc.check(&m); line != "" {
					t.Error(line)
				}
			}
		})
	}
}

// A turn asks for parallel calls only in the explore phase.
func TestMachineParallelOnlyInExplore(t *testing.T) {
	for _, p := range []landing.Phase{landing.Explore, landing.Narrow} {
		m := run.New(rules)
		c := m.Step(run.Event{Kind: run.Begun, Figures: run.Figures{Phase: p}})
		if c.Kind != run.MakeTurn || c.Parallel != (p == landing.Explore) {
			t.Errorf("phase %v: %+v", p, c)
		}
	}
}

// A step of the loop — a turn, its calls — allocates nothing (issue 25).
func TestMachineStepDoesNotAllocate(t *testing.T) {
	m := run.New(run.Rules{MaxSteps: 1 << 30})
	turn, calls := ok("", 1), run.Event{Kind: run.CallsEnded}
	m.Step(run.Event{Kind: run.Begun})
	if n := testing.AllocsPerRun(100, func() {
		m.Step(turn)
		m.Step(calls)
	}); n != 0 {
		t.Errorf("%v allocations per step", n)
	}
}
