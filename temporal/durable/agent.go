package durable

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// A Parent is what a child run (a sub-agent, SPEC §5b) knows of the run
// that called it: where to send its semantic events, and how the call is
// named in the parent's trace.
type Parent struct {
	WorkflowID string // the parent's workflow, which its [SignalProgress] signals reach
	RunID      string // the parent's run ID: parent_run_id on every record of the child
	Step       string // the call's step kind, agent:NAME
	Key        string // the call's idempotency key
	// ModelP50 and ModelP95 are the parent's model latency, which the
	// child's starts from, declared ([landing.Inherit]), as in process.
	ModelP50, ModelP95 time.Duration `json:",omitempty"`
}

// AgentInfo is the agent block of a sub-agent tool, as the parent's
// workflow needs it to start the child: the child runs its own loop, on
// the worker's model, with the tools of its own tools file (Toolset).
type AgentInfo struct {
	Instructions string
	MaxSteps     int
	Toolset      string // the child's tools, as the worker names them: the path of agent names from the worker's tools file
}

// agentCall runs one sub-agent call as a child workflow on a slice of the
// run's budget (SPEC §5b), by landing's child rules (SliceOf, Inherit,
// ChildCall, ChildLost, Adopt). The child's Deadline is the slice's end
// in workflow time, so the scheduling of the child gives it no extra time.
func (r *run) agentCall(ctx workflow.Context, tc ToolCall, t ToolInfo, lc landing.Call, kind string) (string, landing.Call) {
	spec := t.Spec
	refused := func(reason, why string) (string, landing.Call) {
		r.record(ctx, trace.Record{Event: trace.Refused, Step: kind, StepIndex: r.step, Attempt: 1, CallID: tc.ID, Reason: reason})
		lc.Outcome, lc.Summary = landing.Refused, "not started: "+why
		return "error: not started: " + why, lc
	}
	task, err := landing.ChildTask(spec.Name, tc.Arguments)
	if err != nil { // rejected before any I/O, as in process: no attempt
		res := tools.Result{Tool: tc.Name, Outcome: trace.Invalid, Err: err.Error(), Cause: err}
		return res.Content(), res.Landing(r.step, kind)
	}
	_, remaining, _ := r.clock(ctx)
	slice, rule := landing.SliceOf(remaining, r.frame.Reserve(), r.frame.Floor(), spec.Ceiling, r.model.P95())
	if rule != 0 {
		return refused(rule.String(), "not enough time")
	}
	key := mintKey(ctx)
	set := landing.Inherit(landing.Inherited{}, landing.Inherited{Quiet: r.quiet.q, Parallel: r.in.Parallel,
		ModelP50: r.model.P50(), ModelP95: r.model.P95()}, true)
	// Named by the key, minted once: the same on a replay or takeover.
	childID := childName(spec.Name, key)
	in := Input{
		Task: task, Instructions: t.Agent.Instructions, Budget: slice.Granted, Reserve: slice.Reserve,
		Deadline: workflow.Now(ctx).Add(slice.Granted), Floor: slice.Floor, MaxSteps: t.Agent.MaxSteps,
		Parallel: set.Parallel, MaxAttempts: r.in.MaxAttempts, Quiet: set.Quiet, RunID: childID, Toolset: t.Agent.Toolset,
		TimerResolution: r.in.TimerResolution, // the same server's
		ContinueAt:      r.in.ContinueAt,
		Parent: &Parent{WorkflowID: workflow.GetInfo(ctx).WorkflowExecution.ID, RunID: r.frame.RunID(), Step: kind, Key: string(key),
			ModelP50: set.ModelP50, ModelP95: set.ModelP95},
	}
	start := trace.Record{Event: trace.AttemptStart, Step: kind, StepIndex: r.step, Attempt: 1, Key: string(key), CallID: tc.ID,
		GrantedMs: slice.Granted.Milliseconds()}
	r.record(ctx, start)
	r.attempts++
	r.heard(ctx, watchdog.ToolCall) // a tool call issued
	began := workflow.Now(ctx)
	out, gaveUp, err := r.child(ctx, childID, in, slice)
	took := workflow.Now(ctx).Sub(began)
	for _, rec := range out.Trace {
		r.keep(rec) // as the child stamped it, within the parent's bounds
	}
	r.calls = append(r.calls, landing.Adopt(r.step, spec.Name, out.Result.InFlight)...)
	r.dropped += out.Dropped
	r.quiet.resumeChild(ctx, string(key)) // a child that ended while it waited
	end := start
	end.Event = trace.AttemptEnd
	if err == nil && out.Result.Status != "" {
		end.Outcome = trace.OK
		r.record(ctx, end)
		// The call ended OK: its kind learns the attempt's time, as a
		// process's call learns it (tools.DriveCall's Succeeded) before
		// its tool result is heard (issue 25).
		r.estimate(kind, spec).Observe(took)
		r.heard(ctx, watchdog.ToolResult) // a tool result returned
		body, merr := landing.ChildMessage(out.Result)
		if merr != nil { // a Result is plain data: this is a bug
			panic(merr)
		}
		return string(body), landing.ChildCall(r.step, spec.Name, string(key), body)
	}
	loss, why := landing.ChildFailed, fmt.Sprint(err)
	switch {
	case gaveUp:
		loss = landing.ChildSilent
	case r.quiet.fired || temporal.IsCanceledError(err):
		loss, why = landing.ChildStopped, r.stopped()
	}
	var message string
	end.Outcome, end.Message, message, lc = landing.ChildLost(r.step, spec.Name, string(key), loss, r.quiet.fired, why, slice.Granted)
	r.record(ctx, end)
	return message, lc
}

