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
	grun "github.com/glidepath/glidepath/internal/run"
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
	made := make([]grun.Made, len(asked))
	for i, tc := range asked {
		made[i] = grun.Made{Tool: tc.Name, Args: tc.Arguments, Result: out[i]}
	}
	r.m.CallsMade(made) // the repeated ones count, as in process (SPEC §3)
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
		Speculative: spec.Speculative, Agent: t.Agent != nil, Ceiling: spec.Ceiling, Left: available}
	if g.Known { // as Session.call: an unknown tool has no estimate
		g.P95 = r.estimate(kind, spec).P95()
	}
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

// drive makes the call tc of the tool t, which the gate let through, by
// tools.DriveCall: the effects of its machine are a toolCall's.
func (r *run) drive(ctx workflow.Context, tc ToolCall, t ToolInfo, kind string) tools.Result {
	c := &toolCall{r: r, tc: tc, spec: t.Spec, key: mintKey(ctx), est: r.estimate(kind, t.Spec),
		same: r.m.SameCall(tc.Name, tc.Arguments, false)}
	c.base = trace.Record{Step: kind, StepIndex: r.step, Key: string(c.key)}
	res := tools.DriveCall(ctx, c, tools.CallRules{Kind: kind, Effect: t.Spec.Effect, MaxAttempts: t.Spec.MaxAttempts,
		Ceiling: t.Spec.Ceiling, CanCancel: t.CanCancel, CanStatus: t.CanStatus, Backoff: budget.Backoff{Rand: r.rng.Int64N,
			Resolution: r.frame.Resolution()}, Silence: r.expected(c.est, t.Spec.Silence)},
		tc.Name, c.key)
	if c.same && !r.m.SameResult(tc.Name, tc.Arguments, res.Content()) {
		r.heard(ctx, watchdog.ToolResult) // the same call, with news: progress after all
	}
	return res
}

// toolCall is one logical call of a tool, performing the effects of its
// machine (tools.CallEffects) in the workflow: attempts, status asks,
// cancels and journal entries as activities, sleeps on workflow timers,
// and workflow records.
type toolCall struct {
	r    *run
	tc   ToolCall
	spec tools.Spec
	key  cancel.Key
	base trace.Record    // the record of the backoff after the last attempt
	est  *budget.Latency // the estimates of the tool's kind (run.estimate)
	took time.Duration   // how long the last attempt took, in workflow time
	// same reports whether the call repeats the tool and arguments of a
	// call of an earlier turn: its issue and its result are not semantic
	// events (SPEC §3), and drive hears a result that is news.
	same bool
}

// estimate is the latency estimate of kind, the kind of spec, declared
// from spec and warmed by the run's Profile at its first use: the run's
// calls of the kind learn it, as a process's calls learn its budget.Kind.
func (r *run) estimate(kind string, spec tools.Spec) *budget.Latency {
	l, ok := r.kinds[kind]
	if !ok {
		l = new(budget.Latency)
		l.Declare(spec.P50, spec.P95)
		l.Warm(r.in.Profile[kind])
		l.Learn(r.in.Learned[kind])
		r.kinds[kind] = l
	}
	return l
}

func (c *toolCall) Figures(ctx workflow.Context) budget.Figures { return c.r.figures(ctx, c.est.P50()) }

