package harness

import (
	"bytes"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/trace"
)

// A record is on every step of every run: stamping it with the run's
// frame (landing.Frame, issue 25) and writing it to the trace makes no
// object.
func TestARecordIsStampedByTheFrameAndWrittenWithNothingMade(t *testing.T) {
	b, err := budget.New(budget.Config{Total: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	buf.Grow(1 << 20)
	s, _, err := Start(t.Context(), b, Config{Task: "t", Sinks: []trace.Sink{trace.NewJSONL(&buf)}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec := trace.Record{Event: trace.AttemptEnd, Step: "tool:search", StepIndex: 1, Attempt: 1, GrantedMs: 900, Outcome: trace.OK}
	if n := testing.AllocsPerRun(100, func() { s.record(rec) }); n > 0 {
		t.Errorf("a record made %v objects, want none", n)
	}
	recs, err := trace.ReadRecords(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if r.Seq != int64(i+1) || r.RunID != s.id || r.Phase != "explore" {
			t.Fatalf("record %d stamped seq %d, run %q, phase %q", i, r.Seq, r.RunID, r.Phase)
		}
	}
}
