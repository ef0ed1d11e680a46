package watchdog

import (
	"context"
	"math"
	"sync"
	"time"
)

// DefaultQuiet is the quiet period used when [Config.Quiet] is zero (SPEC
// §3). It must exceed the slowest healthy model call, since streamed tokens
// do not reset the clock.
const DefaultQuiet = 60 * time.Second

// Config describes the two clocks of one run. The zero Config is valid: a
// 60s quiet clock and no wall of its own.
type Config struct {
	// Quiet is the default quiet period Q: the window each semantic event,
	// and Start itself, opens. Zero selects [DefaultQuiet].
	Quiet time.Duration

	// QuietAfter gives the window opened by a semantic event of a given
	// kind, e.g. QuietAfter[ModelCall] = 3*time.Minute for a model that
	// thinks before it answers. Kinds it leaves out, or maps to zero, use
	// Quiet. Only semantic kinds may appear. Start copies the map.
	QuietAfter map[Event]time.Duration

	// Wall is the hard wall: the run's deadline D, as computed by package
	// budget (budget.Budget.Deadline). The watchdog never computes or moves
	// it. The zero Time means no wall of the watchdog's own; a deadline the
	// parent context carries still applies.
	Wall time.Time

	// Mode says what the quiet clock does when it fires: the zero Mode,
	// [Enforce], ends the run; [Warn] calls Warn and lets it go on; [Off]
	// never fires (issue 27).
	Mode Mode
	// Warn hears each would-be stall in [Warn] mode, on the watchdog's
	// timer goroutine, with no lock held. Nil: nobody hears it.
	Warn func(StallError)
}

// Validate reports the first field of cfg that [Start] would reject, as a
// [*ConfigError], or nil. Fields are checked in a fixed order.
func (cfg Config) Validate() error {
	if cfg.Quiet < 0 {
		return &ConfigError{"quiet", cfg.Quiet, errNegative}
	}
	if cfg.Mode > Off {
		return &ConfigError{"mode", time.Duration(cfg.Mode), errMode}
	}
	if len(cfg.QuietAfter) == 0 {
		// Most configs have none, and every run validates twice
		// (BenchmarkStepCPU): spare them 256 lookups in a nil map.
		return nil
	}
	// All 256 kinds, in order, rather than ranging over the map, so that the
	// error reported for a config with several bad entries is always the same.
	for i := range math.MaxUint8 + 1 {
		e := Event(i)
		q, ok := cfg.QuietAfter[e]
		switch {
		case !ok:
		case !e.Semantic():
			return &ConfigError{"quiet_after[" + e.String() + "]", q, errNotSemantic}
		case q < 0:
			return &ConfigError{"quiet_after[" + e.String() + "]", q, errNegative}
		}
	}
	return nil
}

// A Watchdog watches one run: it is the in-process host of the run's quiet
// [Clock], which it drives with one timer, and ends the run's context when
// the clock or the wall fires. Its methods are safe for concurrent use and
// never block on anything but a short internal lock that is never held
// across a wait.
type Watchdog struct {
	// Set by Start or Watch and never changed.
	done       <-chan struct{}         // the run context's Done
	cancel     context.CancelCauseFunc // Start's: ends the run context; nil under Watch, whose host ends it
	cancelWall context.CancelFunc      // nil without a wall context of Start's
	host       Host                    // Watch's; nil under Start
	warn       func(StallError)        // Config.Warn

	// mu guards everything below.
	mu      sync.Mutex
	clock   Clock         // the rules: when the run has stalled
	timer   *time.Timer   // nil until first armed; armed only under mu
	armedAt time.Duration // when the timer is armed to ring, from the clock's start, while armed
	armed   bool
	stopped bool
	wakeAt  time.Duration // when the host's clock is due next (Watch's), from the clock's start, while wakeOK
	wakeOK  bool
	counts  [numEvents]int64
	at      [numEvents]time.Duration // when each kind was last recorded (from the clock's start), valid when counts > 0
}

