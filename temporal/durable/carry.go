package durable

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/glidepath/glidepath/budget"
	grun "github.com/glidepath/glidepath/internal/run"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	"go.temporal.io/sdk/workflow"
)

// A run's history grows with every model turn, by the whole conversation
// each turn's request carries, so a long run would meet Temporal's
// history limit. Between two turns, when nothing is in flight, a run
// whose history has grown past Temporal's suggestion or past
// Input.ContinueAt continues as new (issue 26, item 2): the same workflow
// ID, the same task queue, the same build (a run pinned to one stays
// pinned to it: the SDK's default), with an Input whose [Carry] is its
// state, so that the new run goes on exactly as the old one would have —
// the same deadline, records, steps, calls, conversation, estimates and
// quiet clock. A caller waiting on the run follows the chain to its
// result; a query, a land signal or a status by workflow ID reach the run
// that is open.
//
// What of the run (workflow.go) is carried, field by field:
//
//   - in: carried, with its Deadline made absolute (the budget's end, so
//     that no part of it is granted again) and its RunID made explicit.
//   - frame: re-made from in, with its last seq and phase on record (Seq,
//     Phase), so that seq goes on and no phase change is recorded twice.
//   - m: its state between turns (grun.State).
//   - step, attempts, calls: carried; calls after their cancels' answers
//     are read into them (run.settled).
//   - conv: carried, past its system prompt and task, which in has.
//   - calling: not carried: the last turn's calls have all ended, and only
//     the status query reads it, for attempts in flight.
//   - landCtx, cancelledAt: zero: a run continues only before it lands,
//     and not once its caller cancelled it.
//   - tools, unavailable, fingerprint: carried: the new run makes no setup
//     step, and its steps are checked against the toolset of the first.
//   - model, kinds: carried as their declared figures and observations
//     (Estimate).
//   - records, dropped: carried; traceBytes is counted again from them.
//   - rng: seeded again (a new SideEffect): only the backoff's jitter
//     reads it.
//   - findable: read again, and the search attributes set again, by the
//     new run's start (startSearch).
//   - cancelOf, unsettled: not carried: a run continues only with no
//     cancel unanswered, whose answers its calls already hold.
//   - children: zero: a run continues only with no sub-agent running (the
//     server would end it with its parent's run: ParentClosePolicy).
//   - quiet: its clock (watchdog.ClockState); stopped and fired are false
//     and paused is empty between turns, as a run continues only then.
//   - stopWork: the new run's own.
//   - events, work: carried: a sub-agent's records of work, sent or not
//     yet, which the new run's forwardLoop goes on sending.
//   - resumedAt, uncarried, oversize: the new run's own.

// DefaultContinueAt is the history size, in bytes, past which a run
// continues as new if Temporal has not suggested it sooner
// (Input.ContinueAt): below [MaxHistoryBytes] by room for a last turn.
const DefaultContinueAt = 32 << 20

// A Carry is the state of a run that continues as new, as its next run's
// Input carries it.
type Carry struct {
	// Seq is the last record's seq, Phase the phase on record (a number:
	// a landing.Phase encodes as its name, and has no decoder).
	Seq   int64
	Phase uint8

	Step        int // the step the last records name
	Machine     grun.State
	Attempts    int
	Calls       []landing.Call        `json:",omitempty"`
	Conv        []Message             // the conversation past its system prompt and task
	Tools       []ToolInfo            `json:",omitempty"`
	Unavailable []landing.Unavailable `json:",omitempty"`
	Fingerprint Fingerprint
	Model       Estimate
	Kinds       map[string]Estimate `json:",omitempty"`
	Records     []trace.Record
	Dropped     int `json:",omitempty"`
	Quiet       watchdog.ClockState
	Events      int64    `json:",omitempty"` // a sub-agent's records of work so far
	Work        []string `json:",omitempty"` // the words of those not sent yet
}

// An Estimate is a latency estimate ([budget.Latency]) as a Carry holds
// it: what its step declared, and what it observed, oldest first.
type Estimate struct {
	P50, P95 time.Duration   `json:",omitempty"`
	Observed []time.Duration `json:",omitempty"`
	Own      int             `json:",omitempty"` // of Observed, the run's own
	Learned  time.Duration   `json:",omitempty"` // the longest cut a profile taught (budget.Latency.Learn)
}

func estimateOf(l *budget.Latency) Estimate {
	p50, p95 := l.Declared()
	return Estimate{P50: p50, P95: p95, Observed: l.Observed(), Own: l.Own(), Learned: l.Learned()}
}

func (e Estimate) latency() *budget.Latency {
	l := new(budget.Latency)
	l.Declare(e.P50, e.P95)
	l.Warm(e.Observed)
	l.Restore(e.Own, e.Learned)
	return l
}

