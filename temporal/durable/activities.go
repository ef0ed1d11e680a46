package durable

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/internal/redact"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	"github.com/openai/openai-go/v3"
	"go.temporal.io/sdk/activity"
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
// `harness reconcile` needs to ask its tool again.
func (a *Activities) JournalOrphan(ctx context.Context, req OrphanRequest) (OrphanReply, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, req.Args); err != nil || len(bytes.TrimSpace(req.Args)) == 0 {
		buf.Reset()
		buf.WriteString("{}")
	}
	e := cancel.Entry{TS: time.Now(), RunID: req.RunID, Tool: req.Tool, Kind: req.Kind,
		IdempotencyKey: cancel.Key(req.Key), ArgsSHA256: cancel.ArgsSHA256(buf.Bytes()), State: cancel.Open}
	var reachable bool
	if ts := a.Tools.sub(req.Toolset); ts != nil {
		e.URL, e.ToolsFile = ts.url(req.Tool), ts.file()
		_, impl, _ := ts.lookup(req.Tool)
		_, asks := impl.(cancel.StatusReader)
		builtin := ts.builtin(req.Tool)
		reachable = e.URL != "" || asks && !builtin
	}
	if a.Journal == nil {
		return OrphanReply{Err: "no orphan journal is configured"}, nil
	}
	if err := a.Journal.Append(e); err != nil {
		return OrphanReply{Err: "the orphan journal could not be written: " + err.Error()}, nil
	}
	next := cancel.SettleCommand(a.Journal.Path(), e.IdempotencyKey, cancel.Done)
	if reachable {
		next = cancel.ReconcileCommand(a.Journal.Path())
	}
	return OrphanReply{Journaled: true, Reachable: reachable, Next: next}, nil
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

// localBudget is a budget around one attempt, for the core's parts that
// lease from a *budget.Budget, that grants a lease with ceiling left
// exactly left: the workflow's lease, nothing more.
func localBudget(left time.Duration) *budget.Budget {
	floor := budget.DefaultFloor
	b, err := budget.New(budget.Config{Total: 2*left + 4*floor, Reserve: floor, Floor: floor})
	if err != nil {
		panic(err) // Total exceeds Reserve and Floor by construction
	}
	return b
}

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
	cfg := a.Model
	cfg.Ceiling, cfg.MaxAttempts = lease.Granted, 1
	client, err := model.New(cfg)
	if err != nil {
		return ModelReply{}, err
	}
	msgs := params(req.Messages)
	b := localBudget(lease.Granted)
	// The attempt's end as the client reports it: the model that
	// answered, and what the stream carried, for the boundary.
	var heard trace.Attempt
	obs := &trace.Observer{AttemptEnd: func(at trace.Attempt) { heard = at }}
	return withHeartbeat(ctx, func() ModelReply {
		var resp model.Response
		var err error
		if req.Landing {
			resp, err = client.Land(ctx, b, msgs, obs)
		} else {
			r := model.Request{Messages: msgs, Parallel: req.Parallel}
			if req.Tools {
				r.Tools = harness.Offer(a.Tools.sub(req.Toolset).specs())
			}
			resp, err = client.Complete(ctx, b, r, obs)
		}
		if err != nil {
			out := failedReply(err)
			out.Chunks, out.Keepalives = heard.Chunks, heard.Keepalives
			out.ResponseModel = heard.Model
			out.Cause = redact.Secrets(out.Cause, a.Model.APIKey)
			return out
		}
		out := ModelReply{Content: resp.Message.Content, FinishReason: resp.FinishReason, ResponseModel: heard.Model,
			TurnAttempted: model.TurnAttempted{Outcome: trace.OK}, Tokens: resp.Usage.TotalTokens}
		for _, c := range resp.Message.ToolCalls {
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: json.RawMessage(c.Function.Arguments)})
		}
		return out
	}), nil
}

// failedReply reads a model failure by model.Attempted, and what ended it
// for its record.
func failedReply(err error) ModelReply {
	a, raErr := model.Attempted(err, time.Now())
	r := ModelReply{TurnAttempted: a, Cause: err.Error()}
	if ae, ok := errors.AsType[*trace.AttemptError](err); ok && ae.Err != nil {
		r.Cause = ae.Err.Error() // the workflow words it with its own attempt number
	}
	if r.Outcome == trace.GaveUp {
		// The lease is what the run had left, not a ceiling to try
		// again within (issue 25).
		r.Retry, r.Cause = false, budget.ErrDeadline.Error()
	}
	if re, ok := errors.AsType[*budget.RetryAfterError](raErr); ok {
		r.RetryAfterInvalid = re.Value
	}
	return r
}

// params turns the workflow's messages into openai-go's.
func params(msgs []Message) []openai.ChatCompletionMessageParamUnion {
	out := make([]openai.ChatCompletionMessageParamUnion, 0, len(msgs))
	for _, m := range msgs {
		switch m.Role {
		case "system":
			out = append(out, openai.SystemMessage(m.Content))
		case "user":
			out = append(out, openai.UserMessage(m.Content))
		case "tool":
			out = append(out, openai.ToolMessage(m.Content, m.ToolCallID))
		case "assistant":
			cm := openai.ChatCompletionMessage{Content: m.Content}
			for _, c := range m.ToolCalls {
				var tc openai.ChatCompletionMessageToolCallUnion
				tc.ID, tc.Type = c.ID, "function"
				tc.Function.Name, tc.Function.Arguments = c.Name, string(c.Arguments)
				cm.ToolCalls = append(cm.ToolCalls, tc)
			}
			out = append(out, harness.AssistantMessage(cm))
		}
	}
	return out
}

