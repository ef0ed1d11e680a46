package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const exampleConfig = "../../examples/plan/agent.yaml"

// files are written to a temporary directory; "$DIR" in args names it.
var files = map[string]string{
	"ok.yaml":        "budget: 1m\nsteps: 4\nmodel: {ceiling: 5s, retries: 0}\n",
	"unknown.yaml":   "budget: 2m\nmodel:\n  timeout: 30s\n",
	"broken.yaml":    "budget: 2m\n  steps: 3\n",
	"duration.yaml":  "budget: 2m\ntools:\n  - name: a\n    ceiling: 30\n",
	"negative.yaml":  "model:\n  retries: -1\n",
	"zero.yaml":      "steps: 3\nbudget: 0s\n",
	"notdur.yaml":    "budget: 120\n",
	"unknown.json":   `{"budget": "2m", "stepz": 3}`,
	"duplicate.yaml": "tools:\n  - name: a\n  - name: a\n",
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name       string
		args       []string
		stdin      string
		wantCode   int
		wantStdout []string // substrings; none expected when empty and wantCode != 0
		wantStderr []string
	}{
		{
			name:       "no command prints usage and is bad usage",
			wantCode:   2,
			wantStderr: []string{"usage: harness <command>", "plan", "harness: no command given", "try: harness help"},
		},
		{
			name:       "help prints usage on stdout",
			args:       []string{"help"},
			wantStdout: []string{"usage: harness <command>", "plan ", "exit codes: 0 ok, 1 internal error, 2 bad usage or config"},
		},
		{
			name:       "-h prints usage",
			args:       []string{"-h"},
			wantStdout: []string{"usage: harness <command>"},
		},
		{
			name:       "--help prints usage",
			args:       []string{"--help"},
			wantStdout: []string{"usage: harness <command>"},
		},
		{
			name:       "an unknown command is bad usage",
			args:       []string{"frob"},
			wantCode:   2,
			wantStderr: []string{"usage: harness <command>", `harness: unknown command "frob"`, "try: harness help"},
		},
		{
			name:       "help on a command prints that command's flags",
			args:       []string{"help", "plan"},
			wantStdout: []string{"usage: harness plan [flags] [FILE]", "-model-ceiling", "-tool-retries", "-json"},
		},
		{
			name:       "plan --help prints its flags on stdout",
			args:       []string{"plan", "--help"},
			wantStdout: []string{"usage: harness plan", "-budget"},
		},
		{
			name: "plan of the example config is unbounded and says why",
			args: []string{"plan", exampleConfig},
			wantStdout: []string{
				"model        none (default)  2 (default)  none × 3 + 1.5s backoff = unbounded",
				"tool search  30s             2            30s × 3 + 750ms backoff = 1m30.75s",
				"tool fetch   10s             0 (default)  10s × 1 = 10s",
				"per step     model unbounded + 1 × search 1m30.75s = unbounded",
				"reserve R   20s",
				"model.ceiling             none  openai-go sets no request timeout (RequestTimeout 0)",
				"verdict: unbudgeted worst case is unbounded (openai-go has no overall timeout by default); under Glidepath the run lands by 2m0s\n",
			},
		},
		{
			// model 60s × 3 + 1.5s = 3m1.5s; per step + search 1m30.75s =
			// 4m32.25s; × 20 = 1h30m45s = 45.4 × 2m.
			name: "a flag overrides the file",
			args: []string{"plan", "--model-ceiling", "60s", exampleConfig},
			wantStdout: []string{
				"model        1m0s     2 (default)  1m0s × 3 + 1.5s backoff = 3m1.5s",
				"total        20 steps × 4m32.25s = 1h30m45s",
				"model     1m0s × 3 + 2 × 2m0s = 7m0s",
				"verdict: unbudgeted worst case is 1h30m45s, 45.4× the 2m0s budget; under Glidepath the run lands by 2m0s",
			},
		},
		{
			name:       "flags may follow the file",
			args:       []string{"plan", exampleConfig, "--model-ceiling", "60s", "--budget", "10m"},
			wantStdout: []string{"reserve R   1m0s", "1h30m45s, 9.1× the 10m0s budget"},
		},
		{
			// search 30s × 1 = 30s; per step 3m1.5s + 30s = 3m31.5s; × 20 = 1h10m30s.
			name:       "tool flags override every tool in the file",
			args:       []string{"plan", "--model-ceiling", "1m", "--tool-retries", "0", exampleConfig},
			wantStdout: []string{"tool search  30s      0            30s × 1 = 30s", "total        20 steps × 3m31.5s = 1h10m30s"},
		},
		{
			// 2 × (1s + 2s) = 6s
			name:       "tool flags without a file describe one tool",
			args:       []string{"plan", "--budget", "1m", "--steps", "2", "--model-ceiling", "1s", "--model-retries", "0", "--tool-ceiling", "2s"},
			wantStdout: []string{"plan: flags and defaults", "tool tool", "unbudgeted worst case is 6s, within the 1m0s budget"},
		},
		{
			name:       "a dash reads the config from standard input",
			args:       []string{"plan", "-"},
			stdin:      `{"budget": "10s", "steps": 1, "model": {"ceiling": "1s", "retries": 0}}`,
			wantStdout: []string{"plan: stdin", "unbudgeted worst case is 1s, within the 10s budget"},
		},
		{
			name:       "an argument after -- is a file",
			args:       []string{"plan", "--", "$DIR/ok.yaml"},
			wantStdout: []string{"total     4 steps × 5s = 20s"},
		},
		{
			name:       "an argument after -- is a file even if it looks like a flag",
			args:       []string{"plan", "--", "--json"},
			wantCode:   2,
			wantStderr: []string{"open --json: no such file or directory"},
		},
		{
			name:       "a missing file is bad usage",
			args:       []string{"plan", "$DIR/missing.yaml"},
			wantCode:   2,
			wantStderr: []string{"harness plan: open ", "missing.yaml: no such file or directory", "try: harness plan --help"},
		},
		{
			name:       "broken yaml is bad config with its line",
			args:       []string{"plan", "$DIR/broken.yaml"},
			wantCode:   2,
			wantStderr: []string{"broken.yaml:2: mapping values are not allowed"},
		},
		{
			name:       "an unknown field is bad config naming the field and line",
			args:       []string{"plan", "$DIR/unknown.yaml"},
			wantCode:   2,
			wantStderr: []string{`unknown.yaml:3: unknown field "timeout" in model (known: ceiling, retries)`},
		},
		{
			name:       "an unknown field in json is bad config too",
			args:       []string{"plan", "$DIR/unknown.json"},
			wantCode:   2,
			wantStderr: []string{`unknown.json:1: unknown field "stepz" at the top level`},
		},
		{
			name:       "a bad duration is bad config naming the field and line",
			args:       []string{"plan", "$DIR/duration.yaml"},
			wantCode:   2,
			wantStderr: []string{`duration.yaml:4: tools[0].ceiling 30: not a duration (e.g. 90s, 2m)`},
		},
		{
			name:       "negative retries are bad config",
			args:       []string{"plan", "$DIR/negative.yaml"},
			wantCode:   2,
			wantStderr: []string{"negative.yaml:2: model.retries -1: must not be negative"},
		},
		{
			name:       "a zero budget in the file is bad config",
			args:       []string{"plan", "$DIR/zero.yaml"},
			wantCode:   2,
			wantStderr: []string{"zero.yaml:2: budget 0s: must be positive"},
		},
		{
			name:       "a budget without a unit is not a duration",
			args:       []string{"plan", "$DIR/notdur.yaml"},
			wantCode:   2,
			wantStderr: []string{"notdur.yaml:1: budget 120: not a duration"},
		},
		{
			name:       "a tool listed twice is bad config",
			args:       []string{"plan", "$DIR/duplicate.yaml"},
			wantCode:   2,
			wantStderr: []string{"duplicate.yaml:3: tools[1].name a: listed twice"},
		},
		{
			name:       "a zero budget flag is bad usage",
			args:       []string{"plan", "--budget", "0"},
			wantCode:   2,
			wantStderr: []string{"harness plan: --budget 0s: must be positive", "try: harness plan --help"},
		},
		{
			name:       "a negative budget flag is bad usage",
			args:       []string{"plan", "--budget", "-2m", exampleConfig},
			wantCode:   2,
			wantStderr: []string{"--budget -2m0s: must be positive"},
		},
		{
			name:       "a budget flag that is not a duration is bad usage",
			args:       []string{"plan", "--budget", "soon"},
			wantCode:   2,
			wantStderr: []string{`--budget soon: not a duration`},
		},
		{
			name:       "a negative retries flag is reported once for every tool",
			args:       []string{"plan", "--tool-retries", "-1", exampleConfig},
			wantCode:   2,
			wantStderr: []string{"harness plan: --tool-retries -1: must not be negative\ntry: harness plan --help\n"},
		},
		{
			name:       "an unknown flag is bad usage",
			args:       []string{"plan", "--retries", "2"},
			wantCode:   2,
			wantStderr: []string{"flag provided but not defined: -retries", "try: harness plan --help"},
		},
		{
			name:       "two files are bad usage",
			args:       []string{"plan", exampleConfig, exampleConfig},
			wantCode:   2,
			wantStderr: []string{"at most one FILE, got 2"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = strings.ReplaceAll(a, "$DIR", dir)
			}
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), args, strings.NewReader(tc.stdin), &stdout, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, &stdout, &stderr)
			}
			for _, want := range tc.wantStdout {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("stdout does not contain %q:\n%s", want, &stdout)
				}
			}
			for _, want := range tc.wantStderr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr does not contain %q:\n%s", want, &stderr)
				}
			}
			if code != 0 && stdout.Len() > 0 {
				t.Errorf("failed with output on stdout:\n%s", &stdout)
			}
			if code == 0 && stderr.Len() > 0 {
				t.Errorf("succeeded with output on stderr:\n%s", &stderr)
			}
		})
	}
}

