package watchdog

import (
	"maps"
	"math"
	"time"
)

// A Clock is the quiet clock's rules, and nothing else: what resets it,
// what pauses it, when it fires. It is pure (issue 25): no goroutine, no
// timer, no lock, no reading of the time. The host tells it what happened
// and when, with now passed in, and asks [Clock.Next] for the one instant
// it must be woken; at that instant it calls [Clock.Fire]. [Watchdog] is
// the in-process host (one [time.AfterFunc] timer); temporal/durable's
// workflow is the other (one workflow timer), so that the two cannot
// disagree on when a run has stalled.
//
// A Clock is made by [NewClock]; the zero Clock is not usable. It is not
// safe for concurrent use: the host serializes its calls.
type Clock struct {
	// Times are offsets from start, so that each comparison is one
	// integer comparison. start, window, wall and hasWall are set by
	// NewClock and never changed. The small fields come last, together,
	// so that a Clock, which every run's Watchdog holds, is 8 bytes
	// smaller (issue 25 item 6).
	start time.Time
	// window is the quiet window each semantic kind opens (ToolCall to
	// Progress, Event.Semantic); window[None] is Q, which the others open.
	// It stops at Progress: 24 bytes less in every run (issue 25 item 6).
	window [Progress + 1]time.Duration
	wall   time.Duration // Config.Wall as an offset from start

	lastAt    time.Duration // when last happened; 0 before the first
	deadline  time.Duration // when the clock fires: max over events of at + window
	sources   map[string]int64
	pauseLeft time.Duration // the quiet time left when the first pause began
	pausedAt  time.Duration // when it began: the holds move on by the pause's length
	paused    int32         // pauses in effect

	// calls are the calls in flight that the host began ([Clock.Begin]):
	// a handful at most, searched in order.
	calls  []flight
	warned time.Duration // Warn: the deadline last warned of, while hasWarned

	hasWall   bool
	fired     bool  // the clock fired; nothing revives it
	hasWarned bool  // Warn: warned is set
	mode      Mode  // what firing does
	last      Event // the last semantic event, None before the first
	opener    Event // the event whose window sets deadline
}

// NewClock starts a quiet clock at now with cfg's windows and wall: the
// first window, of [Config.Quiet], opens at now. An invalid cfg returns a
// [*ConfigError].
func NewClock(cfg Config, now time.Time) (Clock, error) {
	if err := cfg.Validate(); err != nil {
		return Clock{}, err
	}
	q := cfg.Quiet
	if q == 0 {
		q = DefaultQuiet
	}
	c := Clock{start: now, deadline: q, mode: cfg.Mode}
	for e := range c.window {
		c.window[e] = q
		if d := cfg.QuietAfter[Event(e)]; d > 0 {
			c.window[e] = d
		}
	}
	if !cfg.Wall.IsZero() {
		c.wall, c.hasWall = cfg.Wall.Sub(now), true
	}
	return c, nil
}

// Quiet returns the window an event of kind e opens; Quiet(None) is Q.
func (c *Clock) Quiet(e Event) time.Duration {
	if !e.Semantic() {
		return c.window[None]
	}
	return c.window[e]
}

// Fired reports whether the clock has fired.
func (c *Clock) Fired() bool { return c.fired }

// Paused reports whether a pause is in effect.
func (c *Clock) Paused() bool { return c.paused > 0 }

// Heard records a semantic event of kind e at now: its window opens, and
// the quiet deadline becomes the later of the current one and now plus the
// window of e. It reports whether the event counted. One that is not
// semantic, or comes at or after the deadline with no pause in effect, does
// not: the run has stalled whether or not the host has called Fire yet,
// which makes an event and the firing at the same instant come out the same
// in either order.
//
// An event during a pause opens its window at now like any other; the
// resume then keeps the later of that window's end and the quiet time left
// at the pause (issue 25: Temporal gave an event inside a pause all of Q
// again after the resume, and fired that much later than in process).
func (c *Clock) Heard(e Event, now time.Time) bool { return c.heard(e, now.Sub(c.start)) }

// heard is Heard at an offset from the clock's start. The Watchdog calls
// the offset forms with time.Since, one monotonic reading, rather than
// time.Now, which reads the wall clock too: Mark is on every event.
func (c *Clock) heard(e Event, at time.Duration) bool {
	if !e.Semantic() || c.fired {
		return false
	}
	if c.late(at) {
		return false
	}
	c.last, c.lastAt = e, at
	// >= so that the window is credited to the latest event that reaches it.
	if d := addSat(at, c.window[e]); d >= c.deadline {
		c.deadline, c.opener = d, e
	}
	return true
}

