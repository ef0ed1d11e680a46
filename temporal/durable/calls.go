package durable

import (
	"cmp"
	"errors"
	"strings"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/internal/redact"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// callAll makes the tool calls of one turn and returns each one's tool
// message, as a sliding window of width Parallel: each call takes the
// slots tools.Slots says in call order once one is free, asking the phase
// then, so that a call that starts once the run left explore waits for the
// calls in flight and runs alone, as harness's Session.Call has them (issue
// 25).
func (r *run) callAll(ctx workflow.Context, asked []ToolCall) []string {
	out := make([]string, len(asked))
	calls := make([]landing.Call, len(asked))
	// The waits are not cut by ctx: a call that finds the run stopping
	// still owes the model its result, which it gives at once.
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	wg := workflow.NewWaitGroup(ctx)
	width, held := max(r.in.Parallel, 1), 0
	for i := range asked {
		_ = workflow.Await(dctx, func() bool { return held < width }) // dctx is never done
		r.advance(ctx)                                                // the phase now, not the one the model turn started in
		n := tools.Slots(r.frame.Phase(), width)
		_ = workflow.Await(dctx, func() bool { return held+n <= width })
		held += n
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer wg.Done()
			defer func() { held -= n }()
			out[i], calls[i] = r.call(ctx, asked[i])
		})
	}
	wg.Wait(dctx)
	r.calls = append(r.calls, calls...)
	return out
}

// call makes one logical tool call through tools.Gate, and returns the
// tool message's content and the call as the landing record keeps it.
func (r *run) call(ctx workflow.Context, tc ToolCall) (string, landing.Call) {
	var t ToolInfo
	names := make([]string, len(r.tools))
	for i, ti := range r.tools {
		if names[i] = ti.Spec.Name; names[i] == tc.Name {
			t = ti
		}
	}
	spec := t.Spec
	kind := cmp.Or(spec.Kind, tools.KindPrefix+tc.Name)
	r.advance(ctx) // a call is gated by the phase it starts in
	_, _, available := r.clock(ctx)
	g := tools.Gate{Tool: tc.Name, Kind: kind, Phase: r.frame.Phase(), Stopping: ctx.Err() != nil, Known: spec.Name != "",
		Speculative: spec.Speculative, Agent: t.Agent != nil, P95: spec.P95, Ceiling: spec.Ceiling, Left: available}
	res, ok := g.Admit()
	switch {
	case !ok:
		r.record(ctx, g.Refusal(res, r.step, tc.ID))
	case !g.Known:
		res = tools.Unknown(tc.Name, strings.Join(names, ", "))
	case t.Agent != nil:
		return r.agentCall(ctx, tc, t, landing.Call{Step: r.step, Tool: tc.Name}, kind)
	default:
		res = r.drive(ctx, tc, t, kind)
	}
	return res.Content(), res.Landing(r.step, kind)
}

