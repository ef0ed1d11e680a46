package durable

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/internal/toolset"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// Activity names, as registered by [Activities.Register] and scheduled by
// [Workflow].
const (
	ModelActivity  = "glidepath.model"
	ToolsActivity  = "glidepath.tools"
	ToolActivity   = "glidepath.tool"
	StatusActivity = "glidepath.status"
	CancelActivity = "glidepath.cancel"
	OrphanActivity = "glidepath.orphan"
)

// ToolsetMismatch is the type of the application error of an activity a
// worker refused because the run was set up with other tools
// ([toolset.MismatchError]).
const ToolsetMismatch = "ToolsetMismatch"

// Activities are the worker's side of a run: each makes exactly one
// attempt with the core's parts (package model, a [tools.Registry]) on
// the context Temporal gives it, whose deadline is the lease the workflow
// granted. An Activities is safe for concurrent use once built.
type Activities struct {
	// Model is the model's configuration; its Ceiling and MaxAttempts are
	// ignored, since each attempt is leased by the workflow.
	Model model.Config

	// Tools are the tools the worker runs. Nil: none.
	Tools *Toolset

	// Journal is the orphan journal the worker appends to (SPEC §5). Nil:
	// an orphan is reported in the result and the trace only, and the
	// model is told that nothing will check it later.
	Journal *cancel.Journal

	// Identity is the worker's Temporal identity, which a refusal of a
	// run set up with other tools names. Empty: [Identity] of Tools.
	Identity string
}

// refuse is the error of a step of a run set up with the tools of
// fingerprint run, when the worker's are others (toolset.Check): the step
// is refused before any I/O, so that no call reaches a tool this worker
// has another idea of.
func (a *Activities) refuse(run Fingerprint, step string) error {
	own := a.Tools.Fingerprint()
	if run == "" || run == own {
		return nil // a match, or a run set up before fingerprints
	}
	return toolset.Check(run, own, cmp.Or(a.Identity, Identity(own)), step)
}

// Register registers the activities on r under their names.
func (a *Activities) Register(r interface {
	RegisterActivityWithOptions(any, activity.RegisterOptions)
}) {
	r.RegisterActivityWithOptions(a.ModelAttempt, activity.RegisterOptions{Name: ModelActivity})
	r.RegisterActivityWithOptions(a.ToolInfos, activity.RegisterOptions{Name: ToolsActivity})
	r.RegisterActivityWithOptions(a.ToolAttempt, activity.RegisterOptions{Name: ToolActivity})
	r.RegisterActivityWithOptions(a.ToolStatus, activity.RegisterOptions{Name: StatusActivity})
	r.RegisterActivityWithOptions(a.ToolCancel, activity.RegisterOptions{Name: CancelActivity})
	r.RegisterActivityWithOptions(a.JournalOrphan, activity.RegisterOptions{Name: OrphanActivity})
}

// JournalOrphan appends an orphan to the worker's journal, with what
// `harness reconcile` needs to ask its tool again, as tools' own calls
// journal theirs.
func (a *Activities) JournalOrphan(ctx context.Context, req OrphanRequest) (OrphanReply, error) {
	if err := a.refuse(req.Fingerprint, "the orphan journal entry of "+req.Kind); err != nil {
		return OrphanReply{Err: err.Error()}, nil
	}
	var reg *tools.Registry
	if ts := a.Tools.sub(req.Toolset); ts != nil {
		reg = ts.Registry
	}
	run := &tools.Run{ID: req.RunID, Journal: a.Journal}
	oe, unjournaled, err := reg.Orphan(run, req.Tool, cancel.Key(req.Key), req.Args, nil)
	if err != nil && a.Journal != nil {
		unjournaled += ": " + err.Error() // the workflow's records name the journal's error
	}
	return OrphanReply{Journaled: oe.Journaled, Reachable: oe.Reachable, Next: oe.Next, Err: unjournaled}, nil
}

// leaseOf is the lease an activity runs on and sends as
// Budget-Remaining-Ms: what is left of its ScheduleToClose, less
// [replyGuard], never more than it really has.
func leaseOf(ctx context.Context) budget.Lease {
	deadline, ok := ctx.Deadline()
	if !ok {
		return budget.Lease{}
	}
	left := max(time.Until(deadline), 0)
	left -= min(replyGuard, left/10)
	return budget.Lease{Granted: left, Remaining: left, Deadline: time.Now().Add(left), Capped: true}
}

// replyGuard is how much sooner than its ScheduleToClose an attempt is
// cut (at most a tenth of its lease), so that its own answer — whether its
// work stopped, or it was never sent — reaches the workflow before
// Temporal's timeout, which says only that the call may have reached the
// tool.
const replyGuard = 50 * time.Millisecond

// withHeartbeat runs f with heartbeats going, and waits for them to stop
// before it returns. Heartbeats find a dead worker (when the workflow set
// a HeartbeatTimeout) and bring the attempt its cancellation, which the
// SDK delivers only in a heartbeat's answer ([WorkerOptions] says how
// soon). The first waits a tick: the SDK's first heartbeat is an RPC and
// a write on the server, which an attempt shorter than a tick does not
// need (temporal/bench measured a step at 1.2× a plain workflow's with
// it, 1.0× without).
func withHeartbeat[T any](ctx context.Context, f func() T) T {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(DeadWorker / 4)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			activity.RecordHeartbeat(ctx)
		}
	})
	defer wg.Wait()
	defer close(stop)
	return f()
}

