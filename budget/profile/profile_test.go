package profile_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/budget/profile"
)

var now = time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)

// record records obs into a new profile at now and loads it back.
func record(t *testing.T, now time.Time, obs ...profile.Observation) (*profile.Profile, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "glidepath", "profile.json")
	if err := profile.Record(t.Context(), path, obs, now); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return p, path
}

// series returns one observation of kind per duration, a second apart
// and ending at now.
func series(kind string, ds ...time.Duration) []profile.Observation {
	obs := make([]profile.Observation, len(ds))
	for i, d := range ds {
		obs[i] = profile.Observation{Where: here, Kind: kind, Duration: d, At: now.Add(-time.Duration(len(ds)-1-i) * time.Second)}
	}
	return obs
}

func ms(ns ...int) []time.Duration {
	ds := make([]time.Duration, len(ns))
	for i, n := range ns {
		ds[i] = time.Duration(n) * time.Millisecond
	}
	return ds
}

func seq(from, to int) []time.Duration {
	var ds []time.Duration
	for i := from; i <= to; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	return ds
}

func shuffled(ds []time.Duration) []time.Duration {
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(ds), func(i, j int) { ds[i], ds[j] = ds[j], ds[i] })
	return ds
}

func TestPercentilesAreNearestRank(t *testing.T) {
	cases := []struct {
		name     string
		ds       []time.Duration
		p50, p95 time.Duration
	}{
		{"one observation is both percentiles", ms(700), 700 * time.Millisecond, 700 * time.Millisecond},
		{"of two, p50 is the first and p95 the second", ms(200, 100), 100 * time.Millisecond, 200 * time.Millisecond},
		{"of ten, p95 is the largest", seq(1, 10), 5 * time.Millisecond, 10 * time.Millisecond},
		{"of twenty, p95 is the 19th", seq(1, 20), 10 * time.Millisecond, 19 * time.Millisecond},
		{"of 21, ranks round up", seq(1, 21), 11 * time.Millisecond, 20 * time.Millisecond},
		{"of 100 in any order, the 50th and the 95th", shuffled(seq(1, 100)), 50 * time.Millisecond, 95 * time.Millisecond},
		{"equal durations at different dates all count", ms(3, 3, 3, 9), 3 * time.Millisecond, 9 * time.Millisecond},
		{"a zero duration counts", ms(0, 0, 5), 0, 5 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := record(t, now, series("model", tc.ds...)...)
			got := p.Summary(now).Kinds
			if len(got) != 1 {
				t.Fatalf("Summary = %+v, want one kind", got)
			}
			if got[0].Count != len(tc.ds) || got[0].P50 != tc.p50 || got[0].P95 != tc.p95 {
				t.Errorf("count %d, p50 %v, p95 %v; want %d, %v, %v", got[0].Count, got[0].P50, got[0].P95, len(tc.ds), tc.p50, tc.p95)
			}
			if len(tc.ds) > 64 {
				return // a run's estimate ranks the budget's window, its most recent 64: seeded below
			}
			est := budget.NewEstimates()
			p.Seed(est, atHere, now)
			if k := est.Kind("model"); k.P50() != tc.p50 || k.P95() != tc.p95 {
				t.Errorf("Seed declared p50 %v, p95 %v; want %v, %v", k.P50(), k.P95(), tc.p50, tc.p95)
			}
		})
	}
}

// SPEC §5b: observations older than 7 days drop out. Ages are exact under
// synctest's clock, which Record, Seed and Summary are given.
func TestObservationsDropOutAtSevenDays(t *testing.T) {
	cases := []struct {
		name  string
		age   time.Duration // now − the observation's date
		fresh bool
	}{
		{"one made now counts", 0, true},
		{"one a nanosecond short of 7 days old counts", profile.MaxAge - 1, true},
		{"one exactly 7 days old is dropped", profile.MaxAge, false},
		{"one 30 days old is dropped", 30 * 24 * time.Hour, false},
		{"one dated an hour ahead, a clock a little off, counts", -time.Hour, true},
		{"one dated 7 days ahead, a clock that was wrong, is dropped", -profile.MaxAge, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				now := time.Now()
				keep := profile.Observation{Where: here, Kind: "tool:keep", Duration: time.Second, At: now}
				obs := profile.Observation{Where: here, Kind: "model", Duration: 3 * time.Second, At: now.Add(-tc.age)}
				p, _ := record(t, now, keep, obs)
				got := p.Summary(now.Add(-tc.age)) // at its own date, any observation the file kept is fresh
				kept := len(got.Kinds) == 2
				if kept != tc.fresh {
					t.Errorf("Record kept it: %v, want %v (%+v)", kept, tc.fresh, got)
				}
				est := budget.NewEstimates()
				p.Seed(est, atHere, now)
				if seeded := est.Kind("model").P50() == 3*time.Second; seeded != tc.fresh {
					t.Errorf("Seed declared it: %v, want %v", seeded, tc.fresh)
				}
			})
		})
	}
}

