package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/trace"
)

const demoTools = "../../examples/demo/tools.yaml"

// TestRunCommand drives `harness run` on the embedded simulated model and
// the demo tools. Time is real here (the whole command, flags to exit
// code), so the runs are short and the assertions are about labels, codes
// and order, not durations; the loop's exact timing is tested in package
// harness under synctest.
func TestRunCommand(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", dir) // the default journal of a run with a write
	badTools := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badTools, []byte("tools:\n  - name: x\n    builtin: search\n    efect: read\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	noEffect := filepath.Join(dir, "noeffect.yaml")
	if err := os.WriteFile(noEffect, []byte("tools:\n  - name: echo\n    command: [cat]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		args       []string
		stdin      string
		code       int
		wantStdout []string
		wantStderr []string
	}{
		{
			name:       "a run that answers is complete and exits 0",
			args:       []string{"run", "--budget", "20s", "--tools", demoTools, "What is a deadline budget?"},
			code:       exitOK,
			wantStdout: []string{`[sim] Answer to "What is a deadline budget?"`, "search returned", "fetch returned"},
			wantStderr: []string{"complete · cause none · 2 steps"},
		},
		{
			name:       "a run out of steps is partial, leads with its boundary and exits 3",
			args:       []string{"run", "--budget", "20s", "--max-steps", "1", "--tools", demoTools, "What is a deadline budget?"},
			code:       exitPartial,
			wantStdout: []string{"PARTIAL RESULT. Reached the step limit at step 1:", "Established:"},
			wantStderr: []string{"partial · cause max_steps", "partial result: the run landed early (cause max_steps)"},
		},
		{
			name:       "the task can come from standard input",
			args:       []string{"run", "--budget", "5s", "-"},
			stdin:      "  Summarize nothing.\n",
			code:       exitOK,
			wantStdout: []string{`Summarize nothing.`},
		},
		{
			// The answer stands: only its record failed, which stderr says
			// (issue 18); the exit code is the run's.
			name:       "a trace that cannot be written is a warning after the answer, and the exit code is the run's",
			args:       []string{"run", "--budget", "5s", "--trace", "/dev/full", "q"},
			code:       exitOK,
			wantStdout: []string{`[sim] Summary of "q"`},
			// Written as the run goes (issue 24): the first record's write fails.
			wantStderr: []string{"harness run: warning: the run's record is not whole", "trace write failed: write /dev/full: no space left on device"},
		},
		{"a zero budget is bad usage", []string{"run", "--budget", "0s", "q"}, "", exitUsage, nil, []string{"--budget 0s: must be positive", "try: harness run --help"}},
		{"a budget that is not a duration is bad usage", []string{"run", "--budget", "soon", "q"}, "", exitUsage, nil, []string{`--budget soon: want a duration`}},
		{"a budget without a unit says what a duration looks like", []string{"run", "--budget", "10", "q"}, "", exitUsage, nil,
			[]string{`--budget 10: want a duration such as 10s`}},
		{"a base URL that is not an absolute http URL is bad usage", []string{"run", "--model", "gpt-x", "--base-url", "localhost:8089/v1", "q"}, "", exitUsage, nil,
			[]string{`--base-url "localhost:8089/v1": want an absolute http or https URL`}},
		{"a tool whose effect nobody states is said to be treated as a write", []string{"run", "--budget", "5s", "--tools", noEffect, "q"}, "", exitOK, nil,
			[]string{"tool echo: neither its entry nor its manifest says whether it only reads, so it is treated as a write"}},
		{"a trace under a file is bad usage, before the run begins", []string{"run", "--budget", "5s", "--trace", filepath.Join(noEffect, "trace.jsonl"), "q"}, "", exitUsage, nil,
			[]string{"--trace " + filepath.Join(noEffect, "trace.jsonl")}},
		{"help names the type of every duration flag", []string{"run", "--help"}, "", exitOK,
			[]string{"-budget duration", "-quiet duration", "-floor duration"}, nil},
		{"a reserve as large as the budget is bad usage", []string{"run", "--budget", "1s", "--reserve", "1s", "q"}, "", exitUsage, nil, []string{"reserve"}},
		{"a reserve of zero is bad usage, not the automatic one", []string{"run", "--budget", "2s", "--reserve", "0", "q"}, "", exitUsage, nil,
			[]string{"--reserve 0: no time would be kept for landing; want auto or a duration above 0, such as 500ms"}},
		{"no task is bad usage", []string{"run"}, "", exitUsage, nil, []string{"want exactly one TASK"}},
		{"an empty task is bad usage", []string{"run", "-"}, "  \n", exitUsage, nil, []string{"the task is empty"}},
		{"a bad tool config names the field and line", []string{"run", "--tools", badTools, "q"}, "", exitUsage, nil, []string{"bad.yaml:4", "efect"}},
		{"a bad --progress is bad usage", []string{"run", "--progress", "sometimes", "q"}, "", exitUsage, nil, []string{`--progress "sometimes"`}},
		{"--base-url with the embedded model is bad usage", []string{"run", "--base-url", "http://127.0.0.1:1/v1", "q"}, "", exitUsage, nil, []string{"--base-url: not used with --model sim"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), tc.args, strings.NewReader(tc.stdin), &stdout, &stderr)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout.String(), stderr.String())
			}
			for _, want := range tc.wantStdout {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
				}
			}
			for _, want := range tc.wantStderr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
				}
			}
			if tc.code == exitUsage && stdout.Len() != 0 {
				t.Errorf("bad usage printed on stdout: %s", stdout.String())
			}
		})
	}
}

