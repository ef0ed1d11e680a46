package main

import (
	"testing"
	"time"

	"github.com/glidepath/glidepath/trace"
)

func TestQuantileOfTakesTheNearestRank(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.2, 1}, {0.5, 3}, {0.99, 5}, {1, 5}} {
		if got := quantileOf(ds, tc.q); got != tc.want {
			t.Errorf("quantileOf(%v, %v) = %v, want %v", ds, tc.q, got, tc.want)
		}
	}
	if got := quantileOf(nil, 0.5); got != 0 {
		t.Errorf("quantileOf(nil) = %v, want 0", got)
	}
}

func TestTheBudgetsStartIsRunEndLessItsElapsedTime(t *testing.T) {
	end := time.Date(2026, 12, 1, 12, 0, 2, 500_000_000, time.UTC)
	recs := records{
		{Event: trace.RunStart, TS: end.Add(-time.Second)},
		{Event: trace.Landing, TS: end.Add(-time.Millisecond)},
		{Event: trace.RunEnd, TS: end, ElapsedMs: 2040},
	}
	start, gotEnd, err := recs.clock()
	if err != nil {
		t.Fatal(err)
	}
	if want := end.Add(-2040 * time.Millisecond); !start.Equal(want) || !gotEnd.Equal(end) {
		t.Errorf("clock() = %v, %v; want %v, %v", start, gotEnd, want, end)
	}
	if _, _, err := recs[:2].clock(); err == nil {
		t.Error("clock() of a trace without run_end: no error")
	}
	if l := recs.last(trace.CancelSent); l.Event != "" {
		t.Errorf("last(cancel_sent) of a trace without one = %+v, want a zero record", l)
	}
}
