package trace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync"
	"time"

	"github.com/glidepath/glidepath/budget"
)

// A Sink receives a run's records, stamped and in seq order: the JSONL
// trace ([JSONL]) is one, a terminal's live status line, spans and logs are
// others. What a user plugs in cannot move the run's clock (SPEC §3), so a
// [Recorder] never calls a Sink on the run's path: each Sink has a queue of
// its own, [QueueLen] records long, and a goroutine of the Recorder's that
// hands it the records in seq order. A Sink that falls behind loses the
// records that find its queue full, and they are counted; one that panics
// is recovered, switched off (it is never called again) and reported.
// Either way the run goes on, and [Recorder.Err] says so when it ends. An
// error a Sink returns is kept, not acted on: the run goes on without that
// sink's record of it and reports the first error when it ends. Record
// must not call back into the Recorder.
//
// A sink that several recorders share, as a child run's records go to its
// parent's trace, is called by each of them, and must be safe for
// concurrent use; [JSONL] is.
//
// Two kinds of sink are called on the run's path, in seq order, since
// what they do is needed there or must not be lost: [*JSONL], which only
// copies a record into the buffer the caller gave it, and a [ContextSink],
// which must hand the run the context of an attempt before the attempt is
// sent. Such a sink must not block.
type Sink interface {
	Record(r Record) error
}

// A ContextSink is a [Sink] that keeps a context for each attempt it
// records — the attempt's span — and gives it, for the attempt_start
// record r it has been handed, as a child of ctx: what the attempt sends
// then carries its trace context (W3C traceparent). It is called on the
// run's path (see [Sink]), so Record and AttemptContext must not block:
// spans.Sink only starts and ends spans, which the OpenTelemetry SDK's
// batch processor exports off the path, from a bounded queue.
type ContextSink interface {
	Sink
	AttemptContext(ctx context.Context, r Record) context.Context
}

// A Flusher is a [Sink] that buffers; [Recorder.Flush] flushes it.
type Flusher interface {
	Flush() error
}

// QueueLen is how many records a queued [Sink] may fall behind the run
// before records are dropped for it: a run's records are a few per model
// turn and tool call, so a sink this far behind is stuck, not slow.
const QueueLen = 1024

// FlushGrace is the most [Recorder.Flush] waits for the queued sinks to
// take what is recorded, counted from the run_end record (the instant the
// run's result exists) and not past the run's deadline (but for a floor of
// 5ms, so that a sink that keeps up is not cut off from a run that ended
// late): the grace a result that already exists may be held (SPEC §3).
// What a sink has not taken by then is dropped and counted.
const FlushGrace = 100 * time.Millisecond

var (
	// ErrSinkBehind is matched by the error of a sink that fell behind:
	// records were dropped for it.
	ErrSinkBehind = errors.New("trace: a sink fell behind and records were dropped for it")

	// ErrSinkPanicked is matched by the error of a sink that panicked: it
	// was switched off.
	ErrSinkPanicked = errors.New("trace: a sink panicked and was switched off")
)

// SinkError reports what became of one sink of a [Recorder]: records
// dropped for it ([ErrSinkBehind]) or its panic ([ErrSinkPanicked]).
type SinkError struct {
	Index   int    // the sink's place in the list given to [NewRecorder]
	Sink    string // its type, e.g. "*main.statusLine"
	Dropped int64  // records it did not get
	Panic   any    // what it panicked with, if it did
	Stack   []byte // where, if it did
}

func (e *SinkError) Error() string {
	if e.Panic != nil {
		msg := fmt.Sprintf("trace: sink %d (%s) panicked and was switched off: %v", e.Index, e.Sink, e.Panic)
		if e.Dropped > 0 {
			msg += fmt.Sprintf("; %d records did not reach it", e.Dropped)
		}
		return msg
	}
	return fmt.Sprintf("trace: sink %d (%s) fell behind: %d records were dropped for it", e.Index, e.Sink, e.Dropped)
}

// Is reports whether target is the sentinel of what happened to the sink.
func (e *SinkError) Is(target error) bool {
	if e.Panic != nil {
		return target == ErrSinkPanicked
	}
	return target == ErrSinkBehind
}