// A profile read a week after it was written seeds nothing from it, and
// the next Record drops what aged out.
func TestAProfileAgesOutAsTimePasses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p, path := record(t, start, profile.Attempt("model", here, start.Add(-2*time.Second), start))

		time.Sleep(profile.MaxAge - time.Nanosecond)
		est := budget.NewEstimates()
		p.Seed(est, atHere, time.Now())
		if got := est.Kind("model").P95(); got != 2*time.Second {
			t.Fatalf("p95 seeded a nanosecond before 7 days = %v, want 2s", got)
		}

		time.Sleep(time.Nanosecond)
		est = budget.NewEstimates()
		p.Seed(est, atHere, time.Now())
		if got := est.Kind("model").P95(); got != 0 {
			t.Fatalf("p95 seeded at 7 days = %v, want none", got)
		}
		if got := p.Summary(time.Now()).Kinds; len(got) != 0 {
			t.Fatalf("Summary at 7 days = %+v, want no kinds", got)
		}

		next := profile.Observation{Where: here, Kind: "tool:search", Duration: time.Millisecond, At: time.Now()}
		if err := profile.Record(t.Context(), path, []profile.Observation{next}, time.Now()); err != nil {
			t.Fatal(err)
		}
		p, err := profile.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Summary(start).Kinds; len(got) != 0 {
			t.Errorf("the file after the next Record still holds %+v from the start", got)
		}
		if got := p.Summary(time.Now()).Kinds; len(got) != 1 || got[0].Kind != "tool:search" {
			t.Errorf("the file after the next Record holds %+v, want tool:search", got)
		}
	})
}

func TestRecordBoundsTheProfile(t *testing.T) {
	t.Run("a kind keeps its most recent observations", func(t *testing.T) {
		ds := make([]time.Duration, profile.MaxPerKind+10)
		for i := range ds {
			ds[i] = time.Duration(i+1) * time.Millisecond // the oldest are the fastest
		}
		obs := series("model", ds...)
		p, _ := record(t, now, obs...)
		k := p.Summary(now).Kinds[0]
		if k.Count != profile.MaxPerKind || !k.Oldest.Equal(obs[10].At) || !k.Newest.Equal(now) {
			t.Errorf("count %d from %v to %v; want %d from %v to %v", k.Count, k.Oldest, k.Newest, profile.MaxPerKind, obs[10].At, now)
		}
		if want := ds[10+profile.MaxPerKind/2-1]; k.P50 != want {
			t.Errorf("p50 %v, want %v: the 10 oldest should be gone", k.P50, want)
		}
	})
	t.Run("a profile keeps the kinds observed most recently", func(t *testing.T) {
		var obs []profile.Observation
		for i := range profile.MaxKinds + 3 {
			// tool:000 to tool:003 tie as the least recent.
			at := now.Add(-time.Duration(profile.MaxKinds+3-max(i, 3)) * time.Minute)
			obs = append(obs, profile.Observation{Where: here, Kind: fmt.Sprintf("tool:%03d", i), Duration: time.Second, At: at})
		}
		p, _ := record(t, now, obs...)
		kinds := p.Summary(now).Kinds
		if len(kinds) != profile.MaxKinds {
			t.Fatalf("%d kinds, want %d", len(kinds), profile.MaxKinds)
		}
		// Of the four that tie, the name that sorts first is kept.
		got := kinds[0].Kind + " " + kinds[1].Kind + " … " + kinds[len(kinds)-1].Kind
		if want := fmt.Sprintf("tool:000 tool:004 … tool:%03d", profile.MaxKinds+2); got != want {
			t.Errorf("the kinds kept are %s, want %s", got, want)
		}
	})
	t.Run("a full profile stays under 3 MiB", func(t *testing.T) {
		var obs []profile.Observation
		for k := range profile.MaxKinds {
			kind := fmt.Sprintf("%03d", k) + strings.Repeat("x", profile.MaxKindLen-3)
			for i := range profile.MaxPerKind {
				at := now.Add(-time.Duration(i)*time.Second - 123456789)
				obs = append(obs, profile.Observation{Where: here, Kind: kind, Duration: time.Duration(1<<62 + i), At: at})
			}
			for i := range profile.MaxCutsPerKind {
				at := now.Add(-time.Duration(i)*time.Second - 123456789)
				obs = append(obs, profile.Observation{Where: here, Kind: kind, Duration: time.Duration(1<<62 + i), At: at, Cut: true})
			}
		}
		_, path := record(t, now, obs...)
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() >= 3<<20 {
			t.Errorf("a full profile is %d bytes, over 3 MiB", fi.Size())
		}
	})
}