// drive performs what tools.CallMachine asks for a call the gate let
// through: attempts, sleeps, status asks and cancels, with their records.
func (r *run) drive(ctx workflow.Context, tc ToolCall, t ToolInfo, kind string) tools.Result {
	spec, key := t.Spec, mintKey(ctx)
	m := tools.NewCallMachine(tools.CallRules{Kind: kind, Effect: spec.Effect, MaxAttempts: spec.MaxAttempts,
		Ceiling: spec.Ceiling, CanCancel: t.CanCancel, CanStatus: t.CanStatus, Backoff: budget.Backoff{Rand: r.rng.Int64N}})
	var (
		last   ToolReply
		st     StatusReply
		status cancel.State // the last state a status ask said
		askErr error        // why the last status ask could not be read
	)
	said := tools.Said{Tool: tc.Name, Kind: kind, Key: key}
	base := trace.Record{Step: kind, StepIndex: r.step, Key: string(key)} // the backoff after the last attempt
	cmd := m.Step(tools.CallEvent{Kind: tools.CallStarted, Figures: r.figures(ctx, spec.P50)})
	for {
		if cmd.Cancel {
			r.cancel(ctx, kind, spec.Name, key, cmd.CancelLease)
		}
		if cmd.Reconciled {
			r.reconciled(ctx, sleepRecord(base, cmd), cmd, status, askErr)
		}
		switch cmd.Kind {
		case tools.CallAttempt:
			delete(r.cancelOf, string(key)) // a cancel sent so far, answered or not, was another attempt's
			last, said.Last, said.Failure = r.toolAttempt(ctx, tc, spec, kind, key, cmd.N, cmd.Lease)
			base.Attempt, base.RetryAfterInvalid = cmd.N, last.RetryAfterInvalid
			cmd = m.Step(tools.CallEvent{Kind: tools.AttemptEnded, Figures: r.figures(ctx, spec.P50), Attempt: tools.Attempted{
				OK: last.Outcome == trace.OK, Cut: last.Cut, GaveUp: last.Outcome == trace.GaveUp, Answered: last.Answered,
				NotSent: last.NotSent, Stopped: last.Stopped, Retry: last.Retry, RetryAfter: last.RetryAfter}})
		case tools.CallSleep:
			r.backoff(ctx, sleepRecord(base, cmd), cmd.Delay)
			cmd = m.Step(tools.CallEvent{Kind: tools.SleepOver, Figures: r.figures(ctx, spec.P50)})
		case tools.CallAsk:
			if cmd.N == 1 {
				status, askErr = "", nil // a new reconciliation
			}
			st = r.ask(ctx, spec.Name, key, cmd.Lease.Granted)
			switch state := cancel.State(st.State); {
			case st.Err != "":
				askErr = errors.New(redact.Secrets(st.Err))
			case state == cancel.Done, state == cancel.Failed, state == cancel.NeverReceived, state == cancel.Running:
				status = state
			}
			cmd = m.Step(tools.CallEvent{Kind: tools.StatusAnswered, Figures: r.figures(ctx, spec.P50),
				Status: cancel.State(st.State), Unreachable: st.Err != ""})
		case tools.CallDone:
			said.Output, said.CutShort, said.StatusOutput = last.Output, last.CutShort, st.Output
			if state, ok := r.cancelOf[string(key)]; ok {
				said.CancelOut, said.Cancel = true, trace.CancelState(*state)
			}
			r.ended(ctx, tc, cmd, sleepRecord(base, cmd), &said)
			if cmd.N > 0 {
				r.heard(ctx, watchdog.ToolResult) // at the call's end, not an attempt's (issue 25)
			}
			return tools.Ending(cmd, said)
		}
	}
}

// sleepRecord is the record of the sleep (or the give-up) cmd asks for,
// after the attempt of base.
func sleepRecord(base trace.Record, cmd tools.CallCommand) trace.Record {
	if cmd.Reconciling {
		return trace.Record{Step: base.Step, StepIndex: base.StepIndex, Attempt: cmd.N, Key: base.Key, Reconciling: true}
	}
	return base
}

// ended writes the records of how the machine ended a call (cmd),
// journals an orphan, and fills in s for tools.Ending.
func (r *run) ended(ctx workflow.Context, tc ToolCall, cmd tools.CallCommand, sleep trace.Record, s *tools.Said) {
	switch cmd.End {
	case tools.EndRefused:
		r.record(ctx, trace.RefusedRecord(s.Kind, r.step, cmd.N+1, string(s.Key), tc.ID, cmd.Refused))
	case tools.EndGaveUp:
		r.backoff(ctx, sleep, cmd.Delay) // records the give-up, sleeps nothing
	case tools.EndRunEnded:
		s.StoppedOutcome, s.Stopped = r.stopCause()
	case tools.EndOrphan:
		j := r.journal(ctx, OrphanRequest{Toolset: r.in.Toolset, RunID: r.frame.RunID(), Tool: s.Tool, Kind: s.Kind, Key: string(s.Key), Args: tc.Arguments})
		s.Orphan = &tools.OrphanError{Entry: cancel.Entry{Tool: s.Tool, Kind: s.Kind, IdempotencyKey: s.Key},
			Journaled: j.Journaled, Reachable: j.Reachable, Next: j.Next}
		s.Unjournaled = j.Err
		r.record(ctx, trace.OrphanRecord(s.Kind, r.step, string(s.Key), j.Err))
	}
}