// Start starts watching a run now. It returns the watchdog and the run's
// context: a child of parent that ends when the quiet clock fires (cause a
// [*StallError], matching [ErrQuiet]), when the wall is reached (cause
// [ErrWall], or the parent's own when its deadline is at or before the
// wall, and ctx.Err() is [context.DeadlineExceeded]), on
// [Watchdog.Stop] (cause [ErrStopped]), or with parent, whose cause carries
// through. An invalid cfg returns a [*ConfigError] and no context.
//
// The caller must call Stop when the run ends, as with a CancelFunc.
func Start(parent context.Context, cfg Config) (*Watchdog, context.Context, error) {
	now := time.Now()
	clock, err := NewClock(cfg, now)
	if err != nil {
		return nil, nil, err
	}
	w := &Watchdog{clock: clock, warn: cfg.Warn}
	ctx := parent
	if !cfg.Wall.IsZero() {
		// A parent that ends at or before the wall ends the run then, so a
		// context of our own would only be a second timer for the same
		// instant, whose cause would win the tie at random (see # Hard
		// wall): a landing call's parent, budget.WithBudget, carries D. One
		// context, timer and channel less per call (issue 13).
		if d, ok := parent.Deadline(); !ok || d.After(cfg.Wall) {
			ctx, w.cancelWall = context.WithDeadlineCause(ctx, cfg.Wall, ErrWall)
		}
	}
	ctx, w.cancel = context.WithCancelCause(ctx)
	w.done = ctx.Done()
	// Locked because a very short Quiet can fire the timer before
	// AfterFunc has returned it, and the callback reads w.timer.
	w.mu.Lock()
	w.arm(0, 0, false)
	w.mu.Unlock()
	return w, ctx, nil
}

// A Host is what a run's host gives [Watch]: the run's context, which it
// made and which the watchdog ends through it, and a clock of its own
// (the harness's: the ladder's next change of phase) that the watchdog's
// one timer wakes too, so that a run has one timer for its quiet clock,
// its wall and its phases (issue 25 item 6).
type Host interface {
	// Done is the run context's Done.
	Done() <-chan struct{}
	// End ends the run context with cause: a [*StallError] when the quiet
	// clock fires, [ErrWall] at the wall, [ErrStopped] on
	// [Watchdog.Stop]. The first cause is the run's, as with a
	// [context.CancelCauseFunc]. It is never called under the watchdog's
	// lock.
	End(cause error)
	// Wake is the host's own clock's turn at now: it does what is due by
	// now and returns when it is due next (ok false: never again). Watch
	// calls it once, for the first; then the timer calls it when that is
	// due, after the quiet clock and the wall have ended the run if they
	// were due too, even once the run context has ended; never under the
	// watchdog's lock. A ring already under way when Stop is called may
	// call it once more. Between two calls, the instant it would return
	// may only move later.
	Wake(now time.Time) (next time.Time, ok bool)
}

// Watch starts watching a run now for host, which made the run's context
// (see [Host]). It is [Start] for a host that keeps the run to one context
// and one timer: the watchdog makes no context, and its one timer rings
// for the quiet clock, for the wall ([Config.Wall], where it calls
// host.End with [ErrWall]; at once, before Watch returns, when the wall
// has passed) and for host.Wake. An invalid cfg returns a [*ConfigError],
// and nothing of host is called.
//
// The caller must call Stop when the run ends.
func Watch(cfg Config, host Host) (*Watchdog, error) {
	now := time.Now()
	clock, err := NewClock(cfg, now)
	if err != nil {
		return nil, err
	}
	w := &Watchdog{clock: clock, done: host.Done(), host: host, warn: cfg.Warn}
	if clock.hasWall && clock.wall <= 0 {
		host.End(ErrWall)
	}
	next, ok := host.Wake(now)
	w.mu.Lock()
	w.wakeAt, w.wakeOK = next.Sub(now), ok
	w.arm(time.Since(now), w.wakeAt, ok)
	w.mu.Unlock()
	return w, nil
}

// arm arms the timer, at the offset at from the clock's start, for the
// earliest of what is due next: the host's wake-up (wake, when ok) and,
// while the run context has not ended, the quiet clock and a wall of
// Watch's. A timer already armed as early rings first, and arms again
// then: events only push the quiet clock later, so Mark never re-arms.
// The caller holds w.mu.
func (w *Watchdog) arm(at, wake time.Duration, ok bool) {
	if !isDone(w.done) {
		if q, qok := w.clock.next(); qok && (!ok || q < wake) {
			wake, ok = q, true
		}
		if c := &w.clock; w.host != nil && c.hasWall && (!ok || c.wall < wake) {
			wake, ok = c.wall, true
		}
	}
	if !ok || w.armed && w.armedAt <= wake {
		return
	}
	w.armed, w.armedAt = true, wake
	if w.timer == nil {
		w.timer = time.AfterFunc(wake-at, w.onTimer)
		return
	}
	w.timer.Reset(wake - at)
}