// A Recorder stamps the records of one run and hands them to its sinks.
// It fills what every record carries, once, so that every sink reads the
// same values: the time (RFC 3339 with nanoseconds, UTC), the run's ID, a
// seq that counts up from 1, the budget spent and remaining in whole
// milliseconds, read from the run's [budget.Budget] in one reading, the
// phase at that instant, and on run_end how late the run ended
// ([Record.LateMs]). A Recorder is safe for concurrent use.
//
// A zero Recorder is valid: it stamps records of run "" with zeros for
// time spent and remaining, and has no sinks.
type Recorder struct {
	runID string
	b     *budget.Budget
	phase func(spent time.Duration) string

	// path serializes the records through stamping and the sinks called on
	// the run's path, so that seq, ts and elapsed_ms all increase down
	// every sink. It is held only across those sinks, which do not block.
	path   sync.Mutex
	direct []sinkSlot

	mu      sync.Mutex // guards seq, lanes' state and the errors; never held while a sink is called
	seq     int64
	lanes   []*lane
	wg      sync.WaitGroup // the lanes' goroutines
	closed  bool
	endedAt time.Time // when run_end was recorded: the result exists
}

// sinkSlot is a sink called on the run's path, with what became of it.
// err and fail are written under Recorder.path and Recorder.mu both, so
// that Record reads them holding the one and Err holding the other.
type sinkSlot struct {
	index int
	sink  Sink
	err   error // its first error
	fail  *SinkError
}

// lane is a queued sink: the records it has yet to take, and the goroutine
// that hands them over, which runs only while there are some. Its fields
// are guarded by Recorder.mu.
type lane struct {
	index   int
	sink    Sink
	queue   []Record // a ring of QueueLen at most: head, n
	head, n int
	busy    bool          // reports whether the goroutine is handing a record over
	running bool          // reports whether its goroutine is alive
	moved   chan struct{} // closed (and replaced) each time the lane moves, for Flush to wait on
	err     error         // its first error
	fail    *SinkError    // dropped records, or its panic
}

// NewRecorder returns the Recorder of the run runID. Elapsed and remaining
// time are read from b; a nil b stamps zeros. phase returns the phase the
// run is in once spent of its budget is spent, for the instant of each
// record ([landing.Ladder.Peek]); a nil phase stamps "". phase runs while
// the record is stamped, so it must be cheap and must not record.
func NewRecorder(runID string, b *budget.Budget, phase func(spent time.Duration) string, sinks ...Sink) *Recorder {
	r := &Recorder{runID: runID, b: b, phase: phase}
	for i, s := range sinks {
		switch s.(type) {
		case *JSONL, ContextSink:
			r.direct = append(r.direct, sinkSlot{index: i, sink: s})
		default:
			r.lanes = append(r.lanes, &lane{index: i, sink: s, moved: make(chan struct{})})
		}
	}
	return r
}

// RunID returns the ID the Recorder stamps.
func (r *Recorder) RunID() string { return r.runID }

// Ended returns the time stamped on the run_end record: the instant the
// run's result exists. It is zero until run_end is recorded.
func (r *Recorder) Ended() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.endedAt
}

// Record stamps rec — TS (now, in UTC), RunID, Seq, ElapsedMs,
// RemainingMs and Phase, and on run_end LateMs, whatever the caller set in
// them — and hands it to every sink: at once to those called on the run's
// path, and to each other sink's queue. It does not wait for a queued
// sink.
func (r *Recorder) Record(rec Record) {
	r.path.Lock()
	defer r.path.Unlock()
	r.mu.Lock()
	r.seq++
	now := time.Now()
	start, deadline := now, now // no budget: zeros for time spent and remaining
	if r.b != nil {
		start, deadline = r.b.Start(), r.b.Deadline()
	}
	rec = Stamp(rec, now, r.runID, r.seq, start, deadline)
	if rec.Event == RunEnd {
		r.endedAt = rec.TS
	}
	rec.Phase = ""
	if r.phase != nil {
		rec.Phase = r.phase(now.Sub(start))
	}
	r.writeLocked(rec)
}