// Progress records a heartbeat of units from source, the call's key, at now,
// and reports whether its units grew: strictly greater than the most that
// source reported, which starts at zero (SPEC §3), as [Grew] decides. A
// heartbeat whose units grew
// is the semantic event [Progress] and is heard as one ([Clock.Heard]):
// once the clock has fired, rising units are still remembered but revive
// nothing. Progress allocates only when it meets a source for the first
// time.
func (c *Clock) Progress(source string, units int64, now time.Time) bool {
	return c.progress(source, units, now.Sub(c.start))
}

func (c *Clock) progress(source string, units int64, at time.Duration) bool {
	if !Grew(c.sources[source], units) {
		return false
	}
	if c.sources == nil {
		c.sources = make(map[string]int64)
	}
	c.sources[source] = units
	if c.heard(Progress, at) {
		if f := c.flight(source); f != nil {
			// The call is alive, and says so: its silence is measured
			// from now, and a tool's hold has done its work. A model
			// call's allowance counts again from now: it may be as
			// silent before its next summary as before its first.
			f.start, f.progressed = at, true
			f.holding = f.holding && f.call.AtHeaders
			if f.holding {
				f.from = at
			}
		}
	}
	return true
}

// Grew reports whether a heartbeat of units counts as progress after
// most, the most its source reported before (zero: none): units strictly
// greater (SPEC §3), so that a repeated or lowered count, a keepalive, a
// token is no progress. It is the one place this is decided: the quiet
// clock's, and a Temporal worker's before it signals its workflow (issue
// 25).
func Grew(most, units int64) bool { return units > most }

// Units returns the most units source reported, 0 when none or once its
// call has ended.
func (c *Clock) Units(source string) int64 { return c.sources[source] }

// End forgets source's units and the call of that key ([Clock.Begin]):
// its call has ended, its hold with it, and heartbeats under it from now
// on count as a new call's. Ending a hold resets nothing: a call that
// ends without a semantic event (a model attempt that failed) leaves the
// clock where its own windows put it.
func (c *Clock) End(source string) {
	delete(c.sources, source)
	for i := range c.calls {
		if c.calls[i].call.Key == source {
			c.calls = append(c.calls[:i], c.calls[i+1:]...)
			return
		}
	}
}

// Begin starts the call in flight at now (issue 27): the host hears its
// event (a tool call issued, a model request sent) as well. A call whose
// allowance is above the quiet window its event opens holds the clock
// until its allowance, counted from now, has passed: from now, or,
// [Call.AtHeaders], once its server's headers came ([Clock.Headers]);
// until its first progress whose
// units grew, for a tool; until [Clock.End]. A hold resets nothing, and
// never reaches past the wall. A call begun again under the same key
// replaces the one in flight.
func (c *Clock) Begin(call Call, now time.Time) { c.begin(call, now.Sub(c.start)) }

func (c *Clock) begin(call Call, at time.Duration) {
	f := flight{call: call, start: at}
	if !call.AtHeaders && c.Holds(call) && !c.fired && !c.late(at) { // a hold revives no run that has stalled
		f.from, f.holding = at, true
	}
	if old := c.flight(call.Key); old != nil {
		*old = f
		return
	}
	c.calls = append(c.calls, f)
}

// Headers records that the server of the call key sent its response
// headers at now: a call held once its server answers is held from the
// first, for what is left of its allowance.
func (c *Clock) Headers(key string, now time.Time) { c.headersAt(key, now.Sub(c.start)) }

func (c *Clock) headersAt(key string, at time.Duration) {
	f := c.flight(key)
	if f == nil || f.headers {
		return
	}
	f.headers = true
	// A hold revives no run that has stalled, nor one whose allowance
	// the call has already been silent past: in warn mode, headers after
	// it would otherwise warn at once, before any silence after them.
	if f.call.AtHeaders && c.Holds(f.call) && !c.fired && !c.late(at) && addSat(f.start, f.call.Allowance) > at {
		// The allowance counts from the call's start (or its last
		// progress), not from the headers: a server that answered late
		// and then hung is still caught within max(Q, E) of the start
		// (issue 27: counted from the headers, a hang after headers that
		// took a few milliseconds was caught that much past the bound).
		f.from, f.holding = f.start, true
	}
}

