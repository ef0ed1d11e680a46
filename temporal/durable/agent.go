package durable

import (
	"encoding/json"
	"fmt"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/watchdog"
	"strings"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/trace"
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
// run's budget (SPEC §5b): min(ceiling, available − keep), keep being the
// run's p95 for one model turn and at least twice the floor, so that the
// child's deadline never passes the parent's reserve. The child's
// Deadline is the slice's end in workflow time, so the scheduling of the
// child gives it no extra time. The child lands inside its slice with a
// labeled result, which is the tool message's content exactly (the
// `--json` object of `harness run`), and its trace records join the
// parent's with parent_run_id. It is one attempt: a child returns a
// result whatever happens inside it, so there is nothing to retry; a
// child that cannot return one by its slice's end and keep is given up,
// cancelled, and called interrupted.
func (r *run) agentCall(ctx workflow.Context, tc ToolCall, t ToolInfo, lc landing.Call, kind string) (string, landing.Call) {
	spec := t.Spec
	refused := func(reason, why, message string) (string, landing.Call) {
		r.record(ctx, trace.Record{Event: trace.Refused, Step: kind, StepIndex: r.step, Attempt: 1, CallID: tc.ID, Reason: reason, Message: message})
		lc.Outcome, lc.Summary = landing.Refused, "not started: "+why
		return "error: not started: " + why, lc
	}
	if err := landing.WidenAt(r.phase, landing.SubAgent); err != nil {
		// The process's gate, in its words on the record (issue 25).
		return refused("gated", "no new sub-agents after "+landing.Explore.String(), landing.GateReason(err))
	}
	var args struct {
		Task string `json:"task"`
	}
	if err := json.Unmarshal(tc.Arguments, &args); err != nil || strings.TrimSpace(args.Task) == "" {
		lc.Outcome, lc.Summary = landing.Failed, "bad arguments"
		return fmt.Sprintf("error: %s: the arguments are not {\"task\": \"…\"}", spec.Name), lc
	}
	if ctx.Err() != nil {
		return refused("cancelled", r.stopped(), "")
	}
	_, remaining, _ := r.clock(ctx)
	// The process's rule for a slice, not a copy (issue 25).
	granted, keep, _, rule := budget.SliceGrant(remaining, r.reserve, r.floor, spec.Ceiling, r.model.P95())
	if rule != 0 {
		return refused(rule.String(), "not enough time", "")
	}
	key := mintKey(ctx)
	lc.Key = string(key)
	now := workflow.Now(ctx)
	// Named by the key, minted once: the same on a replay, and on a worker
	// that takes the run over, whatever the parent workflow is called.
	childID := spec.Name + "/" + string(key)
	in := Input{
		Task: args.Task, Instructions: t.Agent.Instructions, Budget: granted, Deadline: now.Add(granted),
		Floor: r.floor, MaxSteps: t.Agent.MaxSteps, Parallel: r.in.Parallel, MaxAttempts: r.in.MaxAttempts,
		Quiet: r.quiet.q, RunID: childID, Toolset: t.Agent.Toolset,
		Parent: &Parent{WorkflowID: workflow.GetInfo(ctx).WorkflowExecution.ID, RunID: r.runID, Step: kind, Key: string(key)},
	}
	base := trace.Record{Step: kind, StepIndex: r.step, Attempt: 1, Key: string(key), CallID: tc.ID}
	start := base
	start.Event, start.GrantedMs = trace.AttemptStart, granted.Milliseconds()
	r.record(ctx, start)
	r.attempts++
	r.heard(ctx, watchdog.ToolCall) // a tool call issued
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:          childID,
		WorkflowTaskTimeout: WorkflowTaskTimeout,
		// A cancelled parent cancels its child and waits for it to land,
		// which it does within its own reserve, with its partial.
		WaitForCancellation: true,
		ParentClosePolicy:   enumspb.PARENT_CLOSE_POLICY_TERMINATE,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	cctx, stopChild := workflow.WithCancel(cctx)
	defer stopChild()
	f := workflow.ExecuteChildWorkflow(cctx, WorkflowName, in)
	var out Output
	var err error
	gaveUp := false
	// The parent waits for the child until the slice ends and keep/2 more:
	// the child lands by its deadline on the same clock, so a later answer
	// means its workers are gone, and the parent needs the rest of keep.
	// Both wait on a context of their own: a stalled or cancelled parent
	// still waits for its child to land (WaitForCancellation).
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	wait, stopWait := workflow.WithCancel(dctx)
	sel := workflow.NewSelector(dctx)
	sel.AddFuture(f, func(f workflow.Future) { err = f.Get(dctx, &out) })
	sel.AddFuture(workflow.NewTimer(wait, granted+keep/2), func(workflow.Future) { gaveUp = true })
	sel.Select(dctx)
	stopWait()
	if gaveUp {
		stopChild()
		// The child lands at once with cause cancelled; its answer is not
		// waited for past what the parent needs.
		grace := workflow.NewSelector(dctx)
		grace.AddFuture(f, func(f workflow.Future) { err = f.Get(dctx, &out) })
		grace.AddFuture(workflow.NewTimer(dctx, min(keep/4, r.floor*4)), func(workflow.Future) {})
		grace.Select(dctx)
	}
	end := start
	end.Event = trace.AttemptEnd
	for _, rec := range out.Trace {
		r.adopt(rec)
	}
	// The child's orphans are the parent's, as in process (landing.Adopt,
	// issue 25): listed in its in_flight, they keep it from saying
	// complete while a write of its child may or may not have happened.
	r.calls = append(r.calls, landing.Adopt(r.step, spec.Name, out.Result.InFlight)...)
	r.dropped += out.Dropped
	if resume, ok := r.quiet.paused[string(key)]; ok {
		// The child ended while it waited: its wait is over.
		resume()
		delete(r.quiet.paused, string(key))
	}
	switch {
	case err == nil && out.Result.Status != "":
		end.Outcome = trace.OK
		r.record(ctx, end)
		r.heard(ctx, watchdog.ToolResult) // a tool result returned
		body, merr := json.Marshal(out.Result)
		if merr != nil { // a Result is plain data: this is a bug
			panic(merr)
		}
		lc.Outcome, lc.Summary, lc.Landed = landing.Done, clip(out.Result.Line(), 200), out.Result.Landed()
		if out.Result.Status != landing.Complete {
			lc.Summary = clip("partial: "+out.Result.Boundary, 200)
		}
		return string(body), lc
	case gaveUp:
		end.Outcome, end.Message = trace.GaveUp, spec.Name+": the sub-agent sent no result within its slice of "+landing.Human(granted)
	case r.quiet.fired:
		end.Outcome, end.Message = trace.Quiet, spec.Name+": stopped: "+r.stopped()
	case temporal.IsCanceledError(err):
		end.Outcome, end.Message = trace.Cancelled, spec.Name+": stopped: the run was cancelled"
	default:
		end.Outcome, end.Message = trace.UpstreamError, spec.Name+" failed: "+clip(fmt.Sprint(err), 512)
	}
	r.record(ctx, end)
	lc.Outcome, lc.State, lc.Summary = landing.Interrupted, stateCancelled, clip(end.Message, 200)
	return "error: " + end.Message + "; it was cancelled", lc
}

// adopt keeps a child's record as it was stamped, in the child's workflow
// time and with its own run_id and seq, within the parent's bounds.
func (r *run) adopt(rec trace.Record) { r.keep(rec) }

// forward keeps rec, when this run is a sub-agent and rec a record of
// work, for its parent: each is one more unit of progress for the
// parent's quiet clock (SPEC §3) and one progress record in the parent's
// trace, in harness.ChildWork's words, as in process (issue 25). They are
// counted here and sent by forwardLoop, coalesced.
func (r *run) forward(rec trace.Record) {
	if r.in.Parent == nil {
		return
	}
	if msg, ok := harness.ChildWork(rec); ok {
		r.events++
		r.work = append(r.work, msg)
	}
}

// tellWork sends the parent, when this run is a sub-agent, the records of
// work it was not told of yet, without waiting for a signal's delivery
// longer than ctx allows.
func (r *run) tellWork(ctx workflow.Context) {
	p := r.in.Parent
	if p == nil || len(r.work) == 0 {
		return
	}
	sig := Progress{Step: p.Step, Key: p.Key, Units: r.events, Message: r.work[len(r.work)-1], Messages: r.work}
	r.work = nil
	// A parent that has ended cannot be told; the child goes on to
	// land on its own deadline.
	_ = workflow.SignalExternalWorkflow(ctx, p.WorkflowID, "", SignalProgress, sig).Get(ctx, nil)
}

// forwardLoop sends the parent the child's records of work whenever there
// are new ones, at most once per [ProgressEvery] of workflow time, as a
// [SignalProgress] whose units are their count, until ctx ends; the
// workflow sends the rest when it has landed (tellWork).
func (r *run) forwardLoop(ctx workflow.Context) {
	var sent int64
	for {
		if err := workflow.Await(ctx, func() bool { return r.events > sent }); err != nil {
			return
		}
		sent = r.events
		r.tellWork(ctx)
		if err := workflow.Sleep(ctx, ProgressEvery); err != nil {
			return
		}
	}
}
