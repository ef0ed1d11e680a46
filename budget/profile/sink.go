package profile

import (
	"sync"
	"time"

	"github.com/glidepath/glidepath/trace"
)

// A Sink is a trace sink that keeps the durations of a run's attempts
// that finished, from their attempt_start to their attempt_end, as the
// [Observation]s a run [Record]s at its end: only an attempt that
// finished says how long the kind takes (one cut short says only that it
// takes at least that long). Of the attempts cut short, it keeps those a
// quiet clock cut (outcome quiet) as cuts ([Observation.Cut]): that the
// kind takes at least that long is what the next run's allowance of
// silence learns from (issue 27). Each is kept with the place its where says
// it ran; an attempt placed nowhere (a setup step, a sub-agent's own
// calls, whose model and tools are its own) is not kept. It is safe for
// concurrent use; `harness run` feeds it as the run goes, and
// `harness-temporal run` the records its run returned.
type Sink struct {
	where func(kind string) string

	mu      sync.Mutex // guards started and obs
	started map[attemptAt]time.Time
	obs     []Observation
}

type attemptAt struct {
	run, step, key string
	index, n       int
}

// NewSink returns a Sink that places each kind with where.
func NewSink(where func(kind string) string) *Sink {
	return &Sink{where: where, started: map[attemptAt]time.Time{}}
}

// Record keeps r's attempt's duration once its end is recorded, if it
// finished or a quiet clock cut it. It never fails.
func (p *Sink) Record(r trace.Record) error {
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
		where := p.where(r.Step)
		switch {
		case !ok || where == "":
		case r.Outcome == trace.OK:
			p.obs = append(p.obs, Attempt(r.Step, where, start, r.TS))
		case r.Outcome == trace.Quiet:
			p.obs = append(p.obs, CutAttempt(r.Step, where, start, r.TS))
		}
	}
	return nil
}

// Observations returns what the sink kept.
func (p *Sink) Observations() []Observation {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Observation(nil), p.obs...)
}
