package trace_test

import (
	"bytes"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/trace"
)

func TestTheWriterFillsWhatEveryRecordCarries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := budget.New(budget.Config{Total: 2 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		phase := "explore"
		w := trace.NewWriter(&buf, "run-7", b, func() string { return phase })
		// What the caller sets in the fields the Writer owns is overwritten.
		if err := w.Write(trace.Record{Event: trace.RunStart, TotalMs: 120000, RunID: "other", Seq: 99, ElapsedMs: -1, Phase: "land", TS: ts}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(72 * time.Second)
		phase = "narrow"
		if err := w.Write(trace.Record{Event: trace.PhaseChange, From: "explore", To: "narrow"}); err != nil {
			t.Fatal(err)
		}
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
			name:          "past the deadline the budget stays spent",
			total:         time.Second,
			sleeps:        []time.Duration{3 * time.Second},
			wantElapsed:   []int64{1000},
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
				w := trace.NewWriter(&buf, "r", b, nil)
				for _, d := range tc.sleeps {
					time.Sleep(d)
					if err := w.Write(trace.Record{Event: trace.Progress}); err != nil {
						t.Fatal(err)
					}
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
	w := trace.NewWriter(&buf, "run-1", b, func() string { return phase.Load().(string) })
	const writers, each = 8, 250
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				if g == 0 && i == each/2 {
					phase.Store("narrow")
				}
				if err := w.Write(trace.Record{Event: trace.AttemptStart, Step: "tool:search", StepIndex: g, Attempt: i + 1}); err != nil {
					t.Error(err)
					return
				}
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
	for i, r := range recs {
		if r.Seq != int64(i+1) {
			t.Fatalf("line %d has seq %d, want %d", i+1, r.Seq, i+1)
		}
		if i > 0 && (r.TS.Before(recs[i-1].TS) || r.ElapsedMs < recs[i-1].ElapsedMs) {
			t.Errorf("line %d goes back in time: %v after %v", i+1, r.TS, recs[i-1].TS)
		}
		if next[r.StepIndex]++; r.Attempt != next[r.StepIndex] {
			t.Errorf("line %d: writer %d's record %d, want %d", i+1, r.StepIndex, r.Attempt, next[r.StepIndex])
		}
	}
}

func TestAWriterWithoutBudgetOrPhaseWritesZeros(t *testing.T) {
	var buf bytes.Buffer
	w := trace.NewWriter(&buf, "r", nil, nil)
	if err := w.Write(trace.Record{Event: trace.Landing, ElapsedMs: 5, RemainingMs: 5, Phase: "land"}); err != nil {
		t.Fatal(err)
	}
	recs, err := trace.ReadRecords(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if r := recs[0]; r.ElapsedMs != 0 || r.RemainingMs != 0 || r.Phase != "" || r.Seq != 1 {
		t.Errorf("got %+v, want zeros and seq 1", r)
	}
}

func TestWriteReturnsTheUnderlyingWritersError(t *testing.T) {
	f, err := os.Create(t.TempDir() + "/trace.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	w := trace.NewWriter(f, "r", nil, nil)
	if err := w.Write(trace.Record{Event: trace.RunStart}); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Write = %v, want %v", err, os.ErrClosed)
	}
}

func TestAWriteAllocatesNothing(t *testing.T) {
	b, err := budget.New(budget.Config{Total: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	w := trace.NewWriter(discard{}, "run-1", b, func() string { return "explore" })
	r := everyKind[3] // an attempt_end, the record written most
	allocs := testing.AllocsPerRun(1000, func() {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("a Write allocates %v times, want 0", allocs)
	}
}

// discard is io.Discard without its ReaderFrom, as a plain file.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
