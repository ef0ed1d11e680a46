package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestLoadPlanReadsYAMLAndJSONAlike(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want Config
	}{
		{
			name: "yaml with every field",
			in: `budget: 2m
steps: 20
tool_calls_per_step: 2
model:
  ceiling: 45s
  retries: 1
tools:
  - name: search
    ceiling: 30s
    retries: 2
`,
			want: Config{
				Budget: new(2 * time.Minute), Steps: new(20), ToolCallsPerStep: new(2),
				Model: Limits{Ceiling: new(45 * time.Second), Retries: new(1)},
				Tools: []Tool{{Name: "search", Limits: Limits{Ceiling: new(30 * time.Second), Retries: new(2)}}},
			},
		},
		{
			name: "tab-indented json",
			in:   "{\n\t\"budget\": \"90s\",\n\t\"tools\": [\n\t\t{\"name\": \"fetch\", \"ceiling\": \"10s\"}\n\t]\n}\n",
			want: Config{
				Budget: new(90 * time.Second),
				Tools:  []Tool{{Name: "fetch", Limits: Limits{Ceiling: new(10 * time.Second)}}},
			},
		},
		{
			// As in a tools file and a scenario: only null is left out, and
			// "" is a value like any other (see the bad input below).
			name: "nulls are left out",
			in:   "budget: 1m\nsteps: null\nmodel:\n  ceiling:\n  retries: ~\ntools:\n",
			want: Config{Budget: new(time.Minute)},
		},
		{
			name: "an empty file leaves everything to the defaults",
			in:   "",
			want: Config{},
		},
		{
			name: "a zero ceiling is kept, since it means no timeout",
			in:   "model:\n  ceiling: 0s\n",
			want: Config{Model: Limits{Ceiling: new(time.Duration(0))}},
		},
		{
			name: "integers may be written as YAML writes them",
			in:   "steps: 1_000\nmodel: {retries: 0x3}\n",
			want: Config{Steps: new(1000), Model: Limits{Retries: new(3)}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Load("p", strings.NewReader(tc.in))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			got.Origin = nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("config:\n got %s\nwant %s", describe(got), describe(tc.want))
			}
		})
	}
}

// describe renders a config's values, not its pointers.
func describe(c Config) string {
	b, _ := json.Marshal(c)
	return string(b)
}

