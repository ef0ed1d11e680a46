package durable

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/internal/redact"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// WorkflowName is the name [Workflow] is registered and started under.
const WorkflowName = "glidepath.run"

// DeadWorker is the HeartbeatTimeout of an attempt whose lease is long
// enough for one to matter: the time after which a worker that stopped
// heartbeating is taken for dead. It detects dead workers only; whether a
// call is stalled is the quiet clock's to say (SPEC §9).
const DeadWorker = 2 * time.Second

const (
	stateCancelled = landing.StateCancelled
	stateAbandoned = landing.StateAbandoned
	stateOrphaned  = landing.StateOrphaned
)

// ErrBadInput is matched by the error of a run whose Input cannot be used.
var ErrBadInput = errors.New("durable: bad input")

// Workflow runs one Glidepath run as a Temporal workflow: the budget is
// workflow state written once at the first workflow task, every model and
// tool attempt an activity leased out of it, and the run lands inside its
// budget with a labeled result. See the package doc.
func Workflow(ctx workflow.Context, in Input) (Output, error) {
	if in.Budget <= 0 || in.Reserve < 0 || in.Floor < 0 || in.Reserve >= in.Budget || in.Floor >= in.Budget {
		return Output{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("durable: budget %v, reserve %v, floor %v cannot be used", in.Budget, in.Reserve, in.Floor),
			"BadInput", ErrBadInput)
	}
	recordRules(ctx) // first: a run's history says which rules it runs (issue 25)
	r := newRun(ctx, in)
	start := trace.Record{Event: trace.RunStart, TotalMs: r.total.Milliseconds()}
	if in.Parent != nil {
		start.Key = in.Parent.Key // the call the child answers
	}
	r.record(ctx, start)
	// The quiet clock and the signals that feed it run beside the loop;
	// when the clock fires, it cancels the work context only, so the run
	// still lands on its own.
	watch, stopWatch := workflow.WithCancel(ctx)
	work, stopWork := workflow.WithCancel(ctx)
	r.stopWork = stopWork
	workflow.Go(watch, r.listen)
	workflow.Go(watch, func(ctx workflow.Context) { r.quiet.watch(ctx, r.stall) })
	workflow.Go(watch, r.phases)
	if in.Parent != nil {
		workflow.Go(watch, r.forwardLoop)
	}
	res := r.run(ctx, work)
	r.settleCancels(ctx) // what a result made without land (a refused setup) left
	r.quiet.stopped = true
	stopWatch()
	stopWork()
	r.tellWork(ctx) // the work forwardLoop had not sent yet, its landing's among it
	end := trace.Record{Event: trace.RunEnd, Cause: string(res.Cause), Result: string(res.Status), TotalMs: r.total.Milliseconds()}
	r.record(ctx, end)
	return Output{Result: res, Trace: r.records, Dropped: r.dropped}, nil
}

// run is the workflow's state. The budget — start, deadline, total,
// reserve, floor — is written once by newRun and never recomputed; every
// duration after it is read off workflow.Now, never the wall clock, so a
// replay on another worker computes the same leases.
type run struct {
	in    Input
	runID string

	start, deadline       time.Time
	total, reserve, floor time.Duration

	phase    landing.Phase
	step     int
	attempts int
	calls    []landing.Call
	conv     []Message
	tools    []ToolInfo
	failure  string // why the model failed, for the boundary
	doing    string // where the run was when the budget refused its model turn, for the boundary (landing.Record.Doing)
	// unanswered says how the last model attempt of a step went
	// unanswered until it was ended, for the boundary (landing.Unanswered).
	unanswered string
	// unavailable are the tools the worker's tools file names that it
	// cannot offer, for the result (ToolList).
	unavailable []landing.Unavailable
	// lastModel is how the run's last model attempt of a step ended, for
	// the landing rule (landing.ModelEnd.Call).
	lastModel landing.ModelEnd

	// model is the model's latency estimate from the run's successful
	// attempts, in workflow time, by the process's rule (budget.Latency,
	// issue 25): its p50, below which a model lease is refused (SPEC §2),
	// stands only once there are budget.MinObserved of them.
	model budget.Latency

	seq        int64
	records    []trace.Record
	traceBytes int // the records' size as the workflow's result encodes them
	dropped    int

	// rng draws the jitter of backoff sleeps. It is seeded once from a
	// SideEffect, so a replay draws the same sleeps.
	rng *rand.Rand

	// cancels are the cancels of cut calls still unanswered (unsettled
	// of them), which the run gives their grace once it has landed
	// (settleCancels); accepted holds the keys whose cancel the tool
	// accepted.
	cancels   workflow.WaitGroup
	unsettled int
	graced    bool // settleCancels has given them their grace
	accepted  map[string]bool

	quiet    quietClock
	stopWork workflow.CancelFunc // ends the work context: the quiet clock fired
	events   int64               // a sub-agent's records of work (harness.ChildWork), which its parent hears as progress (forwardLoop)
	work     []string            // the words of those not yet sent to the parent
}

func newRun(ctx workflow.Context, in Input) *run {
	if in.MaxSteps <= 0 {
		in.MaxSteps = DefaultMaxSteps
	}
	if in.Parallel <= 0 {
		in.Parallel = DefaultParallel
	}
	if in.MaxAttempts <= 0 {
		in.MaxAttempts = DefaultMaxAttempts
	}
	if in.Quiet <= 0 {
		in.Quiet = watchdog.DefaultQuiet
	}
	r := &run{in: in, runID: in.RunID, total: in.Budget, reserve: in.Reserve, floor: in.Floor,
		cancels: workflow.NewWaitGroup(ctx), accepted: map[string]bool{}}
	if r.runID == "" {
		r.runID = workflow.GetInfo(ctx).WorkflowExecution.ID
	}
	if r.reserve == 0 {
		r.reserve = budget.DefaultReserve(r.total)
	}
	if r.floor == 0 {
		r.floor = budget.DefaultFloor
	}
	// The budget starts when the run was started, not when a worker first
	// took it: the wait for a worker is spent from B, as a process's start
	// is spent from harness run's (SPEC §3). Both are workflow time, the
	// server's, read from the history.
	r.start = workflow.Now(ctx)
	if st := workflow.GetInfo(ctx).WorkflowStartTime; !st.IsZero() && st.Before(r.start) {
		r.start = st
	}
	if !in.Deadline.IsZero() {
		// A sub-agent's slice began when its parent granted it.
		r.start = in.Deadline.Add(-r.total)
	}
	r.deadline = r.start.Add(r.total)
	// The quiet clock starts when a worker first runs the run: a wait for
	// a worker is spent from B, but it is not the run's silence.
	// in.Quiet is positive here, the one thing NewClock checks.
	r.quiet, _ = newQuietClock(in.Quiet, workflow.Now(ctx))
	var seed [2]uint64
	if err := workflow.SideEffect(ctx, func(workflow.Context) any {
		return [2]uint64{rand.Uint64(), rand.Uint64()}
	}).Get(&seed); err != nil {
		seed = [2]uint64{1, 2} // a SideEffect's value cannot fail to decode; a fixed seed still replays
	}
	r.rng = rand.New(rand.NewPCG(seed[0], seed[1]))
	return r
}

