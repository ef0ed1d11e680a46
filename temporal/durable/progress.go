package durable

import (
	"context"
	"sync"
	"time"

	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

// progressor carries a tool or model attempt's progress to its run:
// units that grew become a [SignalProgress], at most one per
// [ProgressEvery]. heard never blocks the attempt: it keeps the latest
// and wakes the sender, a goroutine the attempt owns and stop waits for.
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

// newProgressor starts the progressor of an attempt of step, the kind its
// records name.
func newProgressor(ctx context.Context, step string) *progressor {
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
	grew := watchdog.Grew(p.latest.Units, s.Units)
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

// send signals the latest progress each time it grows, then waits
// ProgressEvery, until the attempt ends.
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
		if !watchdog.Grew(sent, sig.Units) {
			continue
		}
		// A run that has ended, or a server out of reach, is not told.
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

// stop ends the sender and waits for it; the attempt's answer is itself
// an event.
func (p *progressor) stop() {
	p.end()
	close(p.done)
	p.wg.Wait()
}

// headersTeller returns what hears a model attempt's signals and tells
// its run when the model's server has answered, once: the turn's
// allowance holds the run's quiet clock from then (issue 27). The signal
// is sent on the attempt's goroutine, bounded by the attempt's context:
// a server out of reach costs the attempt no more than its lease. The
// signal carries the attempt's turn in Units (ModelRequest.Turn).
func headersTeller(ctx context.Context, turn int) func(trace.Signal) {
	info := activity.GetInfo(ctx)
	c := activity.GetClient(ctx)
	var told bool
	return func(s trace.Signal) {
		if s.Event != watchdog.Headers || told {
			return
		}
		told = true
		p := Progress{Step: model.Kind, Key: model.Kind, Units: int64(turn), Wait: headersSignal}
		_ = c.SignalWorkflow(ctx, info.WorkflowExecution.ID, info.WorkflowExecution.RunID, SignalProgress, p) // unsent: no hold, Q alone
	}
}

// CancelWithin is how soon a running attempt learns that its run no
// longer wants it, on a worker with [WorkerOptions]: the SDK delivers a
// cancellation only in a heartbeat's answer, throttled to this.
const CancelWithin = time.Second

// WorkerOptions returns o with what runs need of their workers, keeping
// what o sets: heartbeat throttles of [CancelWithin] (else an attempt
// with no HeartbeatTimeout heartbeats 30s apart, and learns of its
// cancellation that late), and a sticky schedule-to-start timeout of 1s
// (the SDK's 5s is spent from the budget of a run whose worker died).
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

// WorkflowTaskTimeout is the workflow task timeout of a run
// ([StartOptions]) and of its sub-agents: a worker that dies holding a
// workflow task hands it over after this, not the SDK's 10s.
const WorkflowTaskTimeout = 2 * DeadWorker

// StartOptions returns o with [WorkflowTaskTimeout] and a
// WorkflowExecutionTimeout of [ExecutionTimeout] of the run's budget,
// unless o sets them: the server ends a run still open at D + [Overrun].
func StartOptions(o client.StartWorkflowOptions, budget time.Duration) client.StartWorkflowOptions {
	if o.WorkflowTaskTimeout == 0 {
		o.WorkflowTaskTimeout = WorkflowTaskTimeout
	}
	if o.WorkflowExecutionTimeout == 0 {
		o.WorkflowExecutionTimeout = ExecutionTimeout(budget)
	}
	return o
}
