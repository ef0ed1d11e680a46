package durable

import (
	"slices"
	"strings"
	"time"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/trace/spans"
	"github.com/glidepath/glidepath/watchdog"
	"go.temporal.io/sdk/workflow"
)

// QueryStatus is the query a running (or ended) run answers with its
// [Status]: `harness-temporal status ID` reads it.
const QueryStatus = "glidepath.status"

// SignalLand asks a run to land now, with cause cancelled, exactly as its
// cancellation does (the first Ctrl-C of `harness-temporal run`, or
// `harness-temporal land ID`). It carries no payload; a run that is
// already landing or has ended ignores it.
const SignalLand = "glidepath.land"

// Overrun bounds how long past its deadline D a run's workflow may stay
// open: its [StartOptions] set a WorkflowExecutionTimeout of its budget
// plus Overrun, and a sub-agent's child workflow one of its slice plus
// Overrun, so that a run that cannot land (a worker that never comes, a
// build that cannot replay it) is ended by the server rather than kept
// open. A run lands by D; what may still follow D is the server's timer
// resolution (up to a second on a default server), the cancels' grace
// after the landing, and the result's trip to the server. 5s holds all
// three with room to spare.
const Overrun = 5 * time.Second

// ExecutionTimeout is the WorkflowExecutionTimeout of a run whose budget
// (or slice) is budget: budget plus [Overrun].
func ExecutionTimeout(budget time.Duration) time.Duration { return budget + Overrun }

// Status is what a run says of itself when asked ([QueryStatus]). It is
// read at At, the workflow time of the run's last workflow task (Temporal
// answers a query from the state that task left), from the run's own
// frame and records: the query applies no rule of its own. Start, with
// the budget's total and reserve, lets a reader read the same frame at
// its own now (`harness-temporal status` does, for a running run).
type Status struct {
	RunID    string               `json:"run_id"`
	At       time.Time            `json:"at"`
	Start    time.Time            `json:"start"` // when the budget began, in workflow time
	Phase    string               `json:"phase"`
	Budget   landing.BudgetReport `json:"budget"`
	Step     int                  `json:"step"`
	Attempts int                  `json:"attempts"`
	InFlight []Flying             `json:"in_flight"`
	// Partial reports that records were dropped past MaxRecords or
	// MaxTraceBytes: InFlight, read from the records, may miss attempts.
	Partial bool   `json:"partial,omitempty"`
	Landing bool   `json:"landing"` // the run is landing: its work is over
	Ended   bool   `json:"ended"`   // the run has its result
	Result  string `json:"result,omitempty"`
	Cause   string `json:"cause,omitempty"` // an ended run's cause, "" for none
	// Held is the call in flight whose allowance of silence holds the
	// run's quiet clock nearest its end, as of At (issue 27): a live line
	// warns of it at half its allowance. None when no call is held.
	Held *Held `json:"held,omitempty"`
}

// Held is a call whose allowance of silence holds a run's quiet clock, as
// its status shows it: its step kind and, for a tool call, its key hashed
// as [Flying]'s is (never the key itself); its allowance and where it came
// from; how long it had been silent at the status's At; whether its
// server had answered; and whether the clock was paused then, a wait the
// run chose, which is no silence.
type Held struct {
	Step        string `json:"step"`
	Key         string `json:"key,omitempty"`
	AllowanceMs int64  `json:"allowance_ms"`
	SilentMs    int64  `json:"silent_ms"`
	Source      string `json:"source,omitempty"`
	Headers     bool   `json:"headers,omitempty"`
	Paused      bool   `json:"paused,omitempty"`
}

// Silent is h as the quiet clock says it, silent for its SilentMs: what
// landing.HeldWarning reads.
func (h Held) Silent() watchdog.Silent {
	return watchdog.Silent{Call: watchdog.Call{Step: h.Step, Allowance: time.Duration(h.AllowanceMs) * time.Millisecond},
		For: time.Duration(h.SilentMs) * time.Millisecond, Headers: h.Headers, Held: true}
}

