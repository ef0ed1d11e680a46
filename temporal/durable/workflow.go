package durable

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/glidepath/glidepath/budget"
	grun "github.com/glidepath/glidepath/internal/run"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// WorkflowName is the name [Workflow] is registered and started under.
const WorkflowName = "glidepath.run"

// DeadWorker is the HeartbeatTimeout of an attempt whose lease is long
// enough for one to matter. It detects dead workers only; a stalled call
// is the quiet clock's to say (SPEC §9).
const DeadWorker = 2 * time.Second

// errTooLarge fails what a payload of Temporal's cannot carry.
var errTooLarge = errors.New("durable: too large for Temporal")

// ErrBadInput is matched by the error of a run whose Input cannot be used.
var ErrBadInput = errors.New("durable: bad input")

// Workflow runs one Glidepath run as a Temporal workflow (see the package
// doc).
func Workflow(ctx workflow.Context, in Input) (Output, error) {
	if err := (&budget.Config{Total: in.Budget, Reserve: in.Reserve, Floor: in.Floor}).Validate(); err != nil {
		return Output{}, temporal.NewNonRetryableApplicationError("durable: "+err.Error(), "BadInput", ErrBadInput)
	}
	if err := (watchdog.Config{Quiet: in.Quiet, Mode: in.QuietMode}).Validate(); err != nil || in.MaxSilence < 0 {
		if err == nil {
			err = fmt.Errorf("max silence %v: must not be negative", in.MaxSilence)
		}
		return Output{}, temporal.NewNonRetryableApplicationError("durable: "+err.Error(), "BadInput", ErrBadInput)
	}
	// Every model request carries the task and the instructions: half of
	// what one may carry leaves the rest room to fit (fitted).
	if n := encodedLen(Message{Content: in.Task}) + encodedLen(Message{Content: in.Instructions}); n > MaxRequestBytes/2 {
		return Output{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("durable: the task and instructions are %d bytes encoded, past the %s a durable run carries of them",
			n, mib(MaxRequestBytes/2)), "BadInput", ErrBadInput)
	}
	if in.Carry != nil && workflow.GetInfo(ctx).ContinuedExecutionRunID == "" {
		return Output{}, temporal.NewNonRetryableApplicationError("durable: a Carry is the run's own, to continue as new with; a run is started without one",
			"BadInput", ErrBadInput)
	}
	recordRules(ctx) // first: a run's history says which rules it runs (issue 25)
	r := newRun(ctx, in)
	if err := r.answerStatus(ctx); err != nil { // a name registered once: a bug
		panic(err)
	}
	// root is the context the run works and lands on: its cancellation
	// and a [SignalLand] both end it, so that both take one path.
	root, land := workflow.WithCancel(ctx)
	r.startSearch(root)
	if in.Carry == nil { // a run continued as new has its run_start among its records
		start := trace.Record{Event: trace.RunStart, TotalMs: r.frame.Total().Milliseconds()}
		if in.Parent != nil {
			start.Key = in.Parent.Key // the call the child answers
		}
		r.record(root, start)
	}
	// When the quiet clock fires it ends the work context only: the run
	// still lands.
	watch, stopWatch := withCancel(root) // root's children cancel in order (cancel.go)
	work, stopWork := workflow.WithCancel(root)
	r.stopWork = stopWork
	workflow.Go(watch, r.listen)
	workflow.Go(watch, func(ctx workflow.Context) { r.quiet.watch(ctx, r.stopWork, r.warned) })
	workflow.Go(watch, r.phases)
	workflow.Go(watch, r.noteCancel(root))
	workflow.Go(watch, landOnSignal(land))
	if in.Parent != nil {
		workflow.Go(watch, r.forwardLoop)
	}
	res, err := r.run(root, work)
	if err != nil { // it continues as new (carry.go)
		return Output{}, err
	}
	stopWatch()
	stopWork()
	r.tellWork(root, true) // the work forwardLoop had not sent yet, its landing's among it
	end := trace.Record{Event: trace.RunEnd, Cause: string(res.Cause), Result: string(res.Status), TotalMs: r.frame.Total().Milliseconds()}
	r.record(root, end)
	r.endSearch(root, res)
	return Output{Result: res, Trace: r.records, Dropped: r.dropped}, nil
}