// toolAttempt schedules attempt n of the call tc on lease and records it;
// it returns its reply, how it failed (nil when it did not) and that in
// the model's words. What Temporal ended is a cut, named by the cause
// [run.cause] gives it and worded by tools.Describe, as in process: the
// call may have reached the tool and may still run.
func (r *run) toolAttempt(ctx workflow.Context, tc ToolCall, spec tools.Spec, kind string, key cancel.Key, n int, lease budget.Lease) (ToolReply, *trace.AttemptError, string) {
	a := trace.Attempt{Step: kind, Key: string(key), N: n, Lease: lease, CallID: tc.ID}
	r.attemptStarted(ctx, r.step, a)
	if n == 1 {
		r.heard(ctx, watchdog.ToolCall) // a tool call issued, at its first attempt as in process
	}
	var reply ToolReply
	err := r.await(ctx, lease.Granted, ToolActivity, ToolRequest{Toolset: r.in.Toolset, Tool: spec.Name, Key: string(key), Args: tc.Arguments, Attempt: n}, &reply)
	var cause error
	switch e := endOf(ctx, err, reply.Cut); e {
	case answered:
		if reply.Outcome == trace.OK {
			a.Outcome = trace.OK
			r.attemptEnded(ctx, r.step, a, nil)
			return reply, nil, ""
		}
		cause = errors.New(cmp.Or(reply.Cause, reply.Err))
	case failed:
		reply = ToolReply{Outcome: trace.UpstreamError}
		_, cause = r.cause(e, err, false)
	default:
		if err != nil {
			reply = ToolReply{}
		}
		reply.Outcome, cause = r.cause(e, err, lease.Capped)
		reply.Cut, reply.Retry = true, reply.Retry || e == workerDied
	}
	fail := &trace.AttemptError{Step: kind, Attempt: n, Outcome: reply.Outcome, Status: reply.Status, Err: cause}
	if reply.Cut || err != nil {
		reply.Err = tools.Describe(spec, fail, cause, lease.Granted)
	}
	a.Outcome, a.Status = reply.Outcome, reply.Status
	r.attemptEnded(ctx, r.step, a, cause)
	return reply, fail, reply.Err
}

// await schedules the attempt activity name on a lease of granted and
// reads its answer into reply. When the run's work ends first (its quiet
// clock, its cancellation), the attempt is cancelled and its own answer
// waited for a little — it learns of the cancellation at its next
// heartbeat and says whether its work stopped, or what its stream carried
// — but never past cancelWait, nor a quarter of the reserve the run is
// about to land in: then it is taken for cut.
func (r *run) await(ctx workflow.Context, granted time.Duration, name string, req, reply any) error {
	f := workflow.ExecuteActivity(workflow.WithWaitForCancellation(options(ctx, granted), true), name, req)
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	_ = workflow.Await(dctx, func() bool { return f.IsReady() || ctx.Err() != nil }) // dctx is never done
	if !f.IsReady() {
		_, _ = workflow.AwaitWithTimeout(dctx, min(cancelWait, r.frame.Reserve()/4), f.IsReady)
	}
	if !f.IsReady() {
		return temporal.NewCanceledError()
	}
	return f.Get(dctx, reply)
}

// cancelWait bounds the wait for a cancelled attempt's own answer: its
// next heartbeat's answer (within [CancelWithin]), and its way back.
const cancelWait = 2 * CancelWithin

