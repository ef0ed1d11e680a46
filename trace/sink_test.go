package trace_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
)

// What a user plugs in as a sink cannot move the end of a run (SPEC §3):
// these run the real harness against the sim over in-memory connections,
// in a synctest bubble, so every instant is exact, and the bubble checks
// that no goroutine outlives the test.

// slowSink takes d over every record, as a sink writing to a slow
// network would.
type slowSink struct {
	d    time.Duration
	mu   sync.Mutex
	seqs []int64
}

func (s *slowSink) Record(r trace.Record) error {
	time.Sleep(s.d)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seqs = append(s.seqs, r.Seq)
	return nil
}

func (s *slowSink) got() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seqs)
}

// stuckSink never returns from its first record until released.
type stuckSink struct {
	release chan struct{}
	calls   atomic.Int64
}

func (s *stuckSink) Record(trace.Record) error {
	s.calls.Add(1)
	<-s.release
	return nil
}

// panicSink panics on every record.
type panicSink struct {
	mu    sync.Mutex
	calls int
}

func (p *panicSink) Record(r trace.Record) error {
	p.mu.Lock()
	p.calls++
	p.mu.Unlock()
	panic("sink exploded on " + string(r.Event))
}

// oneToolRun runs a run of B = total whose model calls one tool, search,
// that takes a second, and then answers: it completes at 1s.
func oneToolRun(t *testing.T, total time.Duration, sinks ...trace.Sink) (landing.Result, error, *bytes.Buffer) {
	t.Helper()
	srv := sim.NewPipeServer(nil)
	t.Cleanup(srv.Close)
	m, err := model.New(model.Config{BaseURL: srv.URL, HTTPClient: srv.Client(), Model: sim.ModelID})
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry(nil)
	search := tools.Func(tools.Spec{Name: "search", Effect: tools.Read}, func(ctx context.Context, _ json.RawMessage, _ tools.Progress) (any, error) {
		select {
		case <-time.After(time.Second):
			return "3 cats", nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	})
	if err := reg.Register(search); err != nil {
		t.Fatal(err)
	}
	b, err := budget.New(budget.Config{Total: total})
	if err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer
	sinks = append(sinks, trace.NewJSONL(&file))
	res, err := harness.Run(t.Context(), b, harness.Config{Task: "find cats", Model: m, Tools: reg, Sinks: sinks})
	return res, err, &file
}

// wholeTrace checks that the trace has every record of one run: seq 1 to
// n without a gap, run_start first and run_end last.
func wholeTrace(t *testing.T, file *bytes.Buffer) []trace.Record {
	t.Helper()
	recs, err := trace.ReadRecords(file)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if r.Seq != int64(i+1) {
			t.Fatalf("trace line %d has seq %d: the trace lost records", i+1, r.Seq)
		}
	}
	if len(recs) < 4 || recs[0].Event != trace.RunStart || recs[len(recs)-1].Event != trace.RunEnd {
		t.Fatalf("trace of %d records, want run_start … run_end", len(recs))
	}
	return recs
}

func TestASlowAndABlockedSinkCannotMoveTheEndOfARun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := &slowSink{d: 300 * time.Millisecond}
		stuck := &stuckSink{release: make(chan struct{})}
		start := time.Now()

		res, err, file := oneToolRun(t, 5*time.Second, slow, stuck)

		// The result exists at 1s; the sinks behind get the flush's grace
		// to catch up, and no more.
		if got := time.Since(start); got != time.Second+trace.FlushGrace {
			t.Errorf("the run returned after %v, want 1s and the flush's grace, %v, whatever the sinks do", got, trace.FlushGrace)
		}
		if res.Status != landing.Complete || res.Budget.SpentMs != 1000 {
			t.Errorf("result %s, spent %dms; want complete at 1000ms", res.Status, res.Budget.SpentMs)
		}
		// Neither sink took every record by the end: both are reported.
		if !errors.Is(err, harness.ErrTrace) || !errors.Is(err, trace.ErrSinkBehind) {
			t.Errorf("run error %v, want ErrTrace matching ErrSinkBehind", err)
		}
		var behind []int
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			for _, inner := range flatten(e) {
				if se, ok := errors.AsType[*trace.SinkError](inner); ok && se.Dropped > 0 {
					behind = append(behind, se.Index)
				}
			}
		}
		slices.Sort(behind)
		if !slices.Equal(slices.Compact(behind), []int{0, 1}) {
			t.Errorf("sinks reported behind: %v, want the slow one (0) and the stuck one (1): %v", behind, err)
		}
		recs := wholeTrace(t, file)

		// The slow sink got a prefix of the run's records, in seq order:
		// what it took in the run's second, and in the flush's grace.
		got := slow.got()
		if len(got) == 0 || len(got) >= len(recs) {
			t.Errorf("the slow sink got %d of %d records, want some but not all", len(got), len(recs))
		}
		for i, seq := range got {
			if seq != int64(i+1) {
				t.Fatalf("the slow sink's records %v, want seq 1, 2, 3… in order", got)
			}
		}
		if n := stuck.calls.Load(); n != 1 {
			t.Errorf("the stuck sink was called %d times, want once", n)
		}

		// No goroutine outlives the run but for a sink's call in hand: the
		// slow sink's ends with its 300ms, and takes nothing more; the
		// stuck one's ends when the sink returns, and is not called again.
		// The bubble fails the test if any goroutine is left.
		close(stuck.release)
		time.Sleep(300 * time.Millisecond)
		synctest.Wait()
		if after := slow.got(); len(after) > len(got)+1 {
			t.Errorf("the slow sink got %d records after the run, want at most its call in hand", len(after)-len(got))
		}
		if n := stuck.calls.Load(); n != 1 {
			t.Errorf("the stuck sink was called %d times once released, want no more", n)
		}
	})
}