// ModelAttempt makes one model attempt on the activity's lease.
func (a *Activities) ModelAttempt(ctx context.Context, req ModelRequest) (ModelReply, error) {
	lease := leaseOf(ctx)
	if lease.Granted <= 0 {
		return ModelReply{TurnAttempted: model.TurnAttempted{Outcome: trace.GaveUp, Failure: "no time left for the attempt"}}, nil
	}
	// The workflow's model lease has no ceiling: what cuts it is the run's
	// time, not a per-attempt timeout to try again within (issue 25).
	lease.Capped = false
	if req.Tools && !req.Landing { // it offers the worker's tools
		if err := a.refuse(req.Fingerprint, "the model turn"); err != nil {
			// Not tried again: the refusal says how the queue's workers
			// stand, not a failure that passes.
			return ModelReply{TurnAttempted: model.TurnAttempted{Outcome: trace.Invalid, Failure: err.Error()}}, nil
		}
	}
	cfg := a.Model
	cfg.MaxAttempts = 0 // ignored, as Ceiling is: the workflow leases each attempt
	client, err := model.New(cfg)
	if err != nil {
		return ModelReply{}, err
	}
	r := model.Request{Messages: model.Params(req.Messages), Parallel: req.Parallel}
	if req.Tools && !req.Landing {
		specs := a.Tools.sub(req.Toolset).specs() // a list of its own: deleting from it is safe
		r.Tools = harness.Offer(slices.DeleteFunc(specs, func(sp tools.Spec) bool { return slices.Contains(req.Without, sp.Name) }))
	}
	return withHeartbeat(ctx, func() ModelReply {
		p := newProgressor(ctx, model.Kind)
		defer p.stop()
		reply := client.AttemptReply(ctx, lease, 1, r, modelSignals(ctx, req, p)) // the workflow numbers its attempts
		if reply.Progress != nil {
			reply.Progress.Units += req.Thoughts // as modelSignals counts
		}
		return reply
	}), nil
}

// modelSignals is what hears a model attempt's signals: its progress (a
// Responses reasoning summary) goes to p, its server's headers to the run
// when the turn asked for them. In process one client hears all of a
// run's model calls, so their progress rises from call to call under one
// key; here each attempt has a client of its own, whose units begin
// after the most the run has heard (req.Thoughts).
func modelSignals(ctx context.Context, req ModelRequest, p *progressor) func(trace.Signal) {
	var headers func(trace.Signal)
	if req.Headers {
		headers = headersTeller(ctx, req.Turn)
	}
	return func(s trace.Signal) {
		switch {
		case s.Event == watchdog.Progress:
			s.Units += req.Thoughts
			p.heard(s)
		case headers != nil:
			headers(s)
		}
	}
}

// ToolAttempt makes one attempt of a tool call with the workflow's key,
// on the activity's lease, and reports what the tool's Answer said.
func (a *Activities) ToolAttempt(ctx context.Context, req ToolRequest) (ToolReply, error) {
	if err := a.refuse(req.Fingerprint, "tool:"+req.Tool); err != nil {
		return notSent(err), nil
	}
	ts := a.Tools.sub(req.Toolset).set()
	t, args, err := ts.Checked(req.Tool, req.Args)
	if err != nil {
		return notSent(err), nil
	}
	lease, spec := leaseOf(ctx), t.Spec()
	end := withHeartbeat(ctx, func() tools.AttemptEnd {
		p := newProgressor(ctx, cmp.Or(spec.Kind, tools.KindPrefix+spec.Name))
		defer p.stop()
		return tools.AttemptOnLease(ctx, lease, t, &tools.Call{Key: cancel.Key(req.Key), Args: args, N: req.Attempt, Heard: p.heard})
	})
	ans := end.Answer
	reply := ToolReply{Output: cutOutput(ans.Output), Outcome: trace.OK, Status: ans.Status, Answered: end.Answered,
		Cut: end.Cut, Retry: ans.Retry, NotSent: ans.NotSent, Stopped: ans.Stopped, CutShort: ans.CutShort,
		RetryAfter: end.RetryAfter}
	if re, ok := errors.AsType[*budget.RetryAfterError](end.RetryAfterErr); ok {
		reply.RetryAfterInvalid = re.Value
	}
	if end.Err != nil {
		// What a tool says back may quote a secret (issue 25).
		reply.Outcome, reply.Err, reply.Cause = end.Err.Outcome, ts.Redact(end.Failure(spec), a.Model.APIKey), ts.Redact(end.Err.Err.Error(), a.Model.APIKey)
	}
	return reply, nil
}

// notSent is the reply of an attempt refused before it was sent.
func notSent(err error) ToolReply {
	return ToolReply{Outcome: trace.Invalid, Answered: true, NotSent: true, Err: err.Error()}
}

// ToolStatus asks the tool how the call with the request's key went,
// without sending it again.
func (a *Activities) ToolStatus(ctx context.Context, req StatusRequest) (StatusReply, error) {
	if err := a.refuse(req.Fingerprint, "the status ask of tool:"+req.Tool); err != nil {
		return StatusReply{Err: err.Error()}, nil
	}
	return withHeartbeat(ctx, func() StatusReply {
		st, err := a.Tools.sub(req.Toolset).set().StatusOf(ctx, req.Tool, cancel.Key(req.Key))
		if err != nil {
			return StatusReply{Err: err.Error()}
		}
		return StatusReply{State: string(st.State), Output: cutOutput(st.Output)}
	}), nil
}

// ToolCancel asks the tool to stop the call with the request's key, and
// returns the cancel_sent state.
func (a *Activities) ToolCancel(ctx context.Context, req StatusRequest) (string, error) {
	if err := a.refuse(req.Fingerprint, "the cancel of tool:"+req.Tool); err != nil {
		return "", temporal.NewNonRetryableApplicationError(err.Error(), ToolsetMismatch, nil)
	}
	return string(a.Tools.sub(req.Toolset).set().CancelOf(ctx, req.Tool, cancel.Key(req.Key))), nil
}