// clock reads the budget at workflow time now: spent (the time that
// really passed, even past B), remaining (never negative) and available
// (remaining − R, negative inside the reserve).
func (r *run) clock(ctx workflow.Context) (spent, remaining, available time.Duration) {
	now := workflow.Now(ctx)
	spent = now.Sub(r.start)
	remaining = max(r.deadline.Sub(now), 0)
	return spent, remaining, remaining - r.reserve
}

// record stamps rec in workflow time and keeps it, up to MaxRecords.
//
// Any change of phase the clock made and the record does not yet say is
// recorded first, as harness run's records are (Session.record): a
// record's phase is the phase at its time, not the one its turn started
// in (issue 25).
func (r *run) record(ctx workflow.Context, rec trace.Record) {
	if rec.Event != trace.PhaseChange {
		r.advance(ctx)
	}
	now := workflow.Now(ctx)
	spent, remaining, _ := r.clock(ctx)
	r.seq++
	rec.TS, rec.RunID, rec.Seq = now, r.runID, r.seq
	if p := r.in.Parent; p != nil {
		rec.ParentRunID = p.RunID
	}
	rec.ElapsedMs, rec.RemainingMs, rec.Phase = spent.Milliseconds(), remaining.Milliseconds(), r.phase.String()
	if rec.Event == trace.RunEnd && now.After(r.deadline) {
		rec.LateMs = now.Sub(r.deadline).Milliseconds()
	}
	r.keep(rec)
	r.forward(rec)
}

// keep adds rec to the run's trace while the trace stays under MaxRecords
// and MaxTraceBytes, as the data converter encodes it; past either, it
// counts rec as dropped. A landing and a run_end are always kept: without
// them a trace does not say how its run ended.
func (r *run) keep(rec trace.Record) {
	size := encodedSize(rec)
	last := rec.Event == trace.Landing || rec.Event == trace.RunEnd
	if !last && (len(r.records) >= MaxRecords || r.traceBytes+size > MaxTraceBytes) {
		r.dropped++
		return
	}
	r.traceBytes += size
	r.records = append(r.records, rec)
}

// encodedSize is rec's size as the workflow's result carries it.
func encodedSize(rec trace.Record) int {
	b, err := json.Marshal(rec)
	if err != nil { // a Record is plain data: this is a bug
		panic(err)
	}
	return len(b) + 1
}

// advance moves the ladder to the phase of the time spent; phases only
// move forward.
func (r *run) advance(ctx workflow.Context) {
	spent, _, _ := r.clock(ctx)
	r.advanceTo(ctx, landing.PhaseAt(spent, r.total, r.reserve))
}

func (r *run) advanceTo(ctx workflow.Context, p landing.Phase) {
	if p <= r.phase {
		return
	}
	from := r.phase
	r.phase = p
	spent, _, _ := r.clock(ctx)
	r.record(ctx, trace.Record{Event: trace.PhaseChange, From: from.String(), To: p.String(),
		Reason: landing.PhaseReason(p, spent, r.total, r.reserve)})
}

// phases records each change of phase the clock makes when it happens, on
// one workflow timer at a time armed by landing.NextPhaseAt, as harness
// run's phase timer does (Session.armPhase): a phase record says when the
// run changed phase, not when it next recorded something (issue 25). It
// ends once the run is in land, or when the run has landed.
func (r *run) phases(ctx workflow.Context) {
	for {
		_, at, ok := landing.NextPhaseAt(r.phase, r.total, r.reserve)
		if !ok {
			return
		}
		spent, _, _ := r.clock(ctx)
		if err := workflow.Sleep(ctx, at-spent); err != nil {
			return
		}
		r.advance(ctx)
	}
}

// options are the activity options of one attempt: ScheduleToClose is the
// lease granted now, one attempt (the workflow is the one retry layer),
// and a heartbeat only to find a dead worker.
func options(ctx workflow.Context, lease time.Duration) workflow.Context {
	o := workflow.ActivityOptions{
		ScheduleToCloseTimeout: lease,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
	}
	if lease > 2*DeadWorker {
		o.HeartbeatTimeout = DeadWorker
	}
	return workflow.WithActivityOptions(ctx, o)
}

// timedOut reports how an activity error ended the attempt: cut by its
// lease (ScheduleToClose), by a dead worker (a missed heartbeat), or
// neither.
func timedOut(err error) (lease, dead bool) {
	var te *temporal.TimeoutError
	if !errors.As(err, &te) {
		return false, false
	}
	switch te.TimeoutType() {
	case enumspb.TIMEOUT_TYPE_HEARTBEAT:
		return false, true
	}
	return true, false
}

// mintKey mints the idempotency key of one logical call, once, in
// workflow code: the SideEffect keeps it in the history, so every attempt
// of the call, on any worker and after any crash, sends the same key.
func mintKey(ctx workflow.Context) cancel.Key {
	var key cancel.Key
	if err := workflow.SideEffect(ctx, func(workflow.Context) any { return cancel.NewKey() }).Get(&key); err != nil {
		panic(err) // a string SideEffect always decodes
	}
	return key
}

// delay decides the sleep before retry n with the core's policy, the one
// package tools' call machine applies ([budget.Backoff.Next]): the
// server's wait when it gave one, spread a little, else full jitter, drawn
// from the run's seeded source; and gives up when the sleep would outlast
// the budget, or the server's wait is too large to mean anything.
func (r *run) delay(ctx workflow.Context, n int, ra budget.RetryAfter) budget.Delay {
	_, _, available := r.clock(ctx)
	return budget.Backoff{Rand: r.rng.Int64N}.Next(n, ra, available, r.floor)
}

