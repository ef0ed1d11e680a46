package profile

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/glidepath/glidepath/budget"
)

// MaxAge is how long an observation counts: older ones drop out, because a
// provider's latency drifts (SPEC §5b).
const MaxAge = 7 * 24 * time.Hour

// Bounds of a profile [Record] writes, so that the file stays small (under 3
// MiB) however many runs feed it.
const (
	// MaxPerKind is how many observations a kind keeps: its most recent.
	// Enough for a stable nearest-rank p95, which then rests on 13.
	MaxPerKind = 256
	// MaxKinds is how many kinds a profile keeps: those observed most
	// recently.
	MaxKinds = 128
	// MaxKindLen bounds the length of a kind's name, in bytes.
	MaxKindLen = 256
)

// maxFile bounds what [Load] reads: far above what [Record] writes, so a
// larger file is not a profile.
const maxFile = 16 << 20

// version is the format of the file; see the package documentation.
const version = 1

// An Observation is the duration of one completed attempt of a step kind
// and when it was made.
type Observation struct {
	Kind     string        // the step kind: "model", "tool:NAME", "agent:NAME"
	Duration time.Duration // how long the attempt took; not negative
	At       time.Time     // when it was observed, usually when it ended
}

// Attempt returns the observation of an attempt of kind that ran from
// start to end: its duration is end − start (on the monotonic clock when
// both carry a reading, as times from [time.Now] do) and it is dated end,
// in UTC. Only attempts that finished belong in a profile, as with
// [budget.Kind.Observe]: one cut short by its lease or the run says only
// that the call takes at least that long.
func Attempt(kind string, start, end time.Time) Observation {
	return Observation{Kind: kind, Duration: end.Sub(start), At: end.UTC()}
}

// checkKind returns why kind cannot name a kind of a profile, or nil.
func checkKind(kind string) error {
	switch {
	case kind == "":
		return errors.New("no kind")
	case len(kind) > MaxKindLen:
		return fmt.Errorf("kind of %d bytes, over %d", len(kind), MaxKindLen)
	case !utf8.ValidString(kind):
		return errors.New("kind is not UTF-8")
	}
	return nil
}

// check returns why o cannot be recorded, or nil.
func (o Observation) check() error {
	if err := checkKind(o.Kind); err != nil {
		return err
	}
	switch {
	case o.Duration < 0:
		return fmt.Errorf("negative duration %v", o.Duration)
	case o.At.IsZero():
		return errors.New("no date")
	case o.At.Year() < 1 || o.At.Year() > 9999:
		return fmt.Errorf("date %v outside years 1 to 9999", o.At)
	}
	return nil
}

// sample is one observation of a kind.
type sample struct {
	at time.Time // UTC, no monotonic reading
	d  time.Duration
}

func cmpSample(a, b sample) int {
	if c := a.at.Compare(b.at); c != 0 {
		return c
	}
	return cmp.Compare(a.d, b.d)
}

// fresh reports whether s counts at now: it is less than [MaxAge] old. One
// dated as far into the future is a clock that was wrong and counts no
// more than a stale one.
func (s sample) fresh(now time.Time) bool {
	age := now.Sub(s.at)
	return age < MaxAge && age > -MaxAge
}

// A Profile is the observations of a latency profile, per step kind, as
// [Load] read them. It does not change once loaded and is safe for
// concurrent use. The zero Profile, and a nil *Profile, are empty.
type Profile struct {
	kinds map[string][]sample // each sorted by cmpSample, without duplicates
}

// Load reads the profile at path. A missing or empty file is an empty
// profile. A file that is not a profile is a [*CorruptError] naming the
// file and what is wrong with it; any other failure to read it is an
// error too. On every error Load also returns an empty Profile, so that a
// caller reports the error and goes on without the history (SPEC §5b: a
// broken profile is never fatal).
func Load(path string) (*Profile, error) {
	data, err := readFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &Profile{}, nil
	}
	if err != nil {
		return &Profile{}, fmt.Errorf("profile: load: %w", err)
	}
	p, err := decode(data)
	if err != nil {
		return &Profile{}, &CorruptError{Path: path, Err: err}
	}
	return p, nil
}

// readFile reads path, up to one byte more than maxFile.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxFile+1))
}

// file is the JSON form of a profile; see the package documentation.
type file struct {
	Version *int                    `json:"version"`
	Kinds   map[string][]fileSample `json:"kinds"`
}

type fileSample struct {
	At *time.Time `json:"at"`
	NS *int64     `json:"ns"`
}

