package main

import (
	"bufio"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glidepath/glidepath/sim"
)

// harness run -v --log-format json: every line on stderr is one JSON
// object, and the record lines carry what SPEC §8 names.
func TestE2EVerboseJSONLogsAreJSONEveryLine(t *testing.T) {
	_, stderr, code := runHarness(t, nil, "run", "-v", "--log-format", "json", "--budget", "20s", "--tools", demoTools, "q")

	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	fields := map[string]bool{}
	lines := 0
	sc := bufio.NewScanner(strings.NewReader(stderr))
	for sc.Scan() {
		lines++
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("a stderr line is not JSON: %q", sc.Text())
		}
		if m["event"] == "attempt_end" {
			for _, f := range []string{"run_id", "step", "attempt", "granted_ms", "remaining_ms", "outcome"} {
				if _, ok := m[f]; ok {
					fields[f] = true
				}
			}
		}
	}
	if lines < 5 || len(fields) != 6 {
		t.Errorf("%d lines, attempt_end fields %v; want the record lines with run_id, step, attempt, granted_ms, remaining_ms, outcome", lines, fields)
	}
}

// The API key reaches the model's server, which quotes it back in its
// 401: it is in no output of the run — stdout, stderr, the trace, the
// logs, the spans — in text mode or JSON.
func TestE2EAnAPIKeyIsInNoOutput(t *testing.T) {
	const key = "my-own-secret-value-9876"
	srv := sim.NewServer(&sim.Scenario{Rules: []sim.Rule{{Status: 401, Message: "Incorrect API key provided: " + key + ". Authorization: Bearer " + key}}})
	defer srv.Close()
	recv := &otlpReceiver{}
	otlp := httptest.NewServer(recv)
	defer otlp.Close()
	for _, mode := range [][]string{nil, {"-v", "--log-format", "json"}, {"-v", "--log-format", "console"}} {
		trc := filepath.Join(t.TempDir(), "trace.jsonl")
		args := append([]string{"run", "--model", "gpt-4.1", "--base-url", srv.URL, "--trace", trc, "--json"}, mode...)
		stdout, stderr, code := runHarness(t, []string{"OPENAI_API_KEY=" + key, "OTEL_EXPORTER_OTLP_ENDPOINT=" + otlp.URL}, append(args, "q")...)
		if code != exitPartial {
			t.Fatalf("%v: exit %d\n%s", mode, code, stderr)
		}
		data, _ := os.ReadFile(trc)
		for name, out := range map[string]string{"stdout": stdout, "stderr": stderr, "trace": string(data)} {
			if strings.Contains(out, key) {
				t.Errorf("%v: the key is in %s:\n%s", mode, name, out)
			}
		}
		if !strings.Contains(stdout, "Incorrect API key provided: [redacted]") {
			t.Errorf("%v: the boundary does not say what the server said, redacted:\n%s", mode, stdout)
		}
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	if strings.Contains(string(recv.raw), key) {
		t.Error("the key is in the exported spans")
	}
	if len(recv.raw) == 0 {
		t.Error("no spans were exported")
	}
}
