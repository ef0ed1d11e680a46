package watchdog

import (
	"fmt"
	"time"
)

// DefaultMaxSilence caps every call's allowance when [Expected.Max] is
// zero: the longest silence the quiet clock holds for, however slow a
// call is known to be (issue 27). Peers wait as long for a stream that
// says nothing: Codex 300s, Envoy's stream idle timeout 5 minutes.
const DefaultMaxSilence = 5 * time.Minute

// A Call is a call in flight as the quiet clock knows it: enough to hold
// the clock for the silence the call is known for, and to name it when
// the run stalls. [Clock.Begin] starts one; [Clock.End] ends it.
type Call struct {
	Key  string // the call's idempotency key; a model turn's is "model"
	Step string // its step kind: "model", "tool:search"
	// Index is the step the call's records carry (trace.Record.StepIndex),
	// which a warning of its silence carries too; 0: none given.
	Index int `json:",omitempty"`

	// Allowance is E, how long the call may be silent before the run has
	// stalled ([Expected.Allowance]); one not above the quiet window the
	// call opens holds nothing. Source says where it came from.
	Allowance time.Duration
	Source    Source

	// AtHeaders reports a call whose hold takes effect when its server
	// answers ([Clock.Headers]), a model call's: before the headers, the
	// quiet window alone applies, so that a server that never answers is
	// still caught at Q. Its allowance still counts from the call's start,
	// as every call's does, so that a hang after the headers is caught
	// within max(Q, E) of the start whenever the headers came. A call
	// without it is held from its start until its first progress whose
	// units grew, or its end.
	AtHeaders bool `json:",omitempty"`
}

// A Source says where a call's allowance came from.
type Source uint8

const (
	SourceNone     Source = iota // no allowance: nothing is known of the call's latency
	SourceObserved               // 2 × p95 of the calls of its kind this run made
	SourceProfile                // 2 × p95 from the latency profile of earlier runs at this place
	SourceDeclared               // 2 × the p95 its tool, manifest or config declares
	SourceStated                 // the silence its tools-file entry or manifest states
	SourceLearned                // twice the longest silence the quiet clock cut at this place before
	numSources
)

var sourceNames = [numSources]string{"none", "observed", "profile", "declared", "stated", "learned"}

// String returns the source's name as traces write it, e.g. "profile".
func (s Source) String() string {
	if s < numSources {
		return sourceNames[s]
	}
	return fmt.Sprintf("Source(%d)", uint8(s))
}

// MarshalText writes the source's name.
func (s Source) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a source's name.
func (s *Source) UnmarshalText(b []byte) error {
	for i, n := range sourceNames {
		if n == string(b) {
			*s = Source(i)
			return nil
		}
	}
	return fmt.Errorf("watchdog: unknown allowance source %q", b)
}

// Expected is what a call's allowance is computed from: the expected
// silence of its kind at its place (issue 27).
type Expected struct {
	P95  time.Duration // the kind's p95; 0: unknown
	From Source        // where P95 came from: observed, profile or declared

	// Stated replaces 2 × P95 when set: the silence a tools-file entry or
	// a manifest states for the tool (`silence:`).
	Stated time.Duration
	// Learned is the longest silence the quiet clock cut at this place in
	// an earlier run: the call takes at least that long, and is allowed
	// at least twice it.
	Learned time.Duration
	// Max caps every allowance; zero: [DefaultMaxSilence].
	Max time.Duration
}

// Allowance returns E, how long a call may be silent, and where it came
// from: 2 × P95, or Stated in its place, raised to twice Learned, and at
// most ceiling, lease and Max (a zero ceiling or lease is no cap). Known
// nothing, it is 0 with [SourceNone]: the quiet window alone applies.
func (x Expected) Allowance(ceiling, lease time.Duration) (time.Duration, Source) {
	e, src := 2*x.P95, x.From
	if x.P95 <= 0 {
		e, src = 0, SourceNone
	}
	if x.Stated > 0 {
		e, src = x.Stated, SourceStated
	}
	if l := 2 * x.Learned; l > e {
		e, src = l, SourceLearned
	}
	if e <= 0 {
		return 0, SourceNone
	}
	limit := x.Max
	if limit <= 0 {
		limit = DefaultMaxSilence
	}
	for _, c := range [...]time.Duration{ceiling, lease} {
		if c > 0 {
			limit = min(limit, c)
		}
	}
	return min(e, limit), src
}

// A Mode says what the quiet clock does when it fires (issue 27).
type Mode uint8

const (
	// Enforce ends the run: it has stalled. The zero Mode.
	Enforce Mode = iota
	// Warn records each would-be stall and lets the run go on, still
	// bounded by its leases and its wall: [Config.Warn] hears it.
	Warn
	// Off never fires.
	Off
)

var modeNames = [...]string{"enforce", "warn", "off"}

// String returns the mode's name, as --quiet-mode takes it.
func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// ParseMode reads a mode's name: "enforce", "warn" or "off".
func ParseMode(s string) (Mode, error) {
	for i, n := range modeNames {
		if n == s {
			return Mode(i), nil
		}
	}
	return 0, fmt.Errorf("quiet mode %q: want enforce, warn or off", s)
}

// Silent is the call a stall names: the call in flight that was silent
// when the clock fired. A stall with no call in flight has a zero Silent.
type Silent struct {
	Call
	For     time.Duration // how long it had been silent: since its start, or its last progress
	Headers bool          // a model call's server had sent its headers
	Held    bool          // its allowance held the clock past the quiet window, and ran out
	// Progressed reports a call that had shown progress whose units grew:
	// For is since the last, and a tool's hold had ended with the first.
	Progressed bool `json:",omitempty"`
}

// flight is a call in flight on a Clock.
type flight struct {
	call    Call
	start   time.Duration // when it began (or last showed progress), from the clock's start
	from    time.Duration // when its allowance began to count; valid when holding
	holding bool          // its allowance holds the clock now
	headers bool
	// progressed: it showed progress whose units grew (Silent.Progressed)
	progressed bool
}

// end returns when f's hold ends.
func (f *flight) end() time.Duration { return addSat(f.from, f.call.Allowance) }
