package trace_test

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/trace"
)

func TestTheRecorderFillsWhatEveryRecordCarries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := budget.New(budget.Config{Total: 2 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		phase := "explore"
		w := trace.NewRecorder("run-7", b, func(time.Duration) string { return phase }, trace.NewJSONL(&buf))
		// What the caller sets in the fields the Recorder owns is overwritten.
		w.Record(trace.Record{Event: trace.RunStart, TotalMs: 120000, RunID: "other", Seq: 99, ElapsedMs: -1, Phase: "land", TS: ts})
		time.Sleep(72 * time.Second)
		phase = "narrow"
		w.Record(trace.Record{Event: trace.PhaseChange, From: "explore", To: "narrow"})
		got, err := trace.ReadRecords(&buf)
		if err != nil {
			t.Fatal(err)
		}
		start := b.Start()
		want := []trace.Record{
			{TS: start, RunID: "run-7", Seq: 1, Event: trace.RunStart, ElapsedMs: 0, RemainingMs: 120000, Phase: "explore", TotalMs: 120000},
			{TS: start.Add(72 * time.Second), RunID: "run-7", Seq: 2, Event: trace.PhaseChange, ElapsedMs: 72000, RemainingMs: 48000, Phase: "narrow", From: "explore", To: "narrow"},
		}
		if len(got) != len(want) {
			t.Fatalf("got %d records, want %d", len(got), len(want))
		}
		for i := range want {
			if !got[i].TS.Equal(want[i].TS) {
				t.Errorf("record %d: ts %v, want %v", i+1, got[i].TS, want[i].TS)
			}
			got[i].TS = want[i].TS
			if got[i] != want[i] {
				t.Errorf("record %d:\n%+v\nwant\n%+v", i+1, got[i], want[i])
			}
		}
	})
}

func TestElapsedAndRemainingFollowTheBudgetExactly(t *testing.T) {
	cases := []struct {
		name          string
		total         time.Duration
		sleeps        []time.Duration // before each record
		wantElapsed   []int64
		wantRemaining []int64
	}{
		{
			name:          "at the start nothing is spent",
			total:         10 * time.Second,
			sleeps:        []time.Duration{0},
			wantElapsed:   []int64{0},
			wantRemaining: []int64{10000},
		},
		{
			name:          "milliseconds are whole, rounded down",
			total:         10 * time.Second,
			sleeps:        []time.Duration{1500 * time.Millisecond, 999 * time.Microsecond, time.Microsecond},
			wantElapsed:   []int64{1500, 1500, 1501},
			wantRemaining: []int64{8500, 8499, 8499},
		},
		{
			name:          "at the deadline everything is spent",
			total:         2 * time.Minute,
			sleeps:        []time.Duration{time.Minute, time.Minute},
			wantElapsed:   []int64{60000, 120000},
			wantRemaining: []int64{60000, 0},
		},
		{
			name:          "past the deadline elapsed is the time that passed",
			total:         time.Second,
			sleeps:        []time.Duration{3 * time.Second},
			wantElapsed:   []int64{3000},
			wantRemaining: []int64{0},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b, err := budget.New(budget.Config{Total: tc.total})
				if err != nil {
					t.Fatal(err)
				}
				var buf bytes.Buffer
				w := trace.NewRecorder("r", b, nil, trace.NewJSONL(&buf))
				for _, d := range tc.sleeps {
					time.Sleep(d)
					w.Record(trace.Record{Event: trace.Progress})
				}
				recs, err := trace.ReadRecords(&buf)
				if err != nil {
					t.Fatal(err)
				}
				for i, r := range recs {
					if r.ElapsedMs != tc.wantElapsed[i] || r.RemainingMs != tc.wantRemaining[i] {
						t.Errorf("record %d: elapsed %d remaining %d, want %d and %d", i+1, r.ElapsedMs, r.RemainingMs, tc.wantElapsed[i], tc.wantRemaining[i])
					}
				}
			})
		})
	}
}

func TestSeqIncreasesByOneUnderConcurrentWrites(t *testing.T) {
	b, err := budget.New(budget.Config{Total: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	var phase atomic.Value
	phase.Store("explore")
	w := trace.NewRecorder("run-1", b, func(time.Duration) string { return phase.Load().(string) }, trace.NewJSONL(&buf))
	const writers, each = 8, 250
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				if g == 0 && i == each/2 {
					phase.Store("narrow")
				}
				w.Record(trace.Record{Event: trace.AttemptStart, Step: "tool:search", StepIndex: g, Attempt: i + 1})
			}
		})
	}
	wg.Wait()
	recs, err := trace.ReadRecords(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != writers*each {
		t.Fatalf("%d records, want %d: lines were lost or interleaved", len(recs), writers*each)
	}
	next := make([]int, writers) // each writer's records keep their own order
	narrowed := false
	for i, r := range recs {
		if r.Seq != int64(i+1) {
			t.Fatalf("line %d has seq %d, want %d", i+1, r.Seq, i+1)
		}
		// The phase is read under the lock that orders the lines: once one
		// line says narrow, every later one does.
		if narrowed && r.Phase != "narrow" {
			t.Errorf("line %d says %s after a line said narrow", i+1, r.Phase)
		}
		narrowed = narrowed || r.Phase == "narrow"
		if i > 0 && (r.TS.Before(recs[i-1].TS) || r.ElapsedMs < recs[i-1].ElapsedMs) {
			t.Errorf("line %d goes back in time: %v after %v", i+1, r.TS, recs[i-1].TS)
		}
		if next[r.StepIndex]++; r.Attempt != next[r.StepIndex] {
			t.Errorf("line %d: writer %d's record %d, want %d", i+1, r.StepIndex, r.Attempt, next[r.StepIndex])
		}
	}
	if !narrowed {
		t.Error("no line says narrow, though the phase changed half-way")
	}
}

