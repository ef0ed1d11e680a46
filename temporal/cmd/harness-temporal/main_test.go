package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/trace"
	"go.temporal.io/server/temporaltest"
)

// syncBuffer is a bytes.Buffer the worker's goroutine and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startWorker runs `harness-temporal worker` against ts until the test
// ends, and returns once it serves (startStoppableWorker, whose stop the
// test's end calls).
func startWorker(t *testing.T, ts *temporaltest.TestServer, queue, toolsYAML string) {
	t.Helper()
	startStoppableWorker(t, ts, queue, toolsYAML)
}

func TestRunPrintsWhatHarnessRunPrintsAndWritesATraceHarnessReportReads(t *testing.T) {
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	startWorker(t, ts, "cli", "tools:\n  - name: search\n    builtin: search\n")
	tracePath := filepath.Join(t.TempDir(), "run.jsonl")
	var stdout, stderr syncBuffer
	err := run(t.Context(), []string{"run", "--address", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace(),
		"--task-queue", "cli", "--budget", "20s", "--json", "--trace", tracePath, "find cats"}, nil, &stdout, &stderr)
	if code := exitCode(err, &stderr); code != exitOK {
		t.Fatalf("exit %d: %v\n%s", code, err, stderr.String())
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(stdout.String()), &res); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout.String())
	}
	for _, k := range []string{"run_id", "status", "cause", "answer", "boundary", "established", "not_established", "in_flight", "budget", "steps", "attempts", "orphans"} {
		if _, ok := res[k]; !ok {
			t.Errorf("--json has no %q: %s", k, stdout.String())
		}
	}
	if res["status"] != string(landing.Complete) || res["budget"].(map[string]any)["total_ms"] != 20000.0 {
		t.Errorf("result %s", stdout.String())
	}
	f, err := os.Open(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := trace.ReadRecords(f)
	if err != nil {
		t.Fatal(err)
	}
	rep := trace.Summarize(recs)
	if rep.Runs != 1 || rep.Results["complete"] != 1 || rep.Unfinished != 0 {
		t.Errorf("report of the trace: %+v", rep)
	}
}

func TestBadUsageExitsTwoBeforeAnythingStarts(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "no command"},
		{"unknown command", []string{"fly"}, "unknown command"},
		{"run without a task", []string{"run", "--address", "127.0.0.1:1"}, "TASK"},
		{"run with a zero budget", []string{"run", "--address", "127.0.0.1:1", "--budget", "0s", "task"}, "--budget"},
		{"run with a reserve past the budget", []string{"run", "--address", "127.0.0.1:1", "--budget", "1s", "--reserve", "2s", "task"}, "--reserve"},
		{"run without an address", []string{"run", "task"}, "--address"},
		{"worker with a relative base URL", []string{"worker", "--address", "127.0.0.1:1", "--model", "m", "--base-url", "v1"}, "--base-url"},
		{"worker with an API it does not speak", []string{"worker", "--address", "127.0.0.1:1", "--api", "completions"}, `--api "completions": want chat or responses`},
		{"worker with a missing tools file", []string{"worker", "--address", "127.0.0.1:1", "--tools", "/nonexistent/tools.yaml"}, "tools"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr syncBuffer
			err := run(t.Context(), tc.args, strings.NewReader(""), &stdout, &stderr)
			if code := exitCode(err, &stderr); code != exitUsage {
				t.Fatalf("exit %d (%v), want %d", code, err, exitUsage)
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q does not mention %q", stderr.String(), tc.want)
			}
		})
	}
}