// heldOf is s, the held call of a run's quiet clock, as its status shows it.
func heldOf(s watchdog.Silent, paused bool) *Held {
	h := &Held{Step: s.Step, AllowanceMs: s.Allowance.Milliseconds(), SilentMs: s.For.Milliseconds(), Headers: s.Headers, Paused: paused}
	if s.Key != "" && s.Step != model.Kind {
		h.Key = spans.HashKey(s.Key)
	}
	if s.Source != watchdog.SourceNone {
		h.Source = s.Source.String()
	}
	return h
}

// Flying is an attempt in flight: a model attempt (Kind "model", no tool,
// no key), a setup step, or an attempt of a tool call.
//
// Key is the call's idempotency key hashed (spans.HashKey), never the key
// itself: a query's answer goes to whoever may query the namespace and
// ends up in terminals and logs, while the raw key is what a tool server
// dedupes and settles a write by. Whoever holds it can ask the tool for
// the write's status, cancel it or send a write that the server takes for
// the same one. The hash is the one the trace's spans carry, and is
// enough to find the call in the run's own trace or journal.
type Flying struct {
	Tool    string `json:"tool,omitempty"`
	Kind    string `json:"kind"`
	Key     string `json:"key,omitempty"`
	Attempt int    `json:"attempt"`
}

// answerStatus registers the run's [QueryStatus] handler.
func (r *run) answerStatus(ctx workflow.Context) error {
	return workflow.SetQueryHandler(ctx, QueryStatus, func() (Status, error) { return r.status(ctx), nil })
}

// status reads the run's state at workflow time now.
func (r *run) status(ctx workflow.Context) Status {
	spent, remaining, _ := r.clock(ctx)
	st := Status{RunID: r.frame.RunID(), At: workflow.Now(ctx), Start: r.frame.Start(), Phase: r.frame.Phase().String(),
		Budget: landing.Report(r.frame.Total(), r.frame.Reserve(), spent, remaining), Step: r.step, Attempts: r.attempts, InFlight: []Flying{}, Partial: r.dropped > 0, Landing: r.landCtx != nil}
	for _, rec := range r.records {
		if rec.RunID != st.RunID {
			continue // a sub-agent's, adopted: its own status says it
		}
		switch rec.Event {
		case trace.AttemptStart:
			st.InFlight = append(st.InFlight, r.flying(rec))
		case trace.AttemptEnd:
			f := r.flying(rec)
			if i := slices.Index(st.InFlight, f); i >= 0 {
				st.InFlight = slices.Delete(st.InFlight, i, i+1)
			}
		case trace.RunEnd:
			st.Ended, st.Result, st.Cause = true, rec.Result, rec.Cause
		}
	}
	if held, ok := r.quiet.clock.Held(st.At); ok && !r.quiet.stopped {
		st.Held = heldOf(held, r.quiet.clock.Paused())
	}
	return st
}

// flying is the attempt rec starts or ends, its tool named by the model's
// call it answers, else by its kind.
func (r *run) flying(rec trace.Record) Flying {
	f := Flying{Kind: rec.Step, Attempt: rec.Attempt}
	if rec.Key != "" {
		f.Key = spans.HashKey(rec.Key)
	}
	for _, tc := range r.calling {
		if rec.CallID != "" && tc.ID == rec.CallID {
			f.Tool = tc.Name
		}
	}
	if f.Tool == "" && strings.HasPrefix(rec.Step, tools.KindPrefix) {
		f.Tool = strings.TrimPrefix(rec.Step, tools.KindPrefix)
	}
	return f
}

// landOnSignal cancels the run's root context when [SignalLand] arrives,
// so that a run asked to land takes the path its cancellation takes; it
// returns when watch ends, with the run.
func landOnSignal(land workflow.CancelFunc) func(watch workflow.Context) {
	return func(watch workflow.Context) {
		asked := false
		workflow.NewSelector(watch).
			AddReceive(workflow.GetSignalChannel(watch, SignalLand), func(c workflow.ReceiveChannel, _ bool) {
				c.Receive(watch, nil)
				asked = true
			}).
			AddReceive(watch.Done(), func(workflow.ReceiveChannel, bool) {}).
			Select(watch)
		if asked {
			land()
		}
	}
}
