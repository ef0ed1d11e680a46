package run_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/glidepath/glidepath/internal/run"
	"github.com/glidepath/glidepath/landing"
)

func made(tool, args, result string) run.Made {
	return run.Made{Tool: tool, Args: []byte(args), Result: result}
}

// drive steps a machine of rules through turns, each asking for its calls
// and then told them, and returns the last command and the machine.
func drive(t *testing.T, r run.Rules, turns [][]run.Made) (run.Command, *run.Machine) {
	t.Helper()
	m := run.New(r)
	cmd := m.Step(run.Event{Kind: run.Begun})
	for i, calls := range turns {
		if cmd.Kind != run.MakeTurn {
			t.Fatalf("before turn %d: command %v, want MakeTurn", i+1, cmd.Kind)
		}
		if cmd = m.Step(ok("", len(calls))); cmd.Kind != run.MakeCalls {
			t.Fatalf("turn %d: command %v, want MakeCalls", i+1, cmd.Kind)
		}
		m.CallsMade(calls)
		cmd = m.Step(run.Event{Kind: run.CallsEnded})
	}
	return cmd, &m
}

func TestRepeatedCallsLandTheRunStuck(t *testing.T) {
	r := run.Rules{Task: "find it", MaxSteps: 20, MaxRepeats: 3}
	same := made("search", `{"q":"x"}`, "one hit")
	for _, tc := range []struct {
		name    string
		turns   [][]run.Made
		stuck   bool
		repeats int
	}{
		{
			name:  "the same call with the same result lands the run stuck after exactly MaxRepeats repeats",
			turns: [][]run.Made{{same}, {same}, {same}, {same}}, stuck: true, repeats: 3,
		},
		{
			name:  "one repeat fewer than MaxRepeats lets the run go on",
			turns: [][]run.Made{{same}, {same}, {same}}, repeats: 2,
		},
		{
			name: "arguments that differ only in spacing and key order are the same call",
			turns: [][]run.Made{{made("fetch", `{"id":1,"page":2}`, "p2")}, {made("fetch", ` { "page": 2, "id": 1 } `, "p2")},
				{made("fetch", `{"page":2,"id":1}`, "p2")}, {made("fetch", `{"id":1,"page":2}`, "p2")}},
			stuck: true, repeats: 3,
		},
		{
			name: "distinct calls are never taken for repeats",
			turns: [][]run.Made{{made("search", `{"q":"1"}`, "one hit")}, {made("search", `{"q":"2"}`, "one hit")},
				{made("search", `{"q":"3"}`, "one hit")}, {made("search", `{"q":"4"}`, "one hit")}, {made("fetch", `{"q":"1"}`, "one hit")}},
		},
		{
			name: "the same call with a new result each time is progress",
			turns: [][]run.Made{{made("poll", `{}`, "10%")}, {made("poll", `{}`, "40%")}, {made("poll", `{}`, "70%")},
				{made("poll", `{}`, "100%")}},
		},
		{
			name:  "calls of one turn run side by side and do not repeat each other",
			turns: [][]run.Made{{same, same, same, same}},
		},
		{
			name:  "every call of a turn that repeats an earlier turn's counts",
			turns: [][]run.Made{{same}, {same, same, same}}, stuck: true, repeats: 3,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, m := drive(t, r, tc.turns)
			if got := m.Repeats(); got != tc.repeats {
				t.Errorf("repeats %d, want %d", got, tc.repeats)
			}
			stuck := cmd.Kind == run.Land && cmd.Cause == landing.CauseStuck
			if stuck != tc.stuck {
				t.Errorf("command %v cause %q; stuck %v, want %v", cmd.Kind, cmd.Cause, stuck, tc.stuck)
			}
			if !tc.stuck && cmd.Kind != run.MakeTurn {
				t.Errorf("command %v, want MakeTurn", cmd.Kind)
			}
		})
	}
}

func TestTheBoundaryOfAStuckRunNamesTheRepeatedCall(t *testing.T) {
	same := made("search", `{"q": "x"}`, "one hit")
	cmd, m := drive(t, run.Rules{Task: "find it", MaxSteps: 20, MaxRepeats: 2}, [][]run.Made{{same}, {same}, {same}})
	if cmd.Kind != run.Land || cmd.Cause != landing.CauseStuck {
		t.Fatalf("command %v cause %q, want Land stuck", cmd.Kind, cmd.Cause)
	}
	m.Step(run.Event{Kind: run.Landing, Figures: run.Figures{Calls: []landing.Call{{Step: 1, Tool: "search", Outcome: landing.Done}}}})
	res := m.Result([]landing.Call{{Step: 1, Tool: "search", Outcome: landing.Done}})
	want := `Stopped at step 3, stuck repeating a call: search {"q":"x"} gave the same result 2 times over. Before that: search done.`
	if res.Cause != landing.CauseStuck || res.Boundary != want {
		t.Errorf("cause %q boundary %q\nwant %q", res.Cause, res.Boundary, want)
	}
}