// onTimer runs when the timer rings: the wall and the quiet clock first,
// then the host's clock, only when it is due. The run ends before the
// host's clock runs, which may take the host's locks (the harness writes
// the record of a change of phase): nothing the host does may move the
// end of the run. Semantic events only push the quiet deadline later,
// never re-arm the timer, so that Mark stays cheap; the timer is armed
// again here, lazily, for what is due next. A paused clock has no next
// wake-up: the resume arms.
func (w *Watchdog) onTimer() {
	now := time.Now()
	w.mu.Lock()
	w.armed = false
	if w.stopped {
		w.mu.Unlock()
		return
	}
	at := now.Sub(w.clock.start)
	var cause error
	var warning StallError
	if !isDone(w.done) {
		if c := &w.clock; w.host != nil && c.hasWall && at >= c.wall {
			cause = ErrWall
		} else if stall, fired := c.fire(at); fired && stall.Warning {
			warning = stall
		} else if fired {
			cause = &stall
		}
	}
	due := w.host != nil && w.wakeOK && at >= w.wakeAt
	w.mu.Unlock()
	if cause != nil {
		w.end(cause)
	}
	if warning.Warning && w.warn != nil {
		w.warn(warning)
	}
	if due {
		next, ok := w.host.Wake(now)
		w.mu.Lock()
		w.wakeAt, w.wakeOK = next.Sub(w.clock.start), ok
		w.mu.Unlock()
	}
	w.mu.Lock()
	if !w.stopped {
		w.arm(time.Since(w.clock.start), w.wakeAt, w.wakeOK)
	}
	w.mu.Unlock()
}

// end ends the run context with cause: through the host under Watch.
func (w *Watchdog) end(cause error) {
	if w.host != nil {
		w.host.End(cause)
		return
	}
	w.cancel(cause)
}

func isDone(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// Mark records an event of kind e; a semantic kind resets the quiet clock.
// Mark(Progress) asserts progress the caller has already checked; use
// [Watchdog.Progress] to have heartbeats checked per source. Mark panics if
// e is None or not a known kind. After Stop it does nothing.
func (w *Watchdog) Mark(e Event) {
	if e == None || e >= numEvents {
		panic("watchdog: Mark of " + e.String())
	}
	w.mu.Lock()
	if !w.stopped {
		at := time.Since(w.clock.start)
		w.count(e, 1, at)
		w.clock.heard(e, at)
		if !w.armed {
			// Only a warning leaves the timer unarmed while the run goes
			// on: an event arms it again. Armed, it arms itself lazily.
			w.arm(at, w.wakeAt, w.wakeOK)
		}
	}
	w.mu.Unlock()
}

// Keepalive records a transport-level sign of life: an SSE comment, a
// ping. It never resets the quiet clock.
func (w *Watchdog) Keepalive() { w.Mark(Keepalive) }

// Token records n streamed tokens. Tokens never reset the quiet clock: a
// model can stream a long, confident, wrong plan at full speed while the run
// goes nowhere. n ≤ 0 records nothing.
func (w *Watchdog) Token(n int) {
	if n <= 0 {
		return
	}
	w.mu.Lock()
	if !w.stopped {
		w.count(Token, int64(n), time.Since(w.clock.start))
	}
	w.mu.Unlock()
}

// Progress records a progress heartbeat of units from source, the call's
// idempotency key or id. It reports whether the heartbeat counted as the
// semantic event Progress, as [Clock.Progress] decides: units strictly
// greater than the most that source reported, which starts at zero, so
// that a heartbeat saying nothing is done yet is not progress, and neither
// is an attempt that starts counting again until it passes what an earlier
// attempt of the same call reached. One that repeats or lowers them is
// recorded as StaleProgress and does not reset the quiet clock. Once the
// quiet clock has fired, rising units are still counted but revive
// nothing. Progress does not allocate unless it meets a source for the
// first time.
//
// Call [Watchdog.End] when the source's call ends.
func (w *Watchdog) Progress(source string, units int64) bool {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return false
	}
	at := time.Since(w.clock.start)
	grew := w.clock.progress(source, units, at)
	if grew {
		w.count(Progress, 1, at)
		// A tool's first progress ends its hold, which may bring the
		// deadline nearer than the timer is armed for.
		w.arm(at, w.wakeAt, w.wakeOK)
	} else {
		w.count(StaleProgress, 1, at)
	}
	w.mu.Unlock()
	return grew
}

// End forgets the progress state of source, whose call has ended (with a
// result, an error, a cancel, or because the run stopped waiting for it),
// and the call of that key [Watchdog.Begin] started, with its hold. It is
// not itself an event: a result is marked with Mark(ToolResult).
// Heartbeats from source after End count as a new call's. Ending a hold
// may bring the quiet deadline nearer: the timer is armed for it.
func (w *Watchdog) End(source string) {
	w.mu.Lock()
	w.clock.End(source)
	if !w.stopped {
		w.arm(time.Since(w.clock.start), w.wakeAt, w.wakeOK)
	}
	w.mu.Unlock()
}