func TestRunJSONAndTraceFollowTheContract(t *testing.T) {
	path := filepath.Join(t.TempDir(), "traces", "today", "trace.jsonl") // its folder is made, as --journal's is
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"run", "--json", "--budget", "20s", "--tools", demoTools, "--trace", path, "q"},
		strings.NewReader(""), &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(stdout.Bytes(), &fields); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout.String())
	}
	for _, f := range []string{"run_id", "status", "cause", "answer", "boundary", "established", "not_established",
		"in_flight", "budget", "steps", "attempts", "orphans"} {
		if _, ok := fields[f]; !ok {
			t.Errorf("the JSON result lacks %q", f)
		}
	}
	var res landing.Result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil || res.Status != landing.Complete || res.Budget.TotalMs != 20000 {
		t.Errorf("result %+v (%v)", res, err)
	}
	recs := readTrace(t, path)
	if len(recs) < 4 || recs[0].Event != trace.RunStart || recs[len(recs)-1].Event != trace.RunEnd || recs[0].RunID != res.RunID {
		t.Fatalf("trace %d records, first %+v, last %+v", len(recs), recs[0], recs[len(recs)-1])
	}
	starts := 0
	for i, r := range recs {
		if r.Seq != int64(i+1) {
			t.Errorf("record %d has seq %d", i, r.Seq)
		}
		if r.Event == trace.AttemptStart {
			starts++
		}
	}
	if starts != res.Attempts {
		t.Errorf("%d attempt_start records, %d attempts in the result", starts, res.Attempts)
	}
}

// A remote tool whose manifest takes a while: the fetch is spent from the
// run's one budget and is on the record as a setup step, and the total is
// the budget given, not what was left after the fetch.
func TestASlowManifestIsSetupSpentFromTheOneBudget(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /tools", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"tools":[{"name":"lookup","description":"look it up","effect":"read"}]}`)
	})
	mux.HandleFunc("POST /tools/lookup", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"output":"found"}`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	dir := t.TempDir()
	cfg, path := filepath.Join(dir, "tools.yaml"), filepath.Join(dir, "trace.jsonl")
	if err := os.WriteFile(cfg, []byte("tools:\n  - name: lookup\n    url: "+srv.URL+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"run", "--json", "--budget", "8s", "--tools", cfg, "--trace", path, "q"},
		strings.NewReader(""), &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var res landing.Result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if res.Budget.TotalMs != 8000 || res.Budget.ReserveMs != 2000 || res.Budget.SpentMs < 300 || !strings.Contains(res.Answer, "found") {
		t.Errorf("result %+v; want the whole 8s budget, its reserve, the fetch spent, the tool used", res)
	}
	recs := readTrace(t, path)
	var setup []trace.Record
	for _, r := range recs {
		if r.Step == "setup" {
			setup = append(setup, r)
		}
	}
	if recs[0].TotalMs != 8000 || len(setup) != 2 || setup[1].Outcome != trace.OK || setup[1].ElapsedMs < 300 ||
		!strings.Contains(setup[0].Message, "manifest of "+srv.URL) {
		t.Errorf("run_start %+v, setup records %+v; want the budget's total and the fetch on the record", recs[0], setup)
	}
}

// readTrace reads the JSONL trace a run wrote to path.
func readTrace(t *testing.T, path string) []trace.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := trace.ReadRecords(f)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// The demo's short run: its payment commits 1.5s after it starts, well
// past the 1.2s budget. The run ends on time all the same, with a note
// that the tool was not waited for, rather than wait for the commit.
func TestATooLateToolDoesNotHoldTheRunPastItsBudget(t *testing.T) {
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := run(t.Context(), []string{"run", "--budget", "1.2s", "--tools", demoTools, "--journal", filepath.Join(t.TempDir(), "j.jsonl"), "q"},
		strings.NewReader(""), &stdout, &stderr)
	took := time.Since(start)
	if code != exitPartial {
		t.Fatalf("exit %d, want 3\nstderr: %s", code, stderr.String())
	}
	// Generous beside the commit's 1.5s, which waiting for it would take.
	if took > 1200*time.Millisecond+150*time.Millisecond {
		t.Errorf("harness run --budget 1.2s took %v", took)
	}
	if !strings.Contains(stderr.String(), "a tool was still at work at the run's deadline; it is not waited for") {
		t.Errorf("stderr lacks the note:\n%s", stderr.String())
	}
}
