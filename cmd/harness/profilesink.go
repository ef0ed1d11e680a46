package main

import (
	"sync"
	"time"

	"github.com/glidepath/glidepath/budget/profile"
	"github.com/glidepath/glidepath/trace"
)

// profileSink keeps the durations of the attempts that finished, from
// their attempt_start to their attempt_end, for the latency profile: only
// an attempt that finished says how long the kind takes (one cut short
// says only that it takes at least that long).
type profileSink struct {
	mu      sync.Mutex
	started map[attemptAt]time.Time
	obs     []profile.Observation
}

type attemptAt struct {
	run, step, key string
	index, n       int
}

func newProfileSink() *profileSink { return &profileSink{started: map[attemptAt]time.Time{}} }

func (p *profileSink) Record(r trace.Record) error {
	at := attemptAt{r.RunID, r.Step, r.Key, r.StepIndex, r.Attempt}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch r.Event {
	case trace.AttemptStart:
		p.started[at] = r.TS
	case trace.AttemptEnd:
		start, ok := p.started[at]
		delete(p.started, at)
		if ok && r.Outcome == trace.OK {
			p.obs = append(p.obs, profile.Attempt(r.Step, start, r.TS))
		}
	}
	return nil
}

// observations returns what the sink kept.
func (p *profileSink) observations() []profile.Observation {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]profile.Observation(nil), p.obs...)
}
