package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/tools"
)

func TestQuietNotesNameEveryKindWhoseP95IsAboveTheQuietPeriod(t *testing.T) {
	slow := func(p95 time.Duration) []time.Duration { return []time.Duration{p95, p95, p95, p95, p95} }
	cases := []struct {
		name       string
		model      []time.Duration // the profile's durations of the model
		entries    []tools.Entry
		maxSilence time.Duration
		want       string
	}{
		{name: "nothing known says nothing"},
		{name: "a model known to be slower than Q is held from its start once its server answers", model: slow(3 * time.Second),
			want: "harness run: note: --quiet 2s is below the p95 of model (3s, the latency profile): its calls are held up to 6s from its start once its server answers\n"},
		{name: "a tool that declares a p95 above Q is held from its start",
			entries: []tools.Entry{{Name: "crawl", P95: 5 * time.Second}, {Name: "quick", P95: time.Second}},
			want:    "harness run: note: --quiet 2s is below the p95 of tool:crawl (5s, its declared p95): its calls are held up to 10s from its start\n"},
		{name: "a max silence below the p95 warns that healthy calls will be cut", model: slow(3 * time.Second), maxSilence: 2500 * time.Millisecond,
			want: "harness run: warning: --quiet 2s is below the p95 of model (3s, the latency profile), and its allowance is capped at 2.5s (its ceiling or --max-silence): healthy calls will be cut\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			est := budget.NewEstimates()
			est.Kind("model").Warm(tc.model)
			var out bytes.Buffer
			quietNotes(&out, "harness run", 2*time.Second, tc.maxSilence, est, &tools.Config{Entries: tc.entries})
			if out.String() != tc.want {
				t.Errorf("notes:\n%q\nwant\n%q", out.String(), tc.want)
			}
		})
	}
}