// decode parses a profile file. It never panics.
func decode(data []byte) (*Profile, error) {
	if len(data) > maxFile {
		return nil, fmt.Errorf("over %d MiB, not a profile", maxFile>>20)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return &Profile{}, nil
	}
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		if se, ok := errors.AsType[*json.SyntaxError](err); ok {
			return nil, fmt.Errorf("%v, at byte %d", se, se.Offset)
		}
		return nil, err
	}
	switch {
	case f.Version == nil:
		return nil, errors.New(`no "version"`)
	case *f.Version != version:
		return nil, fmt.Errorf("version %d, want %d", *f.Version, version)
	}
	p := &Profile{kinds: make(map[string][]sample, len(f.Kinds))}
	for kind, fs := range f.Kinds {
		if err := checkKind(kind); err != nil {
			return nil, fmt.Errorf("kind %q: %w", kind, err)
		}
		ss := make([]sample, 0, len(fs))
		for i, s := range fs {
			if s.At == nil {
				return nil, fmt.Errorf(`%q observation %d: no "at"`, kind, i+1)
			}
			if s.NS == nil {
				return nil, fmt.Errorf(`%q observation %d: no "ns"`, kind, i+1)
			}
			o := Observation{Kind: kind, Duration: time.Duration(*s.NS), At: *s.At}
			if err := o.check(); err != nil {
				return nil, fmt.Errorf("%q observation %d: %w", kind, i+1, err)
			}
			ss = append(ss, sample{at: o.At.UTC(), d: o.Duration})
		}
		if len(ss) == 0 {
			continue
		}
		slices.SortFunc(ss, cmpSample)
		p.kinds[kind] = slices.CompactFunc(ss, func(a, b sample) bool { return cmpSample(a, b) == 0 })
	}
	return p, nil
}

// encode renders p as a profile file: one line per observation, so that a
// person can read it, kinds in name order, each kind's observations
// oldest first.
func (p *Profile) encode() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\"version\":%d,\"kinds\":{", version)
	for i, kind := range slices.Sorted(maps.Keys(p.kinds)) {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(kind) // a valid UTF-8 string: cannot fail
		fmt.Fprintf(&b, "\n%s:[", name)
		for j, s := range p.kinds[kind] {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "\n{\"at\":%q,\"ns\":%d}", s.at.Format(time.RFC3339Nano), int64(s.d))
		}
		b.WriteString("]")
	}
	b.WriteString("\n}}\n")
	return b.Bytes()
}

// Seed starts est from this machine's history: for each kind with
// observations less than [MaxAge] old at now, it warms the kind's window
// with them ([budget.Kind.Warm]) and declares their nearest-rank p50 and
// p95 ([budget.Kind.Declare]), so that a new run's p50 refusals and fit
// gate start from what the machine saw. Kinds without such observations
// are left as they are.
//
// The declared estimates serve while the kind has too few observations to
// rank; a later Declare of the same kind, such as a tool's manifest hints,
// replaces them, but not the observations, which stand until the run's
// own push them out.
func (p *Profile) Seed(est *budget.Estimates, now time.Time) {
	for kind, st := range p.stats(now) {
		k := est.Kind(kind)
		k.Declare(st.P50, st.P95)
		k.Warm(p.recent(kind, now))
	}
}

// recent are the durations of kind's observations less than MaxAge old at
// now, oldest first.
func (p *Profile) recent(kind string, now time.Time) []time.Duration {
	var ds []time.Duration
	for _, s := range p.kinds[kind] {
		if s.fresh(now) {
			ds = append(ds, s.d)
		}
	}
	return ds
}

// A Summary is what [Profile.Summary] says of a profile: its kinds in name
// order. Its JSON form is the one of "harness profile --json" (SPEC §5b).
type Summary struct {
	Kinds []KindSummary `json:"kinds"` // never null in JSON
}

// KindSummary is one kind of a [Summary].
type KindSummary struct {
	Kind           string
	Count          int           // observations less than MaxAge old
	P50, P95       time.Duration // nearest rank over them
	Oldest, Newest time.Time     // the dates of the oldest and newest of them, in UTC
}

// MarshalJSON renders k as {"kind","count","p50_ms","p95_ms","oldest",
// "newest"}: percentiles in milliseconds, rounded to the nearest, and dates
// in RFC 3339.
func (k KindSummary) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind   string    `json:"kind"`
		Count  int       `json:"count"`
		P50Ms  int64     `json:"p50_ms"`
		P95Ms  int64     `json:"p95_ms"`
		Oldest time.Time `json:"oldest"`
		Newest time.Time `json:"newest"`
	}{k.Kind, k.Count, roundMs(k.P50), roundMs(k.P95), k.Oldest, k.Newest})
}

