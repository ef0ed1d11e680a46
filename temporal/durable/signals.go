package durable

import (
	"time"

	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	"go.temporal.io/sdk/workflow"
)

// SignalProgress is the signal by which progress heard on a worker, or a
// child run's work, reaches the run's quiet clock ([Progress]).
const SignalProgress = "glidepath.progress"

// Progress is the payload of [SignalProgress]: the call's key and the
// most units heard so far, an event only when they grew (SPEC §3).
type Progress struct {
	Step    string `json:"step"` // the call's step kind, for the trace
	Key     string `json:"key"`
	Units   int64  `json:"units"`
	Total   int64  `json:"total,omitempty"`
	Message string `json:"message,omitempty"`
	// Messages, from a sub-agent, are the words of each record of work
	// since its last signal (landing.ChildWork), the last at Units.
	Messages []string `json:"messages,omitempty"`

	// Wait, from a sub-agent, is pause or resume: the parent's quiet
	// clock pauses with the child's (SPEC §3); from a model attempt,
	// headers: its server answered, and Units is its turn
	// (ModelRequest.Turn). Units is not read for a pause or a resume.
	Wait string `json:"wait,omitempty"`
}

// The values of Progress.Wait.
const (
	pauseSignal  = "pause"
	resumeSignal = "resume"
	// headersSignal, from a model attempt's worker, says its server
	// answered: the turn's hold takes effect (issue 27).
	headersSignal = "headers"
)

// ProgressEvery is how often at most a running attempt signals its run:
// a chatty tool costs one history event per interval, and the quiet clock
// hears of progress up to that much late, never early.
const ProgressEvery = time.Second

// quietClock hosts [watchdog.Clock] (SPEC §3) in workflow time, on one
// workflow timer; as workflow state, a replay fires it at the same point.
type quietClock struct {
	clock   watchdog.Clock
	q       time.Duration       // Q, for the words of a quiet landing
	stopped bool                // the run is landing or has ended: the clock fires no more
	fired   bool                // the clock fired and the run's work was stopped
	stall   watchdog.StallError // what the clock said when it fired: what cut the attempts it stopped, in their records
	paused  map[string]bool     // by a sub-agent call's key: its child asked for a pause, not yet resumed
}

// newQuietClock starts the clock with quiet period q at workflow time now.
func newQuietClock(cfg watchdog.Config, now time.Time) (quietClock, error) {
	c, err := watchdog.NewClock(cfg, now)
	return quietClock{clock: c, q: c.Quiet(watchdog.None), paused: map[string]bool{}}, err
}

// pause stops the clock until the returned resume.
func (c *quietClock) pause(ctx workflow.Context) (resume func()) {
	if !c.clock.Pause(workflow.Now(ctx)) {
		return func() {}
	}
	return func() { c.clock.Resume(workflow.Now(ctx)) }
}

// resumeChild ends the pause the child of the call of key asked for.
func (c *quietClock) resumeChild(ctx workflow.Context, key string) {
	if c.paused[key] {
		delete(c.paused, key)
		c.clock.Resume(workflow.Now(ctx))
	}
}

// watch runs the clock until it fires (calling stall) or is stopped, on
// one timer at a time armed for its next wake-up, or none while paused.
// A would-be stall of a clock in warn mode is warned of and the clock
// runs on (issue 27). The timer is armed again, earlier, when a hold ends
// and brings the next wake-up nearer.
func (c *quietClock) watch(ctx workflow.Context, stall func(), warn func(workflow.Context, watchdog.StallError)) {
	for !c.stopped {
		next, armed := c.clock.Next()
		if !armed {
			if workflow.Await(ctx, func() bool { _, ok := c.clock.Next(); return ok || c.stopped }) != nil {
				return
			}
			continue
		}
		now := workflow.Now(ctx)
		if st, fired := c.clock.Fire(now); fired && st.Warning {
			warn(ctx, st)
			continue
		} else if fired {
			c.stall, c.fired, c.stopped = st, true, true
			stall()
			return
		}
		sooner := func() bool {
			n, ok := c.clock.Next()
			return c.stopped || ok && n.Before(next)
		}
		if _, err := workflow.AwaitWithTimeout(ctx, next.Sub(now), sooner); err != nil {
			return
		}
	}
}

// listen hands each [SignalProgress] to r.progress until ctx ends.
func (r *run) listen(ctx workflow.Context) {
	ch := workflow.GetSignalChannel(ctx, SignalProgress)
	for {
		var p Progress
		got := false
		workflow.NewSelector(ctx).
			AddReceive(ch, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &p); got = true }).
			AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {}).
			Select(ctx)
		if !got {
			return
		}
		r.progress(ctx, p)
	}
}

// progress takes a progress signal: a pause, a resume, or progress the
// clock counts, on the record.
func (r *run) progress(ctx workflow.Context, p Progress) {
	c := &r.quiet
	switch p.Wait {
	case pauseSignal:
		if !c.paused[p.Key] && !c.stopped && c.clock.Pause(workflow.Now(ctx)) {
			c.paused[p.Key] = true
		}
		return
	case resumeSignal:
		c.resumeChild(ctx, p.Key)
		return
	case headersSignal:
		if !c.stopped && p.Units == int64(r.step+1) { // another turn's is stale
			c.clock.Headers(p.Key, workflow.Now(ctx))
		}
		return
	}
	if c.stopped || !c.clock.Progress(model.ClockKey(p.Step, p.Key), p.Units, workflow.Now(ctx)) {
		return
	}
	msgs := p.Messages
	if len(msgs) == 0 {
		msgs = []string{p.Message}
	}
	for i, m := range msgs {
		r.record(ctx, trace.Record{Event: trace.Progress, Step: p.Step, StepIndex: r.step, Key: p.Key,
			Units: p.Units - int64(len(msgs)-1-i), Total: p.Total, Message: tools.ProgressMessage(m)})
	}
}

// heard is a semantic event e the workflow itself saw.
func (r *run) heard(ctx workflow.Context, e watchdog.Event) {
	if r.quiet.stopped {
		return
	}
	r.quiet.clock.Heard(e, workflow.Now(ctx))
}

// tellParent tells a sub-agent's parent that a wait of its own choosing
// begins (pause) or ends (resume).
func (r *run) tellParent(ctx workflow.Context, wait string) {
	p := r.in.Parent
	if p == nil {
		return
	}
	workflow.SignalExternalWorkflow(ctx, p.WorkflowID, "", SignalProgress, Progress{Step: p.Step, Key: p.Key, Wait: wait})
}
