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
	for i := range calls {
		if r.accepted[calls[i].Key] && calls[i].State == stateAbandoned {
			calls[i].State = stateCancelled // its cancel was accepted while the turn's calls ran
		}
	}
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
	_, remaining, _ := r.clock(ctx)
	g := tools.Gate{Tool: tc.Name, Kind: kind, Phase: r.frame.Phase(), Stopping: ctx.Err() != nil, Known: spec.Name != "",
		Speculative: spec.Speculative, Agent: t.Agent != nil, P95: spec.P95, Ceiling: spec.Ceiling, Left: remaining - r.frame.Reserve()}
	res, ok := g.Admit()
	switch {
	case !ok:
		r.record(ctx, trace.Record{Event: trace.Refused, Step: kind, StepIndex: r.step, Attempt: 1, CallID: tc.ID,
			Reason: "gated", Message: landing.GateReason(res.Cause)})
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
		Ceiling: spec.Ceiling, CanCancel: t.CanCancel, CanStatus: t.CanStatus,
		Backoff: budget.Backoff{Rand: r.rng.Int64N}})
	var (
		last   ToolReply
		said   tools.Said
		st     StatusReply
		base   trace.Record
		answer *string      // how the cut attempt's cancel stands, "" until answered; nil when none went out
		status cancel.State // the last state a status ask said
		askErr error        // why the last status ask could not be read
	)
	cmd := m.Step(tools.CallEvent{Kind: tools.CallStarted, Figures: r.figures(ctx, spec.P50)})
	for {
		if cmd.Cancel {
			answer = r.cancel(ctx, kind, spec.Name, key, cmd.CancelLease, &answer)
		}
		if cmd.Reconciled {
			r.reconciled(ctx, r.sleepRecord(base, cmd, last), cmd, status, askErr)
		}
		switch cmd.Kind {
		case tools.CallAttempt:
			base = trace.Record{Step: kind, StepIndex: r.step, Attempt: cmd.N, ResendCount: cmd.N - 1, Key: string(key), CallID: tc.ID}
			last, said.Last = r.toolAttempt(ctx, spec, base, cmd.Lease, ToolRequest{Toolset: r.in.Toolset, Tool: spec.Name, Key: string(key), Args: tc.Arguments, Attempt: cmd.N})
			answer = nil
			cmd = m.Step(tools.CallEvent{Kind: tools.AttemptEnded, Figures: r.figures(ctx, spec.P50), Attempt: tools.Attempted{
				OK: last.Outcome == trace.OK, Cut: last.Cut, GaveUp: last.Outcome == trace.GaveUp, Answered: last.Answered,
				NotSent: last.NotSent, Stopped: last.Stopped, Retry: last.Retry, RetryAfter: last.RetryAfter}})
		case tools.CallSleep:
			r.backoff(ctx, r.sleepRecord(base, cmd, last), cmd.Delay)
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
			said.Tool, said.Kind, said.Key, said.Failure = tc.Name, kind, key, last.Err
			said.Output, said.CutShort, said.StatusOutput = last.Output, last.CutShort, st.Output
			if answer != nil {
				said.CancelOut, said.Cancel = true, trace.CancelState(*answer)
			}
			r.endRecords(ctx, tc, cmd, r.sleepRecord(base, cmd, last), &said)
			if base.Attempt > 0 {
				r.heard(ctx, watchdog.ToolResult) // at the call's end, not an attempt's (issue 25)
			}
			return tools.Ending(cmd, said)
		}
	}
}

// sleepRecord is the record of the sleep (or the give-up) cmd asks for.
func (r *run) sleepRecord(base trace.Record, cmd tools.CallCommand, last ToolReply) trace.Record {
	if cmd.Reconciling {
		return trace.Record{Step: base.Step, StepIndex: r.step, Attempt: cmd.N, Key: base.Key, Reconciling: true}
	}
	base.RetryAfterInvalid = last.RetryAfterInvalid
	return base
}

// figures reads the run's budget now for the call machine.
func (r *run) figures(ctx workflow.Context, p50 time.Duration) budget.Figures {
	_, remaining, _ := r.clock(ctx)
	return budget.Figures{Remaining: remaining, Reserve: r.frame.Reserve(), Floor: r.frame.Floor(), P50: p50, Ended: ctx.Err() != nil}
}

