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
	// MaxPerKind is how many observations a kind keeps at one place: its
	// most recent. Enough for a stable nearest-rank p95, which then rests
	// on 13.
	MaxPerKind = 256
	// MaxKinds is how many places (a kind where it ran) a profile keeps:
	// those observed most recently.
	MaxKinds = 128
	// MaxKindLen bounds the length of a kind's name, and of a place's, in
	// bytes.
	MaxKindLen = 256
	// MaxCutsPerKind is how many cuts (attempts a quiet clock cut) a kind
	// keeps at one place: its most recent. Only the longest is used, and
	// each cut lets the next run wait at least twice as long, so a few
	// suffice.
	MaxCutsPerKind = 32
)

// maxFile bounds what [Load] reads: far above what [Record] writes, so a
// larger file is not a profile.
const maxFile = 16 << 20

// version is the format of the file; see the package documentation.
// Version 1 kept one pool per kind, whatever it ran against; its
// observations are read as placed nowhere, seed nothing, and are dropped
// by the next [Record].
const (
	version   = 2
	versionV1 = 1
)

// An Observation is the duration of one completed attempt of a step kind
// at one place, and when it was made.
type Observation struct {
	Kind string // the step kind: "model", "tool:NAME", "agent:NAME"

	// Where is the place the attempt ran against: for the model its name
	// and its server's host, for a tool its URL, command or MCP server
	// (SPEC §5b). A kind's latency at one place never estimates another's:
	// one model's history never refuses another model's calls. An
	// observation without a place is not recorded.
	Where string

	Duration time.Duration // how long the attempt took; not negative
	At       time.Time     // when it was observed, usually when it ended

	// Cut reports an attempt that a quiet clock cut (issue 27): it did not
	// finish, and Duration says only that the kind takes at least that
	// long at Where. A cut is kept apart from the attempts that finished
	// and never counts in their p50 and p95; the next run at Where allows
	// the kind's calls at least twice the longest one ([Profile.Seed]).
	Cut bool
}

// A Place is a step kind where it ran: the key of a profile's pools.
type Place struct {
	Kind, Where string
}

func cmpPlace(a, b Place) int {
	if c := strings.Compare(a.Kind, b.Kind); c != 0 {
		return c
	}
	return strings.Compare(a.Where, b.Where)
}

// Attempt returns the observation of an attempt of kind at where that ran
// from start to end: its duration is end − start (on the monotonic clock when
// both carry a reading, as times from [time.Now] do) and it is dated end,
// in UTC. Only attempts that finished are observations, as with
// [budget.Kind.Observe]: one cut short by its lease or the run says only
// that the call takes at least that long. One a quiet clock cut is kept
// as a cut ([CutAttempt]).
func Attempt(kind, where string, start, end time.Time) Observation {
	return Observation{Kind: kind, Where: where, Duration: end.Sub(start), At: end.UTC()}
}

// CutAttempt returns the cut of an attempt of kind at where that ran from
// start until a quiet clock cut it at end: as [Attempt], with
// [Observation.Cut] set.
func CutAttempt(kind, where string, start, end time.Time) Observation {
	o := Attempt(kind, where, start, end)
	o.Cut = true
	return o
}

// checkName returns why name cannot name the kind or the place (what) of
// a profile's pool, or nil.
func checkName(what, name string) error {
	switch {
	case name == "":
		return errors.New("no " + what)
	case len(name) > MaxKindLen:
		return fmt.Errorf("%s of %d bytes, over %d", what, len(name), MaxKindLen)
	case !utf8.ValidString(name):
		return errors.New(what + " is not UTF-8")
	}
	return nil
}