// Stamp returns rec stamped as record seq of run runID at now, on a
// budget that started at start and ends at deadline D: ts, run_id, seq,
// and elapsed_ms and remaining_ms from that one reading of the clock
// (issue 24), and on run_end late_ms, how long after D it ended (time is
// not rounded in the run's favour, SPEC §3), whatever rec held in them.
// Its phase is the caller's to stamp. A Recorder and a run's frame
// (landing.Frame), the one both hosts stamp with, stamp by it (issue 25).
func Stamp(rec Record, now time.Time, runID string, seq int64, start, deadline time.Time) Record {
	rec.TS, rec.RunID, rec.Seq = now, runID, seq
	rec.ElapsedMs, rec.RemainingMs = now.Sub(start).Milliseconds(), max(deadline.Sub(now), 0).Milliseconds()
	rec.LateMs = 0
	if rec.Event == RunEnd {
		rec.LateMs = max(now.Sub(deadline), 0).Milliseconds()
	}
	return rec
}

// Write hands rec, already stamped by its run — a run's frame stamps its
// records itself (landing.Frame.Stamp), so that a process and a Temporal
// workflow stamp them by one rule (issue 25) —, to every sink as
// [Recorder.Record] does, leaving every field as it is: the caller orders
// the records it writes.
func (r *Recorder) Write(rec Record) {
	r.path.Lock()
	defer r.path.Unlock()
	r.mu.Lock()
	if rec.Event == RunEnd {
		r.endedAt = rec.TS
	}
	r.writeLocked(rec)
}

// writeLocked hands rec to every sink: to each lane's queue, and then,
// with r.mu released, to the sinks called on the run's path. r.path and
// r.mu are held; r.mu is released on return.
func (r *Recorder) writeLocked(rec Record) {
	for _, l := range r.lanes {
		r.enqueueLocked(l, rec)
	}
	r.mu.Unlock()
	for i := range r.direct {
		d := &r.direct[i]
		if d.fail != nil {
			continue
		}
		fail, err := call(d.index, d.sink, rec)
		if err != nil || fail != nil {
			r.mu.Lock()
			if err != nil && d.err == nil {
				d.err = err
			}
			d.fail = fail
			r.mu.Unlock()
		}
	}
}

// AttemptContext returns ctx as the Recorder's [ContextSink]s make it for
// rec, the attempt_start record of an attempt (its RunID set): with the
// attempt's span, for what the attempt sends. A ContextSink that panics
// here is recovered and switched off, as in Record; one switched off is
// not asked.
func (r *Recorder) AttemptContext(ctx context.Context, rec Record) context.Context {
	r.path.Lock()
	defer r.path.Unlock()
	for i := range r.direct {
		d := &r.direct[i]
		cs, ok := d.sink.(ContextSink)
		if !ok || d.fail != nil {
			continue
		}
		next, fail := attemptContext(d.index, cs, ctx, rec)
		if fail != nil {
			r.mu.Lock()
			d.fail = fail
			r.mu.Unlock()
			continue
		}
		ctx = next
	}
	return ctx
}

func attemptContext(index int, cs ContextSink, ctx context.Context, rec Record) (out context.Context, fail *SinkError) {
	defer func() {
		if p := recover(); p != nil {
			out, fail = ctx, &SinkError{Index: index, Sink: fmt.Sprintf("%T", cs), Panic: p, Stack: debug.Stack()}
		}
	}()
	return cs.AttemptContext(ctx, rec), nil
}

// enqueueLocked puts rec on l's queue, or counts it dropped, and starts
// l's goroutine if it is not running. r.mu is held.
func (r *Recorder) enqueueLocked(l *lane, rec Record) {
	if l.fail != nil && l.fail.Panic != nil {
		return // switched off
	}
	if r.closed || l.n == QueueLen {
		l.dropped(1)
		return
	}
	if l.queue == nil {
		l.queue = make([]Record, 4) // most bursts are a record or two
	}
	if l.n == len(l.queue) {
		// Grow the ring, in order, up to QueueLen.
		grown := make([]Record, min(2*len(l.queue), QueueLen))
		for i := range l.n {
			grown[i] = l.queue[(l.head+i)%len(l.queue)]
		}
		l.queue, l.head = grown, 0
	}
	l.queue[(l.head+l.n)%len(l.queue)] = rec
	l.n++
	if !l.running {
		l.running = true
		r.wg.Go(func() { r.deliver(l) })
	}
}

// dropped counts n records l did not get.
func (l *lane) dropped(n int64) {
	if l.fail == nil {
		l.fail = &SinkError{Index: l.index, Sink: fmt.Sprintf("%T", l.sink)}
	}
	l.fail.Dropped += n
}

