package budget

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glidepath/glidepath/watchdog"
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
// The zero Estimates is empty and ready to use. It is safe for
// concurrent use and is meant to be shared by every run of a process.
type Estimates struct {
	mu sync.Mutex // guards kinds
	// kinds is a slice searched in order, not a map: a run knows a handful
	// of kinds (the model, its tools), and a map's first entry costs an
	// idle run ~250 B more than the slice's (issue 25, item 6).
	kinds []*Kind
}

// NewEstimates returns an empty set of estimates.
func NewEstimates() *Estimates {
	return &Estimates{}
}

// Kind returns the estimate for the named step kind, creating it on first
// use. The same name always yields the same *Kind, so callers look a kind up
// once and keep the pointer for the hot path.
func (e *Estimates) Kind(name string) *Kind {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, k := range e.kinds {
		if k.name == name {
			return k
		}
	}
	k := &Kind{name: name}
	e.kinds = append(e.kinds, k)
	return k
}

// A Latency is the estimate rule of one step kind, as a pure value (issue
// 25): p50 and p95 from the hints the step declared, replaced by its last
// observed durations once there are [MinObserved] of them. It holds no lock
// and reads no clock, so a Temporal workflow keeps one in its state and
// estimates exactly as a process's [Kind] does. The zero Latency knows
// nothing: both percentiles are 0 (unknown). It is not safe for concurrent
// use; [Kind] is its concurrent host.
type Latency struct {
	declP50, declP95 time.Duration
	p50, p95         time.Duration // the current estimates; 0 = unknown
	// samples is the ring of observations, made at the first: a run's
	// kinds are made as it starts, most observe nothing while it waits on
	// its first call, and a fleet of ten thousand of them would hold half
	// a KB each for nothing (issue 20, item 5).
	samples *[window]time.Duration
	n       int // observations so far, saturating at window
	next    int // ring index of the next observation
	own     int // of them, the run's own (Observe), saturating at window
	// learned is the longest silence a quiet clock cut a call of the
	// kind at, in runs before this one ([Latency.Learn]).
	learned time.Duration
}

// P50 returns the median latency known, or 0 if none is known.
func (l *Latency) P50() time.Duration { return l.p50 }

// P95 returns the 95th percentile latency known, or 0 if none is known.
func (l *Latency) P95() time.Duration { return l.p95 }

// Expected returns the p95 known and where it came from, for a call's
// allowance of silence (issue 27): the run's own observations once there
// are [MinObserved] of them, else a profile's beside them, else the
// declared figures.
func (l *Latency) Expected() watchdog.Expected {
	x := watchdog.Expected{P95: l.p95, Learned: l.learned}
	switch {
	case l.p95 <= 0:
		x.P95 = 0
	case l.n < MinObserved:
		x.From = watchdog.SourceDeclared
	case l.own < MinObserved && l.own < l.n:
		x.From = watchdog.SourceProfile
	default:
		x.From = watchdog.SourceObserved
	}
	return x
}

// Learn records that a quiet clock cut a call of the kind after it had
// been silent for d, in an earlier run: the call takes at least that
// long, and its allowance is at least twice the longest such cut
// ([watchdog.Expected.Learned], issue 27). A latency profile teaches it.
func (l *Latency) Learn(d time.Duration) { l.learned = max(l.learned, d) }

// Learned returns the longest cut [Latency.Learn] was told of.
func (l *Latency) Learned() time.Duration { return l.learned }

// Own returns how many of the observations l keeps are the run's own
// ([Latency.Observe]), not a profile's ([Latency.Warm]).
func (l *Latency) Own() int { return l.own }

// Restore sets, on a Latency warmed with another's [Latency.Observed],
// how many of them were that run's own and what it learned: a Temporal
// run that continues as new carries them (issue 26), so that its
// allowances and their sources go on as they were.
func (l *Latency) Restore(own int, learned time.Duration) {
	l.own, l.learned = min(max(own, 0), l.n), learned
}