// backoff records d and sleeps it, unless it gives up. It reports whether
// to go on.
func (r *run) backoff(ctx workflow.Context, rec trace.Record, d budget.Delay) bool {
	rec.Event, rec.SleepMs, rec.Source, rec.GaveUp, rec.Reason = trace.Backoff, d.Sleep.Milliseconds(), d.Source.String(), d.GiveUp, d.Reason
	rec.ResendCount = 0 // a sleep is no attempt: its record has none, as in process
	r.record(ctx, rec)
	if d.GiveUp {
		return false
	}
	// A wait the run chose is not silence: the quiet clock is paused for
	// it (SPEC §3), the parent's too when this run is a sub-agent.
	resume := r.quiet.pause(ctx)
	defer resume()
	r.tellParent(ctx, pauseSignal)
	defer r.tellParent(ctx, resumeSignal)
	return workflow.Sleep(ctx, d.Sleep) == nil
}

// run is the loop: setup, then model turns and the tool calls they ask
// for, until the model answers or the run must land. Work happens on ctx,
// which the quiet clock cancels when it fires; root is the workflow's own
// context, which only the run's cancellation ends, and the run lands on
// it.
func (r *run) run(root, ctx workflow.Context) landing.Result {
	if cause, ok := r.setup(ctx); !ok {
		if c, ended := r.ended(root); ended {
			cause = c
		}
		return r.land(root, cause, false)
	}
	r.conv = []Message{{Role: "system", Content: landing.System(r.in.Instructions)}, {Role: "user", Content: r.in.Task}}
	for {
		if cause, ended := r.ended(root); ended {
			return r.land(root, cause, true)
		}
		r.advance(ctx)
		if r.phase == landing.Land {
			return r.land(root, landing.CauseBudget, true)
		}
		if r.step >= r.in.MaxSteps {
			return r.land(root, landing.CauseMaxSteps, true)
		}
		if _, remaining, available := r.clock(ctx); available-r.floor <= 0 {
			// No time for work, but the reserve is landing's (SPEC §3). The
			// turn's lease is refused as budget.Grant would, and the
			// boundary says so in the process's words (issue 25).
			r.doing = landing.NoModelTurn(&budget.RefusedError{Rule: budget.BelowFloor, Remaining: remaining, Left: available, Need: r.floor})
			return r.land(root, landing.CauseBudget, true)
		}
		r.step++
		reply, ok := r.turn(ctx)
		if cause, ended := r.ended(root); ended {
			return r.land(root, cause, true)
		}
		switch {
		case !ok && reply.Outcome == "":
			// The budget refused the turn's first attempt: the run is out
			// of work time, not failed by its model.
			return r.land(root, landing.CauseBudget, true)
		case !ok:
			return r.landFailed(root, reply)
		}
		if len(reply.ToolCalls) == 0 {
			if why := model.CheckFinish(reply.FinishReason); why != nil || strings.TrimSpace(reply.Content) == "" {
				if reply.Content != "" {
					r.conv = append(r.conv, Message{Role: "assistant", Content: reply.Content})
				}
				r.failure = "the model's reply is not a whole answer"
				if why != nil {
					r.failure = why.Error()
				}
				return r.land(root, landing.CauseUpstream, true)
			}
			r.quiet.stopped = true
			r.settleCancels(ctx) // before the result, as in process
			return r.finish(ctx, landing.Settle(r.landingRecord(""), reply.Content))
		}
		r.conv = append(r.conv, Message{Role: "assistant", Content: reply.Content, ToolCalls: reply.ToolCalls})
		for i, content := range r.callAll(ctx, reply.ToolCalls) {
			r.conv = append(r.conv, Message{Role: "tool", Content: content, ToolCallID: reply.ToolCalls[i].ID})
		}
	}
}

// setup lists the worker's tools: the run's setup step, on its budget
// (SPEC §3). It reports whether the run may go on, and if not, why it
// lands: its budget, or a worker that could not list them (upstream).
func (r *run) setup(ctx workflow.Context) (landing.Cause, bool) {
	// Setup is not silence: the quiet clock starts when the loop does, as
	// a Session's does after its Setup.
	resume := r.quiet.pause(ctx)
	defer resume()
	for n := 1; ; n++ {
		_, _, available := r.clock(ctx)
		// The setup's share of the work time, as in process (issue 24): a
		// mute tool server costs the run a quarter of it at most.
		granted, _, rule := budget.Grant(available, r.floor, budget.SetupCeiling(r.total-r.reserve, 0), 0)
		base := trace.Record{Step: "setup", Attempt: n, ResendCount: n - 1}
		if rule != 0 {
			rec := base
			rec.Event, rec.Reason = trace.Refused, rule.String()
			r.record(ctx, rec)
			return landing.CauseBudget, false
		}
		start := base
		start.Event, start.GrantedMs = trace.AttemptStart, granted.Milliseconds()
		r.record(ctx, start)
		r.attempts++ // an attempt on the record is counted, as in process (issue 25)
		var list ToolList
		err := workflow.ExecuteActivity(options(ctx, granted), ToolsActivity, r.in.Toolset).Get(ctx, &list)
		r.tools, r.unavailable = list.Tools, list.Unavailable
		end := start
		end.Event, end.Outcome = trace.AttemptEnd, trace.OK
		if err == nil {
			r.record(ctx, end)
			r.fetched(ctx, list.Fetches)
			return "", true
		}
		end.Outcome = trace.UpstreamError
		lease, dead := timedOut(err)
		cause := err
		if lease {
			end.Outcome, cause = trace.GaveUp, budget.ErrLeaseExpired // its ceiling is SetupCeiling's
		}
		if ctx.Err() != nil {
			end.Outcome, cause = trace.Cancelled, harness.ErrInterrupted
		}
		end.Message = attemptWords(end, cause)
		r.record(ctx, end)
		switch {
		case ctx.Err() != nil:
			return landing.CauseCancelled, false // the run says why: its caller's or its clock's
		case lease:
			return landing.CauseBudget, false
		case dead && n < DefaultMaxAttempts:
			// Listing the tools is a read: another worker lists them.
			continue
		}
		r.failure = "the worker could not list its tools: " + err.Error()
		return landing.CauseUpstream, false
	}
}