// ToolAttempt makes one attempt of a tool call with the workflow's key,
// on the activity's lease, and reports what the tool's Answer said.
func (a *Activities) ToolAttempt(ctx context.Context, req ToolRequest) (ToolReply, error) {
	ts := a.Tools.sub(req.Toolset)
	t, _, ok := ts.lookup(req.Tool)
	if !ok {
		return ToolReply{Outcome: trace.Invalid, Answered: true, NotSent: true, Err: fmt.Sprintf("unknown tool %q", req.Tool)}, nil
	}
	// Checked by the toolset's own registry: a sub-agent's tool is never
	// checked against its parent's of the same name (issue 25).
	args, err := ts.Registry.Validate(req.Tool, req.Args)
	if err != nil {
		return ToolReply{Outcome: trace.Invalid, Answered: true, NotSent: true, Err: err.Error()}, nil
	}
	lease := leaseOf(ctx)
	reply := withHeartbeat(ctx, func() ToolReply {
		actx, stop := lease.Context(ctx)
		defer stop()
		p := newProgressor(ctx, t.Spec())
		defer p.stop()
		call := &tools.Call{Key: cancel.Key(req.Key), Args: args, N: req.Attempt, Lease: lease, Budget: localBudget(lease.Granted), Heard: p.heard}
		return replyOf(actx, t.Spec(), lease, tools.RunAttempt(actx, t, call)) // as the Registry makes it (issue 25)
	})
	// What a tool says back may quote a secret (issue 25).
	secrets := append([]string{a.Model.APIKey}, ts.secrets()...)
	reply.Err = redact.Secrets(reply.Err, secrets...)
	reply.Cause = redact.Secrets(reply.Cause, secrets...)
	return reply, nil
}

// replyOf classifies an attempt's Answer as package tools' call loop
// does, and words its failure by tools.Describe.
func replyOf(actx context.Context, spec tools.Spec, lease budget.Lease, ans tools.Answer) ToolReply {
	r := ToolReply{Output: ans.Output, Outcome: ans.Outcome, Status: ans.Status, Retry: ans.Retry,
		NotSent: ans.NotSent, Stopped: ans.Stopped, CutShort: ans.CutShort}
	if ans.Err == nil {
		r.Outcome = trace.OK
		return r
	}
	r.Answered = ans.Outcome != ""
	e := &trace.AttemptError{Outcome: ans.Outcome, Status: ans.Status, Err: ans.Err}
	switch {
	case !r.Answered && actx.Err() != nil:
		r.Cut = true
		e.Outcome = trace.OutcomeOfContext(actx, watchdog.ErrQuiet)
		e.Err = context.Cause(actx) // the lease's end, as the process's attempt context says it
	case !r.Answered:
		e.Outcome = trace.UpstreamError
	}
	if !r.Answered {
		r.Retry = trace.Retryable(e)
	}
	r.Outcome, r.Cause = e.Outcome, e.Err.Error()
	why := context.Cause(actx)
	if why == nil {
		why = budget.ErrLeaseExpired // the tool said its deadline passed: the worker's lease is always capped (leaseOf)
	}
	r.Err = tools.Describe(spec, e, why, lease.Granted)
	// Read now, on the worker, as the process's backoff record keeps it.
	ra, err := budget.ReadRetryAfter(ans.Header, time.Now())
	if re, ok := errors.AsType[*budget.RetryAfterError](err); ok {
		r.RetryAfterInvalid = re.Value
	}
	r.RetryAfter = ra
	return r
}

// ToolStatus asks the tool how the call with the request's key went,
// without sending it again.
func (a *Activities) ToolStatus(ctx context.Context, req StatusRequest) (StatusReply, error) {
	_, impl, ok := a.Tools.sub(req.Toolset).lookup(req.Tool)
	if !ok {
		return StatusReply{Err: fmt.Sprintf("unknown tool %q", req.Tool)}, nil
	}
	sr, ok := impl.(cancel.StatusReader)
	if !ok {
		return StatusReply{Err: "the tool cannot be asked how a call went"}, nil
	}
	return withHeartbeat(ctx, func() StatusReply {
		st, err := sr.Status(ctx, cancel.Key(req.Key))
		if err != nil {
			return StatusReply{Err: err.Error()}
		}
		return StatusReply{State: string(st.State), Output: st.Output}
	}), nil
}

// ToolCancel asks the tool to stop the call with the request's key, and
// returns the cancel_sent state.
func (a *Activities) ToolCancel(ctx context.Context, req StatusRequest) (string, error) {
	_, impl, ok := a.Tools.sub(req.Toolset).lookup(req.Tool)
	if !ok {
		return string(trace.CancelStateFailed), nil
	}
	c, ok := impl.(cancel.Canceller)
	if !ok {
		return string(trace.CancelStateFailed), nil
	}
	return string(tools.CancelStateOf(c.Cancel(ctx, cancel.Key(req.Key)))), nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