// check returns why o cannot be recorded, or nil.
func (o Observation) check() error {
	if err := checkName("kind", o.Kind); err != nil {
		return err
	}
	if err := checkName("place", o.Where); err != nil {
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

// A Profile is the observations of a latency profile, per step kind and
// place, as [Load] read them. It does not change once loaded and is safe
// for concurrent use. The zero Profile, and a nil *Profile, are empty.
type Profile struct {
	places map[Place][]sample // each sorted by cmpSample, without duplicates; Where "" for a version 1 file's
	cuts   map[Place][]sample // the cuts ([Observation.Cut]), likewise; never a version 1 file's
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
	Version *int        `json:"version"`
	Places  []filePlace `json:"places"`

	Kinds map[string][]fileSample `json:"kinds"` // version 1
}

type filePlace struct {
	Kind  *string      `json:"kind"`
	Where *string      `json:"where"`
	Obs   []fileSample `json:"obs"`
	Cuts  []fileSample `json:"cuts"` // optional: a file written before cuts were kept has none
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
	p := &Profile{places: make(map[Place][]sample), cuts: make(map[Place][]sample)}
	switch {
	case f.Version == nil:
		return nil, errors.New(`no "version"`)
	case *f.Version == versionV1:
		for kind, fs := range f.Kinds {
			if err := checkName("kind", kind); err != nil {
				return nil, fmt.Errorf("kind %q: %w", kind, err)
			}
			pl := Place{Kind: kind}
			if err := keep(p.places, pl, fs, fmt.Sprintf("%q observation", kind)); err != nil {
				return nil, err
			}
		}
		return p, nil
	case *f.Version != version:
		return nil, fmt.Errorf("version %d, want %d", *f.Version, version)
	}
	seen := make(map[Place]bool, len(f.Places))
	for i, fp := range f.Places {
		switch {
		case fp.Kind == nil:
			return nil, fmt.Errorf(`place %d: no "kind"`, i+1)
		case fp.Where == nil:
			return nil, fmt.Errorf(`place %d: no "where"`, i+1)
		}
		pl := Place{Kind: *fp.Kind, Where: *fp.Where}
		if err := checkName("kind", pl.Kind); err != nil {
			return nil, fmt.Errorf("place %d: %w", i+1, err)
		}
		if err := checkName("place", pl.Where); err != nil {
			return nil, fmt.Errorf("place %d (%s): %w", i+1, pl.Kind, err)
		}
		if seen[pl] {
			return nil, fmt.Errorf("place %d: %s at %q is listed twice", i+1, pl.Kind, pl.Where)
		}
		seen[pl] = true
		name := fmt.Sprintf("%s at %q", pl.Kind, pl.Where)
		if err := keep(p.places, pl, fp.Obs, name+" observation"); err != nil {
			return nil, err
		}
		if err := keep(p.cuts, pl, fp.Cuts, name+" cut"); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// keep checks the samples fs of pl, each named what and its number in
// errors, and keeps them in pool, sorted and without duplicates. A
// version 1 kind (Where "") is checked as if it had a place.
func keep(pool map[Place][]sample, pl Place, fs []fileSample, what string) error {
	ss := make([]sample, 0, len(fs))
	for i, s := range fs {
		if s.At == nil {
			return fmt.Errorf(`%s %d: no "at"`, what, i+1)
		}
		if s.NS == nil {
			return fmt.Errorf(`%s %d: no "ns"`, what, i+1)
		}
		o := Observation{Kind: pl.Kind, Where: cmp.Or(pl.Where, "-"), Duration: time.Duration(*s.NS), At: *s.At}
		if err := o.check(); err != nil {
			return fmt.Errorf("%s %d: %w", what, i+1, err)
		}
		ss = append(ss, sample{at: o.At.UTC(), d: o.Duration})
	}
	if len(ss) == 0 {
		return nil
	}
	slices.SortFunc(ss, cmpSample)
	pool[pl] = slices.CompactFunc(ss, func(a, b sample) bool { return cmpSample(a, b) == 0 })
	return nil
}

// keys returns the places of p with observations or cuts, in order of
// kind, then place.
func (p *Profile) keys() []Place {
	pls := slices.AppendSeq(slices.Collect(maps.Keys(p.places)), maps.Keys(p.cuts))
	slices.SortFunc(pls, cmpPlace)
	return slices.Compact(pls)
}

// encode renders p as a profile file: one line per observation and per
// cut, so that a person can read it, places in order of kind and place,
// each one's observations, then its cuts, oldest first.
func (p *Profile) encode() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\"version\":%d,\"places\":[", version)
	i := 0
	for _, pl := range p.keys() {
		if pl.Where == "" {
			continue // a version 1 file's, placed nowhere: never written back
		}
		if i > 0 {
			b.WriteByte(',')
		}
		i++
		kind, _ := json.Marshal(pl.Kind) // valid UTF-8 strings: cannot fail
		where, _ := json.Marshal(pl.Where)
		fmt.Fprintf(&b, "\n{\"kind\":%s,\"where\":%s,\"obs\":[", kind, where)
		writeSamples(&b, p.places[pl])
		if cuts := p.cuts[pl]; len(cuts) > 0 {
			b.WriteString("],\"cuts\":[")
			writeSamples(&b, cuts)
		}
		b.WriteString("]}")
	}
	b.WriteString("\n]}\n")
	return b.Bytes()
}

// writeSamples writes ss as the elements of a JSON array, one a line.
func writeSamples(b *bytes.Buffer, ss []sample) {
	for j, s := range ss {
		if j > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(b, "\n{\"at\":%q,\"ns\":%d}", s.at.Format(time.RFC3339Nano), int64(s.d))
	}
}

// Seed starts est from this machine's history at the places this run
// calls: for each kind, where(kind) names the place the run will call it
// at ("" for a kind the run does not know, which is not seeded). If the
// profile has observations of that kind at that place less than [MaxAge]
// old at now, Seed warms the kind's window with them ([budget.Kind.Warm])
// and declares their nearest-rank p50 and p95 ([budget.Kind.Declare]), so
// that a new run's p50 refusals and fit gate start from what the machine
// saw there. If it has cuts of the kind there as fresh, Seed teaches the
// kind the longest ([budget.Kind.Learn]): its calls are allowed at least
// twice that silence on the quiet clock (issue 27), rather than cut again
// where they were cut before. A kind's history at another place — another
// model, another server — is never used: it says nothing of this one.
//
// The declared estimates serve while the kind has too few observations to
// rank; a later Declare of the same kind, such as a tool's manifest hints,
// replaces them, but not the observations, which stand until the run's
// own push them out.
func (p *Profile) Seed(est *budget.Estimates, where func(kind string) string, now time.Time) {
	for pl, st := range p.at(where, now) {
		k := est.Kind(pl.Kind)
		if st.Count > 0 {
			k.Declare(st.P50, st.P95)
			k.Warm(fresh(p.places[pl], now))
		}
		if st.Cuts > 0 {
			k.Learn(st.Cut)
		}
	}
}

// at returns the summaries of the places where names, each kind's at
// most one: those a run that calls each kind at where(kind) starts from.
func (p *Profile) at(where func(kind string) string, now time.Time) map[Place]KindSummary {
	stats := p.stats(now)
	maps.DeleteFunc(stats, func(pl Place, _ KindSummary) bool { return pl.Where == "" || where(pl.Kind) != pl.Where })
	return stats
}

// fresh are the durations of ss less than MaxAge old at now, oldest first.
func fresh(ss []sample, now time.Time) []time.Duration {
	var ds []time.Duration
	for _, s := range ss {
		if s.fresh(now) {
			ds = append(ds, s.d)
		}
	}
	return ds
}

// A Summary is what [Profile.Summary] says of a profile: its places in
// order of kind, then place. Its JSON form is the one of "harness profile
// --json" (SPEC §5b).
type Summary struct {
	Kinds []KindSummary `json:"kinds"` // never null in JSON
}

// KindSummary is one kind at one place of a [Summary].
type KindSummary struct {
	Kind     string
	Where    string        // "" for a version 1 profile's, which seeds nothing
	Count    int           // observations less than MaxAge old; 0 for a place with only cuts
	P50, P95 time.Duration // nearest rank over them; 0 when there are none

	// Cuts is how many attempts a quiet clock cut there, less than MaxAge
	// old, and Cut the longest of them: the next run at this place allows
	// the kind's calls at least twice Cut ([Profile.Seed]).
	Cuts int
	Cut  time.Duration

	Oldest, Newest time.Time // the dates of the oldest and newest of them, observations and cuts, in UTC
}

// MarshalJSON renders k as {"kind","where","count","p50_ms","p95_ms",
// "cuts","cut_ms","oldest","newest"}: durations in milliseconds, rounded
// to the nearest, and dates in RFC 3339.
func (k KindSummary) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind   string    `json:"kind"`
		Where  string    `json:"where"`
		Count  int       `json:"count"`
		P50Ms  int64     `json:"p50_ms"`
		P95Ms  int64     `json:"p95_ms"`
		Cuts   int       `json:"cuts"`
		CutMs  int64     `json:"cut_ms"`
		Oldest time.Time `json:"oldest"`
		Newest time.Time `json:"newest"`
	}{k.Kind, k.Where, k.Count, roundMs(k.P50), roundMs(k.P95), k.Cuts, roundMs(k.Cut), k.Oldest, k.Newest})
}