// endRecords writes the records of how the machine ended a call (cmd),
// journals an orphan, and fills in s for tools.Ending.
func (r *run) endRecords(ctx workflow.Context, tc ToolCall, cmd tools.CallCommand, sleep trace.Record, s *tools.Said) {
	switch cmd.End {
	case tools.EndRefused:
		r.record(ctx, trace.Record{Event: trace.Refused, Step: s.Kind, StepIndex: r.step, Attempt: cmd.N + 1, ResendCount: cmd.N,
			Key: string(s.Key), CallID: tc.ID, Reason: cmd.Refused.Rule.String()})
	case tools.EndGaveUp:
		r.backoff(ctx, sleep, cmd.Delay) // records the give-up, sleeps nothing
	case tools.EndRunEnded:
		s.StoppedOutcome, s.Stopped = r.stopCause()
	case tools.EndOrphan:
		j := r.journal(ctx, OrphanRequest{Toolset: r.in.Toolset, RunID: r.frame.RunID(), Tool: s.Tool, Kind: s.Kind, Key: string(s.Key), Args: tc.Arguments})
		s.Orphan = &tools.OrphanError{Entry: cancel.Entry{Tool: s.Tool, Kind: s.Kind, IdempotencyKey: s.Key},
			Journaled: j.Journaled, Reachable: j.Reachable, Next: j.Next}
		s.Unjournaled = j.Err
		r.record(ctx, trace.Record{Event: trace.Orphan, Step: s.Kind, StepIndex: r.step, Key: string(s.Key), State: "open", Message: j.Err})
	}
}

// toolAttempt schedules one tool attempt on lease, records it, and
// returns its reply and how it failed (nil when it did not). What Temporal
// ended — a lease, the run's end, a dead worker — is a cut: the call may
// have reached the tool and may still run.
func (r *run) toolAttempt(ctx workflow.Context, spec tools.Spec, base trace.Record, lease budget.Lease, req ToolRequest) (ToolReply, *trace.AttemptError) {
	start := base
	start.Event, start.GrantedMs = trace.AttemptStart, lease.Granted.Milliseconds()
	r.record(ctx, start)
	r.attempts++
	if req.Attempt == 1 {
		r.heard(ctx, watchdog.ToolCall) // a tool call issued, at its first attempt as in process
	}
	var reply ToolReply
	err := r.await(ctx, lease.Granted, ToolActivity, req, &reply)
	cause := error(nil) // what ended a failed attempt, for its record
	if reply.Outcome != trace.OK {
		cause = errors.New(cmp.Or(reply.Cause, reply.Err))
	}
	timeUp, dead := timedOut(err)
	switch {
	case err == nil && !reply.Cut:
	case ctx.Err() != nil && (err == nil || temporal.IsCanceledError(err) || timeUp):
		// The run's end cut it, even if its lease ran out while its
		// answer was waited for.
		if err != nil {
			reply = ToolReply{}
		}
		reply.Outcome, cause = r.stopCause()
		reply.Cut = true
	case err == nil || timeUp:
		if err != nil {
			reply = ToolReply{Outcome: trace.GaveUp}
		}
		reply.Cut, cause = true, budget.ErrDeadline
		if lease.Capped {
			cause = budget.ErrLeaseExpired
		}
	case dead:
		reply = ToolReply{Outcome: trace.UpstreamError, Cut: true, Retry: true}
		cause = errWorkerStopped
	case temporal.IsCanceledError(err):
		reply, cause = ToolReply{Outcome: trace.Cancelled, Cut: true}, harness.ErrInterrupted
	default:
		cause = errors.New(redact.Secrets(err.Error()))
		reply = ToolReply{Outcome: trace.UpstreamError}
	}
	var failed *trace.AttemptError
	if reply.Outcome != trace.OK {
		failed = &trace.AttemptError{Step: base.Step, Attempt: base.Attempt, Outcome: reply.Outcome, Status: reply.Status, Err: cause}
		switch {
		case dead:
			reply.Err = req.Tool + ": the worker making the call stopped"
		case reply.Cut || err != nil:
			reply.Err = tools.Describe(spec, failed, cause, lease.Granted)
		}
	}
	end := start
	end.Event, end.Outcome, end.Status = trace.AttemptEnd, reply.Outcome, reply.Status
	if failed != nil {
		end.Message = attemptWords(end, cause)
	}
	r.record(ctx, end)
	return reply, failed
}

// await schedules the attempt activity name on a lease of granted and
// reads its answer into reply. When the run's work ends first (its quiet
// clock, its cancellation), the attempt is cancelled and its own answer
// waited for a little — it learns of the cancellation at its next
// heartbeat and says whether its work stopped, or what its stream carried
// — but never past cancelWait, nor a quarter of the reserve the run is
// about to land in: then it is taken for cut.
func (r *run) await(ctx workflow.Context, granted time.Duration, name string, req, reply any) error {
	actx := workflow.WithWaitForCancellation(options(ctx, granted), true)
	f := workflow.ExecuteActivity(actx, name, req)
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	var err error
	done := false
	take := func(f workflow.Future) { err, done = f.Get(dctx, reply), true }
	sel := workflow.NewSelector(dctx)
	sel.AddFuture(f, take)
	sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {})
	sel.Select(dctx)
	if done {
		return err
	}
	wait, stopWait := workflow.WithCancel(dctx)
	defer stopWait()
	grace := workflow.NewSelector(dctx)
	grace.AddFuture(f, take)
	grace.AddFuture(workflow.NewTimer(wait, min(cancelWait, r.frame.Reserve()/4)), func(workflow.Future) {})
	grace.Select(dctx)
	if done {
		return err
	}
	return temporal.NewCanceledError()
}

