package trace

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/glidepath/glidepath/budget"
)

// A Sink receives a run's records, stamped and in seq order: the JSONL
// trace ([JSONL]) is one, a terminal's live status line, spans and logs are
// others. Record must be quick: it runs under the [Recorder]'s lock, so
// every sink sees the same order and the run waits for the slowest. It must
// not call back into the Recorder. An error is kept, not acted on: the run goes on without
// that sink's record of it and reports the first error when it ends.
//
// A sink that several recorders share, as a child run's records go to its
// parent's trace, is called by each of them, and must be safe for
// concurrent use; [JSONL] is.
type Sink interface {
	Record(r Record) error
}

// A ContextSink is a [Sink] that keeps a context for each attempt it
// records — the attempt's span — and gives it, for the attempt_start
// record r it has been handed, as a child of ctx: what the attempt sends
// then carries its trace context (W3C traceparent).
type ContextSink interface {
	Sink
	AttemptContext(ctx context.Context, r Record) context.Context
}

// A Flusher is a [Sink] that buffers; [Recorder.Flush] flushes it.
type Flusher interface {
	Flush() error
}

// A Recorder stamps the records of one run and hands them to its sinks.
// It fills what every record carries, once, so that every sink reads the
// same values: the time (RFC 3339 with nanoseconds, UTC), the run's ID, a
// seq that counts up from 1, the budget spent and remaining in whole
// milliseconds, read from the run's [budget.Budget] in one reading, and the
// phase at that instant. A Recorder is safe for concurrent use.
type Recorder struct {
	runID string
	b     *budget.Budget
	phase func(spent time.Duration) string

	mu    sync.Mutex // serializes stamping and the sinks' calls, so that seq, ts and elapsed_ms all increase
	seq   int64
	sinks []Sink
	errs  []error // the first error of each sink, by index
}

// NewRecorder returns the Recorder of the run runID. Elapsed and remaining
// time are read from b; a nil b stamps zeros. phase returns the phase the
// run is in once spent of its budget is spent, for the instant of each
// record ([landing.Ladder.Peek]); a nil phase stamps "". phase runs under
// the Recorder's lock, so it must be cheap and must not record.
func NewRecorder(runID string, b *budget.Budget, phase func(spent time.Duration) string, sinks ...Sink) *Recorder {
	return &Recorder{runID: runID, b: b, phase: phase, sinks: sinks, errs: make([]error, len(sinks))}
}

// RunID returns the ID the Recorder stamps.
func (r *Recorder) RunID() string { return r.runID }

// Record stamps rec — TS (now, in UTC), RunID, Seq, ElapsedMs,
// RemainingMs and Phase, whatever the caller set in them — and hands it to
// every sink in the order they were given.
func (r *Recorder) Record(rec Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	rec.TS = time.Now()
	rec.RunID = r.runID
	rec.Seq = r.seq
	var spent, remaining time.Duration
	if r.b != nil {
		spent, remaining = r.b.Read()
	}
	rec.ElapsedMs, rec.RemainingMs = spent.Milliseconds(), remaining.Milliseconds()
	rec.Phase = ""
	if r.phase != nil {
		rec.Phase = r.phase(spent)
	}
	for i, s := range r.sinks {
		if err := s.Record(rec); err != nil && r.errs[i] == nil {
			r.errs[i] = err
		}
	}
}

// Flush flushes every sink that is a [Flusher] and returns [Recorder.Err]
// with any flush errors joined.
func (r *Recorder) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, s := range r.sinks {
		if f, ok := s.(Flusher); ok {
			if err := f.Flush(); err != nil && r.errs[i] == nil {
				r.errs[i] = err
			}
		}
	}
	return errors.Join(r.errs...)
}

// Err returns the first error of each sink, joined; nil when every record
// reached every sink.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.errs...)
}

// JSONL is the trace file's [Sink]: each record as one line of JSON, in the
// fixed field order of [AppendJSON]. It is safe for concurrent use, and
// Record blocks on nothing but the io.Writer it was given, which the caller
// buffers (a bufio.Writer over the file); Flush flushes it.
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

// Record writes rec as one line and returns the io.Writer's error.
func (j *JSONL) Record(rec Record) error {
	j.mu.Lock()
	defer j.mu.Unlock()
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
