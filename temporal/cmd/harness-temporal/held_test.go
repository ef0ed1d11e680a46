package main

import (
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/temporal/durable"
)

// Issue 27: the live line of `run --progress` warns of a held call at half
// its allowance, as harness run's does. The status query says how long
// the call had been silent at the run's last workflow task; the line
// counts on from there, unless the clock was paused then (a wait the run
// chose is no silence).
func TestTheLiveLineWarnsOfAHeldCallCountingOnFromTheQuery(t *testing.T) {
	at := time.Unix(1e9, 0)
	status := func(paused bool) durable.Status {
		return durable.Status{RunID: "r1", At: at, Start: at.Add(-4 * time.Second), Phase: "explore",
			Budget:   landing.Report(30*time.Second, 3*time.Second, 4*time.Second, 26*time.Second),
			InFlight: []durable.Flying{{Kind: "model", Attempt: 1}},
			Held:     &durable.Held{Step: "model", AllowanceMs: 6000, SilentMs: 2000, Headers: true, Paused: paused}}
	}
	for _, tc := range []struct {
		name   string
		paused bool
		after  time.Duration
		want   string
	}{
		{"under half its allowance nothing is warned of", false, 500 * time.Millisecond, "r1 · running"},
		{"at half its allowance, counted on from the query, it is warned of", false, 1500 * time.Millisecond, "! model silent 3.5s of 6.0s · r1 · running"},
		{"a paused clock's call is not counted on", true, 1500 * time.Millisecond, "r1 · running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := status(tc.paused)
			line := statusLine(live(st, at.Add(tc.after)))
			if !strings.HasPrefix(line, tc.want) {
				t.Errorf("line %q, want it to begin %q", line, tc.want)
			}
			if st.Held.SilentMs != 2000 {
				t.Errorf("live changed the query's answer: silent %dms", st.Held.SilentMs)
			}
		})
	}
}