// fetched records the worker's fetches of its tool servers' manifests as
// this run's setup attempts, as a run in process records
// the fetches of its setup (issue 25).
func (r *run) fetched(ctx workflow.Context, fetches []Fetch) {
	for _, f := range fetches {
		r.attempts++
		start := trace.Record{Event: trace.AttemptStart, Step: "setup", Attempt: 1, Message: f.What}
		r.record(ctx, start)
		end := start
		end.Event, end.Outcome = trace.AttemptEnd, f.Outcome
		if f.Err != "" {
			end.Message = f.Err
		}
		r.record(ctx, end)
	}
}

// turn makes one model turn: attempts on work leases, retried as SPEC §2
// allows while the budget does. It reports whether the turn answered; a
// turn the budget refused before any attempt returns the zero reply.
func (r *run) turn(ctx workflow.Context) (ModelReply, bool) {
	r.heard(ctx, watchdog.ModelCall) // a model request, once per turn as in process
	var last ModelReply
	for n := 1; ; n++ {
		spent, remaining, available := r.clock(ctx)
		r.advanceTo(ctx, landing.PhaseAt(spent, r.total, r.reserve))
		base := trace.Record{Step: model.Kind, StepIndex: r.step, Attempt: n, ResendCount: n - 1}
		p50 := r.model.P50()
		granted, _, rule := budget.Grant(available, r.floor, 0, p50)
		if rule != 0 {
			rec := base
			rec.Event, rec.Reason = trace.Refused, rule.String()
			r.record(ctx, rec)
			if n > 1 {
				// The retry cannot be had: the run lands on the last failure,
				// which the boundary names.
				last.Failure += "; no retry: not enough time"
				return last, false
			}
			// Nothing was sent: the boundary says there was no time for a
			// turn, and why, in the process's words (issue 25).
			re := &budget.RefusedError{Rule: rule, Remaining: remaining, Left: available, Need: r.floor}
			if rule == budget.BelowP50 {
				re.Left, re.Need = granted, p50
			}
			r.doing = landing.NoModelTurn(re)
			return last, false
		}
		req := ModelRequest{
			Toolset:  r.in.Toolset,
			Messages: r.withNote(landing.NoteFor(r.phase, remaining, available)),
			Tools:    len(r.tools) > 0,
			Parallel: r.in.Parallel > 1 && r.phase == landing.Explore,
		}
		reply := r.modelAttempt(ctx, base, granted, req)
		last = reply
		if reply.Outcome == trace.OK {
			return reply, true
		}
		if !reply.Retry || n >= r.in.MaxAttempts {
			return reply, false
		}
		d := r.delay(ctx, n, reply.RetryAfter)
		if d.GiveUp && d.Source == budget.FromRetryAfter {
			// The server asked for a wait the run cannot afford: the
			// landing call would be answered the same (landing.ModelEnd).
			r.lastModel.RetryAfter = cmp.Or(reply.RetryAfter.Wait, budget.MaxRetryAfter)
		}
		rec := base
		rec.RetryAfterInvalid = reply.RetryAfterInvalid
		if !r.backoff(ctx, rec, d) {
			// The run gave up on the model, for want of time to wait: it
			// lands on cause budget, as harness.CauseOf says of a give-up
			// in process (issue 25).
			if d.GiveUp {
				// The boundary says why in the process's words.
				_, _, available := r.clock(ctx)
				reply.Outcome, reply.Failure = trace.GaveUp, landing.GaveUpWords(reply.Failure, available)
				if d.Source == budget.FromRetryAfter {
					reply.Failure = landing.RetryAfterWords(d.Sleep, available)
				}
			}
			return reply, false
		}
	}
}

// modelAttempt schedules one model attempt on a lease of granted and
// records it.
func (r *run) modelAttempt(ctx workflow.Context, base trace.Record, granted time.Duration, req ModelRequest) ModelReply {
	start := base
	start.Event, start.GrantedMs = trace.AttemptStart, granted.Milliseconds()
	if req.Landing {
		start.StepIndex = 0 // the landing call is no step of the loop: its records have none, as in process
	}
	r.record(ctx, start)
	began := workflow.Now(ctx)
	r.attempts++
	var reply ModelReply
	var cause error // what ended a failed attempt, for its record
	actx := workflow.WithWaitForCancellation(options(ctx, granted), true)
	err := r.await(ctx, workflow.ExecuteActivity(actx, ModelActivity, req), &reply)
	if err == nil && reply.Outcome != trace.OK && ctx.Err() != nil {
		// The run cut the attempt, which still said what its stream had
		// carried: the cut is the run's to name (issue 25).
		err = temporal.NewCanceledError()
	}
	if err != nil {
		seen := reply
		lease, dead := timedOut(err)
		switch {
		case temporal.IsCanceledError(err) && r.quiet.fired:
			reply = ModelReply{Outcome: trace.Quiet, Failure: "stopped: nothing happened for " + landing.Human(r.quiet.q)}
			cause = &r.quiet.stall
		case temporal.IsCanceledError(err):
			reply = ModelReply{Outcome: trace.Cancelled, Failure: "the run was cancelled"}
			cause = harness.ErrInterrupted
		case lease:
			reply = ModelReply{Outcome: trace.GaveUp, Failure: "the model sent no answer within its lease of " + landing.Human(granted)}
			// A model lease has no ceiling of its own on either host: it
			// runs to what the run has left, whose end is the deadline's.
			cause = budget.ErrDeadline
		case dead:
			// The worker died mid-call: a model turn is idempotent, so
			// another worker may make it again.
			reply = ModelReply{Outcome: trace.UpstreamError, Retry: true, Failure: "the worker making the call stopped"}
			cause = errWorkerStopped
		default:
			reply = ModelReply{Outcome: trace.UpstreamError, Failure: err.Error()}
			cause = err
		}
		reply.Chunks, reply.Keepalives, reply.ResponseModel = seen.Chunks, seen.Keepalives, seen.ResponseModel
	} else if reply.Outcome != trace.OK {
		cause = errors.New(cmp.Or(reply.Cause, reply.Failure))
	}
	if reply.Outcome == trace.OK {
		r.model.Observe(workflow.Now(ctx).Sub(began))
		r.heard(ctx, watchdog.ModelMessage) // a model message completed
	}
	if !req.Landing {
		// What the attempt's stream carried names it in the boundary, and
		// says whether the landing call is sent, by the process's rule.
		var mute bool
		r.unanswered, mute = landing.Unanswered(trace.Attempt{Outcome: reply.Outcome, Status: reply.Status,
			Chunks: reply.Chunks, Keepalives: reply.Keepalives, Start: began, End: workflow.Now(ctx)})
		r.lastModel = landing.ModelEnd{Refused: reply.Refused, Mute: mute}
	}
	end := start
	end.Event, end.Outcome, end.Status, end.Tokens = trace.AttemptEnd, reply.Outcome, reply.Status, reply.Tokens
	end.FinishReason, end.ResponseModel = reply.FinishReason, reply.ResponseModel
	if reply.Outcome != trace.OK {
		end.Message = attemptWords(end, cause)
	}
	r.record(ctx, end)
	return reply
}

