package cancel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
)

// queueStatus is an embedder's own status reader: a job queue that knows
// its jobs by key.
type queueStatus struct {
	mu   sync.Mutex
	jobs map[cancel.Key]cancel.State
	asks []cancel.Key
}

func (q *queueStatus) Status(_ context.Context, key cancel.Key) (cancel.Status, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.asks = append(q.asks, key)
	st, ok := q.jobs[key]
	switch {
	case !ok:
		return cancel.Status{State: cancel.NeverReceived}, nil
	case st == "":
		return cancel.Status{}, errors.New("queue: status store down")
	}
	return cancel.Status{State: st, Output: json.RawMessage(`"receipt"`)}, nil
}

func openJournal(t *testing.T, entries ...cancel.Entry) (*cancel.Journal, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "orphans.jsonl")
	j, err := cancel.OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	for _, e := range entries {
		if err := j.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	return j, path
}

func queued(k cancel.Key, state string) cancel.Entry {
	return cancel.Entry{RunID: "run-1", Tool: "enqueue", Kind: "queue:enqueue", IdempotencyKey: k, State: state}
}

func TestReconcileJournalSettlesWithTheEmbeddersOwnStatusReader(t *testing.T) {
	q := &queueStatus{jobs: map[cancel.Key]cancel.State{
		"gp_done": cancel.Done, "gp_failed": cancel.Failed, "gp_busy": cancel.Running, "gp_down": "",
	}}
	j, path := openJournal(t,
		queued("gp_done", cancel.Open), queued("gp_failed", cancel.Open), queued("gp_busy", cancel.Open),
		queued("gp_down", cancel.Open), queued("gp_lost", cancel.Open), queued("gp_old", cancel.Open),
		queued("gp_old", "done"), // settled before: not asked again
		cancel.Entry{Tool: "other", Kind: "mcp", IdempotencyKey: "gp_mcp", State: cancel.Open},
	)
	b, err := budget.New(budget.Config{Total: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	reader := func(e cancel.Entry) (cancel.StatusReader, error) {
		if e.Kind != "queue:enqueue" {
			return nil, fmt.Errorf("%w: not one of ours", cancel.ErrNoStatusReader)
		}
		return q, nil
	}

	got, err := cancel.ReconcileJournal(t.Context(), j, b, reader)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		key      cancel.Key
		state    cancel.State
		recorded bool
		err      error
	}
	wants := []want{
		{"gp_done", cancel.Done, true, nil},
		{"gp_failed", cancel.Failed, true, nil},
		{"gp_busy", cancel.Running, false, nil},
		{"gp_down", "", false, errors.New("any")},
		{"gp_lost", cancel.NeverReceived, true, nil},
		{"gp_mcp", "", false, cancel.ErrNoStatusReader},
	}
	if len(got) != len(wants) {
		t.Fatalf("%d settlements, want %d: %+v", len(got), len(wants), got)
	}
	for i, w := range wants {
		s := got[i]
		if s.Entry.IdempotencyKey != w.key || s.Status.State != w.state || s.Recorded != w.recorded || s.Open() == w.recorded ||
			(w.err == nil) != (s.Err == nil) || errors.Is(w.err, cancel.ErrNoStatusReader) && !errors.Is(s.Err, cancel.ErrNoStatusReader) {
			t.Errorf("settlement %d = %+v, want %+v", i, s, w)
		}
	}
	if len(q.asks) != 5 {
		t.Errorf("asked %v, want each open orphan of the queue once", q.asks)
	}
	entries, err := cancel.ReadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	open := cancel.OpenOrphans(entries)
	var keys []cancel.Key
	for _, e := range open {
		keys = append(keys, e.IdempotencyKey)
	}
	if fmt.Sprint(keys) != "[gp_busy gp_down gp_mcp]" || len(entries) != 11 {
		t.Errorf("open after: %v of %d entries, want the running, unreachable and unaskable ones, 3 appended", keys, len(entries))
	}
	if last := entries[len(entries)-1]; last.Kind != "queue:enqueue" || last.Tool != "enqueue" || last.TS.IsZero() {
		t.Errorf("appended %+v, want the open entry's fields, stamped anew", last)
	}
}

// One bad line in the middle of the journal costs that line: the orphans
// of every other line are settled, and the error names the line skipped
// (issue 24).
func TestReconcileJournalSettlesAroundABadLine(t *testing.T) {
	q := &queueStatus{jobs: map[cancel.Key]cancel.State{"gp_a": cancel.Done, "gp_b": cancel.Failed}}
	j, path := openJournal(t, queued("gp_a", cancel.Open))
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"idempotency_key":"gp_x","sta` + "\n") // torn by a crash, then appended after
	f.Close()
	if err := j.Append(queued("gp_b", cancel.Open)); err != nil {
		t.Fatal(err)
	}
	b, err := budget.New(budget.Config{Total: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	got, err := cancel.ReconcileJournal(t.Context(), j, b, func(cancel.Entry) (cancel.StatusReader, error) { return q, nil })
	se, ok := errors.AsType[*cancel.SkippedError](err)
	if !ok || len(se.Lines) != 1 || se.Lines[0].Line != 2 {
		t.Fatalf("err = %v, want a *SkippedError naming line 2", err)
	}
	if len(got) != 2 || !got[0].Recorded || !got[1].Recorded {
		t.Errorf("settlements %+v, want gp_a and gp_b both settled and recorded", got)
	}
	entries, _ := cancel.ReadJournal(path)
	if open := cancel.OpenOrphans(entries); len(open) != 0 {
		t.Errorf("open after: %+v, want none", open)
	}
}

func TestReconcileJournalNeedsAJournalAndTime(t *testing.T) {
	q := &queueStatus{jobs: map[cancel.Key]cancel.State{"gp_done": cancel.Done}}
	reader := func(cancel.Entry) (cancel.StatusReader, error) { return q, nil }
	b, err := budget.New(budget.Config{Total: time.Millisecond}) // below the floor: every ask refused
	if err != nil {
		t.Fatal(err)
	}
	j, _ := openJournal(t, queued("gp_done", cancel.Open))
	got, err := cancel.ReconcileJournal(t.Context(), j, b, reader)
	if err != nil || len(got) != 1 || !got[0].Open() || !errors.Is(got[0].Err, budget.ErrRefused) || len(q.asks) != 0 {
		t.Errorf("ReconcileJournal = %+v, %v; want the orphan open, its ask refused before any I/O", got, err)
	}
	if _, err := cancel.ReconcileJournal(t.Context(), &cancel.Journal{}, b, reader); err == nil {
		t.Error("the zero Journal: no error")
	}
	closed, path := openJournal(t, queued("gp_done", cancel.Open))
	closed.Close()
	b, _ = budget.New(budget.Config{Total: 10 * time.Second})
	got, err = cancel.ReconcileJournal(t.Context(), closed, b, reader)
	if !errors.Is(err, os.ErrClosed) || len(got) != 1 || got[0].Recorded || got[0].Status.State != cancel.Done {
		t.Errorf("a closed journal: %+v, %v; want the answer heard, not recorded, and the error", got, err)
	}
	if entries, _ := cancel.ReadJournal(path); len(entries) != 1 {
		t.Errorf("journal %+v, want nothing appended", entries)
	}
}

// A status reader that answers the zero Status has said nothing: the call
// stays an orphan, never taken for settled.
func TestAZeroStatusSettlesNothing(t *testing.T) {
	b, err := budget.New(budget.Config{Total: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	zero := statusFunc(func(context.Context, cancel.Key) (cancel.Status, error) { return cancel.Status{}, nil })
	r := cancel.Reconcile(t.Context(), b, budget.Backoff{}, zero, "gp_k", nil)
	if !r.Orphan || !errors.Is(r.Err, cancel.ErrUnreachable) || r.State != "" {
		t.Errorf("Reconcile = %+v, want an orphan", r)
	}
	j, _ := openJournal(t, queued("gp_k", cancel.Open))
	got, err := cancel.ReconcileJournal(t.Context(), j, b, func(cancel.Entry) (cancel.StatusReader, error) { return zero, nil })
	if err != nil || len(got) != 1 || !got[0].Open() || !errors.Is(got[0].Err, cancel.ErrUnreachable) {
		t.Errorf("ReconcileJournal = %+v, %v; want it open", got, err)
	}
}