func TestRecordRefusesAnObservationItCannotKeep(t *testing.T) {
	ok := profile.Observation{Where: here, Kind: "model", Duration: time.Second, At: now}
	cases := []struct {
		name string
		bad  profile.Observation
		want string
	}{
		{"one without a kind", profile.Observation{Where: here, Duration: time.Second, At: now}, "no kind"},
		{"one without a place", profile.Observation{Kind: "model", Duration: time.Second, At: now}, "no place"},
		{"one with a negative duration", profile.Observation{Where: here, Kind: "model", Duration: -time.Millisecond, At: now}, "negative duration"},
		{"one without a date", profile.Observation{Where: here, Kind: "model", Duration: time.Second}, "no date"},
		{"one with a kind too long", profile.Observation{Where: here, Kind: strings.Repeat("k", profile.MaxKindLen+1), At: now}, "over 256"},
		{"one with a kind that is not UTF-8", profile.Observation{Where: here, Kind: "tool:\xff", At: now}, "not UTF-8"},
		{"one dated after year 9999", profile.Observation{Where: here, Kind: "model", At: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, "outside years"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "profile.json")
			err := profile.Record(t.Context(), path, []profile.Observation{ok, tc.bad}, now)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "observation 2") {
				t.Fatalf("Record = %v, want an error naming observation 2: %s", err, tc.want)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("Record wrote the profile anyway: %v", err)
			}
		})
	}
}

func TestRecordingABatchTwiceChangesNothing(t *testing.T) {
	obs := series("model", ms(100, 200, 300)...)
	_, path := record(t, now, obs...)
	first, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := profile.Record(t.Context(), path, obs, now); err != nil {
		t.Fatal(err)
	}
	second, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(first) != string(second) {
		t.Errorf("recording the batch again changed the file:\n%s\nthen\n%s", first, second)
	}
}

func TestRecordNeedsNoObservations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profile.json")
	if err := profile.Record(t.Context(), path, nil, now); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Record of nothing made a file: %v", err)
	}
}