// cancelWait bounds the wait for a cancelled attempt's own answer: its
// next heartbeat's answer (within [CancelWithin]), and its way back.
const cancelWait = 2 * CancelWithin

// cancel sends the cancel of a cut call on the machine's lease and does
// not wait for it (SPEC §5): a second cancel_sent record says how it
// settled, and an accepted one makes an abandoned call cancelled. It
// returns how the cancel stands, "" until answered; cur is the call's
// own: an answer that comes once a later attempt began (cur no longer
// holds it) speaks for its own attempt only (issue 25).
func (r *run) cancel(ctx workflow.Context, kind, tool string, key cancel.Key, lease budget.Lease, cur **string) *string {
	ctx, _ = workflow.NewDisconnectedContext(ctx) // cleanup outlives a cancelled run
	rec := trace.Record{Event: trace.CancelSent, Step: kind, StepIndex: r.step, Key: string(key), GrantedMs: lease.Granted.Milliseconds()}
	state := string(trace.CancelStateFailed)
	delete(r.accepted, string(key)) // a new cancel: an earlier one's answer is not this one's
	if lease.Granted <= 0 {
		rec.State, rec.Message = state, tools.ErrNoCancelTime.Error()
		r.record(ctx, rec)
		return &state
	}
	f := workflow.ExecuteActivity(options(ctx, lease.Granted), CancelActivity, StatusRequest{Toolset: r.in.Toolset, Tool: tool, Key: string(key)})
	rec.State = string(trace.CancelStateSent)
	r.record(ctx, rec)
	r.cancels.Add(1)
	r.unsettled++
	answer := new(string)
	workflow.Go(ctx, func(ctx workflow.Context) {
		defer r.cancels.Done()
		defer func() { r.unsettled-- }()
		if err := f.Get(ctx, &state); err != nil {
			state, rec.Message = string(trace.CancelStateFailed), redact.Secrets(err.Error())
		}
		if state == string(trace.CancelStateAccepted) && *cur == answer {
			r.accepted[string(key)] = true
			for i := range r.calls {
				if c := &r.calls[i]; c.Key == string(key) && c.State == stateAbandoned {
					c.State = stateCancelled
				}
			}
		}
		*answer = state
		rec.State, rec.GrantedMs = state, 0
		r.record(ctx, rec)
	})
	return answer
}

// settleCancels gives the cancels still unanswered their grace once the
// run has landed: harness.CancelGrace, never past the deadline (SPEC §3).
// One unanswered after it stays "sent", its activity left behind.
func (r *run) settleCancels(ctx workflow.Context) {
	if r.graced {
		return // once: the cancels still unanswered after it stay as they are
	}
	r.graced = true
	ctx, _ = workflow.NewDisconnectedContext(ctx)
	_, remaining, _ := r.clock(ctx)
	grace := min(harness.CancelGrace, remaining)
	if grace <= 0 || r.unsettled == 0 {
		return // nothing to wait for: no timer in the history
	}
	ctx, stop := workflow.WithCancel(ctx)
	defer stop()
	settled := workflow.NewChannel(ctx)
	workflow.Go(ctx, func(ctx workflow.Context) {
		r.cancels.Wait(ctx)
		settled.Close()
	})
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(settled, func(workflow.ReceiveChannel, bool) {})
	sel.AddFuture(workflow.NewTimer(ctx, grace), func(workflow.Future) {})
	sel.Select(ctx)
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
	rec := trace.Record{Event: trace.Reconcile, Step: sleep.Step, StepIndex: r.step, Key: sleep.Key,
		State: tools.ReconcileState(status), Attempt: cmd.Asks}
	if cmd.End == tools.EndOrphan {
		_, stopped := r.stopCause()
		rec.Message = tools.ReconcileWhy(cmd, status, askErr, stopped).Error()
	}
	r.record(ctx, rec)
}

// stopCause is the outcome of an attempt the run's end cut, and what
// ended the run's work: its quiet clock, or its cancellation.
func (r *run) stopCause() (trace.Outcome, error) {
	if r.quiet.fired {
		return trace.Quiet, &r.quiet.stall
	}
	return trace.Cancelled, harness.ErrInterrupted
}

// errWorkerStopped cut an attempt whose worker died: Temporal's own.
var errWorkerStopped = errors.New("durable: the worker making the call stopped")

// attemptWords is a failed attempt's message, trace.AttemptError's,
// redacted, as harness run's records say it.
func attemptWords(end trace.Record, cause error) string {
	return redact.Secrets((&trace.AttemptError{Step: end.Step, Attempt: end.Attempt, Outcome: end.Outcome, Status: end.Status, Err: cause}).Error())
}
