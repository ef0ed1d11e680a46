package trace

import (
	"io"
	"sync"
	"time"

	"github.com/glidepath/glidepath/budget"
)

// A Writer writes one run's records to an io.Writer as JSONL, one
// [Record] per line. It is safe for concurrent use. Write blocks on
// nothing but the underlying io.Writer, so callers pass a buffered one
// (a bufio.Writer over the file) and flush it when the run ends.
type Writer struct {
	runID string
	b     *budget.Budget
	phase func() string

	mu  sync.Mutex // guards the fields below and serializes writes to w
	w   io.Writer
	seq int64
	buf []byte // reused between records, so a Write allocates nothing of its own
}

// maxKeep bounds the buffer a Writer keeps between records: one long
// message must not pin its size for the rest of a run, when thousands of
// runs share a process (SPEC §7).
const maxKeep = 16 << 10

// NewWriter returns a Writer of the run runID to w. Every record's elapsed
// and remaining time are read from b; a nil b writes zeros. phase returns
// the run's current phase; a nil phase writes "". phase is called with the
// Writer's lock held, so it must be cheap and must not call [Writer.Write].
func NewWriter(w io.Writer, runID string, b *budget.Budget, phase func() string) *Writer {
	return &Writer{runID: runID, b: b, phase: phase, w: w, buf: make([]byte, 0, 512)}
}

// Write fills r's TS (now, in UTC), RunID, Seq (1 for the first record,
// then one more for each), ElapsedMs (the budget spent), RemainingMs and
// Phase, and writes it as one line. It returns the underlying io.Writer's
// error. The fields are read under the lock that orders the lines, so
// seq, ts and elapsed_ms all increase down the file.
func (w *Writer) Write(r Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	r.TS = time.Now()
	r.RunID = w.runID
	r.Seq = w.seq
	r.ElapsedMs, r.RemainingMs = 0, 0
	if w.b != nil {
		r.ElapsedMs = w.b.Spent().Milliseconds()
		r.RemainingMs = w.b.Remaining().Milliseconds()
	}
	r.Phase = ""
	if w.phase != nil {
		r.Phase = w.phase()
	}
	w.buf = append(AppendJSON(w.buf[:0], r), '\n')
	_, err := w.w.Write(w.buf)
	if cap(w.buf) > maxKeep {
		w.buf = make([]byte, 0, 512)
	}
	return err
}
