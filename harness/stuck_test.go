package harness_test

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/sim"
)

// Activity is not progress (SPEC §3, issue 27): a model that calls the
// same tool with the same arguments, and gets the same answer, lands
// stuck after MaxRepeats repeats; one whose calls differ is not stopped.
func TestARunThatRepeatsACallLandsStuck(t *testing.T) {
	turn := func(n int, args string) sim.Rule {
		return sim.Rule{Turn: n, ToolCalls: []sim.ToolCall{{Name: "search", Arguments: args}}}
	}
	for _, tc := range []struct {
		name       string
		rules      []sim.Rule
		maxRepeats int
		cause      landing.Cause
		steps      int
		toldAt     int // the first turn whose note says the model repeats itself; 0: none
	}{
		{
			name:       "the same call with the same answer lands stuck after exactly MaxRepeats repeats",
			rules:      []sim.Rule{turn(1, `{"q":"cats"}`), turn(2, `{"q":"cats"}`), turn(3, `{"q": "cats"}`), turn(4, `{"q":"cats"}`)},
			maxRepeats: 2, cause: landing.CauseStuck, steps: 3, toldAt: 3,
		},
		{
			name:  "the default lands stuck at the third repeat",
			rules: []sim.Rule{turn(1, `{"q":"cats"}`), turn(2, `{"q":"cats"}`), turn(3, `{"q":"cats"}`), turn(4, `{"q":"cats"}`), turn(5, `{"q":"cats"}`)},
			cause: landing.CauseStuck, steps: 4, toldAt: 3,
		},
		{
			name: "distinct calls are never taken for repeats",
			rules: []sim.Rule{turn(1, `{"q":"cats 1"}`), turn(2, `{"q":"cats 2"}`), turn(3, `{"q":"cats 3"}`), turn(4, `{"q":"cats 4"}`),
				{Turn: 5, Answer: "Four searches."}},
			maxRepeats: 2, steps: 5,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := sim.NewPipeServer(&sim.Scenario{Rules: tc.rules})
				defer srv.Close()
				reg := registry(t, newCalls().sleeper("search", time.Second, "3 cats"))

				res, err := run(t, t.Context(), 5*time.Minute, harness.Config{Task: "find cats", MaxRepeats: tc.maxRepeats,
					Model: newModel(t, srv), Tools: reg}, nil)

				if err != nil {
					t.Fatal(err)
				}
				if res.Cause != tc.cause || res.Steps != tc.steps {
					t.Fatalf("cause %q, steps %d; want %q, %d (%s)", res.Cause, res.Steps, tc.cause, tc.steps, res.Boundary)
				}
				if tc.cause == landing.CauseStuck && !strings.Contains(res.Boundary, `stuck repeating a call: search {"q":"cats"} gave the same result`) {
					t.Errorf("boundary %q does not name the repeated call", res.Boundary)
				}
				for i, r := range chatRequests(srv)[:tc.steps] {
					told := strings.Contains(r.BudgetNote, `You are repeating yourself: search {"q":"cats"}`)
					if want := tc.toldAt > 0 && i+1 >= tc.toldAt; told != want {
						t.Errorf("turn %d: told %v, want %v (note %q)", i+1, told, want, r.BudgetNote)
					}
				}
			})
		})
	}
}

func TestANegativeMaxRepeatsIsRefused(t *testing.T) {
	err := harness.Config{Task: "find cats", MaxRepeats: -1}.Validate()
	if ce, ok := errors.AsType[*harness.ConfigError](err); !ok || ce.Field != "max-repeats" {
		t.Errorf("Validate = %v, want a ConfigError of max-repeats", err)
	}
}