func roundMs(d time.Duration) int64 { return d.Round(time.Millisecond).Milliseconds() }

// Summary returns, for each kind with observations less than [MaxAge] old
// at now, their count, p50, p95 and dates: what [Profile.Seed] would
// declare.
func (p *Profile) Summary(now time.Time) Summary {
	stats := p.stats(now)
	s := Summary{Kinds: make([]KindSummary, 0, len(stats))}
	for _, kind := range slices.Sorted(maps.Keys(stats)) {
		s.Kinds = append(s.Kinds, stats[kind])
	}
	return s
}

// stats computes the summary of every kind with fresh observations.
func (p *Profile) stats(now time.Time) map[string]KindSummary {
	if p == nil {
		return nil
	}
	out := make(map[string]KindSummary, len(p.kinds))
	var ds []time.Duration
	for kind, ss := range p.kinds {
		ds = ds[:0]
		var oldest, newest time.Time
		for _, s := range ss { // sorted: the first fresh one is the oldest
			if !s.fresh(now) {
				continue
			}
			if oldest.IsZero() {
				oldest = s.at
			}
			newest = s.at
			ds = append(ds, s.d)
		}
		if len(ds) == 0 {
			continue
		}
		slices.Sort(ds)
		out[kind] = KindSummary{
			Kind: kind, Count: len(ds),
			P50: quantile(ds, 50), P95: quantile(ds, 95),
			Oldest: oldest, Newest: newest,
		}
	}
	return out
}

// quantile returns the nearest-rank pct-th percentile of sorted, non-empty
// s: the smallest value with at least pct% of s at or below it, as package
// budget computes its observed estimates.
func quantile(s []time.Duration, pct int) time.Duration {
	rank := (pct*len(s) + 99) / 100 // ceil(pct/100 · n), 1-based
	return s[max(rank, 1)-1]
}

// merge returns p with obs added, observations that are not fresh at now
// dropped, duplicates removed and the bounds applied: the MaxPerKind most
// recent observations of each kind, and the MaxKinds kinds observed most
// recently (of kinds that tie, those whose names sort first).
func (p *Profile) merge(obs []Observation, now time.Time) *Profile {
	kinds := make(map[string][]sample, len(p.kinds)+1)
	for kind, ss := range p.kinds {
		kinds[kind] = slices.Clone(ss)
	}
	for _, o := range obs {
		kinds[o.Kind] = append(kinds[o.Kind], sample{at: o.At.UTC(), d: o.Duration})
	}
	for kind, ss := range kinds {
		ss = slices.DeleteFunc(ss, func(s sample) bool { return !s.fresh(now) })
		slices.SortFunc(ss, cmpSample)
		ss = slices.CompactFunc(ss, func(a, b sample) bool { return cmpSample(a, b) == 0 })
		if len(ss) > MaxPerKind {
			ss = slices.Clone(ss[len(ss)-MaxPerKind:])
		}
		if len(ss) == 0 {
			delete(kinds, kind)
			continue
		}
		kinds[kind] = ss
	}
	if len(kinds) > MaxKinds {
		names := slices.Collect(maps.Keys(kinds))
		slices.SortFunc(names, func(a, b string) int {
			if c := kinds[b][len(kinds[b])-1].at.Compare(kinds[a][len(kinds[a])-1].at); c != 0 {
				return c // most recent first
			}
			return strings.Compare(a, b)
		})
		for _, name := range names[MaxKinds:] {
			delete(kinds, name)
		}
	}
	return &Profile{kinds: kinds}
}

// ErrCorrupt is matched by every [CorruptError].
var ErrCorrupt = errors.New("profile: corrupt")

// CorruptError reports a profile file that is not a profile. It matches
// [ErrCorrupt].
type CorruptError struct {
	Path string // the file
	Err  error  // what is wrong with it
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("profile: %s is corrupt: %v", e.Path, e.Err)
}

// Is reports whether target is [ErrCorrupt].
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

func (e *CorruptError) Unwrap() error { return e.Err }

// DefaultPath returns where the latency profile lives unless told
// otherwise, beside the orphan journal: $XDG_STATE_HOME/glidepath/profile.json,
// or, when XDG_STATE_HOME is unset or not absolute (the XDG spec says to
// ignore a relative one), ~/.local/state/glidepath/profile.json.
func DefaultPath() (string, error) {
	if dir := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "glidepath", "profile.json"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("profile: no default path: %w", err)
	}
	return filepath.Join(home, ".local", "state", "glidepath", "profile.json"), nil
}