// flatten returns err and every error it wraps, depth first.
func flatten(err error) []error {
	out := []error{err}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			out = append(out, flatten(e)...)
		}
	case interface{ Unwrap() error }:
		if e := u.Unwrap(); e != nil {
			out = append(out, flatten(e)...)
		}
	}
	return out
}

// Sinks that keep up cost the run nothing: it returns when its result
// exists, the flush's grace unspent.
func TestSinksThatKeepUpDoNotHoldTheResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fast := &slowSink{} // no delay
		start := time.Now()

		res, err, file := oneToolRun(t, 5*time.Second, fast)

		if got := time.Since(start); got != time.Second || err != nil || res.Status != landing.Complete {
			t.Errorf("returned %s after %v (%v), want complete after 1s, no error", res.Status, got, err)
		}
		if recs := wholeTrace(t, file); len(fast.got()) != len(recs) {
			t.Errorf("the sink got %d records, the trace has %d: want all", len(fast.got()), len(recs))
		}
	})
}

func TestAPanickingSinkIsSwitchedOffAndTheRunCompletes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := &panicSink{}
		start := time.Now()

		res, err, file := oneToolRun(t, 5*time.Second, boom)

		if got := time.Since(start); got != time.Second || res.Status != landing.Complete {
			t.Errorf("the run returned %s after %v, want complete after 1s", res.Status, got)
		}
		if !errors.Is(err, trace.ErrSinkPanicked) {
			t.Fatalf("run error %v, want one matching ErrSinkPanicked", err)
		}
		for _, want := range []string{"sink 0 (*trace_test.panicSink) panicked and was switched off", "sink exploded on run_start"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("run error %q does not say %q", err, want)
			}
		}
		var se *trace.SinkError
		for _, e := range flatten(err) {
			if s, ok := e.(*trace.SinkError); ok {
				se = s
			}
		}
		if se == nil || len(se.Stack) == 0 {
			t.Errorf("sink error %+v, want one that keeps the panic's stack", se)
		}
		boom.mu.Lock()
		calls := boom.calls
		boom.mu.Unlock()
		if calls != 1 {
			t.Errorf("the panicking sink was called %d times, want once: then it is off", calls)
		}
		wholeTrace(t, file)
	})
}

// A panicking sink on the run's path (a ContextSink, as the spans sink
// is) is recovered and switched off too.
func TestAPanickingContextSinkIsSwitchedOffToo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res, err, file := oneToolRun(t, 5*time.Second, &panicContextSink{})

		if res.Status != landing.Complete || !errors.Is(err, trace.ErrSinkPanicked) {
			t.Errorf("result %s, error %v; want complete, and the panic reported", res.Status, err)
		}
		wholeTrace(t, file)
	})
}

type panicContextSink struct{ panicSink }

func (p *panicContextSink) AttemptContext(ctx context.Context, _ trace.Record) context.Context {
	return ctx
}

// A ContextSink whose AttemptContext panics, asked for the context of a
// tool attempt, is switched off the same way.
type panicOnContext struct{}