// Holds reports whether call's allowance holds the clock: it is above
// the quiet window the call's event opens (a model request's, for a call
// held from its headers; a tool call's, else). One not above it holds
// nothing: the window alone catches the call as soon.
func (c *Clock) Holds(call Call) bool {
	e := ToolCall
	if call.AtHeaders {
		e = ModelCall
	}
	return call.Allowance > c.window[e]
}

// Held returns, at now, the held call in flight nearest the end of its
// allowance, as a stall would name it, and reports whether one is held:
// what a live line warns of when half its allowance has passed (issue 27).
// A pause is no silence: while one is in effect the call's silence is
// read at the pause's start, where the resume takes it up again. A clock
// that is off holds nothing it could warn of.
func (c *Clock) Held(now time.Time) (Silent, bool) {
	if c.mode == Off {
		return Silent{}, false
	}
	at := now.Sub(c.start)
	if c.paused > 0 {
		at = min(at, c.pausedAt)
	}
	who := -1
	for i := range c.calls {
		if f := &c.calls[i]; f.holding && (who < 0 || f.end() < c.calls[who].end()) {
			who = i
		}
	}
	if who < 0 || c.fired {
		return Silent{}, false
	}
	return c.silent(at, who), true
}

// flight returns the call in flight of key, or nil.
func (c *Clock) flight(key string) *flight {
	for i := range c.calls {
		if c.calls[i].call.Key == key {
			return &c.calls[i]
		}
	}
	return nil
}

// due returns when the clock fires: the latest end of any window or
// hold, and the index of the hold that sets it (-1: a window does).
func (c *Clock) due() (time.Duration, int) {
	d, who := c.deadline, -1
	for i := range c.calls {
		if f := &c.calls[i]; f.holding {
			if e := f.end(); e > d {
				d, who = e, i
			}
		}
	}
	return d, who
}

// late reports whether an event at at comes too late to count: an
// enforcing clock's deadline has passed, with no pause in effect.
func (c *Clock) late(at time.Duration) bool {
	if c.mode != Enforce || c.paused > 0 {
		return false
	}
	d, _ := c.due()
	return at >= d
}

// silent returns the call the stall at at names: the held call whose
// allowance ran out (index who), or else the call silent longest.
func (c *Clock) silent(at time.Duration, who int) Silent {
	held := who >= 0 // the hold, not a window, set the deadline
	if who < 0 {
		for i := range c.calls {
			if who < 0 || c.calls[i].start < c.calls[who].start {
				who = i
			}
		}
	}
	if who < 0 {
		return Silent{}
	}
	f := &c.calls[who]
	return Silent{Call: f.call, For: at - f.start, Headers: f.headers, Held: held, Progressed: f.progressed}
}

// Sources returns the number of progress sources seen and not yet ended.
func (c *Clock) Sources() int { return len(c.sources) }

// Pause stops the clock at now for a wait the run itself chose (a backoff
// sleep, a server's Retry-After): that is not silence (SPEC §3). It reports
// whether the pause took effect; only then must the host call [Clock.Resume]
// once for it. Once the clock has fired, or its deadline has passed with no
// pause in effect, Pause changes nothing: it does not revive a run that has
// stalled. Pauses may overlap; the clock runs again when the last resumes.
func (c *Clock) Pause(now time.Time) bool { return c.pause(now.Sub(c.start)) }

func (c *Clock) pause(at time.Duration) bool {
	if c.fired || c.late(at) {
		return false
	}
	if c.paused == 0 {
		c.pauseLeft, c.pausedAt = c.deadline-at, at
	}
	c.paused++
	return true
}

// Resume ends one pause that [Clock.Pause] reported in effect. When it is
// the last, the clock runs again at now with the quiet time it had left at
// the pause, or to the end of a window a semantic event opened meanwhile if
// that is later.
func (c *Clock) Resume(now time.Time) { c.resume(now.Sub(c.start)) }

func (c *Clock) resume(at time.Duration) {
	if c.paused == 0 {
		return
	}
	if c.paused--; c.paused > 0 || c.fired {
		return
	}
	// A wait the run chose is not the held calls' silence either: their
	// holds, and their silence, resume where they were.
	for i := range c.calls {
		c.calls[i].start += at - c.pausedAt
		c.calls[i].from += at - c.pausedAt
	}
	if d := addSat(at, c.pauseLeft); d > c.deadline {
		c.deadline = d
	}
}