func TestTheNoteTellsTheModelFromTheFirstRepeat(t *testing.T) {
	r := run.Rules{Task: "find it", MaxSteps: 20, MaxRepeats: 3}
	same := made("search", `{"q":"x"}`, "one hit")
	for _, tc := range []struct {
		name  string
		turns [][]run.Made
		want  string // "" : the note is the budget's alone
	}{
		{"a run with no repeat is told nothing more", [][]run.Made{{same}}, ""},
		{"a run that repeated a call once is told which, and when it stops", [][]run.Made{{same}, {same}},
			`Budget: 1m. You are repeating yourself: search {"q":"x"} returned the same result as before (1 repeated call; at 3 the run stops). Use what you have, or do something else.`},
		{"a distinct call is told nothing more", [][]run.Made{{same}, {made("search", `{"q":"y"}`, "one hit")}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, m := drive(t, r, tc.turns)
			want := tc.want
			if want == "" {
				want = "Budget: 1m."
			}
			if got := m.Note("Budget: 1m."); got != want {
				t.Errorf("note %q\nwant %q", got, want)
			}
		})
	}
}

func TestTheQuietClockHearsOnlyNewCallsAndNewResults(t *testing.T) {
	_, m := drive(t, run.Rules{MaxSteps: 20, MaxRepeats: 3}, [][]run.Made{{made("search", `{"q":"x"}`, "one hit")}})
	for _, tc := range []struct {
		name             string
		tool, args, res  string
		agent            bool
		sameCall, sameRe bool
	}{
		{"a call of an earlier turn's tool and arguments is not heard when issued, nor its same result", "search", `{"q":"x"}`, "one hit", false, true, true},
		{"its new result is heard", "search", `{"q":"x"}`, "two hits", false, true, false},
		{"a call with other arguments is heard", "search", `{"q":"y"}`, "one hit", false, false, false},
		{"a sub-agent's call is always heard when issued", "search", `{"q":"x"}`, "one hit", true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := m.SameCall(tc.tool, []byte(tc.args), tc.agent); got != tc.sameCall {
				t.Errorf("SameCall %v, want %v", got, tc.sameCall)
			}
			if got := m.SameResult(tc.tool, []byte(tc.args), tc.res); got != tc.sameRe {
				t.Errorf("SameResult %v, want %v", got, tc.sameRe)
			}
		})
	}
}

func TestAResumedMachineKeepsItsRepeats(t *testing.T) {
	r := run.Rules{Task: "find it", MaxSteps: 20, MaxRepeats: 2}
	same := made("search", `{"q":"x"}`, "one hit")
	_, m := drive(t, r, [][]run.Made{{same}, {same}})
	data, err := json.Marshal(m.State())
	if err != nil {
		t.Fatal(err)
	}
	var st run.State
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	again := run.Resume(r, st)
	again.Step(ok("", 1))
	again.CallsMade([]run.Made{same})
	if cmd := again.Step(run.Event{Kind: run.CallsEnded}); cmd.Kind != run.Land || cmd.Cause != landing.CauseStuck {
		t.Errorf("command %v cause %q, want Land stuck", cmd.Kind, cmd.Cause)
	}
}

func TestTheRepeatedCallIsNamedWithoutItsSecretsAndCutShort(t *testing.T) {
	long := `{"text":"` + strings.Repeat("a", 200) + `"}`
	key := `{"key":"sk-abcdefghijklmnopqrstuvwxyz0123"}`
	for _, tc := range []struct {
		name, args string
		check      func(note string) bool
	}{
		{"a key in the arguments is redacted", key, func(n string) bool { return !strings.Contains(n, "sk-abcdef") }},
		{"long arguments are cut short", long, func(n string) bool {
			return strings.Contains(n, "…") && !strings.Contains(n, strings.Repeat("a", 100))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := made("post", tc.args, "ok")
			_, m := drive(t, run.Rules{MaxSteps: 20, MaxRepeats: 3}, [][]run.Made{{c}, {c}})
			if note := m.Note(""); !tc.check(note) {
				t.Errorf("note %q", note)
			}
		})
	}
}