func TestLoad(t *testing.T) {
	good := `{"version":1,"kinds":{"model":[{"at":"2026-05-04T08:59:59Z","ns":1000000}]}}`
	cases := []struct {
		name    string
		content *string // nil: no file
		kinds   int     // fresh kinds loaded
		corrupt string  // what the error must say, after the file's name; "" for none
	}{
		{name: "a missing file is an empty profile", content: nil},
		{name: "an empty file is an empty profile", content: new("")},
		{name: "a profile with no kinds is empty", content: new(`{"version":1}`)},
		{name: "a profile loads", content: new(good), kinds: 1},
		{name: "unknown fields are ignored", content: new(`{"version":1,"by":"x","kinds":{"model":[{"at":"2026-05-04T08:59:59Z","ns":1,"outcome":"ok"}]}}`), kinds: 1},
		{name: "a kind with no observations is no kind", content: new(`{"version":1,"kinds":{"model":[]}}`)},
		{name: "text that is not JSON is corrupt", content: new("not json"), corrupt: "invalid character 'o' in literal null (expecting 'u'), at byte 2"},
		{name: "a profile cut short is corrupt", content: new(good[:40]), corrupt: "unexpected end of JSON input"},
		{name: "a profile without a version is corrupt", content: new(`{"kinds":{}}`), corrupt: `no "version"`},
		{name: "a profile of another version is corrupt", content: new(`{"version":3,"places":[]}`), corrupt: "version 3, want 2"},
		{name: "a place without a kind is corrupt", content: new(`{"version":2,"places":[{"where":"x","obs":[]}]}`), corrupt: `place 1: no "kind"`},
		{name: "a place without a where is corrupt", content: new(`{"version":2,"places":[{"kind":"model","obs":[]}]}`), corrupt: `place 1: no "where"`},
		{name: "an empty where is corrupt", content: new(`{"version":2,"places":[{"kind":"model","where":"","obs":[]}]}`), corrupt: `place 1 (model): no place`},
		{name: "a place listed twice is corrupt", content: new(`{"version":2,"places":[{"kind":"model","where":"x","obs":[]},{"kind":"model","where":"x","obs":[]}]}`), corrupt: `place 2: model at "x" is listed twice`},
		{name: "an observation of a place without a date is corrupt", content: new(`{"version":2,"places":[{"kind":"model","where":"x","obs":[{"ns":5}]}]}`), corrupt: `model at "x" observation 1: no "at"`},
		{name: "an observation without a date is corrupt", content: new(`{"version":1,"kinds":{"model":[{"ns":5}]}}`), corrupt: `"model" observation 1: no "at"`},
		{name: "an observation without a duration is corrupt", content: new(`{"version":1,"kinds":{"model":[{"at":"2026-05-04T08:59:59Z"}]}}`), corrupt: `"model" observation 1: no "ns"`},
		{name: "a negative duration is corrupt", content: new(`{"version":1,"kinds":{"model":[{"at":"2026-05-04T08:59:59Z","ns":-1}]}}`), corrupt: "negative duration"},
		{name: "a date that is not RFC 3339 is corrupt", content: new(`{"version":1,"kinds":{"model":[{"at":"yesterday","ns":1}]}}`), corrupt: "cannot parse"},
		{name: "a kind without a name is corrupt", content: new(`{"version":1,"kinds":{"":[]}}`), corrupt: `kind "": no kind`},
		{name: "kinds that are not an object are corrupt", content: new(`{"version":1,"kinds":[]}`), corrupt: "cannot unmarshal array"},
		{name: "a place written before cuts were kept loads", content: new(`{"version":2,"places":[{"kind":"model","where":"x","obs":[{"at":"2026-05-04T08:59:59Z","ns":5}]}]}`), kinds: 1},
		{name: "a place with cuts alone loads", content: new(`{"version":2,"places":[{"kind":"model","where":"x","cuts":[{"at":"2026-05-04T08:59:59Z","ns":5}]}]}`), kinds: 1},
		{name: "a cut with a negative duration is corrupt", content: new(`{"version":2,"places":[{"kind":"model","where":"x","obs":[],"cuts":[{"at":"2026-05-04T08:59:59Z","ns":-1}]}]}`), corrupt: `model at "x" cut 1: negative duration`},
		{name: "a cut without a date is corrupt", content: new(`{"version":2,"places":[{"kind":"model","where":"x","cuts":[{"ns":5}]}]}`), corrupt: `model at "x" cut 1: no "at"`},
		{name: "a cut without a duration is corrupt", content: new(`{"version":2,"places":[{"kind":"model","where":"x","cuts":[{"at":"2026-05-04T08:59:59Z"}]}]}`), corrupt: `model at "x" cut 1: no "ns"`},
		{name: "cuts that are not an array are corrupt", content: new(`{"version":2,"places":[{"kind":"model","where":"x","cuts":{}}]}`), corrupt: "cannot unmarshal object"},
		{name: "a file of more than 16 MiB is corrupt", content: new(strings.Repeat(" ", 16<<20+1)), corrupt: "over 16 MiB"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "profile.json")
			if tc.content != nil {
				if err := os.WriteFile(path, []byte(*tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			p, err := profile.Load(path)
			if p == nil {
				t.Fatal("Load returned no profile")
			}
			if got := len(p.Summary(now).Kinds); got != tc.kinds {
				t.Errorf("%d kinds, want %d", got, tc.kinds)
			}
			if tc.corrupt == "" {
				if err != nil {
					t.Fatalf("Load = %v, want no error", err)
				}
				return
			}
			ce, ok := errors.AsType[*profile.CorruptError](err)
			if !ok || !errors.Is(err, profile.ErrCorrupt) || ce.Path != path {
				t.Fatalf("Load = %v, want a *CorruptError for %s", err, path)
			}
			if want := "profile: " + path + " is corrupt: "; !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), tc.corrupt) {
				t.Errorf("Load = %q, want %q followed by %q", err, want, tc.corrupt)
			}
		})
	}
}

