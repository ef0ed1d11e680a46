package profile_test

import (
	"slices"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget/profile"
	"github.com/glidepath/glidepath/trace"
)

func TestDurations(t *testing.T) {
	p, _ := record(t, now,
		append(series("model", ms(800, 900)...),
			profile.Observation{Where: "elsewhere", Kind: "model", Duration: 9 * time.Second, At: now},
			profile.Observation{Where: here, Kind: "tool:old", Duration: time.Hour, At: now.Add(-profile.MaxAge)})...)
	cases := []struct {
		name  string
		p     *profile.Profile
		where func(string) string
		want  map[string][]time.Duration
	}{
		{"a kind's fresh durations at its place, oldest first", p, atHere, map[string][]time.Duration{"model": ms(800, 900)}},
		{"a kind's history at another place is left out", p, func(string) string { return "nowhere" }, nil},
		{"a nil profile has none", nil, atHere, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.p.Durations(tc.where, now)
			if len(got) != len(tc.want) {
				t.Fatalf("Durations = %v, want %v", got, tc.want)
			}
			for k, ds := range tc.want {
				if !slices.Equal(got[k], ds) {
					t.Errorf("Durations[%s] = %v, want %v", k, got[k], ds)
				}
			}
		})
	}
}

// A Sink keeps the attempts that ended ok, at their place, and those a
// quiet clock cut as cuts; nothing of another attempt cut short, of a
// sub-agent's own calls or of a kind placed nowhere.
func TestSinkKeepsTheAttemptsThatFinished(t *testing.T) {
	s := profile.NewSink(func(kind string) string {
		if kind == "setup" {
			return ""
		}
		return here
	})
	at := func(ms int) time.Time { return now.Add(time.Duration(ms) * time.Millisecond) }
	for _, r := range []trace.Record{
		{RunID: "r", Event: trace.AttemptStart, Step: "model", StepIndex: 1, Attempt: 1, TS: at(0)},
		{RunID: "r", Event: trace.AttemptEnd, Step: "model", StepIndex: 1, Attempt: 1, Outcome: trace.OK, TS: at(700)},
		{RunID: "r", Event: trace.AttemptStart, Step: "tool:pay", StepIndex: 1, Attempt: 1, Key: "k", TS: at(0)},
		{RunID: "r", Event: trace.AttemptEnd, Step: "tool:pay", StepIndex: 1, Attempt: 1, Key: "k", Outcome: trace.GaveUp, TS: at(900)},
		{RunID: "r", Event: trace.AttemptStart, Step: "model", StepIndex: 2, Attempt: 1, TS: at(1000)},
		{RunID: "r", Event: trace.AttemptEnd, Step: "model", StepIndex: 2, Attempt: 1, Outcome: trace.Quiet, TS: at(2000)},
		{RunID: "r", Event: trace.AttemptStart, Step: "setup", StepIndex: 2, Attempt: 1, TS: at(1000)},
		{RunID: "r", Event: trace.AttemptEnd, Step: "setup", StepIndex: 2, Attempt: 1, Outcome: trace.Quiet, TS: at(2000)},
		{RunID: "r", Event: trace.AttemptStart, Step: "setup", Attempt: 1, TS: at(0)},
		{RunID: "r", Event: trace.AttemptEnd, Step: "setup", Attempt: 1, Outcome: trace.OK, TS: at(10)},
		{RunID: "c", ParentRunID: "r", Event: trace.AttemptStart, Step: "model", StepIndex: 1, Attempt: 1, TS: at(0)},
		{RunID: "c", ParentRunID: "r", Event: trace.AttemptEnd, Step: "model", StepIndex: 1, Attempt: 1, Outcome: trace.OK, TS: at(50)},
	} {
		s.Record(r)
	}
	want := []profile.Observation{profile.Attempt("model", here, at(0), at(700)), profile.CutAttempt("model", here, at(1000), at(2000))}
	if got := s.Observations(); !slices.Equal(got, want) {
		t.Errorf("Observations = %v, want %v", got, want)
	}
}
