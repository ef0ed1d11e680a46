package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const demoToolsFile = "../../examples/demo/tools.yaml"

func TestPlanWithToolsFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	run := write("run.yaml", "budget: 1m\nsteps: 5\nmodel:\n  ceiling: 30s\n  retries: 1\n")
	withTools := write("with-tools.yaml", "tools:\n  - name: a\n    ceiling: 1s\n")
	bad := write("bad-tools.yaml", "tools:\n  - name: a\n    url: http://x\n    ceiling: soon\n  - name: b\n    builtin: nope\n")
	unknown := write("unknown-tools.yaml", "tools:\n  - name: a\n    command: [ls]\n    retries: 2\n")
	cases := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout []string
		wantStderr []string

		wantNoStdout []string
	}{
		{
			// deep_research: 10s × 3 + (250ms + 500ms) = 30.75s.
			name: "the demo's tools file is planned with each builtin's own limits",
			args: []string{"plan", "--tools", demoToolsFile},
			wantStdout: []string{
				"plan: --tools ../../examples/demo/tools.yaml\n",
				"the tools keep the limits ../../examples/demo/tools.yaml gives them",
				"tool search         2s              2            2s × 3 + 750ms backoff = 6.75s",
				"tool deep_research  10s             2            10s × 3 + 750ms backoff = 30.75s",
				"per step            model unbounded + 1 × deep_research 30.75s = unbounded",
				"defaults used, and how the tools file's entries were read",
				"tools[0].ceiling (search)              2s     left out: builtin search's own",
				"tools[2].effect (pay)                  write  left out: builtin late_commit's own; a write is never retried blindly, so 0 retries",
				"verdict: unbudgeted worst case is unbounded (openai-go has no overall timeout by default); under Glidepath the run lands by 2m0s\n",
			},
		},
		{
			// model 60s × 3 + 1.5s = 3m1.5s; + 30.75s = 3m32.25s; × 4 = 14m9s.
			name: "--max-steps is harness run's name for the steps",
			args: []string{"plan", "--tools", demoToolsFile, "--max-steps", "4", "--model-ceiling", "60s", "--budget", "20s"},
			wantStdout: []string{
				"total               4 steps × 3m32.25s = 14m9s",
				"verdict: unbudgeted worst case is 14m9s, 42.5× the 20s budget",
			},
		},
		{
			// model 30s × 2 + 0.5s = 1m0.5s; + 30.75s = 1m31.25s; × 5 = 7m36.25s.
			name: "a plan file gives the run and the model, the tools file the tools",
			args: []string{"plan", run, "--tools", demoToolsFile},
			wantStdout: []string{
				"plan: " + run + " and --tools ../../examples/demo/tools.yaml\n",
				"total               5 steps × 1m31.25s = 7m36.25s",
				"verdict: unbudgeted worst case is 7m36.25s, 7.6× the 1m0s budget",
			},
		},
		{
			name: "the example beside the demo plans the demo's run",
			args: []string{"plan", "--tools", demoToolsFile, "../../examples/plan/demo.yaml"},
			wantStdout: []string{
				"model               1m0s     2 (default)  1m0s × 3 + 1.5s backoff = 3m1.5s",
				"530.6× the 20s budget",
			},
		},
		{
			// The builtin's ceilings give way to the flag, and so do their notes.
			name: "a tool flag overrides every tool of the tools file",
			args: []string{"plan", "--tools", demoToolsFile, "--tool-ceiling", "1s", "--tool-retries", "0"},
			wantStdout: []string{
				"none for a write, but --tool-ceiling and --tool-retries set them all\n",
				"tool search         1s              0            1s × 1 = 1s",
				"model.retries        2     openai-go's MaxRetries",
			},
			wantNoStdout: []string{"tools[0].ceiling", "tools[0].max_attempts"},
		},
		{
			name:       "a plan file that lists tools cannot take --tools too",
			args:       []string{"plan", withTools, "--tools", demoToolsFile},
			wantCode:   2,
			wantStderr: []string{"harness plan: both " + withTools + " and --tools ../../examples/demo/tools.yaml list tools; give them in one place\ntry: harness plan --help\n"},
		},
		{
			name:     "a bad tools file names each field and line, as harness run would",
			args:     []string{"plan", "--tools", bad},
			wantCode: 2,
			wantStderr: []string{
				"harness plan: tools: " + bad + `:4: tools[0].ceiling "soon": not a duration such as "1s" or "250ms"`,
				bad + `:6: tools[1].builtin "nope": unknown builtin (known: deep_research, fetch, flaky_fetch, late_commit, search)`,
				"try: harness plan --help",
			},
		},
		{
			name:       "a plan file's field is not a tools file's",
			args:       []string{"plan", "--tools", unknown},
			wantCode:   2,
			wantStderr: []string{unknown + ":4: tools[0].retries: unknown field (known: name,"},
		},
		{
			name:       "a missing tools file is bad usage",
			args:       []string{"plan", "--tools", filepath.Join(dir, "none.yaml")},
			wantCode:   2,
			wantStderr: []string{"none.yaml: no such file or directory", "try: harness plan --help"},
		},
		{
			name:       "--steps and --max-steps together are bad usage",
			args:       []string{"plan", "--steps", "3", "--max-steps", "3"},
			wantCode:   2,
			wantStderr: []string{`--max-steps 3: --steps is given too: --steps and --max-steps are one flag`},
		},
		{
			name:       "--max-steps must be positive",
			args:       []string{"plan", "--max-steps", "0"},
			wantCode:   2,
			wantStderr: []string{"harness plan: --max-steps 0: must be positive"},
		},
		{
			name:       "the help says how a tools file is planned",
			args:       []string{"plan", "--help"},
			wantStdout: []string{"harness plan --tools TOOLSFILE [flags] [FILE]", "max_attempts − 1 retries for a read", "-max-steps turns", "-tools file"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runMain(t, tc.args, &stdout, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, &stdout, &stderr)
			}
			for _, want := range tc.wantStdout {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("stdout does not contain %q:\n%s", want, &stdout)
				}
			}
			for _, unwanted := range tc.wantNoStdout {
				if strings.Contains(stdout.String(), unwanted) {
					t.Errorf("stdout contains %q:\n%s", unwanted, &stdout)
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
		})
	}
}