func TestLoadPlanRejectsBadInputNamingFieldAndLine(t *testing.T) {
	cases := []struct {
		name     string
		in       string
		wantIs   error // nil when the decoder's own error is expected
		wantMsgs []string
	}{
		{
			name:     "an unknown field at the top level",
			in:       "budget: 2m\nbugdet: 3m\n",
			wantMsgs: []string{`p:2: unknown field "bugdet" at the top level (known: budget, steps, tool_calls_per_step, model, tools)`},
		},
		{
			name:     "an unknown field in a tool, beside a bad value the decoder read past",
			in:       "tools:\n  - name: a\n    timeout: 3s\n    ceiling: 3\n",
			wantIs:   ErrNotDuration,
			wantMsgs: []string{`p:3: unknown field "timeout" in a tools entry (known: name, ceiling, retries)`, `p:4: tools[0].ceiling 3: not a duration`},
		},
		{
			name:     "an unknown field in json",
			in:       `{"model": {"ceiling": "1s", "max_retries": 3}}`,
			wantMsgs: []string{`p:1: unknown field "max_retries" in model (known: ceiling, retries)`},
		},
		{
			name:     "a budget that is not a duration",
			in:       "steps: 3\nbudget: two minutes\n",
			wantIs:   ErrNotDuration,
			wantMsgs: []string{`p:2: budget "two minutes": not a duration (e.g. 90s, 2m)`},
		},
		{
			name:     "retries that are not a number",
			in:       "model:\n  retries: many\n",
			wantIs:   ErrNotInteger,
			wantMsgs: []string{`p:2: model.retries many: not a whole number`},
		},
		{
			name:     "a list where a duration belongs",
			in:       "model:\n  ceiling: [1s, 2s]\n",
			wantIs:   ErrNotDuration,
			wantMsgs: []string{`p:2: model.ceiling: not a duration`},
		},
		{
			// Only null is left out, as in a tools file.
			name:     "an empty string where a duration belongs",
			in:       "model:\n  ceiling: \"\"\n",
			wantIs:   ErrNotDuration,
			wantMsgs: []string{`p:2: model.ceiling: not a duration`},
		},
		{
			name:     "a quoted number where a number belongs",
			in:       "steps: \"3\"\n",
			wantIs:   ErrNotInteger,
			wantMsgs: []string{`p:1: steps 3: not a whole number`},
		},
		{
			name:     "a negative ceiling",
			in:       "model:\n  ceiling: -1s\n",
			wantIs:   ErrNegative,
			wantMsgs: []string{`p:2: model.ceiling -1s: must not be negative`},
		},
		{
			name:     "a number too large for any count",
			in:       "steps: 18446744073709551615\n",
			wantMsgs: []string{`p:1: steps 18446744073709551615: out of range`},
		},
		{
			name:     "a name that is not a string",
			in:       "tools:\n  - name: [a]\n",
			wantMsgs: []string{`p:2: tools[0].name: not a string`},
		},
		{
			name:     "a tool that is not a mapping",
			in:       "tools:\n  - search\n",
			wantMsgs: []string{`p:2: tools[0] search: not a mapping`},
		},
		{
			// The walker, not yaml's decoder, finds it now, in the words
			// the tools file and scenarios use.
			name:     "a key given twice",
			in:       "budget: 2m\nbudget: 3m\n",
			wantMsgs: []string{`p:2: budget: repeated; first given at line 1`},
		},
		{
			// Aliases are refused in every Glidepath file (internal/yamlfield).
			name:     "an alias",
			in:       "tools:\n  - {name: a, ceiling: &c 5s}\n  - {name: b, ceiling: *c}\n",
			wantMsgs: []string{`p:3: tools[1].ceiling: YAML aliases are not supported; write out the value anchored at line 2 instead of *c`},
		},
		{
			name:     "every mistake at once, in the order of the file",
			in:       "budget: soon\nmodel:\n  retries: many\n  timeout: 1s\nstepz: 3\n",
			wantMsgs: []string{"p:1: budget soon: not a duration (e.g. 90s, 2m)\np:3: model.retries many: not a whole number\np:4: unknown field \"timeout\" in model (known: ceiling, retries)\np:5: unknown field \"stepz\" at the top level"},
		},
		{
			name:     "broken yaml",
			in:       "budget: 2m\n  steps: 3\n",
			wantMsgs: []string{`p:2: mapping values are not allowed in this context`},
		},
		{
			name:     "a second document",
			in:       "budget: 2m\n---\nsteps: 3\n",
			wantMsgs: []string{`p:2: a second document; the file holds one`},
		},
		{
			name:     "a file larger than a tools file may be",
			in:       "# " + strings.Repeat("x", maxFile),
			wantMsgs: []string{"p: larger than 4194304 bytes"},
		},
		{
			name:     "a list instead of a map",
			in:       "- budget: 2m\n",
			wantMsgs: []string{`p:1: not a mapping; a plan file is a mapping of budget, steps, tool_calls_per_step, model, tools`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load("p", strings.NewReader(tc.in))
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			for _, m := range tc.wantMsgs {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error:\n%v\nwant it to contain %q", err, m)
				}
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("errors.Is(%v, %v) = false", err, tc.wantIs)
			}
		})
	}
}

func TestLoadPlanRecordsWhereEachValueWasWritten(t *testing.T) {
	in := "budget: 2m\ntools:\n  - ceiling: 1s\n    retries: 1\n  - name: b\n"
	c, err := Load("agent.yaml", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"budget":           "agent.yaml:1",
		"tools[0].name":    "agent.yaml:3", // no name of its own: the entry's first line
		"tools[0].ceiling": "agent.yaml:3",
		"tools[0].retries": "agent.yaml:4",
		"tools[1].name":    "agent.yaml:5",
	}
	if !reflect.DeepEqual(c.Origin, want) {
		t.Errorf("origin = %v, want %v", c.Origin, want)
	}
	_, err = Make(c)
	if want := "agent.yaml:3: tools[0].name: required"; err == nil || err.Error() != want {
		t.Errorf("Make error = %v, want %s", err, want)
	}
}

// FuzzLoadPlan feeds any file to Load and what it reads to Make:
// nothing panics, and every mistake is a *FieldError located in the file.
func FuzzLoadPlan(f *testing.F) {
	f.Add([]byte("budget: 2m\nsteps: 20\nmodel: {ceiling: 60s}\ntools:\n  - name: search\n    ceiling: 30s\n    retries: 2\n"))
	f.Add([]byte(`{"budget": "0s", "steps": -1, "tools": [{"ceiling": "x"}, {"name": "a"}, {"name": "a"}]}`))
	f.Add([]byte("tools:\n  - {name: a, ceiling: &c 5s}\n  - {name: b, ceiling: *c}\n"))
	f.Add([]byte("budget: 2m\nbudget: 3m\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Load("f.yaml", bytes.NewReader(data))
		if err == nil {
			_, err = Make(c)
		}
		if err == nil {
			return
		}
		errs := []error{err}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			errs = j.Unwrap()
		}
		for _, e := range errs {
			fe, ok := errors.AsType[*FieldError](e)
			if !ok || fe.Where != "" && !strings.HasPrefix(fe.Where, "f.yaml") {
				t.Fatalf("mistake %v is not a *FieldError located in f.yaml", e)
			}
		}
	})
}