// Begin starts a call in flight, which its allowance may hold the quiet
// clock for ([Clock.Begin]); [Watchdog.End] ends it. After Stop it does
// nothing.
func (w *Watchdog) Begin(call Call) {
	w.mu.Lock()
	if !w.stopped {
		at := time.Since(w.clock.start)
		w.clock.begin(call, at)
		// A hold moves the deadline later: a timer armed for the earlier
		// one arms again when it rings; one a warning left unarmed arms.
		w.arm(at, w.wakeAt, w.wakeOK)
	}
	w.mu.Unlock()
}

// Headers records that the server of the call key sent its headers
// ([Clock.Headers]): a model call's hold takes effect.
func (w *Watchdog) Headers(key string) {
	w.mu.Lock()
	if !w.stopped {
		at := time.Since(w.clock.start)
		w.count(Headers, 1, at)
		w.clock.headersAt(key, at)
		w.arm(at, w.wakeAt, w.wakeOK)
	}
	w.mu.Unlock()
}

// count counts n events of kind e at at (from the clock's start), for the
// Snapshot. The caller holds w.mu.
func (w *Watchdog) count(e Event, n int64, at time.Duration) {
	w.counts[e] += n
	w.at[e] = at
}

// Pause stops the quiet clock for a wait the run itself chose — a backoff
// sleep, a server's Retry-After —, which is not silence (SPEC §3): a run
// waiting out a rate limit it was told to respect has not stalled. The
// wall still runs. Pause returns the function that starts the clock again
// with the quiet time it had left when it was paused, or with a later
// window if a semantic event came meanwhile ([Clock.Resume]). Pauses may
// overlap, as the backoffs of parallel calls do: the clock runs again when
// the last has resumed. A resume is idempotent. Once the quiet clock has
// fired, or its deadline has passed, Pause changes nothing: it does not
// revive a run that has stalled.
func (w *Watchdog) Pause() (resume func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped || !w.clock.pause(time.Since(w.clock.start)) {
		return func() {}
	}
	var once sync.Once
	return func() { once.Do(w.resume) }
}

func (w *Watchdog) resume() {
	w.mu.Lock()
	defer w.mu.Unlock()
	at := time.Since(w.clock.start)
	w.clock.resume(at)
	if w.stopped {
		return
	}
	w.arm(at, w.wakeAt, w.wakeOK)
}

// Held returns the held call in flight nearest the end of its allowance
// now, and reports whether one is held ([Clock.Held]).
func (w *Watchdog) Held() (Silent, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.clock.Held(time.Now())
}

// Stop ends the run: it releases the quiet timer and the wall's timer,
// forgets all progress sources and ends the run context with cause
// [ErrStopped] unless it has already ended. After Stop the watchdog records
// nothing more; [Watchdog.Snapshot] still reports what it saw. Stop is
// idempotent and does not block.
func (w *Watchdog) Stop() {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	w.stopped, w.armed = true, false
	if w.timer != nil {
		w.timer.Stop()
	}
	w.clock.sources = nil
	w.mu.Unlock()
	// The run context first, so that its cause is ErrStopped rather than the
	// Canceled that cancelWall would pass down.
	w.end(ErrStopped)
	if w.cancelWall != nil {
		w.cancelWall()
	}
}

// A Snapshot is what a watchdog has seen, for the live status line and the
// trace.
type Snapshot struct {
	Start         time.Time // when Start was called
	Last          Event     // the last semantic event; None before the first
	LastAt        time.Time // when Last happened; Start before the first
	QuietDeadline time.Time // when the quiet clock fires unless a semantic event comes first
	Wall          time.Time // the hard wall; zero when none
	Stalled       bool      // reports whether the quiet clock has fired
	Semantic      int64     // semantic events in all

	// Counts holds the number of events of each kind, indexed by Event:
	// Counts[Keepalive] keepalives, Counts[ToolResult] results. Counts[Token]
	// counts tokens, not deliveries.
	Counts [numEvents]int64
	// At holds when each kind was last recorded, indexed by Event; the zero
	// Time for a kind never seen.
	At [numEvents]time.Time

	Sources int // progress sources in flight: seen and not yet ended
}

// Snapshot returns what the watchdog has seen so far.
func (w *Watchdog) Snapshot() Snapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := &w.clock
	s := Snapshot{
		Start:         c.start,
		Last:          c.last,
		LastAt:        c.start.Add(c.lastAt),
		QuietDeadline: c.Deadline(),
		Stalled:       c.fired,
		Counts:        w.counts,
		Sources:       c.Sources(),
	}
	if c.hasWall {
		s.Wall = c.start.Add(c.wall)
	}
	for e, n := range w.counts {
		if n > 0 {
			s.At[e] = c.start.Add(w.at[e])
		}
		if Event(e).Semantic() {
			s.Semantic += n
		}
	}
	return s
}