func runMain(t *testing.T, args []string, stdout, stderr *bytes.Buffer) int {
	t.Helper()
	return run(t.Context(), args, strings.NewReader(""), stdout, stderr)
}

func TestPlanJSONOfAToolsFileCountsEveryTool(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := runMain(t, []string{"plan", "--json", "--tools", demoToolsFile, "--model-ceiling", "1m"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d: %s", code, &stderr)
	}
	var got struct {
		Source      string `json:"source"`
		SlowestTool string `json:"slowest_tool"`
		TotalMs     float64
		Tools       []struct {
			Name    string  `json:"name"`
			Retries int     `json:"retries"`
			WorstMs float64 `json:"worst_ms"`
		} `json:"tools"`
		Defaults []struct {
			Field string `json:"field"`
		} `json:"defaults"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Source != "--tools "+demoToolsFile || got.SlowestTool != "deep_research" || len(got.Tools) != 4 {
		t.Fatalf("source %q slowest %q tools %+v", got.Source, got.SlowestTool, got.Tools)
	}
	// search, fetch (its 1s ceiling), pay (a write: no retries), deep_research.
	for i, want := range []struct {
		worst   float64
		retries int
	}{{6750, 2}, {3750, 2}, {500, 0}, {30750, 2}} {
		if got.Tools[i].WorstMs != want.worst || got.Tools[i].Retries != want.retries {
			t.Errorf("tools[%d] = %+v, want worst %vms and %d retries", i, got.Tools[i], want.worst, want.retries)
		}
	}
	var fields []string
	for _, d := range got.Defaults {
		fields = append(fields, d.Field)
	}
	if !slices.Contains(fields, "tools[3].ceiling") || !slices.Contains(fields, "tools[3].max_attempts") {
		t.Errorf("defaults %q do not say where deep_research's limits came from", fields)
	}
}

// Plan the tools file of `make demo` as harness run --tools reads it, with
// the demo's 20s budget, four model turns, and a model that has the 60s
// timeout many openai-go users give it: each builtin keeps its own ceiling
// and, a read, max_attempts − 1 retries.
func Example_planTools() {
	run(context.Background(), []string{"plan", "--tools", "../../examples/demo/tools.yaml",
		"--budget", "20s", "--max-steps", "4", "--model-ceiling", "60s"}, nil, os.Stdout, os.Stdout)
	// Output:
	// plan: --tools ../../examples/demo/tools.yaml
	//
	// without a budget: every attempt runs to its ceiling and fails, every backoff sleeps its longest
	// the tools keep the limits ../../examples/demo/tools.yaml gives them: its ceilings, max_attempts − 1 retries for a read, none for a write
	//   call                ceiling  retries      worst per call
	//   model               1m0s     2 (default)  1m0s × 3 + 1.5s backoff = 3m1.5s
	//   tool search         2s       2            2s × 3 + 750ms backoff = 6.75s
	//   tool fetch          1s       2            1s × 3 + 750ms backoff = 3.75s
	//   tool pay            500ms    0            500ms × 1 = 500ms
	//   tool deep_research  10s      2            10s × 3 + 750ms backoff = 30.75s
	//   per step            model 3m1.5s + 1 × deep_research 30.75s = 3m32.25s
	//   total               4 steps × 3m32.25s = 14m9s
	//
	// if servers send Retry-After: openai-go waits up to 2m0s before each model retry
	//   model     1m0s × 3 + 2 × 2m0s = 7m0s
	//   per step  model 7m0s + 1 × deep_research 30.75s = 7m30.75s
	//   total     4 steps × 7m30.75s = 30m3s
	//
	// under Glidepath: every attempt and every sleep is leased from one deadline
	//   budget B    20s
	//   reserve R   5s, kept for landing: max(10%·B, min(20s, 25%·B))
	//   floor F     50ms, nothing starts with less
	//   work        15s (B − R); each attempt gets min(its ceiling, time left − R − F)
	//   worst case  20s, and the run returns a labeled answer, complete or partial
	//
	// defaults used, and how the tools file's entries were read
	//   tool_calls_per_step                    1      one tool call per model turn
	//   model.retries                          2      openai-go's MaxRetries; backoff 0.5s·2^n, at most 8s
	//   tools[0].ceiling (search)              2s     left out: builtin search's own
	//   tools[0].max_attempts (search)         3      left out: tools.DefaultMaxAttempts; effect read (builtin search's own), so max_attempts − 1 = 2 retries
	//   tools[1].max_attempts (fetch)          3      left out: tools.DefaultMaxAttempts; effect read (builtin flaky_fetch's own), so max_attempts − 1 = 2 retries
	//   tools[2].effect (pay)                  write  left out: builtin late_commit's own; a write is never retried blindly, so 0 retries
	//   tools[3].ceiling (deep_research)       10s    left out: builtin deep_research's own
	//   tools[3].max_attempts (deep_research)  3      left out: tools.DefaultMaxAttempts; effect read (builtin deep_research's own), so max_attempts − 1 = 2 retries
	//
	// verdict: unbudgeted worst case is 14m9s, 42.5× the 20s budget; under Glidepath the run lands by 20s
}

func TestPlanToolsCountsASubAgentAsACallOnABudgetOfItsOwn(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agents.yaml")
	src := "tools:\n  - name: alpha\n    agent: {}\n  - name: beta\n    ceiling: 30s\n    agent: {}\n"
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"plan", "--tools", path}, strings.NewReader(""), &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"sub-agent alpha has no ceiling and runs on a budget of its own, not its parent's",
		"tool beta   30s"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, stdout.String())
		}
	}
}