// deliver hands l's queued records to its sink, in order, until the queue
// is empty; then its goroutine ends, so that a Recorder between records,
// or after its run, holds no goroutine.
func (r *Recorder) deliver(l *lane) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for l.n > 0 && (l.fail == nil || l.fail.Panic == nil) {
		rec := l.queue[l.head]
		l.queue[l.head] = Record{}
		l.head = (l.head + 1) % len(l.queue)
		l.n--
		l.busy = true
		r.mu.Unlock()
		fail, err := call(l.index, l.sink, rec)
		r.mu.Lock()
		l.busy = false
		if err != nil && l.err == nil {
			l.err = err
		}
		if fail != nil {
			fail.Dropped = int64(l.n)
			if l.fail != nil {
				fail.Dropped += l.fail.Dropped
			}
			l.fail = fail
			l.n = 0
		}
		l.moveLocked()
	}
	l.running = false
	// An idle run holds no ring: thousands of runs share a process, and
	// each waits on its model most of the time (SPEC §7's memory bound).
	l.queue, l.head = nil, 0
	l.moveLocked()
}

// moveLocked wakes whoever waits for l to move on. r.mu is held.
func (l *lane) moveLocked() {
	close(l.moved)
	l.moved = make(chan struct{})
}

// call hands rec to sink, recovering its panic: a panic is the sink's
// failure, not the run's.
func call(index int, sink Sink, rec Record) (fail *SinkError, err error) {
	defer func() {
		if p := recover(); p != nil {
			fail = &SinkError{Index: index, Sink: fmt.Sprintf("%T", sink), Panic: p, Stack: debug.Stack()}
		}
	}()
	return nil, sink.Record(rec)
}

// Flush waits for the queued sinks to take every record recorded so far,
// for at most [FlushGrace] and not past the run's deadline (see
// FlushGrace for its 5ms floor); drops and
// counts what a sink has not taken by then (the sink's goroutine ends when
// its call in hand returns, and it is not called again for those); then
// flushes every sink that is a [Flusher], and returns [Recorder.Err] with
// any flush errors joined. Flush blocks on nothing but that bound and the
// Flushers, which the sinks on the run's path are.
func (r *Recorder) Flush() error {
	r.drain(r.flushBound())
	r.path.Lock()
	for i := range r.direct {
		d := &r.direct[i]
		if f, ok := d.sink.(Flusher); ok && d.fail == nil {
			if err := f.Flush(); err != nil {
				r.mu.Lock()
				if d.err == nil {
					d.err = err
				}
				r.mu.Unlock()
			}
		}
	}
	r.path.Unlock()
	r.mu.Lock()
	var flushers []*lane
	for _, l := range r.lanes {
		if _, ok := l.sink.(Flusher); ok && !l.running && (l.fail == nil || l.fail.Panic == nil) {
			flushers = append(flushers, l)
		}
	}
	r.mu.Unlock()
	for _, l := range flushers {
		// Not running: no goroutine of ours calls the sink now, and
		// Record is not being called on a run that is flushing.
		if err := l.sink.(Flusher).Flush(); err != nil {
			r.mu.Lock()
			if l.err == nil {
				l.err = err
			}
			r.mu.Unlock()
		}
	}
	return r.Err()
}

// Close flushes the Recorder ([Recorder.Flush]) and stops it: a record
// made after Close reaches only the sinks on the run's path, and is
// counted dropped for the others. Close is idempotent.
func (r *Recorder) Close() error {
	err := r.Flush()
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	return err
}

// Wait waits until no goroutine of the Recorder is handing a record to a
// sink — a sink that never returns is waited for forever — or until ctx
// ends. A test that counts goroutines calls it; a run does not need to.
func (r *Recorder) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// flushFloor is the least Flush gives the queued sinks, even at or past
// the deadline: a sink that keeps up takes its last records in
// microseconds, once its goroutine is scheduled, and should not lose them
// because the run ended late; a slow sink costs a late run no more.
const flushFloor = 5 * time.Millisecond

// flushBound is the instant Flush waits until at most: FlushGrace after
// run_end, the instant the run's result exists, so that this wait and the
// run's wait for its cancels share one grace (FlushGrace from now before
// run_end); not past the deadline; but never less than flushFloor from
// now.
func (r *Recorder) flushBound() time.Time {
	r.mu.Lock()
	from := r.endedAt
	r.mu.Unlock()
	now := time.Now()
	if from.IsZero() {
		from = now
	}
	bound := from.Add(FlushGrace)
	if r.b != nil && r.b.Deadline().Before(bound) {
		bound = r.b.Deadline()
	}
	if floor := now.Add(flushFloor); bound.Before(floor) {
		bound = floor
	}
	return bound
}