func (panicOnContext) Record(trace.Record) error { return nil }
func (panicOnContext) AttemptContext(context.Context, trace.Record) context.Context {
	panic("no span for you")
}

func TestAContextSinkThatPanicsForAnAttemptIsSwitchedOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res, err, file := oneToolRun(t, 5*time.Second, panicOnContext{})

		if res.Status != landing.Complete || !errors.Is(err, trace.ErrSinkPanicked) || !strings.Contains(err.Error(), "no span for you") {
			t.Errorf("result %s, error %v; want complete, and the panic reported", res.Status, err)
		}
		wholeTrace(t, file)
	})
}

// A run_end after the deadline says by how much (SPEC §3, §6); one at
// the deadline does not.
func TestARunEndAfterTheDeadlineCarriesLateMs(t *testing.T) {
	cases := []struct {
		name        string
		after       time.Duration
		wantElapsed int64
		wantLate    int64
	}{
		{"inside the budget", 900 * time.Millisecond, 900, 0},
		{"at the deadline", time.Second, 1000, 0},
		{"past the deadline", 3250 * time.Millisecond, 3250, 2250},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b, err := budget.New(budget.Config{Total: time.Second})
				if err != nil {
					t.Fatal(err)
				}
				var buf bytes.Buffer
				w := trace.NewRecorder("r", b, nil, trace.NewJSONL(&buf))
				time.Sleep(tc.after)
				w.Record(trace.Record{Event: trace.Progress, LateMs: 7}) // only run_end says it
				w.Record(trace.Record{Event: trace.RunEnd, TotalMs: 1000, Result: "complete"})
				recs, err := trace.ReadRecords(bytes.NewReader(buf.Bytes()))
				if err != nil {
					t.Fatal(err)
				}
				if p := recs[0]; p.LateMs != 0 {
					t.Errorf("a progress record carries late_ms %d", p.LateMs)
				}
				end := recs[1]
				if end.ElapsedMs != tc.wantElapsed || end.RemainingMs != 0 && tc.wantLate > 0 || end.LateMs != tc.wantLate {
					t.Errorf("run_end elapsed %d remaining %d late %d; want elapsed %d, late %d", end.ElapsedMs, end.RemainingMs, end.LateMs,
						tc.wantElapsed, tc.wantLate)
				}
				if has := strings.Contains(buf.String(), `"late_ms":`); has != (tc.wantLate > 0) {
					t.Errorf("the line says late_ms: %v, want %v\n%s", has, tc.wantLate > 0, buf.String())
				}
			})
		})
	}
}

// A sink that takes nothing holds QueueLen records; the rest are dropped,
// and counted exactly.
func TestAStuckSinksQueueDropsAndCountsWhatDoesNotFit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stuck := &stuckSink{release: make(chan struct{})}
		b, err := budget.New(budget.Config{Total: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		w := trace.NewRecorder("r", b, nil, stuck)
		const extra = 10
		// One record in the sink's hands, QueueLen queued, extra dropped.
		for range 1 + trace.QueueLen + extra {
			w.Record(trace.Record{Event: trace.Progress})
		}
		synctest.Wait()
		start := time.Now()
		err = w.Close()
		if got := time.Since(start); got != trace.FlushGrace {
			t.Errorf("Close waited %v, want the flush's grace, %v", got, trace.FlushGrace)
		}
		se, ok := errors.AsType[*trace.SinkError](err)
		if !ok || !errors.Is(err, trace.ErrSinkBehind) {
			t.Fatalf("Close = %v, want a *SinkError matching ErrSinkBehind", err)
		}
		// After the grace what was queued is dropped too: only the record
		// in hand was taken.
		if want := int64(trace.QueueLen + extra); se.Dropped != want {
			t.Errorf("dropped %d, want %d", se.Dropped, want)
		}
		w.Record(trace.Record{Event: trace.RunEnd}) // after Close: dropped for the queued sink
		close(stuck.release)
		if err := w.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		if n := stuck.calls.Load(); n != 1 {
			t.Errorf("the sink was called %d times, want once: what was dropped is not handed over late", n)
		}
		if se, _ := errors.AsType[*trace.SinkError](w.Err()); se == nil || se.Dropped != trace.QueueLen+extra+1 {
			t.Errorf("Err after a record past Close = %v, want one more dropped", w.Err())
		}
	})
}

