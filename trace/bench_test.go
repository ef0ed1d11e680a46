package trace_test

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/trace"
)

// The SPEC §7 target these benchmarks measure: a trace record encoded,
// without I/O, in under 1µs. BenchmarkEncodingJSON is the baseline beside
// it in the same run: json.Marshal of a struct with the same fields and
// tags, which is what a trace writer would do without its own encoder.

// benchRecords are the records a run writes most, and one whose message
// needs escaping.
var benchRecords = []struct {
	name string
	r    trace.Record
}{
	{"attempt_start", stamp(everyKind[4], 5)},
	{"attempt_end", stamp(everyKind[3], 4)},
	{"backoff", stamp(everyKind[8], 9)},
	{"message", stamp(trace.Record{Event: trace.RunEnd, TotalMs: 120000, Cause: "upstream", Result: "partial",
		Message: "model: attempt 3: upstream_error (status 502): \"bad gateway\"\n<html>upstream</html>"}, 12)},
}

func BenchmarkAppendJSON(b *testing.B) {
	for _, bc := range benchRecords {
		b.Run(bc.name, func(b *testing.B) {
			buf := make([]byte, 0, 1024)
			b.ReportAllocs()
			for b.Loop() {
				buf = trace.AppendJSON(buf[:0], bc.r)
			}
		})
	}
}

func BenchmarkEncodingJSON(b *testing.B) {
	for _, bc := range benchRecords {
		b.Run(bc.name, func(b *testing.B) {
			r := stdRecordOf(bc.r)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := json.Marshal(&r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// stdRecord is a Record as encoding/json would write it: the same field
// names, optional ones omitted when empty.
type stdRecord struct {
	TS          time.Time     `json:"ts"`
	RunID       string        `json:"run_id"`
	Seq         int64         `json:"seq"`
	Event       trace.Event   `json:"event"`
	ElapsedMs   int64         `json:"elapsed_ms"`
	RemainingMs int64         `json:"remaining_ms"`
	Phase       string        `json:"phase"`
	Step        string        `json:"step,omitempty"`
	StepIndex   int           `json:"step_index,omitempty"`
	Attempt     int           `json:"attempt,omitempty"`
	GrantedMs   int64         `json:"granted_ms,omitempty"`
	ResendCount int           `json:"resend_count,omitempty"`
	Outcome     trace.Outcome `json:"outcome,omitempty"`
	Status      int           `json:"status,omitempty"`
	Keepalives  int64         `json:"keepalives,omitempty"`
	Chunks      int64         `json:"chunks,omitempty"`
	Tokens      int64         `json:"tokens,omitempty"`
	Key         string        `json:"idempotency_key,omitempty"`
	SleepMs     int64         `json:"sleep_ms,omitempty"`
	Source      string        `json:"source,omitempty"`
	GaveUp      bool          `json:"gave_up,omitempty"`
	Reason      string        `json:"reason,omitempty"`
	Units       int64         `json:"units,omitempty"`
	Total       int64         `json:"total,omitempty"`
	From        string        `json:"from,omitempty"`
	To          string        `json:"to,omitempty"`
	State       string        `json:"state,omitempty"`
	TotalMs     int64         `json:"total_ms,omitempty"`
	Cause       string        `json:"cause,omitempty"`
	Result      string        `json:"result,omitempty"`
	Message     string        `json:"message,omitempty"`
}

func stdRecordOf(r trace.Record) stdRecord {
	return stdRecord{
		TS: r.TS, RunID: r.RunID, Seq: r.Seq, Event: r.Event, ElapsedMs: r.ElapsedMs, RemainingMs: r.RemainingMs,
		Phase: r.Phase, Step: r.Step, StepIndex: r.StepIndex, Attempt: r.Attempt, GrantedMs: r.GrantedMs,
		ResendCount: r.ResendCount, Outcome: r.Outcome, Status: r.Status, Keepalives: r.Keepalives,
		Chunks: r.Chunks, Tokens: r.Tokens, Key: r.Key, SleepMs: r.SleepMs, Source: r.Source, GaveUp: r.GaveUp,
		Reason: r.Reason, Units: r.Units, Total: r.Total, From: r.From, To: r.To, State: r.State,
		TotalMs: r.TotalMs, Cause: r.Cause, Result: r.Result, Message: r.Message,
	}
}

func TestAppendJSONAllocatesNothingIntoABufferWithRoom(t *testing.T) {
	buf := make([]byte, 0, 1024)
	for _, bc := range benchRecords {
		t.Run(bc.name, func(t *testing.T) {
			allocs := testing.AllocsPerRun(1000, func() { buf = trace.AppendJSON(buf[:0], bc.r) })
			if allocs != 0 {
				t.Errorf("AppendJSON allocates %v times, want 0", allocs)
			}
		})
	}
}

// BenchmarkRecord is a whole Record without I/O: the clock, the budget and
// the phase read, the encoding into the JSONL sink, under the Recorder's
// lock.
func BenchmarkRecord(b *testing.B) {
	bud, err := budget.New(budget.Config{Total: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	w := trace.NewRecorder("run-1", bud, func(time.Duration) string { return "explore" }, trace.NewJSONL(discard{}))
	r := everyKind[3]
	b.ReportAllocs()
	for b.Loop() {
		w.Record(r)
	}
}

// BenchmarkJSONLFile is a record through the JSONL sink into a real file,
// I/O included: each record handed to the file in its own write, as
// harness run does so that a killed process loses no record (issue 24),
// beside the baseline of a bufio.Writer that writes the file only when its
// 4 KiB fill up. The file is rewound every 4096 records, so that the
// benchmark measures writes into the page cache, not the disk filling up.
func BenchmarkJSONLFile(b *testing.B) {
	rec := stamp(everyKind[3], 4)
	for _, bc := range []struct {
		name string
		wrap func(io.Writer) (io.Writer, func() error)
	}{
		{"a_write_per_record", func(w io.Writer) (io.Writer, func() error) { return w, func() error { return nil } }},
		{"bufio_baseline", func(w io.Writer) (io.Writer, func() error) { bw := bufio.NewWriter(w); return bw, bw.Flush }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "trace.jsonl"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			w, flush := bc.wrap(&rewinding{f: f})
			sink := trace.NewJSONL(w)
			b.ReportAllocs()
			for b.Loop() {
				if err := sink.Record(rec); err != nil {
					b.Fatal(err)
				}
			}
			if err := flush(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// rewinding writes to f, and goes back to its start every 4096 writes.
type rewinding struct {
	f *os.File
	n int
}

func (r *rewinding) Write(p []byte) (int, error) {
	if r.n++; r.n%4096 == 0 {
		if _, err := r.f.Seek(0, io.SeekStart); err != nil {
			return 0, err
		}
	}
	return r.f.Write(p)
}