// withNote is the conversation with a fresh budget note last; the note is
// never kept in the conversation.
func (r *run) withNote(note string) []Message {
	msgs := make([]Message, 0, len(r.conv)+1)
	return append(append(msgs, r.conv...), Message{Role: "system", Content: note})
}

// landFailed lands a run whose model turn failed. A turn the budget ended
// lands with cause budget; one the model failed, upstream. Whether the
// landing call is sent is landing.ModelEnd.Call's to say, as in process
// (issue 25): not to an endpoint that refused the run, was mute on its
// lease, or asked for a wait the run could not afford.
func (r *run) landFailed(ctx workflow.Context, reply ModelReply) landing.Result {
	cause := landing.CauseUpstream
	if reply.Outcome == trace.GaveUp {
		cause = landing.CauseBudget
	}
	r.failure = reply.Failure
	return r.land(ctx, cause, true)
}

// land ends the run early with cause: the landing call (one model attempt
// with no tools, on a landing lease that may spend the reserve) when
// call is set and there is time for it, else the deterministic summary of
// the run's record, built here in workflow code. The call is not sent to
// a model whose last attempt says it would not answer (landing.ModelEnd).
func (r *run) land(ctx workflow.Context, cause landing.Cause, call bool) landing.Result {
	call = call && r.lastModel.Call()
	if r.failure == "" {
		r.failure = r.unanswered
	}
	r.quiet.stopped = true // landing is bounded by its lease, not by the quiet clock
	var ceiling time.Duration
	if ctx.Err() != nil {
		// The run was cancelled (the first Ctrl-C): it lands now, within
		// its reserve R, on a context of its own (SPEC §3).
		ctx, _ = workflow.NewDisconnectedContext(ctx)
		ceiling = r.reserve
	}
	r.advanceTo(ctx, landing.Land)
	rec := r.landingRecord(cause)
	boundary := landing.Summarize(rec).Boundary
	who, msg, answer := "harness", boundary, ""
	_, remaining, _ := r.clock(ctx)
	granted, _, rule := budget.Grant(remaining, r.floor, ceiling, r.model.P50())
	switch {
	case !call:
	case rule != 0:
		msg = "no time for a landing call: " + rule.String()
	default:
		msgs := append(r.withNote(landing.NoteFor(landing.Land, remaining, 0)), Message{Role: "user", Content: landing.Prompt(boundary)})
		base := trace.Record{Step: model.Kind, StepIndex: r.step, Attempt: 1}
		reply := r.modelAttempt(ctx, base, granted, ModelRequest{Toolset: r.in.Toolset, Messages: msgs, Landing: true})
		switch {
		case reply.Outcome != trace.OK:
			msg = "landing call failed: " + reply.Failure
		case strings.TrimSpace(reply.Content) == "":
			msg = "landing call answered nothing"
		default:
			who, answer = "model", reply.Content
		}
	}
	r.record(ctx, trace.Record{Event: trace.Landing, Cause: string(cause), Result: who, Message: msg})
	r.settleCancels(ctx) // before the result, which a cancel accepted in its grace changes, as in process
	res := landing.Summarize(r.landingRecord(cause))
	if answer != "" {
		res.Answer = answer
	}
	return r.finish(ctx, res)
}

// landingRecord is what the run knows about itself when it lands.
func (r *run) landingRecord(cause landing.Cause) landing.Record {
	return landing.Record{Task: r.in.Task, Cause: cause, Step: r.step, Quiet: r.quiet.q, Failure: r.failure, Doing: r.doing, Calls: r.calls}
}

// ended reports whether the run's work is over before its budget is:
// cancelled (root ended: the first Ctrl-C) or stalled (the quiet clock
// fired), and the cause it lands with.
func (r *run) ended(root workflow.Context) (landing.Cause, bool) {
	switch {
	case root.Err() != nil:
		return landing.CauseCancelled, true
	case r.quiet.fired:
		return landing.CauseQuiet, true
	}
	return "", false
}

// stopped says, for the model, why the run's work context ended.
func (r *run) stopped() string {
	if r.quiet.fired {
		return "the run stalled: nothing happened for " + landing.Human(r.quiet.q)
	}
	return "the run was cancelled"
}

// finish fills in what every result carries: the run's ID, its budget in
// workflow time, its attempts.
func (r *run) finish(ctx workflow.Context, res landing.Result) landing.Result {
	spent, remaining, _ := r.clock(ctx)
	res.RunID = r.runID
	res.Budget = landing.BudgetReport{TotalMs: r.total.Milliseconds(), SpentMs: spent.Milliseconds(),
		ReserveMs: r.reserve.Milliseconds(), RemainingMs: remaining.Milliseconds()}
	res.Attempts = r.attempts
	res.Steps = r.step
	res.Unavailable = r.unavailable
	return res
}

