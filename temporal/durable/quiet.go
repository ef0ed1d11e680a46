package durable

import (
	"time"

	"github.com/glidepath/glidepath/trace"
	"go.temporal.io/sdk/workflow"
)

// SignalProgress is the signal a running attempt sends its run when it
// hears progress whose units grew ([Progress]), and a child run sends its
// parent when it hears a semantic event: the quiet clock is the
// workflow's, and these are how what happens on a worker reaches it.
const SignalProgress = "glidepath.progress"

// Progress is the payload of [SignalProgress]: the call's key and the
// most units heard so far. The workflow counts it as a semantic event only
// when Units exceeds the most it has heard for Key (SPEC §3): a repeated
// or lowered count, a keepalive, a token resets nothing.
type Progress struct {
	Step    string `json:"step"` // the call's step kind, for the trace
	Key     string `json:"key"`
	Units   int64  `json:"units"`
	Total   int64  `json:"total,omitempty"`
	Message string `json:"message,omitempty"`

	// Wait, from a sub-agent, is pause when the child begins a wait of
	// its own choosing (a backoff sleep, a server's Retry-After) and
	// resume when it ends: the parent's quiet clock is paused with the
	// child's (SPEC §3). Units is then not read.
	Wait string `json:"wait,omitempty"`
}

// The values of Progress.Wait.
const (
	pauseSignal  = "pause"
	resumeSignal = "resume"
)

// ProgressEvery is how often at most a running attempt signals its run:
// the progress it hears in between is coalesced into the last, so that a
// chatty tool costs its run one signal (one history event) per interval.
// The quiet clock therefore hears of progress up to ProgressEvery plus a
// signal's delivery late, never early: it can fire later than in one
// process by that much, never sooner than Q after the last progress.
const ProgressEvery = time.Second

// quietClock is the run's quiet clock Q (SPEC §3), in workflow time: reset
// by the semantic events the workflow sees (a tool call issued, a tool's
// answer, a model message completed, a [SignalProgress] whose units grew),
// paused while the run waits by a choice of its own (a backoff sleep, a
// server's Retry-After, the setup step), and fired when Q passes without
// one: the run's work context is then cancelled and the run lands with
// cause quiet. Its state is workflow state, so a replay fires it at the
// same point of the history.
type quietClock struct {
	q        time.Duration
	last     time.Time // workflow time of the last semantic event, shifted by the pauses since
	pausedAt time.Time // when the current pause began; meaningful while pauses > 0
	pauses   int       // waits of the run's own choosing now going on (parallel calls each may sleep)
	stopped  bool      // the run is landing or has ended: the clock fires no more
	fired    bool
	most     map[string]int64  // by key: the most units heard, across the call's attempts
	paused   map[string]func() // by a sub-agent call's key: the resume of the pause its child asked for
}

// overdue reports whether Q has passed since the last event with nothing
// paused: the clock has fired, whether or not its watcher has run yet in
// this workflow task, and nothing can revive it.
func (c *quietClock) overdue(now time.Time) bool {
	return c.fired || c.pauses == 0 && now.Sub(c.last) >= c.q
}

// heard resets the clock: a semantic event at workflow time now. An event
// heard during a pause restarts the pause from now, so the quiet time left
// after it is all of Q.
func (c *quietClock) heard(now time.Time) {
	if c.overdue(now) {
		return
	}
	c.last = now
	if c.pauses > 0 {
		c.pausedAt = now
	}
}

// pause stops the clock until the returned resume is called; the clock
// then resumes with the quiet time it had left.
func (c *quietClock) pause(ctx workflow.Context) (resume func()) {
	if c.overdue(workflow.Now(ctx)) {
		return func() {}
	}
	if c.pauses == 0 {
		c.pausedAt = workflow.Now(ctx)
	}
	c.pauses++
	done := false
	return func() {
		if done {
			return
		}
		done = true
		c.pauses--
		if c.pauses == 0 {
			c.last = c.last.Add(workflow.Now(ctx).Sub(c.pausedAt))
		}
	}
}

// watch runs the clock until it fires (calling stall) or is stopped. It
// sleeps on one timer per Q at most, not one per event: when a timer ends,
// it sleeps again for what is left since the last event, so a busy run
// costs no more timers than an idle one.
func (c *quietClock) watch(ctx workflow.Context, stall func()) {
	for !c.stopped {
		if c.pauses > 0 {
			if err := workflow.Await(ctx, func() bool { return c.pauses == 0 || c.stopped }); err != nil {
				return
			}
			continue
		}
		wait := c.last.Add(c.q).Sub(workflow.Now(ctx))
		if wait <= 0 {
			c.fired, c.stopped = true, true
			stall()
			return
		}
		if _, err := workflow.AwaitWithTimeout(ctx, wait, func() bool { return c.stopped }); err != nil {
			return
		}
	}
}

// listen receives the run's [SignalProgress] signals until ctx ends and
// hands each to r.progress.
func (r *run) listen(ctx workflow.Context) {
	ch := workflow.GetSignalChannel(ctx, SignalProgress)
	for {
		var p Progress
		s := workflow.NewSelector(ctx)
		got := false
		s.AddReceive(ch, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &p); got = true })
		s.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {})
		s.Select(ctx)
		if !got {
			return
		}
		r.progress(ctx, p)
	}
}

// progress takes a progress signal: a semantic event, on the record, when
// its units grew over the most heard for its call; nothing otherwise.
func (r *run) progress(ctx workflow.Context, p Progress) {
	c := &r.quiet
	switch p.Wait {
	case pauseSignal:
		if _, ok := c.paused[p.Key]; !ok && !c.stopped {
			c.paused[p.Key] = c.pause(ctx)
		}
		return
	case resumeSignal:
		if resume, ok := c.paused[p.Key]; ok {
			resume()
			delete(c.paused, p.Key)
		}
		return
	}
	if c.stopped || p.Units <= c.most[p.Key] {
		return
	}
	c.most[p.Key] = p.Units
	c.heard(workflow.Now(ctx))
	r.record(ctx, trace.Record{Event: trace.Progress, Step: p.Step, StepIndex: r.step, Key: p.Key,
		Units: p.Units, Total: p.Total, Message: clip(p.Message, 256)})
	r.forward()
}

// heard is a semantic event the workflow itself saw.
func (r *run) heard(ctx workflow.Context) {
	r.forward() // a child's landing is work its parent hears of too
	if r.quiet.stopped {
		return
	}
	r.quiet.heard(workflow.Now(ctx))
}

// tellParent sends this run's parent, when it is a sub-agent, that a wait
// of its own choosing begins (pause) or ends (resume), without waiting
// for the signal's delivery.
func (r *run) tellParent(ctx workflow.Context, wait string) {
	p := r.in.Parent
	if p == nil {
		return
	}
	workflow.SignalExternalWorkflow(ctx, p.WorkflowID, "", SignalProgress, Progress{Step: p.Step, Key: p.Key, Wait: wait})
}

// stall is the quiet clock firing: the run's work ends now (its
// attempts in flight end with outcome quiet), and it lands with cause
// quiet.
func (r *run) stall() { r.stopWork() }