// drain waits until every lane has taken what is queued, or until bound;
// then it drops what is still queued.
func (r *Recorder) drain(bound time.Time) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.lanes {
		for l.n > 0 || l.busy {
			wait := time.Until(bound)
			if wait <= 0 {
				break
			}
			if timer == nil {
				timer = time.NewTimer(wait)
			}
			moved := l.moved
			r.mu.Unlock()
			select {
			case <-moved:
			case <-timer.C:
				bound = time.Time{} // past: drop the rest at once
			}
			r.mu.Lock()
		}
		if l.n > 0 {
			l.dropped(int64(l.n))
			for i := range l.n {
				l.queue[(l.head+i)%len(l.queue)] = Record{}
			}
			l.n = 0
		}
	}
}

// Err returns the first error of each sink, and what became of a sink that
// fell behind or panicked ([*SinkError]), joined; nil when every record
// reached every sink. It does not wait for the sinks.
func (r *Recorder) Err() error {
	var errs []error
	r.mu.Lock()
	for _, d := range r.direct {
		errs = append(errs, d.err)
		if d.fail != nil {
			errs = append(errs, d.fail)
		}
	}
	for _, l := range r.lanes {
		errs = append(errs, l.err)
		if l.fail != nil {
			f := *l.fail
			errs = append(errs, &f)
		}
	}
	r.mu.Unlock()
	return errors.Join(errs...)
}

// JSONL is the trace file's [Sink]: each record as one line of JSON, in the
// fixed field order of [AppendJSON], handed to the io.Writer it was given
// in one Write. It is safe for concurrent use, and Record blocks on nothing
// but that Write.
//
// The trace loses nothing, so a [Recorder] calls a JSONL on the run's
// path, not through a queue that could drop. Given the trace file itself
// (an *os.File, as harness run gives it), every record is in the file when
// Record returns, before the run's next step: one write system call, which
// a regular file's page cache takes without waiting on a disk or a peer.
// So a process killed at any instant — Ctrl-C twice, SIGKILL, a crash —
// leaves every record up to that instant, and at most a torn last line,
// which [ReadRecords] skips and names (issue 24). A machine that loses
// power can still lose what its page cache held: the records are not
// fsync'd, since a sync costs a disk's latency on the run's path, which a
// sink must not move (SPEC §3); the orphan journal, which a crash must not
// lose, is (package cancel). A writer that buffers (a bufio.Writer) keeps
// records from the file until it is flushed ([JSONL.Flush]); one that can
// block (a pipe nobody reads, a network file system) can move the end of a
// run, and belongs behind a Sink of one's own, which is queued.
// A zero JSONL has no writer: see [ErrNoWriter].
type JSONL struct {
	mu  sync.Mutex // guards buf and serializes writes to w
	w   io.Writer
	buf []byte // reused between records, so a Record allocates nothing of its own
}

// maxKeep bounds the buffer a JSONL keeps between records: one long
// message must not pin its size for the rest of a run, when thousands of
// runs share a process (SPEC §7).
const maxKeep = 16 << 10

// NewJSONL returns a sink writing to w.
func NewJSONL(w io.Writer) *JSONL {
	return &JSONL{w: w, buf: make([]byte, 0, 512)}
}

// ErrNoWriter is the error of a zero [JSONL], which has nowhere to write.
var ErrNoWriter = errors.New("trace: a zero JSONL has no writer (make one with NewJSONL)")

// Record writes rec as one line and returns the io.Writer's error; a zero
// JSONL writes nothing and returns [ErrNoWriter].
func (j *JSONL) Record(rec Record) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.w == nil {
		return ErrNoWriter
	}
	j.buf = append(AppendJSON(j.buf[:0], rec), '\n')
	_, err := j.w.Write(j.buf)
	if cap(j.buf) > maxKeep {
		j.buf = make([]byte, 0, 512)
	}
	return err
}

// Flush flushes the io.Writer when it buffers (it has a Flush() error
// method, as a bufio.Writer has).
func (j *JSONL) Flush() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if f, ok := j.w.(Flusher); ok {
		return f.Flush()
	}
	return nil
}