// child runs the child workflow of in and waits the slice's Wait for its
// output; past it, the parent gives up (gaveUp), cancels it, and waits
// the slice's Grace for its partial. The waits are disconnected: a
// stalled or cancelled parent still waits for its child to land.
func (r *run) child(ctx workflow.Context, id string, in Input, slice landing.Slice) (out Output, gaveUp bool, err error) {
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:               id,
		WorkflowTaskTimeout:      WorkflowTaskTimeout,
		WorkflowExecutionTimeout: ExecutionTimeout(in.Budget), // its slice: the server ends a child still open at its D + Overrun
		WaitForCancellation:      true,
		ParentClosePolicy:        enumspb.PARENT_CLOSE_POLICY_TERMINATE,
		RetryPolicy:              &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	cctx, stopChild := withCancel(cctx) // sub-agents side by side cancel in order (cancel.go)
	defer stopChild()
	f := workflow.ExecuteChildWorkflow(cctx, WorkflowName, in)
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	wait, stopWait := workflow.WithCancel(dctx)
	sel := workflow.NewSelector(dctx)
	sel.AddFuture(f, func(f workflow.Future) { err = f.Get(dctx, &out) })
	sel.AddFuture(workflow.NewTimer(wait, slice.Wait), func(workflow.Future) { gaveUp = true })
	sel.Select(dctx)
	stopWait()
	if gaveUp {
		stopChild()
		grace := workflow.NewSelector(dctx)
		grace.AddFuture(f, func(f workflow.Future) { err = f.Get(dctx, &out) })
		grace.AddFuture(workflow.NewTimer(dctx, slice.Grace), func(workflow.Future) {})
		grace.Select(dctx)
	}
	if !f.IsReady() { // a child still landing: the run does not continue as new before it ends (carry.go)
		r.children++
		workflow.Go(dctx, func(ctx workflow.Context) {
			_ = f.Get(ctx, nil)
			r.children--
		})
	}
	return out, gaveUp, err
}

// forward keeps rec for the parent, when this run is a sub-agent and rec
// a record of work ([landing.ChildWork]); forwardLoop sends them.
func (r *run) forward(rec trace.Record) {
	if r.in.Parent == nil {
		return
	}
	if msg, ok := landing.ChildWork(rec); ok {
		r.events++
		r.work = append(r.work, msg)
	}
}

// tellWork sends the parent the records of work not sent yet, and waits
// for the signal's delivery; bounded (the run has landed), no longer than
// the run has left (issue 25).
func (r *run) tellWork(ctx workflow.Context, bounded bool) {
	p := r.in.Parent
	if p == nil || len(r.work) == 0 {
		return
	}
	sig := Progress{Step: p.Step, Key: p.Key, Units: r.events, Message: r.work[len(r.work)-1], Messages: r.work}
	r.work = nil
	f := workflow.SignalExternalWorkflow(ctx, p.WorkflowID, "", SignalProgress, sig)
	if !bounded {
		_ = f.Get(ctx, nil)
	} else if _, left, _ := r.clock(ctx); left > 0 {
		_, _ = workflow.AwaitWithTimeout(ctx, left, f.IsReady)
	}
}

// forwardLoop sends the parent new records of work at most once per
// [ProgressEvery] until ctx ends; the run sends the rest when it has
// landed.
func (r *run) forwardLoop(ctx workflow.Context) {
	var sent int64
	for {
		if err := workflow.Await(ctx, func() bool { return r.events > sent }); err != nil {
			return
		}
		sent = r.events
		r.tellWork(ctx, false)
		if err := workflow.Sleep(ctx, ProgressEvery); err != nil {
			return
		}
	}
}

// childName is the workflow ID of the child that answers the call of
// tool with key: named by a hash of the key, not the key, since workflow
// IDs are listed in clear (a codec does not cover them) and whoever holds
// a key can ask its tool about the write, or send one taken for it.
func childName(tool string, key cancel.Key) string {
	sum := sha256.Sum256([]byte(key))
	return tool + "/" + hex.EncodeToString(sum[:16])
}
