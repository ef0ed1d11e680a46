package budget

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// window is how many recent observations a kind keeps. Recent samples
// rather than a lifetime histogram, because a provider's latency drifts and
// yesterday's p95 is a poor lease for today.
const window = 64

// MinObserved is how many observations a kind needs before they replace
// its declared hints: a single fast sample should not undo a tool's own
// statement that it usually takes seconds. A latency profile's kind with
// fewer is not used where the run declares the kind itself (a tool's,
// a sub-agent's), which `harness profile` says (issue 24).
const MinObserved = 5

// Estimates holds latency estimates per step kind ("model", "tool:search").
// A zero Estimates is not usable; call [NewEstimates]. It is safe for
// concurrent use and is meant to be shared by every run of a process.
type Estimates struct {
	mu    sync.Mutex // guards kinds
	kinds map[string]*Kind
}

// NewEstimates returns an empty set of estimates.
func NewEstimates() *Estimates {
	return &Estimates{kinds: make(map[string]*Kind)}
}

// Kind returns the estimate for the named step kind, creating it on first
// use. The same name always yields the same *Kind, so callers look a kind up
// once and keep the pointer for the hot path.
func (e *Estimates) Kind(name string) *Kind {
	e.mu.Lock()
	defer e.mu.Unlock()
	k, ok := e.kinds[name]
	if !ok {
		k = &Kind{name: name}
		e.kinds[name] = k
	}
	return k
}

// A Kind is the latency estimate of one step kind: p50 and p95 from hints
// the step declared, replaced by the last observed durations once there are
// enough of them. Reads are lock-free; they happen on every lease.
type Kind struct {
	name string

	// p50 and p95 hold the current estimates in nanoseconds; 0 = unknown.
	p50, p95 atomic.Int64

	mu               sync.Mutex // guards the fields below
	declP50, declP95 time.Duration
	// samples is the ring of observations, made at the first: a run's
	// kinds are made as it starts, most observe nothing while it waits on
	// its first call, and a fleet of ten thousand of them would hold half
	// a KB each for nothing (issue 20, item 5).
	samples *[window]time.Duration
	n       int // observations so far, saturating at window
	next    int // ring index of the next observation
}

// ring returns the ring of observations, made now if it is not yet;
// k.mu must be held.
func (k *Kind) ring() *[window]time.Duration {
	if k.samples == nil {
		k.samples = new([window]time.Duration)
	}
	return k.samples
}

// Name returns the step kind's name.
func (k *Kind) Name() string { return k.name }

// P50 returns the median latency known for the kind, or 0 if none is known.
func (k *Kind) P50() time.Duration { return time.Duration(k.p50.Load()) }

// P95 returns the 95th percentile latency known for the kind, or 0 if none
// is known.
func (k *Kind) P95() time.Duration { return time.Duration(k.p95.Load()) }

// Declare sets the latencies the step declares for itself (a tool's
// manifest, a config). They are used until enough observations exist.
// Zero leaves that percentile unknown.
func (k *Kind) Declare(p50, p95 time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.declP50, k.declP95 = max(p50, 0), max(p95, 0)
	k.publish()
}

// Observe records the duration of one completed call of the kind. Only
// calls that finished belong here: an attempt cut short by its lease says
// only that the call takes at least that long.
func (k *Kind) Observe(d time.Duration) {
	if d < 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ring()[k.next] = d
	k.next = (k.next + 1) % window
	k.n = min(k.n+1, window)
	k.publish()
}

// Warm records durations the kind took before this run, oldest first, as
// observations: a latency profile of this machine's own past runs
// (package budget/profile). They count as the run's own do, so that with
// enough of them they rank above declared hints, and the run's own
// observations push them out of the window as they come. Only the most
// recent window of them is kept.
func (k *Kind) Warm(ds []time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, d := range ds[max(len(ds)-window, 0):] {
		if d < 0 {
			continue
		}
		k.ring()[k.next] = d
		k.next = (k.next + 1) % window
		k.n = min(k.n+1, window)
	}
	k.publish()
}

// publish recomputes the estimates; k.mu must be held.
func (k *Kind) publish() {
	if k.n < MinObserved {
		k.p50.Store(int64(k.declP50))
		k.p95.Store(int64(k.declP95))
		return
	}
	var buf [window]time.Duration
	s := buf[:k.n]
	copy(s, k.samples[:k.n])
	slices.Sort(s)
	k.p50.Store(int64(quantile(s, 50)))
	k.p95.Store(int64(quantile(s, 95)))
}

// quantile returns the nearest-rank pct-th percentile of sorted s.
func quantile(s []time.Duration, pct int) time.Duration {
	rank := (pct*len(s) + 99) / 100 // ceil(pct/100 · n), 1-based
	return s[max(rank, 1)-1]
}
