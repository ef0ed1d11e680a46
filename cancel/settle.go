package cancel

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/glidepath/glidepath/budget"
	"golang.org/x/sync/errgroup"
)

// SettleParallel is how many status asks [ReconcileJournal] has in flight
// at once, so that a few tools that do not answer cannot eat the budget of
// the rest.
const SettleParallel = 8

// ErrNoStatusReader is what a reader given to [ReconcileJournal] returns,
// wrapped with the reason, for an orphan whose tool cannot be asked from
// here: a kind with no status (an MCP tool), a tool the caller does not
// know, one whose record of the call died with the process that ran it.
var ErrNoStatusReader = errors.New("cancel: no way to ask the tool")

// A Settlement is what [ReconcileJournal] learned of one open orphan.
type Settlement struct {
	Entry Entry // the open entry, as the journal holds it

	// Status is the tool's answer; it is zero when Err is set.
	Status Status

	// Err is why the orphan was not asked or got no usable answer: the
	// reader's error (matching [ErrNoStatusReader] when there is no way to
	// ask), a lease the budget refused, or the error of the ask. The
	// orphan stays open.
	Err error

	// Recorded reports whether the orphan settled and an entry with its
	// settled state (done, failed or never_received) was appended.
	Recorded bool
}

// Open reports whether the orphan is still open: not asked, no usable
// answer, the tool still running, or its settled entry not appended.
func (s Settlement) Open() bool { return !s.Recorded }

// ReconcileJournal settles what it can of the open orphans of j
// ([OpenOrphans]): for each, in journal order, reader returns the
// [StatusReader] that can say how its call went, found by what the entry
// records of its tool (its Tool, Kind, URL, ToolsFile), or an error that
// says why there is none. Each tool is asked once, on a work lease of b
// with ceiling [StatusLease], [SettleParallel] at a time; an answer of
// done, failed or never received is appended to j as an entry for the
// same key with that state, which closes the orphan. The journal is only
// appended to: the open entry stays, as SPEC §5 says. A tool still
// running, or not asked, stays open for a later call.
//
// It returns one [Settlement] per open orphan, in journal order, and an
// error when the journal could not be read or appended to; then the
// settlements say which entries were appended before the failure. Lines
// of the journal that are not entries are skipped, as [ReadJournal] skips
// them, and the orphans of every other line settled: the error is then a
// [*SkippedError] naming them, beside settlements that are whole. It
// blocks until every ask has ended, each bounded by its lease and ctx.
// reader is called from one goroutine, before any ask is sent; j and b
// must not be nil.
func ReconcileJournal(ctx context.Context, j *Journal, b *budget.Budget, reader func(Entry) (StatusReader, error)) ([]Settlement, error) {
	if j == nil || j.lock == nil {
		return nil, errNotOpened
	}
	entries, err := ReadJournal(j.path)
	skipped, ok := errors.AsType[*SkippedError](err)
	if err != nil && !ok {
		return nil, err
	}
	open := OpenOrphans(entries)
	out := make([]Settlement, len(open))
	readers := make([]StatusReader, len(open))
	for i, e := range open {
		out[i].Entry = e
		s, err := reader(e)
		switch {
		case err != nil:
			out[i].Err = err
		case s == nil:
			out[i].Err = ErrNoStatusReader
		default:
			readers[i] = s
		}
	}
	var g errgroup.Group
	g.SetLimit(SettleParallel)
	for i, s := range readers {
		if s == nil {
			continue
		}
		g.Go(func() error {
			out[i].Status, out[i].Err = askOnce(ctx, b, s, open[i].IdempotencyKey)
			return nil
		})
	}
	g.Wait() // every goroutine returns nil: its failure is its settlement's
	for i := range out {
		st := out[i].Status.State
		if out[i].Err != nil || st == Running {
			continue
		}
		e := out[i].Entry
		e.TS, e.State = time.Time{}, string(st) // Append stamps it now
		if err := j.Append(e); err != nil {
			if skipped != nil {
				return out, errors.Join(skipped, err)
			}
			return out, err
		}
		out[i].Recorded = true
	}
	if skipped != nil {
		return out, skipped
	}
	return out, nil
}

// askOnce asks s once for key's status, on its own work lease of b: the
// reserve is kept for recording what was learned.
func askOnce(ctx context.Context, b *budget.Budget, s StatusReader, key Key) (Status, error) {
	lease, err := b.Lease(nil, StatusLease)
	if err != nil {
		return Status{}, fmt.Errorf("not asked: %w", err)
	}
	lctx, stop := lease.Context(ctx)
	defer stop()
	st, err := s.Status(lctx, key)
	if err != nil {
		return Status{}, err
	}
	switch st.State {
	case Running, Done, Failed, NeverReceived:
		return st, nil
	}
	return Status{}, fmt.Errorf("%w: unknown state %q", ErrUnreachable, truncate(string(st.State)))
}
