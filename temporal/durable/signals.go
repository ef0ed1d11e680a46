package durable

import (
	"time"

	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
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
	// Messages, from a sub-agent, are the words of each record of work
	// it made since its last signal (harness.ChildWork), the last of them
	// at Units: the parent records each as a progress record, as in
	// process, where a child's every record of work is one.
	Messages []string `json:"messages,omitempty"`

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

// quietClock hosts the run's quiet clock Q (SPEC §3) in workflow time. The
// rules — what resets it, how a pause and an event inside it combine, when
// it fires — are [watchdog.Clock]'s, the very ones a process runs (issue
// 25); this host only feeds it workflow time and sleeps on one workflow
// timer until the clock's next wake-up. Its state is workflow state, so a
// replay fires it at the same point of the history.
type quietClock struct {
	clock   watchdog.Clock
	q       time.Duration       // Q, for the words of a quiet landing
	stopped bool                // the run is landing or has ended: the clock fires no more
	fired   bool                // the clock fired and the run's work was stopped
	stall   watchdog.StallError // what the clock said when it fired: what cut the attempts it stopped, in their records
	paused  map[string]func()   // by a sub-agent call's key: the resume of the pause its child asked for
}

// newQuietClock starts the clock with quiet period q at workflow time now.
func newQuietClock(q time.Duration, now time.Time) (quietClock, error) {
	c, err := watchdog.NewClock(watchdog.Config{Quiet: q}, now)
	return quietClock{clock: c, q: q, paused: map[string]func(){}}, err
}

// pause stops the clock until the returned resume is called, for a wait
// of the run's own choosing (SPEC §3). A resume is idempotent.
func (c *quietClock) pause(ctx workflow.Context) (resume func()) {
	if !c.clock.Pause(workflow.Now(ctx)) {
		return func() {}
	}
	done := false
	return func() {
		if !done {
			done = true
			c.clock.Resume(workflow.Now(ctx))
		}
	}
}

// watch runs the clock until it fires (calling stall) or is stopped. It
// sleeps on one timer at a time, armed for the clock's next wake-up: an
// event only moves the deadline later, so when the timer ends early the
// host arms it again, and a busy run costs no more timers than an idle
// one. While paused the clock has no wake-up: watch waits for the resume.
func (c *quietClock) watch(ctx workflow.Context, stall func()) {
	for !c.stopped {
		next, ok := c.clock.Next()
		if !ok {
			if err := workflow.Await(ctx, func() bool { _, ok := c.clock.Next(); return ok || c.stopped }); err != nil {
				return
			}
			continue
		}
		now := workflow.Now(ctx)
		if st, fired := c.clock.Fire(now); fired {
			c.stall, c.fired, c.stopped = st, true, true
			stall()
			return
		}
		if _, err := workflow.AwaitWithTimeout(ctx, next.Sub(now), func() bool { return c.stopped }); err != nil {
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
	if c.stopped || !c.clock.Progress(p.Key, p.Units, workflow.Now(ctx)) {
		return
	}
	msgs := p.Messages
	if len(msgs) == 0 {
		msgs = []string{p.Message}
	}
	for i, m := range msgs {
		r.record(ctx, trace.Record{Event: trace.Progress, Step: p.Step, StepIndex: r.step, Key: p.Key,
			Units: p.Units - int64(len(msgs)-1-i), Total: p.Total, Message: clip(m, 256)})
	}
}

// heard is a semantic event e the workflow itself saw. Every kind opens
// the same window Q here (a workflow has no QuietAfter); the kind is kept
// so that a stall names the last event, as the process's watchdog does in
// the attempt records it cuts (issue 25).
func (r *run) heard(ctx workflow.Context, e watchdog.Event) {
	if r.quiet.stopped {
		return
	}
	r.quiet.clock.Heard(e, workflow.Now(ctx))
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