// callAll makes the tool calls of one turn and returns each one's tool
// message. In explore they run side by side, Parallel at a time, as a
// sliding window: a call starts as soon as one in flight ends, as
// harness's CallAll has them (issue 25: no fixed batches). The phase is
// asked again before each call starts: a call that waited for a slot while
// the run left explore is a new branch, so it waits for the calls in
// flight to end and then runs alone (SPEC §3).
func (r *run) callAll(ctx workflow.Context, asked []ToolCall) []string {
	out := make([]string, len(asked))
	calls := make([]landing.Call, len(asked))
	// The waits are not cut by ctx: a call that finds the run stopping
	// still owes the model its result, which it gives at once; every
	// call's goroutine ends, a cancelled run's too, since its activities
	// end with the cancellation and their cleanup is disconnected.
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	wg := workflow.NewWaitGroup(ctx)
	inFlight := 0
	for i := range asked {
		r.advance(ctx) // the phase now, not the one the model turn started in
		width := 1
		if r.phase == landing.Explore {
			width = max(r.in.Parallel, 1)
		}
		_ = workflow.Await(dctx, func() bool { return inFlight < width }) // dctx is never done
		r.advance(ctx)
		if r.phase != landing.Explore {
			_ = workflow.Await(dctx, func() bool { return inFlight == 0 })
		}
		inFlight++
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer wg.Done()
			defer func() { inFlight-- }()
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

func (r *run) info(name string) (ToolInfo, bool) {
	for _, t := range r.tools {
		if t.Spec.Name == name {
			return t, true
		}
	}
	return ToolInfo{}, false
}

// call makes one logical tool call: one key, minted here, and as many
// attempts as SPEC §5 allows. It returns the tool message's content and
// the call as the landing record keeps it.
func (r *run) call(ctx workflow.Context, tc ToolCall) (string, landing.Call) {
	lc := landing.Call{Step: r.step, Tool: tc.Name}
	t, ok := r.info(tc.Name)
	if !ok {
		lc.Outcome, lc.Summary = landing.Failed, "unknown tool"
		return fmt.Sprintf("error: unknown tool %q", clip(tc.Name, 64)), lc
	}
	spec := t.Spec
	kind := spec.Kind
	if kind == "" {
		kind = tools.KindPrefix + spec.Name
	}
	r.advance(ctx) // a call is gated by the phase it starts in
	if t.Agent != nil {
		return r.agentCall(ctx, tc, t, lc, kind)
	}
	refused := func(n int, reason string, why error) (string, landing.Call) {
		rec := trace.Record{Event: trace.Refused, Step: kind, StepIndex: r.step, Attempt: n, ResendCount: n - 1, Key: string(lc.Key), CallID: tc.ID, Reason: reason}
		if why != nil {
			rec.Message = landing.GateReason(why) // the gate's words, as harness run's refused record says them
		}
		r.record(ctx, rec)
		lc.Outcome, lc.Summary = landing.Refused, "not started: not enough time"
		return "error: not started: not enough time", lc
	}
	_, remaining, _ := r.clock(ctx)
	if spec.Speculative {
		if err := landing.WidenAt(r.phase, landing.Speculative); err != nil {
			return refused(1, "gated", err)
		}
	}
	if err := landing.AdmitAt(r.phase, kind, spec.P95, spec.Ceiling, remaining-r.reserve); err != nil {
		// The process's gate, not a copy (issue 25).
		return refused(1, "gated", err)
	}
	if ctx.Err() != nil {
		// The run was cancelled, or stalled, before this call started:
		// nothing is sent.
		lc.Outcome, lc.Summary = landing.Refused, "not started: "+r.stopped()
		return "error: not started: " + r.stopped(), lc
	}
	key := mintKey(ctx)
	lc.Key = string(key)
	// The rules of the call are package tools' call machine's, the very
	// ones harness run follows (issue 25); this drives it with activities,
	// one timer and the run's records.
	m := tools.NewCallMachine(tools.CallRules{Kind: kind, Effect: spec.Effect, MaxAttempts: spec.MaxAttempts,
		Ceiling: spec.Ceiling, CanCancel: t.CanCancel, CanStatus: t.CanStatus,
		Backoff: budget.Backoff{Rand: r.rng.Int64N}})
	var (
		last       ToolReply
		st         StatusReply
		base       trace.Record
		cancelling bool // the cut attempt's cancel went out, its answer not waited for
	)
	cmd := m.Step(tools.CallEvent{Kind: tools.CallStarted, Figures: r.figures(ctx, spec.P50)})
	for {
		if cmd.Cancel {
			r.cancel(ctx, kind, spec.Name, key, cmd.CancelLease)
			cancelling = true
		}
		switch cmd.Kind {
		case tools.CallAttempt:
			base = trace.Record{Step: kind, StepIndex: r.step, Attempt: cmd.N, ResendCount: cmd.N - 1, Key: string(key), CallID: tc.ID}
			last, cancelling = r.toolAttempt(ctx, base, cmd.Lease, ToolRequest{Toolset: r.in.Toolset, Tool: spec.Name, Key: string(key), Args: tc.Arguments, Attempt: cmd.N}), false
			cmd = m.Step(tools.CallEvent{Kind: tools.AttemptEnded, Figures: r.figures(ctx, spec.P50), Attempt: tools.Attempted{
				OK: last.Outcome == trace.OK, Cut: last.Cut, GaveUp: last.Outcome == trace.GaveUp, Answered: last.Answered,
				NotSent: last.NotSent, Stopped: last.Stopped, Retry: last.Retry, RetryAfter: last.RetryAfter}})
		case tools.CallSleep:
			rec := base
			rec.RetryAfterInvalid = last.RetryAfterInvalid
			if cmd.Reconciling {
				rec = trace.Record{Step: kind, StepIndex: r.step, Attempt: cmd.N, Key: string(key), Reconciling: true}
			}
			r.backoff(ctx, rec, cmd.Delay)
			cmd = m.Step(tools.CallEvent{Kind: tools.SleepOver, Figures: r.figures(ctx, spec.P50)})
		case tools.CallAsk:
			st = r.ask(ctx, kind, spec.Name, key, cmd.Lease.Granted)
			cmd = m.Step(tools.CallEvent{Kind: tools.StatusAnswered, Figures: r.figures(ctx, spec.P50),
				Status: cancel.State(st.State), Unreachable: st.Err != ""})
		case tools.CallDone:
			lc.State = string(cmd.State)
			if lc.State == stateAbandoned && r.accepted[string(key)] {
				lc.State, cancelling = stateCancelled, false
			}
			out, lc := r.callEnded(ctx, tc, lc, cmd, last, st, cancelling, base)
			if base.Attempt > 0 {
				// A call's result (or its final error) is one semantic
				// event, at its end, as in process: an attempt that
				// answered a 503 before a backoff is not one (issue 25).
				r.heard(ctx, watchdog.ToolResult)
			}
			return out, lc
		}
	}
}

// figures reads the run's budget now, for the call machine; p50 is the
// tool's.
func (r *run) figures(ctx workflow.Context, p50 time.Duration) tools.Figures {
	_, remaining, _ := r.clock(ctx)
	return tools.Figures{Remaining: remaining, Reserve: r.reserve, Floor: r.floor, P50: p50, Ended: ctx.Err() != nil}
}

// callEnded writes the tool message and the landing record of a call the
// machine ended with cmd.
func (r *run) callEnded(ctx workflow.Context, tc ToolCall, lc landing.Call, cmd tools.CallCommand, last ToolReply,
	st StatusReply, cancelling bool, base trace.Record) (string, landing.Call) {
	name, kind, key := tc.Name, base.Step, lc.Key
	switch cmd.End {
	case tools.EndOK:
		if cmd.Status == cancel.Done {
			last.Output, last.CutShort = st.Output, false
		}
		lc.Outcome, lc.State, lc.Summary = landing.Done, "", clip(string(last.Output), 200)
		content := string(last.Output)
		if last.CutShort {
			content += "\n[output cut short]"
		}
		return content, lc
	case tools.EndRefused:
		rec := trace.Record{Event: trace.Refused, Step: kind, StepIndex: r.step, Attempt: cmd.N + 1, ResendCount: cmd.N,
			Key: key, CallID: tc.ID, Reason: cmd.Refused.Rule.String()}
		if cmd.N == 0 {
			lc.Key = "" // no attempt was made: the key named nothing
			r.record(ctx, rec)
			lc.Outcome, lc.Summary = landing.Refused, "not started: not enough time"
			return "error: not started: not enough time", lc
		}
		r.record(ctx, rec)
		return r.failed(lc, last, "; no retry: not enough time", cancelling)
	case tools.EndGaveUp:
		r.backoff(ctx, base, cmd.Delay) // records the give-up, sleeps nothing
		return r.failed(lc, last, "; no retry: the next attempt would not fit in the time left", cancelling)
	case tools.EndRunEnded:
		return r.failed(lc, last, "; no retry: "+r.stopped(), cancelling)
	case tools.EndStatusFailed:
		last.Err = name + " failed: its status says the call failed"
		return r.failed(lc, last, "", false)
	case tools.EndNeverReceived:
		return r.failed(lc, last, "; it never reached the tool, and no attempts are left", false)
	case tools.EndFailed:
		return r.failed(lc, last, "", cancelling)
	}
	// An orphan.
	if cmd.Reconciling && cmd.Delay.GiveUp {
		r.backoff(ctx, trace.Record{Step: kind, StepIndex: r.step, Attempt: cmd.N, Key: key, Reconciling: true}, cmd.Delay)
	}
	lc.Outcome, lc.State, lc.Summary = landing.Interrupted, stateOrphaned, "outcome unknown"
	j := r.journal(ctx, OrphanRequest{Toolset: r.in.Toolset, RunID: r.runID, Tool: name, Kind: kind, Key: key, Args: tc.Arguments})
	lc.Unreachable, lc.Next = !j.Journaled || !j.Reachable, j.Next
	r.record(ctx, trace.Record{Event: trace.Orphan, Step: kind, StepIndex: r.step, Key: key, State: "open", Message: j.Err})
	// The model is told "recorded" only when the journal holds it.
	if j.Journaled {
		return fmt.Sprintf("error: %s: no answer in time, and whether it took effect is unknown; "+
			"it is recorded for reconciliation under key %s: do not repeat it", name, key), lc
	}
	return fmt.Sprintf("error: %s: no answer in time, and whether it took effect is unknown; "+
		"it was NOT recorded for reconciliation (%s), so nothing will check it later: "+
		"do not repeat it; tell the user it may have happened, under key %s", name, j.Err, key), lc
}

// failed ends a call that failed with its last attempt's error; a call
// left abandoned whose cancel went out unanswered says so, as harness
// run's does.
func (r *run) failed(lc landing.Call, last ToolReply, suffix string, cancelling bool) (string, landing.Call) {
	msg := last.Err + suffix
	switch {
	case lc.State == stateCancelled:
		msg += "; it was cancelled"
	case lc.State == stateAbandoned && cancelling:
		msg += "; a cancel was sent, with no answer yet, so it may still be running"
	case lc.State == stateAbandoned:
		msg += "; it could not be cancelled and may still be running"
	}
	lc.Outcome, lc.Summary = landing.Failed, clip(msg, 200)
	// A call its own lease cut while the run went on failed, and the
	// model is told so: it is not in flight, as in process (issue 25).
	if landing.StaysInFlight(lc.State, last.Outcome == trace.GaveUp) {
		lc.Outcome = landing.Interrupted
	} else {
		lc.State = ""
	}
	return "error: " + msg, lc
}

// toolAttempt schedules one tool attempt on a lease of granted and
// records it. An attempt its lease or a dead worker ended is cut: its
// call may have reached the tool and may still be running.
func (r *run) toolAttempt(ctx workflow.Context, base trace.Record, lease budget.Lease, req ToolRequest) ToolReply {
	start := base
	start.Event, start.GrantedMs = trace.AttemptStart, lease.Granted.Milliseconds()
	r.record(ctx, start)
	r.attempts++
	if req.Attempt == 1 {
		r.heard(ctx, watchdog.ToolCall) // a tool call issued, at its first attempt as in process
	}
	reply, err := r.awaitTool(ctx, lease.Granted, req)
	// cause is what ended a failed attempt, for its record: the
	// activity's own error, or what cut it, as harness run's cut says it.
	cause := error(nil)
	if reply.Outcome != trace.OK {
		cause = errors.New(cmp.Or(reply.Cause, reply.Err))
	}
	if err == nil && reply.Cut && ctx.Err() != nil {
		// The attempt answered its cancellation: it says whether its work
		// stopped; what cut it is the run's.
		reply.Outcome, reply.Err = trace.Cancelled, req.Tool+": stopped: the run was cancelled"
		cause = harness.ErrInterrupted
		if r.quiet.fired {
			reply.Outcome, reply.Err = trace.Quiet, req.Tool+": stopped: nothing happened for "+landing.Human(r.quiet.q)
			cause = &r.quiet.stall
		}
	}
	if err != nil {
		timeUp, dead := timedOut(err)
		// What cut an attempt whose run's work ended first is the run's,
		// even when its lease ran out while its answer was waited for.
		switch {
		case (temporal.IsCanceledError(err) || timeUp) && ctx.Err() != nil && r.quiet.fired:
			reply = ToolReply{Outcome: trace.Quiet, Cut: true, Err: req.Tool + ": stopped: nothing happened for " + landing.Human(r.quiet.q)}
			cause = &r.quiet.stall
		case temporal.IsCanceledError(err) || timeUp && ctx.Err() != nil:
			reply = ToolReply{Outcome: trace.Cancelled, Cut: true, Err: req.Tool + ": stopped: the run was cancelled"}
			cause = harness.ErrInterrupted
		case timeUp:
			reply = ToolReply{Outcome: trace.GaveUp, Cut: true, Err: req.Tool + ": no answer within its time limit"}
			cause = budget.ErrDeadline
			if lease.Capped {
				cause = budget.ErrLeaseExpired
			}
		case dead:
			// Another worker may make a read again, with the same key.
			reply = ToolReply{Outcome: trace.UpstreamError, Cut: true, Retry: true, Err: req.Tool + ": the worker making the call stopped"}
			cause = errWorkerStopped
		default:
			reply = ToolReply{Outcome: trace.UpstreamError, Err: req.Tool + " failed: " + redact.Secrets(err.Error())}
			cause = err
		}
	}
	end := start
	end.Event, end.Outcome, end.Status = trace.AttemptEnd, reply.Outcome, reply.Status
	if reply.Outcome != trace.OK {
		end.Message = attemptWords(end, cause)
	}
	r.record(ctx, end)
	return reply
}

// awaitTool schedules one tool attempt and waits for its reply. When the
// run's work ends first (its quiet clock, its cancellation), the attempt
// is cancelled and its own answer waited for a little — it learns of the
// cancellation at its next heartbeat, stops its tool and says whether the
// work stopped — but never past cancelWait, nor a quarter of the reserve
// the run is about to land in: then it is taken for cut, its work
// perhaps still running.
func (r *run) awaitTool(ctx workflow.Context, granted time.Duration, req ToolRequest) (ToolReply, error) {
	actx := workflow.WithWaitForCancellation(options(ctx, granted), true)
	var reply ToolReply
	err := r.await(ctx, workflow.ExecuteActivity(actx, ToolActivity, req), &reply)
	return reply, err
}

// await waits for f, an activity scheduled with WaitForCancellation, and
// reads its answer into reply, as awaitTool says: a model attempt the run
// cuts says the same way what its stream had carried (issue 25).
func (r *run) await(ctx workflow.Context, f workflow.Future, reply any) error {
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
	grace.AddFuture(workflow.NewTimer(wait, min(cancelWait, r.reserve/4)), func(workflow.Future) {})
	grace.Select(dctx)
	if done {
		return err
	}
	return temporal.NewCanceledError()
}

// cancelWait bounds how long a cancelled tool attempt's own answer is
// waited for: its next heartbeat brings it the cancellation (within
// [CancelWithin] on a worker with [WorkerOptions]), a tick of the
// heartbeat loop, and its answer's way back.
const cancelWait = 2 * CancelWithin

// cancel sends the cancel of a cut call on lease, a landing lease of its
// own (cleanup may spend the reserve), and does not wait for its answer
// (SPEC §5: cancelling is not waiting; issue 25: a hung cancel blocked
// the call up to a second): the cancel_sent record says it went out, and
// a second says how it settled when it does, which, accepted, makes a
// call left abandoned cancelled. The run gives its cancels their grace
// only once it has landed (settleCancels).
func (r *run) cancel(ctx workflow.Context, kind, tool string, key cancel.Key, lease budget.Lease) {
	ctx, _ = workflow.NewDisconnectedContext(ctx) // cleanup outlives a cancelled run
	rec := trace.Record{Event: trace.CancelSent, Step: kind, StepIndex: r.step, Key: string(key), GrantedMs: lease.Granted.Milliseconds()}
	if lease.Granted <= 0 {
		rec.State, rec.Message = string(trace.CancelStateFailed), "no time to send it"
		r.record(ctx, rec)
		return
	}
	f := workflow.ExecuteActivity(options(ctx, lease.Granted), CancelActivity, StatusRequest{Toolset: r.in.Toolset, Tool: tool, Key: string(key)})
	rec.State = string(trace.CancelStateSent)
	r.record(ctx, rec)
	r.cancels.Add(1)
	r.unsettled++
	workflow.Go(ctx, func(ctx workflow.Context) {
		defer r.cancels.Done()
		defer func() { r.unsettled-- }()
		state := string(trace.CancelStateFailed)
		if err := f.Get(ctx, &state); err != nil {
			state, rec.Message = string(trace.CancelStateFailed), redact.Secrets(err.Error())
		}
		if state == string(trace.CancelStateAccepted) {
			r.accepted[string(key)] = true
			for i := range r.calls {
				if c := &r.calls[i]; c.Key == string(key) && c.State == stateAbandoned {
					c.State = stateCancelled
				}
			}
		}
		rec.State, rec.GrantedMs = state, 0
		r.record(ctx, rec)
	})
}

// settleCancels gives the cancels the run sent their grace now that it
// has landed: at most harness.CancelGrace, never past the deadline, as in
// process (SPEC §3: cancels never hold the answer; issue 25). A cancel
// answered within it settles its call's state; one still unanswered stays
// "sent", and its activity is left when the workflow returns.
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

// journal appends an orphan to the worker's journal, on a landing lease
// of its own: recording an orphan is cleanup, which may spend the reserve.
func (r *run) journal(ctx workflow.Context, req OrphanRequest) OrphanReply {
	ctx, _ = workflow.NewDisconnectedContext(ctx) // cleanup outlives a cancelled run
	_, remaining, _ := r.clock(ctx)
	granted, _, rule := budget.Grant(remaining, r.floor, journalLease, 0)
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

// ask asks the tool, by its key, how a cut write went, on a work lease of
// granted, never sending it again (SPEC §5), and records the answer.
func (r *run) ask(ctx workflow.Context, kind, tool string, key cancel.Key, granted time.Duration) StatusReply {
	var st StatusReply
	if err := workflow.ExecuteActivity(options(ctx, granted), StatusActivity, StatusRequest{Toolset: r.in.Toolset, Tool: tool, Key: string(key)}).Get(ctx, &st); err != nil {
		st = StatusReply{Err: err.Error()}
	}
	state := st.State
	if st.Err != "" {
		state = "unreachable"
	}
	r.record(ctx, trace.Record{Event: trace.Reconcile, Step: kind, StepIndex: r.step, Key: string(key), State: state, Message: redact.Secrets(st.Err)})
	return st
}

// errWorkerStopped is what cut an attempt whose worker died mid-call, in
// its record: a host's own ending, which has no counterpart in process.
var errWorkerStopped = errors.New("durable: the worker making the call stopped")

// attemptWords is the message of a failed attempt's attempt_end record in
// the core's words, trace.AttemptError's, redacted: the words harness
// run's records say for the same ending (issue 25), so that one reader
// reads both hosts' traces.
func attemptWords(end trace.Record, cause error) string {
	return redact.Secrets((&trace.AttemptError{Step: end.Step, Attempt: end.Attempt, Outcome: end.Outcome, Status: end.Status, Err: cause}).Error())
}
