package durable

import (
	"strings"
	"testing"

	"github.com/glidepath/glidepath/trace"
)

// A run's trace is bounded by its encoded size, under what Temporal lets
// a workflow return: records past MaxTraceBytes are counted as dropped,
// and the records that say how the run ended are kept all the same.
func TestATraceStopsGrowingAtMaxTraceBytesButKeepsHowTheRunEnded(t *testing.T) {
	var r run
	progress := trace.Record{Event: trace.Progress, Step: "tool:chatty", Key: "gp_key", Units: 1, Message: strings.Repeat("x", 256)}
	n := MaxTraceBytes/encodedSize(progress) + 100
	for range n {
		r.keep(progress)
	}
	r.keep(trace.Record{Event: trace.Landing, Cause: "quiet"})
	r.keep(trace.Record{Event: trace.RunEnd, Result: "partial"})
	if r.dropped == 0 || len(r.records)+r.dropped != n+2 {
		t.Fatalf("kept %d and dropped %d of %d", len(r.records), r.dropped, n+2)
	}
	if r.traceBytes > MaxTraceBytes+2*encodedSize(trace.Record{Event: trace.RunEnd, Result: "partial"}) {
		t.Errorf("the trace holds %d bytes, past %d", r.traceBytes, MaxTraceBytes)
	}
	last := r.records[len(r.records)-2:]
	if last[0].Event != trace.Landing || last[1].Event != trace.RunEnd {
		t.Errorf("the trace ends with %s, %s: want landing, run_end", last[0].Event, last[1].Event)
	}
}