// Flush never waits past the run's deadline, whatever the grace.
func TestFlushWaitsNoLongerThanTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := &slowSink{d: time.Hour}
		b, err := budget.New(budget.Config{Total: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		w := trace.NewRecorder("r", b, nil, slow)
		time.Sleep(960 * time.Millisecond)
		w.Record(trace.Record{Event: trace.Progress})
		w.Record(trace.Record{Event: trace.Progress})
		start := time.Now()
		if err := w.Flush(); !errors.Is(err, trace.ErrSinkBehind) {
			t.Errorf("Flush = %v, want ErrSinkBehind", err)
		}
		if got := time.Since(start); got != 40*time.Millisecond {
			t.Errorf("Flush waited %v, want 40ms: until the deadline, inside the grace", got)
		}
		time.Sleep(time.Hour) // the record in hand
		if err := w.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

// Under concurrent writers a queued sink sees the records in seq order,
// as the trace file does.
func TestAQueuedSinkGetsTheRecordsInSeqOrder(t *testing.T) {
	var file bytes.Buffer
	queued := &slowSink{}
	w := trace.NewRecorder("r", nil, nil, queued, trace.NewJSONL(&file))
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				w.Record(trace.Record{Event: trace.Progress})
			}
		})
	}
	wg.Wait()
	if err := w.Flush(); err != nil {
		// Within the grace on a loaded machine the sink may not have taken
		// all 800; then the error says how many it missed.
		t.Logf("flush: %v", err)
	}
	got := queued.got()
	for i, seq := range got {
		if seq != int64(i+1) {
			t.Fatalf("the queued sink's record %d has seq %d, want %d", i+1, seq, i+1)
		}
	}
	if len(got) == 0 {
		t.Error("the queued sink got nothing")
	}
	if err := w.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// The zero values of the trace's types are safe (see the package doc).
func TestTheZeroValuesAreSafe(t *testing.T) {
	var r trace.Recorder
	r.Record(trace.Record{Event: trace.RunStart})
	if err := r.Flush(); err != nil {
		t.Errorf("a zero Recorder's Flush = %v", err)
	}
	if err := r.Close(); err != nil || r.Err() != nil || r.RunID() != "" {
		t.Errorf("a zero Recorder: Close %v, Err %v, RunID %q", err, r.Err(), r.RunID())
	}
	var j trace.JSONL
	if err := j.Record(trace.Record{Event: trace.RunStart}); !errors.Is(err, trace.ErrNoWriter) {
		t.Errorf("a zero JSONL's Record = %v, want ErrNoWriter", err)
	}
	if err := j.Flush(); err != nil {
		t.Errorf("a zero JSONL's Flush = %v", err)
	}
	for _, o := range []*trace.Observer{{}, nil} {
		o.OnAttemptStart(trace.Attempt{})
		o.OnAttemptEnd(trace.Attempt{})
		o.OnSignal(trace.Signal{})
		o.OnPause("model", "")()
		if ctx := o.OnContext(t.Context(), trace.Attempt{}); ctx != t.Context() {
			t.Errorf("observer %v changed the attempt's context", o)
		}
	}
	if rep := trace.Summarize(nil); rep.Runs != 0 || rep.Late != 0 {
		t.Errorf("the report of nothing: %+v", rep)
	}
}

// Past the deadline a sink still gets the floor of 5ms to take the last
// records, and no more: one that keeps up loses nothing of a late run, a
// slow one costs it 5ms.
func TestPastTheDeadlineFlushWaitsItsFloorAndNoMore(t *testing.T) {
	cases := []struct {
		name     string
		per      time.Duration
		wantWait time.Duration
		behind   bool
	}{
		{"a sink that keeps up loses nothing", 2 * time.Millisecond, 4 * time.Millisecond, false},
		{"a slow one is cut off at the floor", time.Second, 5 * time.Millisecond, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sink := &slowSink{d: tc.per}
				b, err := budget.New(budget.Config{Total: time.Second})
				if err != nil {
					t.Fatal(err)
				}
				w := trace.NewRecorder("r", b, nil, sink)
				time.Sleep(2 * time.Second) // a stopped process, resumed late
				w.Record(trace.Record{Event: trace.Landing})
				w.Record(trace.Record{Event: trace.RunEnd})
				start := time.Now()
				err = w.Flush()
				if got := time.Since(start); got != tc.wantWait || errors.Is(err, trace.ErrSinkBehind) != tc.behind {
					t.Errorf("Flush waited %v and returned %v; want %v, behind %v", got, err, tc.wantWait, tc.behind)
				}
				time.Sleep(tc.per) // the call in hand
				if err := w.Wait(t.Context()); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}
