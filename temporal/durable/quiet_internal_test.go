package durable

import (
	"testing"
	"time"

	"github.com/glidepath/glidepath/watchdog"

	"go.temporal.io/sdk/workflow"
)

// pauseProbe is what quietPauseProbe saw, in workflow time from the
// clock's start.
type pauseProbe struct {
	Pause, Event, Resume, Fired time.Duration
}

// startQuiet starts r's quiet clock with period q at workflow time now.
func startQuiet(r *run, q time.Duration, now time.Time) {
	r.quiet, _ = newQuietClock(watchdog.Config{Quiet: q}, now)
}

// quietPauseProbe drives a run's quiet clock, with quiet period q, the way
// the workflow does — a pause for a wait of the run's choosing, a semantic
// event heard inside it, the resume — and returns when each happened and
// when the clock fired, in workflow time.
func quietPauseProbe(ctx workflow.Context, q time.Duration) (pauseProbe, error) {
	start := workflow.Now(ctx)
	r := &run{}
	startQuiet(r, q, start)
	var p pauseProbe
	since := func() time.Duration { return workflow.Now(ctx).Sub(start) }
	workflow.Go(ctx, func(ctx workflow.Context) { r.quiet.watch(ctx, func() { p.Fired = since() }, nil) })
	// The pause begins with little quiet time left; the event comes early
	// in it, and the pause lasts long after it.
	if err := workflow.Sleep(ctx, q-500*time.Millisecond); err != nil {
		return p, err
	}
	p.Pause = since()
	resume := r.quiet.pause(ctx)
	if err := workflow.Sleep(ctx, 100*time.Millisecond); err != nil {
		return p, err
	}
	p.Event = since()
	r.heard(ctx, watchdog.ToolResult)
	if err := workflow.Sleep(ctx, 3*time.Second); err != nil {
		return p, err
	}
	p.Resume = since()
	resume()
	err := workflow.Await(ctx, func() bool { return r.quiet.fired })
	return p, err
}

// Issue 25: after a pause with an event inside it, the quiet clock fired
// on Temporal Q after the resume — the event restarted the pause, so it
// was given all of Q again — about 3s later than in process, where the
// event's window runs from the event and the resume keeps the quiet time
// left at the pause. The workflow now runs watchdog.Clock's rule: it fires
// at max(event+Q, resume+left), the instant a process's watchdog fires.
func TestAnEventInsideAPauseFiresTheQuietClockWhenItDoesInProcess(t *testing.T) {
	const q = 4 * time.Second
	p, _, _ := probe[pauseProbe](t, "quietPauseProbe", quietPauseProbe, q)
	left := q - p.Pause
	want := max(p.Event+q, p.Resume+left) // watchdog.Watchdog's instant for the same history
	// A workflow timer is late by up to about a second on the test server,
	// never early; the old rule's instant, the resume plus Q, is well past
	// that.
	if p.Fired < want || p.Fired >= want+1500*time.Millisecond || p.Fired >= p.Resume+q {
		t.Errorf("paused at %v, event at %v, resumed at %v: the clock fired at %v, want %v (a process's instant), not %v (Q after the resume)",
			p.Pause, p.Event, p.Resume, p.Fired, want, p.Resume+q)
	}
}

// headersProbe is what staleHeadersProbe saw: whether the turn in flight
// was held after a headers signal of an earlier turn, and after its own.
type headersProbe struct {
	HeldAfterStale, HeldAfterOwn bool
}

// staleHeadersProbe begins a model turn at step 2 whose allowance holds,
// then hears the headers signal an abandoned attempt of turn 1 sends
// late, then the turn's own.
func staleHeadersProbe(ctx workflow.Context) (headersProbe, error) {
	r := &run{step: 2}
	startQuiet(r, time.Second, workflow.Now(ctx))
	r.quiet.clock.Begin(watchdog.Call{Key: "model", Step: "model", Allowance: time.Minute, AtHeaders: true}, workflow.Now(ctx))
	var p headersProbe
	r.progress(ctx, Progress{Step: "model", Key: "model", Units: 2, Wait: headersSignal}) // turn 1's: step 1 + 1
	_, p.HeldAfterStale = r.quiet.clock.Held(workflow.Now(ctx))
	r.progress(ctx, Progress{Step: "model", Key: "model", Units: 3, Wait: headersSignal})
	_, p.HeldAfterOwn = r.quiet.clock.Held(workflow.Now(ctx))
	return p, nil
}

// Issue 27: a model attempt abandoned when its lease ended may signal its
// server's headers after the run has begun its next turn. Taken as the
// new turn's, it held a turn whose server had not answered, which a
// server that never answers must not be: the signal names its turn, and
// another turn's is dropped.
func TestAHeadersSignalOfAnEarlierTurnHoldsNothing(t *testing.T) {
	p, _, _ := probe[headersProbe](t, "staleHeadersProbe", staleHeadersProbe)
	if p.HeldAfterStale || !p.HeldAfterOwn {
		t.Errorf("held after turn 1's headers %v, after its own %v; want only after its own", p.HeldAfterStale, p.HeldAfterOwn)
	}
}