func roundMs(d time.Duration) int64 { return d.Round(time.Millisecond).Milliseconds() }

// Summary returns, for each kind and place with observations or cuts less
// than [MaxAge] old at now, their count, p50, p95, longest cut and dates:
// what [Profile.Seed] would declare and teach for a run that calls the
// kind there.
func (p *Profile) Summary(now time.Time) Summary {
	stats := p.stats(now)
	s := Summary{Kinds: make([]KindSummary, 0, len(stats))}
	for _, pl := range slices.SortedFunc(maps.Keys(stats), cmpPlace) {
		s.Kinds = append(s.Kinds, stats[pl])
	}
	return s
}

// stats computes the summary of every place with fresh observations or
// cuts.
func (p *Profile) stats(now time.Time) map[Place]KindSummary {
	if p == nil {
		return nil
	}
	out := make(map[Place]KindSummary, len(p.places))
	for _, pl := range p.keys() {
		k := KindSummary{Kind: pl.Kind, Where: pl.Where}
		ds := fresh(p.places[pl], now)
		if k.Count = len(ds); k.Count > 0 {
			slices.Sort(ds)
			k.P50, k.P95 = quantile(ds, 50), quantile(ds, 95)
		}
		cuts := fresh(p.cuts[pl], now)
		if k.Cuts = len(cuts); k.Cuts > 0 {
			k.Cut = slices.Max(cuts)
		}
		for _, ss := range [...][]sample{p.places[pl], p.cuts[pl]} {
			for _, s := range ss {
				if !s.fresh(now) {
					continue
				}
				if k.Oldest.IsZero() || s.at.Before(k.Oldest) {
					k.Oldest = s.at
				}
				if s.at.After(k.Newest) {
					k.Newest = s.at
				}
			}
		}
		if k.Count+k.Cuts > 0 {
			out[pl] = k
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

// merge returns p with obs added, observations and cuts that are not
// fresh at now dropped, a version 1 file's observations (placed nowhere)
// dropped, duplicates removed and the bounds applied: the MaxPerKind most
// recent observations and the MaxCutsPerKind most recent cuts of each
// place, and the MaxKinds places observed (or cut) most recently (of
// places that tie, those that sort first).
func (p *Profile) merge(obs []Observation, now time.Time) *Profile {
	m := &Profile{
		places: mergePool(p.places, obs, false, MaxPerKind, now),
		cuts:   mergePool(p.cuts, obs, true, MaxCutsPerKind, now),
	}
	keys := m.keys()
	if len(keys) <= MaxKinds {
		return m
	}
	latest := func(pl Place) (t time.Time) {
		for _, ss := range [...][]sample{m.places[pl], m.cuts[pl]} {
			if len(ss) > 0 && ss[len(ss)-1].at.After(t) {
				t = ss[len(ss)-1].at
			}
		}
		return t
	}
	slices.SortStableFunc(keys, func(a, b Place) int {
		return latest(b).Compare(latest(a)) // most recent first; keys sort by place, which breaks ties
	})
	for _, pl := range keys[MaxKinds:] {
		delete(m.places, pl)
		delete(m.cuts, pl)
	}
	return m
}

// mergePool returns the placed samples of pool with those of obs whose
// Cut is cut added, those not fresh at now dropped, sorted, without
// duplicates and at most limit, the most recent, per place.
func mergePool(pool map[Place][]sample, obs []Observation, cut bool, limit int, now time.Time) map[Place][]sample {
	out := make(map[Place][]sample, len(pool)+1)
	for pl, ss := range pool {
		if pl.Where != "" {
			out[pl] = slices.Clone(ss)
		}
	}
	for _, o := range obs {
		if o.Cut == cut {
			pl := Place{Kind: o.Kind, Where: o.Where}
			out[pl] = append(out[pl], sample{at: o.At.UTC(), d: o.Duration})
		}
	}
	for pl, ss := range out {
		ss = slices.DeleteFunc(ss, func(s sample) bool { return !s.fresh(now) })
		slices.SortFunc(ss, cmpSample)
		ss = slices.CompactFunc(ss, func(a, b sample) bool { return cmpSample(a, b) == 0 })
		if len(ss) > limit {
			ss = slices.Clone(ss[len(ss)-limit:])
		}
		if len(ss) == 0 {
			delete(out, pl)
			continue
		}
		out[pl] = ss
	}
	return out
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

// Durations returns, for each kind whose place where names, the durations
// of its observations there less than [MaxAge] old at now, oldest first:
// what [Profile.Seed] warms a kind with, for a run whose estimates are
// not a [budget.Estimates] of this process (a Temporal workflow's, which
// its caller hands them in its input). Kinds without any are left out; a
// nil map: none.
func (p *Profile) Durations(where func(kind string) string, now time.Time) map[string][]time.Duration {
	var out map[string][]time.Duration
	for pl, st := range p.at(where, now) {
		if st.Count == 0 {
			continue
		}
		if out == nil {
			out = map[string][]time.Duration{}
		}
		out[pl.Kind] = fresh(p.places[pl], now)
	}
	return out
}

// Learned returns, for each kind whose place where names, the longest of
// its cuts there less than [MaxAge] old at now: what [Profile.Seed]
// teaches a kind ([budget.Kind.Learn]), for a run whose estimates live
// elsewhere, as for [Profile.Durations]. Kinds without any are left out;
// a nil map: none.
func (p *Profile) Learned(where func(kind string) string, now time.Time) map[string]time.Duration {
	var out map[string]time.Duration
	for pl, st := range p.at(where, now) {
		if st.Cuts == 0 {
			continue
		}
		if out == nil {
			out = map[string]time.Duration{}
		}
		out[pl.Kind] = st.Cut
	}
	return out
}