// Next returns when the host must wake the clock next (and call
// [Clock.Fire]), and reports whether it must at all: not while paused (the
// resume moves the deadline), not once fired, and not for a deadline at or
// after the wall, which wins the tie (see # Ties).
func (c *Clock) Next() (time.Time, bool) {
	d, ok := c.next()
	return c.start.Add(d), ok
}

func (c *Clock) next() (time.Duration, bool) {
	if c.fired || c.paused > 0 || c.mode == Off {
		return 0, false
	}
	d, _ := c.due()
	if c.hasWall && d >= c.wall || c.hasWarned && d <= c.warned {
		return 0, false
	}
	return d, true
}

// Deadline returns when the clock fires unless a semantic event comes
// first, as the watchdog's [Snapshot] reports it: a hold included.
func (c *Clock) Deadline() time.Time {
	d, _ := c.due()
	return c.start.Add(d)
}

// Fire is the host's wake-up at now. It reports whether the clock fires
// now, with the stall to report: the deadline has come with no pause in
// effect, before the wall. It reports true once; an early wake-up (the
// host's timer was armed for a deadline an event has since moved) reports
// false, and the host arms again for [Clock.Next]. A clock in [Warn]
// mode reports each would-be stall once, [StallError.Warning] set, and
// runs on: an event or a hold that moves its deadline arms it again.
func (c *Clock) Fire(now time.Time) (StallError, bool) { return c.fire(now.Sub(c.start)) }

func (c *Clock) fire(at time.Duration) (StallError, bool) {
	d, ok := c.next()
	if !ok || at < d {
		return StallError{}, false
	}
	_, who := c.due()
	s := StallError{Last: c.last, Since: at - c.lastAt, Quiet: c.window[c.opener], Window: c.opener, Call: c.silent(at, who)}
	if c.mode == Warn {
		c.warned, c.hasWarned, s.Warning = d, true, true
		return s, true
	}
	c.fired = true
	return s, true
}

// addSat returns now + d, saturating rather than overflowing for a window so
// long that it means "never".
func addSat(now, d time.Duration) time.Duration {
	if d > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + d
}

// A ClockState is a Clock as plain data: what a host that moves a run to
// another process carries (a Temporal run that continues as new, issue
// 26), so that [RestoreClock] makes the same clock. Its times are offsets
// from Start, as the Clock's are.
type ClockState struct {
	Start                       time.Time
	Window                      [Progress + 1]time.Duration
	Wall                        time.Duration `json:",omitempty"`
	HasWall                     bool          `json:",omitempty"`
	LastAt, Deadline, PauseLeft time.Duration
	PausedAt                    time.Duration    `json:",omitempty"`
	Sources                     map[string]int64 `json:",omitempty"`
	Paused                      int32            `json:",omitempty"`
	Fired                       bool             `json:",omitempty"`
	Last, Opener                Event
	Mode                        Mode          `json:",omitempty"`
	Warned                      time.Duration `json:",omitempty"`
	HasWarned                   bool          `json:",omitempty"`
}

// State returns c's state. The calls in flight are not in it: a host
// moves a run only with none in flight.
func (c *Clock) State() ClockState {
	return ClockState{Start: c.start, Window: c.window, Wall: c.wall, HasWall: c.hasWall, LastAt: c.lastAt, Deadline: c.deadline,
		PauseLeft: c.pauseLeft, PausedAt: c.pausedAt, Sources: maps.Clone(c.sources), Paused: c.paused, Fired: c.fired, Last: c.last, Opener: c.opener,
		Mode: c.mode, Warned: c.warned, HasWarned: c.hasWarned}
}

// RestoreClock returns the clock whose state is s.
func RestoreClock(s ClockState) Clock {
	return Clock{start: s.Start, window: s.Window, wall: s.Wall, hasWall: s.HasWall, lastAt: s.LastAt, deadline: s.Deadline,
		pauseLeft: s.PauseLeft, pausedAt: s.PausedAt, sources: s.Sources, paused: s.Paused, fired: s.Fired, last: s.Last, opener: s.Opener,
		mode: s.Mode, warned: s.Warned, hasWarned: s.HasWarned}
}