func TestLoadOfAFolderIsAnErrorButNotCorrupt(t *testing.T) {
	dir := t.TempDir()
	p, err := profile.Load(dir)
	if err == nil || errors.Is(err, profile.ErrCorrupt) || p == nil {
		t.Fatalf("Load(folder) = %v, %v; want an empty profile and an error that is not ErrCorrupt", p, err)
	}
}

// A corrupt profile is set aside, not lost, and the new observations
// start a fresh one.
func TestRecordReplacesACorruptProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profile.json")
	if err := os.WriteFile(path, []byte("{broken"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := profile.Record(t.Context(), path, series("model", time.Second), now); err != nil {
		t.Fatal(err)
	}
	if kept, err := os.ReadFile(path + ".corrupt"); err != nil || string(kept) != "{broken" {
		t.Errorf("the corrupt file kept aside: %q, %v", kept, err)
	}
	p, err := profile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Summary(now).Kinds; len(got) != 1 || got[0].Count != 1 {
		t.Errorf("after replacing: %+v, want the one new observation", got)
	}
}

func TestRecordCreatesAPrivateFile(t *testing.T) {
	_, path := record(t, now, series("model", time.Second)...)
	for _, name := range []string{path, filepath.Dir(path)} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		want := os.FileMode(0o600)
		if fi.IsDir() {
			want = 0o700
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s has mode %v, want %v", name, got, want)
		}
	}
}

func TestSeed(t *testing.T) {
	p, _ := record(t, now,
		append(series("model", ms(800, 900, 1000, 4000)...),
			profile.Observation{Where: here, Kind: "tool:old", Duration: time.Hour, At: now.Add(-profile.MaxAge)})...)

	t.Run("a seeded p50 refuses a lease that cannot fit it", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b, err := budget.New(budget.Config{Total: time.Second, Reserve: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			k := b.Estimates().Kind("model")
			if _, err := b.Lease(k, 0); err != nil {
				t.Fatalf("cold, the lease is refused: %v", err)
			}
			p.Seed(b.Estimates(), atHere, now)
			_, err = b.Lease(k, 0)
			re, ok := errors.AsType[*budget.RefusedError](err)
			if !ok || re.Rule != budget.BelowP50 || re.Need != 900*time.Millisecond {
				t.Fatalf("seeded, Lease = %v; want refused below p50 900ms", err)
			}
			if k.P95() != 4*time.Second {
				t.Errorf("seeded p95 = %v, want 4s for the fit gate", k.P95())
			}
		})
	})
	t.Run("a kind without fresh observations keeps its estimate", func(t *testing.T) {
		est := budget.NewEstimates()
		est.Kind("tool:old").Declare(time.Second, 2*time.Second)
		p.Seed(est, atHere, now)
		if k := est.Kind("tool:old"); k.P50() != time.Second || k.P95() != 2*time.Second {
			t.Errorf("tool:old = %v, %v; want the declared 1s, 2s", k.P50(), k.P95())
		}
	})
	t.Run("a kind's history at another place seeds nothing", func(t *testing.T) {
		// Another model's 2s p50, on another server, must not refuse the
		// calls of this run's model.
		est := budget.NewEstimates()
		p.Seed(est, func(string) string { return "gpt-5 @ api.openai.com" }, now)
		if k := est.Kind("model"); k.P50() != 0 || k.P95() != 0 {
			t.Errorf("model = %v, %v; want no estimate from another place's history", k.P50(), k.P95())
		}
	})
	t.Run("a kind the run does not place seeds nothing", func(t *testing.T) {
		est := budget.NewEstimates()
		p.Seed(est, func(string) string { return "" }, now)
		if k := est.Kind("model"); k.P50() != 0 {
			t.Errorf("model p50 = %v, want none", k.P50())
		}
	})
	t.Run("an empty or nil profile seeds nothing", func(t *testing.T) {
		for _, p := range []*profile.Profile{{}, nil} {
			est := budget.NewEstimates()
			p.Seed(est, atHere, now)
			if got := p.Summary(now).Kinds; got == nil || len(got) != 0 {
				t.Errorf("Summary of %v = %#v, want no kinds, not nil", p, got)
			}
			if est.Kind("model").P50() != 0 {
				t.Errorf("%v seeded model", p)
			}
		}
	})
}