// run is the workflow's state: what the core's parts need kept between
// their steps, read off workflow.Now, never the wall clock.
type run struct {
	in    Input
	frame landing.Frame // the run's budget, phase and stamps
	// m is the run's machine (internal/run): its steps, its landing and
	// the words the landing reads are its, not the workflow's (issue 25).
	m           grun.Machine
	step        int // the step being made, as MakeTurn said: the index its records carry
	attempts    int
	calls       []landing.Call
	conv        []Message
	calling     []ToolCall       // the tool calls the last turn asked for, which MakeCalls makes
	landCtx     workflow.Context // the context the run lands on, once it lands
	cancelledAt time.Time        // when the run's caller cancelled it (noteCancel); zero: it did not
	tools       []ToolInfo
	unavailable []landing.Unavailable // the tools the worker names and cannot offer (ToolList)
	fingerprint Fingerprint           // the tools the run was set up with (ToolList), which its tool steps carry
	// model is the model's latency estimate from the run's answers, by
	// the process's rule (budget.Latency, issue 25).
	model budget.Latency
	// kinds are the tools' latency estimates by kind, each declared from
	// its spec at its first call and learned from the calls that end ok,
	// as the process's budget.Estimates (issue 25); read by key only.
	kinds map[string]*budget.Latency

	records    []trace.Record
	traceBytes int // the records' size as the workflow's result encodes them
	dropped    int
	rng        *rand.Rand // the backoff's jitter, seeded once from a SideEffect
	findable   bool       // the namespace has the run's search attributes, which it keeps (search.go)

	// cancelOf is how the cancel of each call's last cut attempt stands,
	// by the call's key ("" until answered); unsettled counts those sent
	// and unanswered, given their grace once the run has landed.
	cancelOf  map[string]*string
	unsettled int

	quiet    quietClock
	stopWork workflow.CancelFunc // ends the work context: the quiet clock fired
	events   int64               // a sub-agent's records of work, for its parent (forwardLoop)
	work     []string            // the words of those not yet sent

	children  int   // the sub-agents still running after their call ended: their cancels' grace ran out (child)
	resumedAt int   // the steps made when this run began: continued as new, its Carry's (carry.go)
	uncarried error // the run could not continue as new: its next model turn is not sent
	oversize  int   // the size of the Input the run could not continue as new with; zero: none found
}

func newRun(ctx workflow.Context, in Input) *run {
	in.MaxSteps, in.Parallel = orDefault(in.MaxSteps, DefaultMaxSteps), orDefault(in.Parallel, DefaultParallel)
	in.MaxAttempts, in.Quiet = orDefault(in.MaxAttempts, DefaultMaxAttempts), orDefault(in.Quiet, watchdog.DefaultQuiet)
	in.MaxRepeats = orDefault(in.MaxRepeats, DefaultMaxRepeats)
	r := &run{in: in, cancelOf: map[string]*string{}, kinds: map[string]*budget.Latency{}}
	runID, parent := cmp.Or(in.RunID, workflow.GetInfo(ctx).WorkflowExecution.ID), ""
	if in.Parent != nil {
		parent = in.Parent.RunID
	}
	// The budget starts when the run was started: the wait for a worker
	// is spent from B (SPEC §3); a sub-agent's when its parent granted it.
	start := workflow.Now(ctx)
	if st := workflow.GetInfo(ctx).WorkflowStartTime; !st.IsZero() && st.Before(start) {
		start = st
	}
	start = start.Add(-max(in.Spent, 0)) // by its caller, before the server had it
	if !in.Deadline.IsZero() {
		start = in.Deadline.Add(-in.Budget)
	}
	r.frame = landing.NewFrame(runID, parent, start, in.Budget, in.Reserve, in.Floor).WithResolution(in.TimerResolution)
	// The quiet clock starts when a worker first runs the run: a wait for
	// a worker is not the run's silence. in.Quiet > 0: no error.
	r.quiet, _ = newQuietClock(watchdog.Config{Quiet: in.Quiet, Mode: in.QuietMode}, workflow.Now(ctx))
	if p := in.Parent; p != nil {
		r.model.Declare(p.ModelP50, p.ModelP95) // a sub-agent starts from its parent's (landing.Inherit)
	}
	r.model.Warm(in.Profile[model.Kind])
	r.model.Learn(in.Learned[model.Kind])
	var seed [2]uint64
	if err := workflow.SideEffect(ctx, func(workflow.Context) any {
		return [2]uint64{rand.Uint64(), rand.Uint64()}
	}).Get(&seed); err != nil {
		seed = [2]uint64{1, 2} // a SideEffect's value cannot fail to decode; a fixed seed still replays
	}
	r.rng = rand.New(rand.NewPCG(seed[0], seed[1]))
	if in.Carry != nil {
		r.restore(in.Carry)
	}
	return r
}

// orDefault is v, or d when v is not positive: an Input's zero field.
func orDefault[T int | time.Duration](v, d T) T {
	if v <= 0 {
		return d
	}
	return v
}