// rules are the run machine's rules, the run's Input's.
func (r *run) rules() grun.Rules {
	return grun.Rules{Task: r.in.Task, Quiet: r.quiet.q, MaxSteps: r.in.MaxSteps, Parallel: r.in.Parallel > 1, MaxRepeats: r.in.MaxRepeats}
}

// prompts are the start of the run's conversation: the system prompt and
// the task.
func (r *run) prompts() []Message {
	return []Message{{Role: "system", Content: landing.System(r.in.Instructions)}, {Role: "user", Content: r.in.Task}}
}

// restore makes r the run c was taken from, between two turns.
func (r *run) restore(c *Carry) {
	r.frame = r.frame.Continued(c.Seq, landing.Phase(c.Phase))
	r.m, r.resumedAt = grun.Resume(r.rules(), c.Machine), c.Machine.Steps
	r.step, r.attempts, r.calls = c.Step, c.Attempts, c.Calls
	r.conv = append(r.prompts(), c.Conv...)
	r.tools, r.unavailable, r.fingerprint = c.Tools, c.Unavailable, c.Fingerprint
	r.model = *c.Model.latency()
	for kind, e := range c.Kinds {
		r.kinds[kind] = e.latency()
	}
	r.records, r.dropped = c.Records, c.Dropped
	for _, rec := range r.records {
		r.traceBytes += encodedSize(rec)
	}
	r.quiet.clock = watchdog.RestoreClock(c.Quiet)
	r.events, r.work = c.Events, c.Work
}

// carry is r's state, between two turns.
func (r *run) carry() *Carry {
	c := &Carry{Seq: r.frame.Seq(), Phase: uint8(r.frame.Phase()), Step: r.step, Machine: r.m.State(), Attempts: r.attempts,
		Calls: r.settled(), Conv: r.conv[len(r.prompts()):], Tools: r.tools, Unavailable: r.unavailable, Fingerprint: r.fingerprint,
		Model: estimateOf(&r.model), Records: r.records, Dropped: r.dropped, Quiet: r.quiet.clock.State(), Events: r.events, Work: r.work}
	if len(r.kinds) > 0 {
		c.Kinds = make(map[string]Estimate, len(r.kinds))
		for kind, l := range r.kinds {
			c.Kinds[kind] = estimateOf(l)
		}
	}
	return c
}

// continueAsNew is called between two turns, the run's machine having
// asked for the next: it returns the error that continues the run as new
// when its history has grown past Temporal's suggestion or past
// Input.ContinueAt, at least one turn was made since the run began or
// continued, and nothing is in flight; nil: the run goes on here. A run
// whose state is past [MaxCarryBytes] goes on too, past Temporal's
// suggestion; past ContinueAt, it lands: its next model attempt is not
// sent (run.uncarried), as one past MaxHistoryBytes is not.
func (r *run) continueAsNew(root, ctx workflow.Context) error {
	info := workflow.GetInfo(ctx)
	size, at := info.GetCurrentHistorySize(), orDefault(r.in.ContinueAt, DefaultContinueAt)
	if r.m.Steps() == r.resumedAt || size < at && !info.GetContinueAsNewSuggested() || r.uncarried != nil {
		return nil
	}
	var in Input
	if r.oversize == 0 {
		if !r.idle(root, ctx) {
			return nil
		}
		in = r.in
		in.RunID, in.Deadline, in.Spent, in.Carry = r.frame.RunID(), r.frame.Start().Add(r.frame.Total()), 0, r.carry()
		b, err := json.Marshal(in)
		if err != nil { // an Input is plain data: this is a bug
			panic(err)
		}
		if len(b) <= MaxCarryBytes {
			workflow.GetLogger(ctx).Info("durable: the run continues as new", "historyBytes", size, "carryBytes", len(b))
			return workflow.NewContinueAsNewError(root, WorkflowName, in)
		}
		r.oversize = len(b) // its state only grows: it is not encoded again
	}
	if size >= at {
		r.uncarried = fmt.Errorf("%w: the run's history is %s, past the %s at which it continues as new, and its state is %s, past the %s a run carries into the next",
			errTooLarge, mib(size), mib(at), mib(r.oversize), mib(MaxCarryBytes))
	}
	return nil
}

// idle reports whether nothing is in flight that a new run could not take
// on: no cancel unanswered, no sub-agent running, no pause of the quiet
// clock, no stop, and no signal of the run's unread (which would be lost
// with this run: a land signal is read, and lands the run, first).
func (r *run) idle(root, ctx workflow.Context) bool {
	if r.unsettled > 0 || r.children > 0 || r.quiet.clock.Paused() || ctx.Err() != nil {
		return false
	}
	unread := func() bool {
		return slices.ContainsFunc(workflow.GetUnhandledSignalNames(ctx), func(name string) bool {
			return name == SignalLand || name == SignalProgress
		})
	}
	err := workflow.Await(ctx, func() bool { return root.Err() != nil || !unread() })
	return err == nil && root.Err() == nil && !r.quiet.fired
}