func TestARecorderWithoutBudgetOrPhaseStampsZeros(t *testing.T) {
	var buf bytes.Buffer
	w := trace.NewRecorder("r", nil, nil, trace.NewJSONL(&buf))
	w.Record(trace.Record{Event: trace.Landing, ElapsedMs: 5, RemainingMs: 5, Phase: "land"})
	recs, err := trace.ReadRecords(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if r := recs[0]; r.ElapsedMs != 0 || r.RemainingMs != 0 || r.Phase != "" || r.Seq != 1 {
		t.Errorf("got %+v, want zeros and seq 1", r)
	}
}

func TestTheFirstErrorOfASinkIsKept(t *testing.T) {
	f, err := os.Create(t.TempDir() + "/trace.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	w := trace.NewRecorder("r", nil, nil, trace.NewJSONL(f))
	w.Record(trace.Record{Event: trace.RunStart})
	w.Record(trace.Record{Event: trace.RunEnd})
	if err := w.Err(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Err = %v, want %v", err, os.ErrClosed)
	}
}

func TestARecordAllocatesNothing(t *testing.T) {
	b, err := budget.New(budget.Config{Total: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	w := trace.NewRecorder("run-1", b, func(time.Duration) string { return "explore" }, trace.NewJSONL(discard{}))
	r := everyKind[3] // an attempt_end, the record written most
	allocs := testing.AllocsPerRun(1000, func() { w.Record(r) })
	if allocs != 0 {
		t.Errorf("a Record allocates %v times, want 0", allocs)
	}
}

// discard is io.Discard without its ReaderFrom, as a plain file.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// collect is a sink that keeps what it is handed.
type collect struct {
	mu   sync.Mutex
	recs []trace.Record
	err  error
}

func (c *collect) Record(r trace.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recs = append(c.recs, r)
	return c.err
}

func TestEverySinkReceivesTheSameStampedRecordsInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := budget.New(budget.Config{Total: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		first, second := &collect{}, &collect{err: errors.New("full")}
		var spents []time.Duration
		w := trace.NewRecorder("run-1", b, func(spent time.Duration) string {
			spents = append(spents, spent)
			if spent >= 6*time.Second {
				return "narrow"
			}
			return "explore"
		}, first, trace.NewJSONL(&buf), second)
		for _, d := range []time.Duration{0, 5999 * time.Millisecond, time.Millisecond} {
			time.Sleep(d)
			w.Record(trace.Record{Event: trace.Progress, Units: int64(d)})
		}
		w.Flush() // the collecting sinks are queued: Flush waits for them to take every record
		fromFile, err := trace.ReadRecords(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if len(first.recs) != 3 || len(fromFile) != 3 || len(second.recs) != 3 {
			t.Fatalf("sinks got %d, %d and %d records, want 3 each", len(first.recs), len(fromFile), len(second.recs))
		}
		for i := range first.recs {
			a, f, c := first.recs[i], fromFile[i], second.recs[i]
			if !a.TS.Equal(f.TS) {
				t.Errorf("record %d: ts %v in one sink, %v in the file", i+1, a.TS, f.TS)
			}
			f.TS = a.TS
			if a != f || a != c {
				t.Errorf("record %d differs between sinks:\n%+v\n%+v\n%+v", i+1, a, f, c)
			}
		}
		if want := []time.Duration{0, 5999 * time.Millisecond, 6 * time.Second}; !slices.Equal(spents, want) {
			t.Errorf("phase asked at %v, want %v", spents, want)
		}
		if got := []string{first.recs[1].Phase, first.recs[2].Phase}; !slices.Equal(got, []string{"explore", "narrow"}) {
			t.Errorf("phases %q, want the phase of each record's instant", got)
		}
		if err := w.Err(); err == nil || err.Error() != "full" {
			t.Errorf("Err = %v, want the failing sink's first error", err)
		}
	})
}

func TestAJSONLSinkSharedByTwoRecordersKeepsLinesWhole(t *testing.T) {
	var buf bytes.Buffer
	bw := bufio.NewWriterSize(&buf, 64) // small, so that writes spill while both record
	sink := trace.NewJSONL(bw)
	parent, child := trace.NewRecorder("parent", nil, nil, sink), trace.NewRecorder("child", nil, nil, sink)
	const each = 500
	var wg sync.WaitGroup
	for _, r := range []*trace.Recorder{parent, child} {
		wg.Go(func() {
			for range each {
				r.Record(trace.Record{Event: trace.Progress, Message: strings.Repeat("x", 40)})
			}
		})
	}
	wg.Wait()
	if err := parent.Flush(); err != nil {
		t.Fatal(err)
	}
	recs, err := trace.ReadRecords(&buf)
	if err != nil {
		t.Fatalf("lines were interleaved: %v", err)
	}
	seq := map[string]int64{}
	for _, r := range recs {
		if seq[r.RunID]++; r.Seq != seq[r.RunID] {
			t.Fatalf("%s: seq %d, want %d: each run counts its own", r.RunID, r.Seq, seq[r.RunID])
		}
	}
	if seq["parent"] != each || seq["child"] != each {
		t.Errorf("records by run %v, want %d each", seq, each)
	}
}
