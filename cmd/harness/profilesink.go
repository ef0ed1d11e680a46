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
// says only that it takes at least that long). Each is kept with the
// place where says it ran; an attempt placed nowhere (a setup step, a
// sub-agent's own calls, whose model and tools are its own) is not kept.
type profileSink struct {
	where func(kind string) string

	mu      sync.Mutex
	started map[attemptAt]time.Time
	obs     []profile.Observation
}

type attemptAt struct {
	run, step, key string
	index, n       int
}

func newProfileSink(where func(kind string) string) *profileSink {
	return &profileSink{where: where, started: map[attemptAt]time.Time{}}
}

func (p *profileSink) Record(r trace.Record) error {
	if r.ParentRunID != "" {
		return nil
	}
	at := attemptAt{r.RunID, r.Step, r.Key, r.StepIndex, r.Attempt}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch r.Event {
	case trace.AttemptStart:
		p.started[at] = r.TS
	case trace.AttemptEnd:
		start, ok := p.started[at]
		delete(p.started, at)
		if where := p.where(r.Step); ok && r.Outcome == trace.OK && where != "" {
			p.obs = append(p.obs, profile.Attempt(r.Step, where, start, r.TS))
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