// Attempt schedules attempt n of the call on lease and records it. What
// Temporal ended is a cut, named by the cause [run.cause] gives it and
// worded by tools.Describe, as in process: the call may have reached the
// tool and may still run.
func (c *toolCall) Attempt(ctx workflow.Context, n int, lease budget.Lease) tools.AttemptSaid {
	r, kind := c.r, c.base.Step
	delete(r.cancelOf, string(c.key)) // a cancel sent so far, answered or not, was another attempt's
	a := trace.Attempt{Step: kind, Key: string(c.key), N: n, Lease: lease, CallID: c.tc.ID}
	r.attemptStarted(ctx, r.step, a)
	var reply ToolReply
	began := workflow.Now(ctx)
	err := r.await(ctx, lease.Granted, ToolActivity, ToolRequest{Toolset: r.in.Toolset, Tool: c.spec.Name, Key: string(c.key), Args: c.tc.Arguments, Attempt: n,
		Fingerprint: r.fingerprint}, &reply)
	c.took = workflow.Now(ctx).Sub(began)
	var cause error
	switch e := endOf(ctx, err, reply.Cut); e {
	case answered:
		if reply.Outcome == trace.OK {
			a.Outcome = trace.OK
			r.attemptEnded(ctx, r.step, a, nil)
			return tools.AttemptSaid{Attempted: tools.Attempted{OK: true}, Output: reply.Output, CutShort: reply.CutShort}
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
	c.base.Attempt, c.base.RetryAfterInvalid = n, reply.RetryAfterInvalid // what a backoff after it records
	fail := &trace.AttemptError{Step: kind, Attempt: n, Outcome: reply.Outcome, Status: reply.Status, Err: cause}
	if reply.Cut || err != nil {
		reply.Err = tools.Describe(c.spec, fail, cause, lease.Granted)
	}
	a.Outcome, a.Status = reply.Outcome, reply.Status
	r.attemptEnded(ctx, r.step, a, cause)
	return tools.AttemptSaid{Attempted: tools.Attempted{Cut: reply.Cut, GaveUp: reply.Outcome == trace.GaveUp,
		Answered: reply.Answered, NotSent: reply.NotSent, Stopped: reply.Stopped, Retry: reply.Retry,
		RetryAfter: reply.RetryAfter}, Last: fail, Failure: reply.Err, Output: reply.Output, CutShort: reply.CutShort}
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

// Backoff records the sleep (or the give-up) of cmd after the last
// attempt, or between status asks, and sleeps it unless it gives up.
func (c *toolCall) Backoff(ctx workflow.Context, cmd tools.CallCommand) {
	rec := c.base
	if cmd.Reconciling {
		rec = trace.Record{Step: rec.Step, StepIndex: rec.StepIndex, Attempt: cmd.BackoffN(), Key: rec.Key, Reconciling: true}
	}
	c.r.backoff(ctx, rec, cmd.Delay)
}

// Ask asks the tool how the cut write went (SPEC §5), on lease.
func (c *toolCall) Ask(ctx workflow.Context, lease budget.Lease) (cancel.Status, error) {
	var st StatusReply
	req := StatusRequest{Toolset: c.r.in.Toolset, Tool: c.spec.Name, Key: string(c.key), Fingerprint: c.r.fingerprint}
	if err := workflow.ExecuteActivity(options(ctx, lease.Granted), StatusActivity, req).Get(ctx, &st); err != nil {
		st = StatusReply{Err: err.Error()}
	}
	if st.Err != "" {
		return cancel.Status{State: cancel.State(st.State), Output: st.Output}, errors.New(redact.Secrets(st.Err))
	}
	return cancel.Status{State: cancel.State(st.State), Output: st.Output}, nil
}

// Cancel sends the cancel of the cut call on lease and does not wait for
// it (SPEC §5): a second cancel_sent record says how it settled. How it
// stands is the call's (r.cancelOf) until a later attempt begins: an
// answer that comes after speaks for its own attempt only, and one
// accepted makes the call cancelled when the run reads its calls
// (r.settled).
func (c *toolCall) Cancel(ctx workflow.Context, lease budget.Lease) {
	r, kind, key := c.r, c.base.Step, string(c.key)
	ctx, _ = workflow.NewDisconnectedContext(ctx) // cleanup outlives a cancelled run
	state, step := new(string), r.step
	r.cancelOf[key] = state
	if lease.Granted <= 0 {
		*state = string(trace.CancelStateFailed)
		r.record(ctx, trace.CancelSettledRecord(kind, step, key, trace.CancelStateFailed, tools.ErrNoCancelTime))
		return
	}
	f := workflow.ExecuteActivity(options(ctx, lease.Granted), CancelActivity, StatusRequest{Toolset: r.in.Toolset, Tool: c.spec.Name, Key: key,
		Fingerprint: r.fingerprint})
	r.record(ctx, trace.CancelSentRecord(kind, step, key, lease.Granted))
	r.unsettled++
	workflow.Go(ctx, func(ctx workflow.Context) {
		defer func() { r.unsettled-- }()
		answered := string(trace.CancelStateFailed)
		err := f.Get(ctx, &answered)
		if err != nil {
			answered = string(trace.CancelStateFailed)
		}
		if *state = answered; answered != string(trace.CancelStateSent) { // sent is all there is to say
			r.record(ctx, trace.CancelSettledRecord(kind, step, key, trace.CancelState(answered), err))
		}
	})
}

// Cancelled is how the cancel of the call's last attempt stands, if one
// went out.
func (c *toolCall) Cancelled() (bool, trace.CancelState) {
	if state, ok := c.r.cancelOf[string(c.key)]; ok {
		return true, trace.CancelState(*state)
	}
	return false, ""
}

func (c *toolCall) Stopped(workflow.Context) (trace.Outcome, error) { return c.r.stopCause() }

func (c *toolCall) Refused(ctx workflow.Context, n int, err *budget.RefusedError) {
	c.r.record(ctx, trace.RefusedRecord(c.base.Step, c.r.step, n, string(c.key), c.tc.ID, err))
}

func (c *toolCall) Reconciled(ctx workflow.Context, state string, asks int, why error) {
	c.r.record(ctx, trace.ReconcileRecord(c.base.Step, c.r.step, string(c.key), state, asks, why))
}

// Orphan journals the call in the worker's journal and records it; why
// is the orphan's error, as in process (a journal entry carries no why).
func (c *toolCall) Orphan(ctx workflow.Context, why error) (*tools.OrphanError, string) {
	r, kind := c.r, c.base.Step
	j := r.journal(ctx, OrphanRequest{Toolset: r.in.Toolset, RunID: r.frame.RunID(), Tool: c.tc.Name, Kind: kind,
		Key: string(c.key), Args: c.tc.Arguments, Fingerprint: r.fingerprint})
	r.record(ctx, trace.OrphanRecord(kind, r.step, string(c.key), j.Err))
	return &tools.OrphanError{Entry: cancel.Entry{Tool: c.tc.Name, Kind: kind, IdempotencyKey: c.key},
		Journaled: j.Journaled, Reachable: j.Reachable, Next: j.Next, Err: why}, j.Err
}

// Succeeded teaches the kind's estimates the last attempt's time.
func (c *toolCall) Succeeded() { c.est.Observe(c.took) }

func (c *toolCall) Heard(ctx workflow.Context, e watchdog.Event) {
	if !c.same || e != watchdog.ToolCall && e != watchdog.ToolResult {
		c.r.heard(ctx, e)
	}
	if e == watchdog.ToolResult {
		// After the result is heard: ended first, the hold would not
		// make the result in time.
		c.r.quiet.clock.End(string(c.key))
	}
}

// Begin begins the call on the quiet clock, with its allowance; a call
// that repeats one of an earlier step is activity, not held (issue 27).
func (c *toolCall) Begin(ctx workflow.Context, call watchdog.Call) {
	if !c.same && !c.r.quiet.stopped {
		call.Index = c.r.step
		c.r.quiet.clock.Begin(call, workflow.Now(ctx))
	}
}

// expected is what the allowance of a call whose kind's estimate is l
// is computed from, with the silence its spec states and the run's cap.
func (r *run) expected(l *budget.Latency, stated time.Duration) watchdog.Expected {
	x := l.Expected()
	x.Stated, x.Max = stated, r.in.MaxSilence
	return x
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
// run has landed: harness.CancelGrace, never past the deadline (SPEC §3),
// its timer late by the server's resolution included.
// One unanswered after it stays "sent", its activity left behind.
func (r *run) settleCancels(ctx workflow.Context) {
	if grace := min(harness.CancelGrace, r.frame.Armable(workflow.Now(ctx))); grace > 0 && r.unsettled > 0 { // else no timer in the history
		ctx, _ = workflow.NewDisconnectedContext(ctx)
		_, _ = workflow.AwaitWithTimeout(ctx, grace, func() bool { return r.unsettled == 0 })
	}
}

// journal appends an orphan to the worker's journal on a lease of its
// own, whatever the run has left: a write whose outcome is unknown must
// be found again (harness reconcile), and the entry is the worker's
// write, not a call on the run's budget. It may hold the run's end past D
// by journalLease at most, within Overrun (issue 26).
func (r *run) journal(ctx workflow.Context, req OrphanRequest) OrphanReply {
	ctx, _ = workflow.NewDisconnectedContext(ctx) // cleanup outlives a cancelled run
	var j OrphanReply
	if err := workflow.ExecuteActivity(options(ctx, journalLease), OrphanActivity, req).Get(ctx, &j); err != nil {
		return OrphanReply{Err: "the orphan journal could not be written: " + err.Error()}
	}
	return j
}

// journalLease bounds an orphan's journal entry.
const journalLease = time.Second