// cancel sends the cancel of a cut call on the machine's lease and does
// not wait for it (SPEC §5): a second cancel_sent record says how it
// settled. How it stands is the call's (r.cancelOf) until a later attempt
// begins: an answer that comes after speaks for its own attempt only,
// and one accepted makes the call cancelled when the run reads its calls
// (r.settled).
func (r *run) cancel(ctx workflow.Context, kind, tool string, key cancel.Key, lease budget.Lease) {
	ctx, _ = workflow.NewDisconnectedContext(ctx) // cleanup outlives a cancelled run
	state, step := new(string), r.step
	r.cancelOf[string(key)] = state
	if lease.Granted <= 0 {
		*state = string(trace.CancelStateFailed)
		r.record(ctx, trace.CancelSettledRecord(kind, step, string(key), trace.CancelStateFailed, tools.ErrNoCancelTime))
		return
	}
	f := workflow.ExecuteActivity(options(ctx, lease.Granted), CancelActivity, StatusRequest{Toolset: r.in.Toolset, Tool: tool, Key: string(key)})
	r.record(ctx, trace.CancelSentRecord(kind, step, string(key), lease.Granted))
	r.unsettled++
	workflow.Go(ctx, func(ctx workflow.Context) {
		defer func() { r.unsettled-- }()
		answered := string(trace.CancelStateFailed)
		err := f.Get(ctx, &answered)
		if err != nil {
			answered = string(trace.CancelStateFailed)
		}
		if *state = answered; answered != string(trace.CancelStateSent) { // sent is all there is to say
			r.record(ctx, trace.CancelSettledRecord(kind, step, string(key), trace.CancelState(answered), err))
		}
	})
}

// settled is the run's calls as they stand: a call left abandoned whose
// cancel its tool accepted is cancelled.
func (r *run) settled() []landing.Call {
	for i := range r.calls {
		c := &r.calls[i]
		if s := r.cancelOf[c.Key]; s != nil && *s == string(trace.CancelStateAccepted) && c.State == landing.StateAbandoned {
			c.State = landing.StateCancelled
		}
	}
	return r.calls
}

// settleCancels gives the cancels still unanswered their grace once the
// run has landed: harness.CancelGrace, never past the deadline (SPEC §3).
// One unanswered after it stays "sent", its activity left behind.
func (r *run) settleCancels(ctx workflow.Context) {
	_, remaining, _ := r.clock(ctx)
	if grace := min(harness.CancelGrace, remaining); grace > 0 && r.unsettled > 0 { // else no timer in the history
		ctx, _ = workflow.NewDisconnectedContext(ctx)
		_, _ = workflow.AwaitWithTimeout(ctx, grace, func() bool { return r.unsettled == 0 })
	}
}

// journal appends an orphan to the worker's journal on a lease of its
// own: cleanup, which may spend the reserve.
func (r *run) journal(ctx workflow.Context, req OrphanRequest) OrphanReply {
	ctx, _ = workflow.NewDisconnectedContext(ctx) // cleanup outlives a cancelled run
	_, remaining, _ := r.clock(ctx)
	granted, _, rule := budget.Grant(remaining, r.frame.Floor(), journalLease, 0)
	if rule != 0 {
		return OrphanReply{Err: "no time to journal it: " + rule.String()}
	}
	var j OrphanReply
	if err := workflow.ExecuteActivity(options(ctx, granted), OrphanActivity, req).Get(ctx, &j); err != nil {
		return OrphanReply{Err: "the orphan journal could not be written: " + err.Error()}
	}
	return j
}

// journalLease bounds an orphan's journal entry.
const journalLease = time.Second

// ask asks the tool how the cut write of key went (SPEC §5).
func (r *run) ask(ctx workflow.Context, tool string, key cancel.Key, granted time.Duration) StatusReply {
	var st StatusReply
	if err := workflow.ExecuteActivity(options(ctx, granted), StatusActivity, StatusRequest{Toolset: r.in.Toolset, Tool: tool, Key: string(key)}).Get(ctx, &st); err != nil {
		st = StatusReply{Err: err.Error()}
	}
	return st
}

// reconciled records the end of a reconciliation: a give-up that ended
// it, then what the status said and, for an orphan, tools.ReconcileWhy.
func (r *run) reconciled(ctx workflow.Context, sleep trace.Record, cmd tools.CallCommand, status cancel.State, askErr error) {
	if cmd.Kind == tools.CallDone && cmd.Reconciling && cmd.Delay.GiveUp {
		r.backoff(ctx, sleep, cmd.Delay) // records the give-up, sleeps nothing
	}
	var why error
	if cmd.End == tools.EndOrphan {
		_, stopped := r.stopCause()
		why = tools.ReconcileWhy(cmd, status, askErr, stopped)
	}
	r.record(ctx, trace.ReconcileRecord(sleep.Step, r.step, sleep.Key, tools.ReconcileState(status), cmd.Asks, why))
}
