package kit

import (
	"container/list"
	"context"
	"encoding/json"
	"sync"
	"time"
)

// State is where a call stands, as the status endpoint reports it.
type State string

const (
	Running State = "running"
	Done    State = "done"
	Failed  State = "failed"
)

// CallID names one logical call: a tool and the Idempotency-Key its caller
// minted. The same key sent to two tools names two calls.
type CallID struct {
	Tool string
	Key  string
}

// Record is what a [Store] keeps of a call.
type Record struct {
	State State
	// ArgsSHA256 is the hex SHA-256 of the call's arguments, compacted, so
	// that a key reused with other arguments is caught.
	ArgsSHA256 string
	// Attempts counts the handler runs begun for the call.
	Attempts int
	// Units is the last progress units reported, as of Finish.
	Units int64
	// Output is the handler's output as JSON, for Done.
	Output json.RawMessage
	// Message and Retryable describe a Failed call.
	Message   string
	Retryable bool
	// Code, for a Failed call, is [CodeDeadline] when the caller's own
	// budget (its Budget-Remaining-Ms) ran out: its time ended the call,
	// not the tool's failure.
	Code string
}

// Final reports whether r is the call's outcome for good: done, or failed
// and not retryable. A retryable failure is recorded but does not stick:
// the next POST with the key runs the handler again.
func (r Record) Final() bool {
	return r.State == Done || r.State == Failed && !r.Retryable
}

// A Store keeps the record of every call by [CallID], so that the same
// Idempotency-Key returns the first call's outcome. [MemoryStore] is the
// default; a Store shared by several server processes lets any of them
// answer for a call. Its methods must be safe for concurrent use.
//
// A [Server] runs at most one attempt of a call at a time in its process,
// so Begin and Finish for one id alternate there; a shared Store must make
// Begin atomic across processes.
type Store interface {
	// Begin starts an attempt of the call id, atomically: when the call
	// has no record, or its record is a retryable failure of the same
	// arguments, Begin stores a Running record with Attempts one higher and
	// returns it with started true. Otherwise it changes nothing and
	// returns the existing record with started false: a final outcome, a
	// running attempt, or a record of other arguments.
	Begin(ctx context.Context, id CallID, argsSHA256 string) (rec Record, started bool, err error)
	// Finish stores the outcome of the attempt Begin started, rec.State
	// being Done or Failed.
	Finish(ctx context.Context, id CallID, rec Record) error
	// Get returns the call's record; ok is false for a call never begun,
	// or one whose record was forgotten.
	Get(ctx context.Context, id CallID) (rec Record, ok bool, err error)
}

// Defaults of [MemoryStore].
const (
	DefaultTTL        = time.Hour
	DefaultMaxRecords = 10000
)

// MemoryStore is a [Store] in this process's memory. Its memory is
// bounded: a finished record is forgotten TTL after it finished, or
// earlier, oldest first, once more than MaxRecords are finished. Running
// records are never forgotten; there are as many as calls in flight. A
// forgotten call is unknown: the status endpoint answers 404 and a POST
// with its key runs the handler again.
//
// The zero value is ready to use. Set the fields before first use.
type MemoryStore struct {
	TTL        time.Duration // 0 means DefaultTTL
	MaxRecords int           // 0 means DefaultMaxRecords

	mu       sync.Mutex // guards recs and finished
	recs     map[CallID]*memRecord
	finished list.List // of *memRecord, in the order they finished, which is also the order they expire
}

type memRecord struct {
	id   CallID
	rec  Record
	at   time.Time     // when it finished
	elem *list.Element // in finished; nil while running
}

// Begin implements [Store].
func (m *MemoryStore) Begin(_ context.Context, id CallID, argsSHA256 string) (Record, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.forget(time.Now())
	mr := m.recs[id]
	switch {
	case mr == nil:
		if m.recs == nil {
			m.recs = make(map[CallID]*memRecord)
		}
		mr = &memRecord{id: id}
		m.recs[id] = mr
	case mr.rec.State == Running || mr.rec.Final() || mr.rec.ArgsSHA256 != argsSHA256:
		return mr.rec, false, nil
	default:
		m.finished.Remove(mr.elem)
		mr.elem = nil
	}
	mr.rec = Record{State: Running, ArgsSHA256: argsSHA256, Attempts: mr.rec.Attempts + 1}
	return mr.rec, true, nil
}

// Finish implements [Store].
func (m *MemoryStore) Finish(_ context.Context, id CallID, rec Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	mr := m.recs[id]
	if mr == nil {
		if m.recs == nil {
			m.recs = make(map[CallID]*memRecord)
		}
		mr = &memRecord{id: id}
		m.recs[id] = mr
	}
	if mr.elem != nil {
		m.finished.Remove(mr.elem)
	}
	mr.rec, mr.at = rec, now
	mr.elem = m.finished.PushBack(mr)
	m.forget(now)
	return nil
}

// Get implements [Store].
func (m *MemoryStore) Get(_ context.Context, id CallID) (Record, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.forget(time.Now())
	mr := m.recs[id]
	if mr == nil {
		return Record{}, false, nil
	}
	return mr.rec, true, nil
}

// Len returns how many records the store keeps, running and finished.
func (m *MemoryStore) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.forget(time.Now())
	return len(m.recs)
}

// forget drops finished records past their TTL or beyond MaxRecords. Every
// record finishes with the same TTL, so the oldest to finish expires
// first and the sweep stops at the first one still fresh. m.mu is held.
func (m *MemoryStore) forget(now time.Time) {
	ttl, most := m.TTL, m.MaxRecords
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	if most <= 0 {
		most = DefaultMaxRecords
	}
	for e := m.finished.Front(); e != nil; e = m.finished.Front() {
		mr := e.Value.(*memRecord)
		if m.finished.Len() <= most && now.Sub(mr.at) < ttl {
			return
		}
		m.finished.Remove(e)
		delete(m.recs, mr.id)
	}
}
