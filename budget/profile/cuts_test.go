package profile_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/budget/profile"
	"github.com/glidepath/glidepath/watchdog"
)

// cut returns a cut of kind at here, of d, made ago before now.
func cut(kind string, d, ago time.Duration) profile.Observation {
	return profile.Observation{Where: here, Kind: kind, Duration: d, At: now.Add(-ago), Cut: true}
}

// Issue 27: what a quiet clock cut is written beside the observations,
// read back as it was, and recording it again changes nothing.
func TestCutsMakeARoundTrip(t *testing.T) {
	obs := append(series("model", ms(800, 900)...), cut("model", 2*time.Second, time.Hour), cut("model", 3*time.Second, time.Minute),
		cut("tool:slow", 1500*time.Millisecond, time.Second))
	p, path := record(t, now, obs...)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"version":2,"places":[
{"kind":"model","where":"sim (embedded)","obs":[
{"at":"2026-05-04T08:59:59Z","ns":800000000},
{"at":"2026-05-04T09:00:00Z","ns":900000000}],"cuts":[
{"at":"2026-05-04T08:00:00Z","ns":2000000000},
{"at":"2026-05-04T08:59:00Z","ns":3000000000}]},
{"kind":"tool:slow","where":"sim (embedded)","obs":[],"cuts":[
{"at":"2026-05-04T08:59:59Z","ns":1500000000}]}
]}
`
	if string(data) != want {
		t.Errorf("the file:\n%s\nwant:\n%s", data, want)
	}
	got := p.Summary(now).Kinds
	if len(got) != 2 || got[0].Cuts != 2 || got[0].Cut != 3*time.Second || got[1].Count != 0 || got[1].Cuts != 1 || got[1].Cut != 1500*time.Millisecond {
		t.Errorf("Summary = %+v, want model's 2 cuts, longest 3s, and tool:slow's one of 1.5s", got)
	}
	if err := profile.Record(t.Context(), path, obs, now); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(path); string(again) != string(data) {
		t.Errorf("recording the cuts again changed the file:\n%s", again)
	}
}

// Observe's rule: only a call that finished is an observation. A cut
// says only "at least", and however long or short it is, it moves
// neither percentile, nor what Seed warms a kind with.
func TestACutNeverChangesTheP50OrP95(t *testing.T) {
	ds := ms(100, 200, 300, 400)
	cases := []struct {
		name string
		cuts []time.Duration
	}{
		{"a cut longer than every observation", ms(5000)},
		{"a cut shorter than every observation", ms(1)},
		{"many cuts between them", ms(150, 250, 350, 150, 250, 350)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obs := series("model", ds...)
			for i, d := range tc.cuts {
				obs = append(obs, cut("model", d, time.Duration(i)*time.Minute))
			}
			p, _ := record(t, now, obs...)
			k := p.Summary(now).Kinds[0]
			if k.Count != 4 || k.P50 != 200*time.Millisecond || k.P95 != 400*time.Millisecond {
				t.Errorf("count %d, p50 %v, p95 %v; want 4, 200ms, 400ms as without cuts", k.Count, k.P50, k.P95)
			}
			if got := p.Durations(atHere, now)["model"]; !slices.Equal(got, ds) {
				t.Errorf("Durations = %v, want %v", got, ds)
			}
			est := budget.NewEstimates()
			p.Seed(est, atHere, now)
			if m := est.Kind("model"); m.P50() != 200*time.Millisecond || m.P95() != 400*time.Millisecond || m.Expected().P95 != 400*time.Millisecond {
				t.Errorf("seeded p50 %v, p95 %v, expected %+v; want 200ms, 400ms", m.P50(), m.P95(), m.Expected())
			}
		})
	}
}

// Seed teaches each kind the longest fresh cut at its place: its
// allowance is then at least twice it, and says it was learned where that
// beats twice its p95.
func TestSeedTeachesAKindItsLongestCut(t *testing.T) {
	cases := []struct {
		name        string
		obs         []profile.Observation
		where       func(string) string
		wantLearned time.Duration
		wantE       time.Duration
		wantFrom    watchdog.Source
	}{
		{"a cut alone is learned", []profile.Observation{cut("model", time.Second, 0)}, atHere,
			time.Second, 2 * time.Second, watchdog.SourceLearned},
		{"the longest of the cuts is learned", []profile.Observation{cut("model", time.Second, 0), cut("model", 3*time.Second, time.Hour), cut("model", 2*time.Second, time.Minute)}, atHere,
			3 * time.Second, 6 * time.Second, watchdog.SourceLearned},
		{"a cut longer than the p95 wins", append(series("model", ms(400, 500)...), cut("model", time.Second, 0)), atHere,
			time.Second, 2 * time.Second, watchdog.SourceLearned},
		{"a cut shorter than the p95 is learned but the p95 stands", append(series("model", ms(400, 1500)...), cut("model", time.Second, 0)), atHere,
			time.Second, 3 * time.Second, watchdog.SourceDeclared},
		{"a cut 7 days old is not learned", []profile.Observation{cut("model", time.Second, profile.MaxAge), cut("tool:keep", time.Second, 0)}, atHere,
			0, 0, watchdog.SourceNone},
		{"a cut at another place is not learned", []profile.Observation{cut("model", time.Second, 0)}, func(string) string { return "elsewhere" },
			0, 0, watchdog.SourceNone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := record(t, now.Add(-profile.MaxAge+time.Hour), tc.obs...) // recorded while all were fresh
			est := budget.NewEstimates()
			p.Seed(est, tc.where, now)
			x := est.Kind("model").Expected()
			if x.Learned != tc.wantLearned {
				t.Errorf("learned %v, want %v", x.Learned, tc.wantLearned)
			}
			if e, from := x.Allowance(0, 0); e != tc.wantE || from != tc.wantFrom {
				t.Errorf("allowance %v from %v, want %v from %v", e, from, tc.wantE, tc.wantFrom)
			}
			if got := p.Learned(tc.where, now)["model"]; got != tc.wantLearned {
				t.Errorf("Learned()[model] = %v, want %v, as Seed teaches", got, tc.wantLearned)
			}
		})
	}
}

func TestLearned(t *testing.T) {
	p, _ := record(t, now, append(series("model", ms(800)...), cut("tool:slow", time.Second, 0), cut("model", 2*time.Second, 0))...)
	if got := p.Learned(atHere, now); len(got) != 2 || got["model"] != 2*time.Second || got["tool:slow"] != time.Second {
		t.Errorf("Learned = %v, want model 2s and tool:slow 1s", got)
	}
	if got := p.Learned(func(string) string { return "" }, now); got != nil {
		t.Errorf("Learned with no places = %v, want nil", got)
	}
	if got := (*profile.Profile)(nil).Learned(atHere, now); got != nil {
		t.Errorf("Learned of a nil profile = %v, want nil", got)
	}
	if got := p.Durations(atHere, now); len(got) != 1 {
		t.Errorf("Durations = %v, want model alone: a kind with only cuts has no durations", got)
	}
}

func TestRecordBoundsTheCuts(t *testing.T) {
	t.Run("a kind keeps its most recent cuts", func(t *testing.T) {
		var obs []profile.Observation
		for i := range profile.MaxCutsPerKind + 1 {
			// The oldest is the longest: it goes.
			obs = append(obs, cut("model", time.Duration(profile.MaxCutsPerKind+1-i)*time.Second, time.Duration(profile.MaxCutsPerKind-i)*time.Second))
		}
		p, _ := record(t, now, obs...)
		k := p.Summary(now).Kinds[0]
		if k.Cuts != profile.MaxCutsPerKind || k.Cut != time.Duration(profile.MaxCutsPerKind)*time.Second {
			t.Errorf("%d cuts, longest %v; want %d, the oldest gone", k.Cuts, k.Cut, profile.MaxCutsPerKind)
		}
	})
	t.Run("a place cut recently is kept over one observed earlier", func(t *testing.T) {
		var obs []profile.Observation
		for i := range profile.MaxKinds {
			at := now.Add(-time.Hour)
			if i == 0 {
				at = at.Add(-time.Hour) // the least recent
			}
			obs = append(obs, profile.Observation{Where: here, Kind: fmt.Sprintf("tool:%03d", i), Duration: time.Second, At: at})
		}
		obs = append(obs, cut("tool:zzz", time.Second, 0))
		p, _ := record(t, now, obs...)
		kinds := p.Summary(now).Kinds
		if len(kinds) != profile.MaxKinds || kinds[0].Kind != "tool:001" || kinds[len(kinds)-1].Kind != "tool:zzz" {
			t.Errorf("%d kinds from %s to %s; want %d, tool:000 dropped for the cut tool:zzz", len(kinds), kinds[0].Kind, kinds[len(kinds)-1].Kind, profile.MaxKinds)
		}
	})
	t.Run("a stale cut is dropped", func(t *testing.T) {
		p, path := record(t, now, cut("model", time.Second, profile.MaxAge), cut("tool:keep", time.Second, 0))
		if got := p.Summary(now.Add(-time.Hour)).Kinds; len(got) != 1 || got[0].Kind != "tool:keep" {
			t.Errorf("kept %+v, want tool:keep alone", got)
		}
		if data, _ := os.ReadFile(path); strings.Contains(string(data), `"model"`) {
			t.Errorf("the file holds the stale cut:\n%s", data)
		}
	})
}
