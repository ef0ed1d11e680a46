package durable

import (
	"context"
	"sync"
	"time"

	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

// progressor carries what one tool attempt hears to its run's quiet
// clock: a progress heartbeat whose units grew becomes a [SignalProgress]
// to the workflow, coalesced to at most one per [ProgressEvery]; a
// keepalive, or a count that repeats or falls, sends nothing. heard never
// blocks the tool: it keeps the latest and wakes the sender, a goroutine
// the attempt owns and stop waits for.
type progressor struct {
	ctx  context.Context // the sender's: stop ends a signal in flight, so it cannot hold the attempt's answer
	end  context.CancelFunc
	step string
	wake chan struct{}
	done chan struct{}
	wg   sync.WaitGroup

	mu     sync.Mutex
	latest Progress
}

func newProgressor(ctx context.Context, spec tools.Spec) *progressor {
	step := spec.Kind
	if step == "" {
		step = tools.KindPrefix + spec.Name
	}
	sctx, end := context.WithCancel(ctx)
	p := &progressor{ctx: sctx, end: end, step: step, wake: make(chan struct{}, 1), done: make(chan struct{})}
	p.wg.Go(p.send)
	return p
}

// heard is the attempt's [tools.Call.Heard].
func (p *progressor) heard(s trace.Signal) {
	if s.Event != watchdog.Progress {
		return
	}
	p.mu.Lock()
	grew := s.Units > p.latest.Units
	if grew {
		p.latest = Progress{Step: p.step, Key: s.Key, Units: s.Units, Total: s.Total, Message: s.Message}
	}
	p.mu.Unlock()
	if grew {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// send signals the workflow with the latest progress each time it grows,
// then waits ProgressEvery before the next, until the attempt ends.
func (p *progressor) send() {
	info := activity.GetInfo(p.ctx)
	c := activity.GetClient(p.ctx)
	var sent int64
	for {
		select {
		case <-p.done:
			return
		case <-p.ctx.Done():
			return
		case <-p.wake:
		}
		p.mu.Lock()
		sig := p.latest
		p.mu.Unlock()
		if sig.Units <= sent {
			continue
		}
		// A run that has ended, or a server out of reach, is not told:
		// the attempt goes on, and its answer is what the run waits for.
		if err := c.SignalWorkflow(p.ctx, info.WorkflowExecution.ID, info.WorkflowExecution.RunID, SignalProgress, sig); err == nil {
			sent = sig.Units
		}
		t := time.NewTimer(ProgressEvery)
		select {
		case <-p.done:
			t.Stop()
			return
		case <-p.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// stop ends the sender and waits for it. What it had not sent is not
// needed: the attempt's answer is itself a semantic event.
func (p *progressor) stop() {
	p.end()
	close(p.done)
	p.wg.Wait()
}

// CancelWithin is how soon a running attempt learns that its run no
// longer wants it — the quiet clock fired, the run was cancelled — when
// its worker runs with [WorkerOptions]: the SDK delivers a cancellation
// only in the answer to a heartbeat, and throttles heartbeats to this.
const CancelWithin = time.Second

// WorkerOptions returns o with what the runs need of their workers. The
// heartbeat throttles: without them the SDK sends an attempt's heartbeats
// 30s apart unless it has a HeartbeatTimeout, and a quiet clock's
// cancellation would reach the tool call that long after. The sticky
// schedule-to-start timeout (the SDK's default is 5s): a run whose worker
// died waits that long on the dead worker's own queue before another
// worker takes its next workflow task, all of it spent from the run's
// budget. A value o already sets is kept.
func WorkerOptions(o worker.Options) worker.Options {
	if o.StickyScheduleToStartTimeout == 0 {
		o.StickyScheduleToStartTimeout = time.Second
	}
	if o.DefaultHeartbeatThrottleInterval == 0 {
		o.DefaultHeartbeatThrottleInterval = CancelWithin
	}
	if o.MaxHeartbeatThrottleInterval == 0 {
		o.MaxHeartbeatThrottleInterval = CancelWithin
	}
	return o
}

// WorkflowTaskTimeout is the workflow task timeout a run is started with
// ([StartOptions]), and its sub-agents' child workflows: a worker that
// dies holding a workflow task hands it to another after this, not after
// the SDK's default of 10s. A workflow task is the workflow code between
// two waits, milliseconds of work.
const WorkflowTaskTimeout = 2 * DeadWorker

// StartOptions returns o with what a run needs of its start: the
// [WorkflowTaskTimeout], unless o sets one.
func StartOptions(o client.StartWorkflowOptions) client.StartWorkflowOptions {
	if o.WorkflowTaskTimeout == 0 {
		o.WorkflowTaskTimeout = WorkflowTaskTimeout
	}
	return o
}