func TestPlanJSONIsOneObjectInMilliseconds(t *testing.T) {
	cases := []struct {
		name          string
		args          []string
		wantTotalMs   any // nil when unbounded
		wantUnbounded bool
		wantRatio     any
	}{
		{
			name:          "an unbounded total is null beside true",
			args:          []string{"plan", "--json", exampleConfig},
			wantTotalMs:   nil,
			wantUnbounded: true,
			wantRatio:     nil,
		},
		{
			name:        "a bounded total is a number of milliseconds",
			args:        []string{"plan", "--json", "--model-ceiling", "60s", exampleConfig},
			wantTotalMs: 5445000.0,
			wantRatio:   45.375,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(t.Context(), tc.args, nil, &stdout, &stderr); code != 0 {
				t.Fatalf("exit code %d: %s", code, &stderr)
			}
			dec := json.NewDecoder(&stdout)
			var got map[string]any
			if err := dec.Decode(&got); err != nil {
				t.Fatal(err)
			}
			if dec.More() {
				t.Error("more than one JSON value on stdout")
			}
			if got["total_ms"] != tc.wantTotalMs || got["total_unbounded"] != tc.wantUnbounded || got["ratio"] != tc.wantRatio {
				t.Errorf("total_ms %v total_unbounded %v ratio %v, want %v, %v, %v",
					got["total_ms"], got["total_unbounded"], got["ratio"], tc.wantTotalMs, tc.wantUnbounded, tc.wantRatio)
			}
			g := got["glidepath"].(map[string]any)
			if g["budget_ms"] != 120000.0 || g["reserve_ms"] != 20000.0 || g["floor_ms"] != 50.0 || g["worst_ms"] != 120000.0 {
				t.Errorf("glidepath = %v, want budget 120000, reserve 20000, floor 50, worst 120000", g)
			}
			tools := got["tools"].([]any)
			search := tools[0].(map[string]any)
			if search["name"] != "search" || search["worst_ms"] != 90750.0 || search["backoff_ms"] != 750.0 || search["attempts"] != 3.0 {
				t.Errorf("tools[0] = %v, want search, worst 90750, backoff 750, attempts 3", search)
			}
			if got["slowest_tool"] != "search" {
				t.Errorf("slowest_tool = %v, want search", got["slowest_tool"])
			}
			if v, ok := got["verdict"].(string); !ok || !strings.HasPrefix(v, "unbudgeted worst case is ") {
				t.Errorf("verdict = %v", got["verdict"])
			}
		})
	}
}

// failingWriter fails every write, as a closed pipe does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

func TestRunReportsAFailedWriteAsAnInternalError(t *testing.T) {
	var stderr bytes.Buffer
	code := run(t.Context(), []string{"plan", exampleConfig}, nil, failingWriter{}, &stderr)
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if want := "harness plan: file already closed\n"; stderr.String() != want {
		t.Errorf("stderr = %q, want %q", stderr.String(), want)
	}
}