func TestSummaryJSONIsTheShapeOfSPEC5b(t *testing.T) {
	p, _ := record(t, now,
		profile.Observation{Where: here, Kind: "tool:search", Duration: 1499 * time.Microsecond, At: now.Add(-time.Hour)},
		profile.Observation{Where: here, Kind: "model", Duration: 812 * time.Millisecond, At: now.Add(-2 * time.Hour)},
		profile.Observation{Where: here, Kind: "model", Duration: 1430*time.Millisecond + 500*time.Microsecond, At: now.Add(-30 * time.Second).Add(250 * time.Millisecond)},
		profile.Observation{Where: here, Kind: "model", Duration: 2 * time.Second, At: now.Add(-3 * time.Hour), Cut: true},
		profile.Observation{Where: here, Kind: "tool:slow", Duration: 1500 * time.Millisecond, At: now.Add(-time.Minute), Cut: true},
	)
	got, err := json.Marshal(p.Summary(now))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kinds":[` +
		`{"kind":"model","where":"sim (embedded)","count":2,"p50_ms":812,"p95_ms":1431,"cuts":1,"cut_ms":2000,"oldest":"2026-05-04T06:00:00Z","newest":"2026-05-04T08:59:30.25Z"},` +
		`{"kind":"tool:search","where":"sim (embedded)","count":1,"p50_ms":1,"p95_ms":1,"cuts":0,"cut_ms":0,"oldest":"2026-05-04T08:00:00Z","newest":"2026-05-04T08:00:00Z"},` +
		`{"kind":"tool:slow","where":"sim (embedded)","count":0,"p50_ms":0,"p95_ms":0,"cuts":1,"cut_ms":1500,"oldest":"2026-05-04T08:59:00Z","newest":"2026-05-04T08:59:00Z"}]}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	empty, _ := json.Marshal((&profile.Profile{}).Summary(now))
	if string(empty) != `{"kinds":[]}` {
		t.Errorf("empty: %s", empty)
	}
}

func TestAttemptIsTheDurationFromStartToEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		time.Sleep(1500 * time.Millisecond)
		end := time.Now()
		o := profile.Attempt("tool:search", here, start, end)
		if o.Kind != "tool:search" || o.Duration != 1500*time.Millisecond || !o.At.Equal(end) || o.At.Location() != time.UTC {
			t.Errorf("Attempt = %+v, want tool:search, 1.5s, at %v in UTC", o, end)
		}
	})
}

func TestDefaultPath(t *testing.T) {
	home := t.TempDir()
	cases := []struct {
		name, xdg, want string
	}{
		{"under XDG_STATE_HOME", "/var/state", "/var/state/glidepath/profile.json"},
		{"a relative XDG_STATE_HOME is ignored", "rel/state", filepath.Join(home, ".local/state/glidepath/profile.json")},
		{"without XDG_STATE_HOME, under the home folder", "", filepath.Join(home, ".local/state/glidepath/profile.json")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HOME", home)
			t.Setenv("XDG_STATE_HOME", tc.xdg)
			got, err := profile.DefaultPath()
			if err != nil || got != tc.want {
				t.Errorf("DefaultPath() = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// here is the one place the tests' observations are made at, and atHere
// places every kind there, for Seed.
const here = "sim (embedded)"

func atHere(string) string { return here }

// A profile written before places were kept (version 1) pooled every
// model and server together: it is read, seeds nothing, and the next
// Record drops it rather than carry it on.
func TestAVersion1ProfileSeedsNothingAndIsDroppedByTheNextRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profile.json")
	v1 := `{"version":1,"kinds":{"model":[{"at":"2026-05-04T08:59:59Z","ns":2000000000}]}}`
	if err := os.WriteFile(path, []byte(v1), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	est := budget.NewEstimates()
	p.Seed(est, atHere, now)
	if k := est.Kind("model"); k.P50() != 0 {
		t.Errorf("a version 1 profile seeded model with p50 %v", k.P50())
	}
	if got := p.Summary(now).Kinds; len(got) != 1 || got[0].Where != "" {
		t.Errorf("summary %+v, want the one unplaced kind, so that harness profile shows it", got)
	}
	if err := profile.Record(t.Context(), path, series("tool:search", ms(10)...), now); err != nil {
		t.Fatal(err)
	}
	p, err = profile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	got := p.Summary(now).Kinds
	if len(got) != 1 || got[0].Kind != "tool:search" || got[0].Where != here {
		t.Errorf("after a Record: %+v, want only the new placed observations", got)
	}
}