// Declared returns the latencies declared ([Latency.Declare]).
func (l *Latency) Declared() (p50, p95 time.Duration) { return l.declP50, l.declP95 }

// Observed returns the observations l keeps, oldest first: a Latency
// declared with [Latency.Declared] and warmed with them estimates as l
// does and goes on as l would, which a Temporal run that continues as new
// carries (issue 26).
func (l *Latency) Observed() []time.Duration {
	if l.n == 0 {
		return nil
	}
	out := make([]time.Duration, 0, l.n)
	if l.n == window {
		out = append(out, l.samples[l.next:]...)
		return append(out, l.samples[:l.next]...)
	}
	return append(out, l.samples[:l.n]...)
}

// Declare sets the latencies the step declares for itself (a tool's
// manifest, a config). They are used until enough observations exist.
// Zero leaves that percentile unknown.
func (l *Latency) Declare(p50, p95 time.Duration) {
	l.declP50, l.declP95 = max(p50, 0), max(p95, 0)
	l.publish()
}

// Observe records the duration of one completed call. Only calls that
// finished belong here: an attempt cut short by its lease says only that
// the call takes at least that long.
func (l *Latency) Observe(d time.Duration) {
	if d < 0 {
		return
	}
	l.add(d)
	l.own = min(l.own+1, window)
	l.publish()
}

// Warm records durations the kind took before this run, oldest first, as
// observations (see [Kind.Warm]).
func (l *Latency) Warm(ds []time.Duration) {
	for _, d := range ds[max(len(ds)-window, 0):] {
		if d >= 0 {
			l.add(d)
		}
	}
	l.publish()
}

func (l *Latency) add(d time.Duration) {
	if l.samples == nil {
		l.samples = new([window]time.Duration)
	}
	l.samples[l.next] = d
	l.next = (l.next + 1) % window
	l.n = min(l.n+1, window)
}

// publish recomputes the estimates: the declared ones below MinObserved
// observations, the observed ones from then on.
func (l *Latency) publish() {
	if l.n < MinObserved {
		l.p50, l.p95 = l.declP50, l.declP95
		return
	}
	var buf [window]time.Duration
	s := buf[:l.n]
	copy(s, l.samples[:l.n])
	slices.Sort(s)
	l.p50, l.p95 = quantile(s, 50), quantile(s, 95)
}

// A Kind is the latency estimate of one step kind, a [Latency] shared by
// the calls of a process. Reads are lock-free; they happen on every lease.
type Kind struct {
	name string

	// p50 and p95 hold the current estimates in nanoseconds; 0 = unknown.
	p50, p95 atomic.Int64

	mu  sync.Mutex // guards est
	est Latency
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
	k.est.Declare(p50, p95)
	k.publish()
}

// Observe records the duration of one completed call of the kind. Only
// calls that finished belong here: an attempt cut short by its lease says
// only that the call takes at least that long.
func (k *Kind) Observe(d time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.est.Observe(d)
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
	k.est.Warm(ds)
	k.publish()
}

// Learn records a cut of a call of the kind, in an earlier run
// ([Latency.Learn]).
func (k *Kind) Learn(d time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.est.Learn(d)
}

// Expected returns the kind's p95 and where it came from
// ([Latency.Expected]).
func (k *Kind) Expected() watchdog.Expected {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.est.Expected()
}

// publish stores est's estimates for the lock-free reads; k.mu must be
// held.
func (k *Kind) publish() {
	k.p50.Store(int64(k.est.p50))
	k.p95.Store(int64(k.est.p95))
}

// quantile returns the nearest-rank pct-th percentile of sorted s.
func quantile(s []time.Duration, pct int) time.Duration {
	rank := (pct*len(s) + 99) / 100 // ceil(pct/100 · n), 1-based
	return s[max(rank, 1)-1]
}
