package logs_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/trace/logs"
	"github.com/rs/zerolog"
)

func TestEachRecordIsOneLineWithTheBudgetFieldsAndNoSecret(t *testing.T) {
	var buf bytes.Buffer
	sink := logs.New(zerolog.New(&buf), "the-secret-key-1")
	recs := []trace.Record{
		{RunID: "run-1", Event: trace.AttemptStart, Step: "model", StepIndex: 1, Attempt: 1, GrantedMs: 7000, RemainingMs: 9000, Phase: "explore"},
		{RunID: "run-1", Event: trace.AttemptEnd, Step: "model", StepIndex: 1, Attempt: 1, GrantedMs: 7000, RemainingMs: 8000, Phase: "explore",
			Outcome: trace.Invalid, Status: 401, Message: "401 Incorrect API key provided: the-secret-key-1"},
		{RunID: "run-1", Event: trace.Progress, Step: "tool:build", Units: 3, Message: "compiling"},
	}
	for _, r := range recs {
		sink.Record(r)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 || strings.Contains(buf.String(), "the-secret-key-1") {
		t.Fatalf("lines:\n%s", buf.String())
	}
	var end map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &end); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"level": "warn", "run_id": "run-1", "step": "model", "attempt": 1.0, "granted_ms": 7000.0,
		"remaining_ms": 8000.0, "outcome": "invalid", "status": 401.0}
	for k, v := range want {
		if end[k] != v {
			t.Errorf("%s = %v, want %v (%v)", k, end[k], v, end)
		}
	}
	var prog map[string]any
	json.Unmarshal([]byte(lines[2]), &prog)
	if prog["level"] != "debug" || prog["units"] != 3.0 {
		t.Errorf("progress line %v", prog)
	}
}
