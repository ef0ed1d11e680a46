package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
	"golang.org/x/sync/semaphore"
)

// A ToolCall is one tool call a model asked for: the tool's name and the
// arguments as the model wrote them.
type ToolCall struct {
	Name      string
	Arguments json.RawMessage
	ID        string // the model's id of the call, if it gave one: tool_call_id in the trace
}

// CallAll makes the tool calls of the current step and returns how each
// ended, in order; every call gets a result, refused ones included, since a
// chat API rejects a conversation that leaves one unanswered. In the
// explore phase several calls run at once, at most [Config.Parallel]; from
// narrow on they run one by one, since width is bought with budget the run
// no longer has (SPEC §3). The phase is asked again before each call
// starts, not once per step: a call that waited for a slot while the run
// entered narrow is a new branch, so it waits for the calls in flight to
// end and then runs alone. Every goroutine it starts has ended when it
// returns.
func (s *Session) CallAll(ctx context.Context, calls []ToolCall) []tools.Result {
	out := make([]tools.Result, len(calls))
	if !s.started() {
		for i, c := range calls {
			out[i] = noSessionCall(c.Name)
		}
		return out
	}
	ctx, release := s.bind(ctx)
	defer release()
	step, specs := s.steps(), s.specs()
	width := int64(s.cfg.Parallel)
	if len(calls) == 1 || width == 1 || s.ladder.MayWiden(landing.Parallel) != nil {
		for i, c := range calls {
			out[i] = s.call(ctx, step, specs, c)
		}
		return out
	}
	// Slots are taken here, in call order, and only here, so the wait for
	// all of them cannot deadlock: each call in flight ends on its lease and
	// gives its slots back. The wait is not cut by ctx: a call that finds
	// the run stopping still owes the model its result, which the gate
	// gives at once.
	slots := semaphore.NewWeighted(width)
	wait := context.WithoutCancel(ctx)
	var wg sync.WaitGroup
	for i, c := range calls {
		held := int64(1)
		slots.Acquire(wait, 1) // cannot fail: wait is never done
		if s.ladder.MayWiden(landing.Parallel) != nil {
			slots.Acquire(wait, width-1)
			held = width
		}
		wg.Go(func() {
			defer slots.Release(held)
			out[i] = s.call(ctx, step, specs, c)
		})
	}
	wg.Wait()
	return out
}

// Call makes one tool call of the current step through the ladder's gates,
// as [Session.CallAll] does for one call.
func (s *Session) Call(ctx context.Context, name string, args json.RawMessage) tools.Result {
	if !s.started() {
		return noSessionCall(name)
	}
	ctx, release := s.bind(ctx)
	defer release()
	step := s.steps()
	return s.call(ctx, step, s.specs(), ToolCall{Name: name, Arguments: args})
}

// toolRun is what a tool call of step, the model's call callID, needs to
// know of the run.
func (s *Session) toolRun(step int, callID string) *tools.Run {
	obs := s.observerFor(step, s.w, callID)
	return &tools.Run{ID: s.id, Budget: s.b, Journal: s.cfg.Journal, Observer: obs, Cancels: &s.cancels,
		Keep: Keep(s.b)}
}

// call runs one tool call, unless a gate of the ladder refuses it.
func (s *Session) call(ctx context.Context, step int, specs toolSpecs, c ToolCall) tools.Result {
	s.busy.Add()
	defer s.busy.Done()
	spec, known := specs.lookup(c.Name)
	kind := tools.KindPrefix + c.Name
	if known {
		kind = spec.Kind
	}
	if err := s.callerEnded(ctx); err != nil {
		// The caller's own context ended, not the run: the words say so
		// rather than that the run is stopping (issue 25).
		reason := "the caller's context ended (" + context.Cause(ctx).Error() + ")"
		s.record(trace.Record{Event: trace.Refused, Step: kind, StepIndex: step, Attempt: 1, Reason: "caller", Message: reason})
		return tools.Result{Tool: c.Name, Outcome: trace.Cancelled, Refused: true, Err: "not run: " + reason, Cause: err}
	}
	if reason, ok := s.gate(ctx, spec, known); !ok {
		s.recordCall(landing.Call{Step: step, Tool: c.Name, Outcome: landing.Refused, Summary: reason})
		s.record(trace.Record{Event: trace.Refused, Step: kind, StepIndex: step, Attempt: 1,
			Reason: "gated", Message: reason})
		return tools.Result{Tool: c.Name, Outcome: trace.GaveUp, Refused: true, Err: "not run: " + reason,
			Cause: &landing.GateError{Phase: s.ladder.Phase(), What: kind, Reason: reason}}
	}
	if strings.HasPrefix(kind, AgentKindPrefix) {
		s.agentCalls.Add()
		defer s.agentCalls.Done() // after its record: Land waits for it
	}
	res := s.cfg.Tools.Call(withParent(ctx, s, step), s.toolRun(step, c.ID), c.Name, c.Arguments)
	s.recordCall(callOf(step, c.Name, kind, res))
	return res
}

// callerEnded returns an error matching [ErrCallerEnded] when ctx, bound
// to the run, has ended while the run goes on: the caller's own context
// ended it. Nil otherwise.
func (s *Session) callerEnded(ctx context.Context) error {
	if ctx == nil || ctx.Err() == nil || s.over() {
		return nil
	}
	if run, _ := s.runContext(); run.Err() != nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrCallerEnded, context.Cause(ctx))
}

// gate asks the ladder whether a call of spec may start now. A tool the
// run does not know is let through: the registry answers it at once,
// without any I/O, and the model learns which tools there are.
func (s *Session) gate(ctx context.Context, spec tools.Spec, known bool) (reason string, ok bool) {
	if ctx.Err() != nil || s.over() {
		return "the run is stopping: no more work is started", false
	}
	if !known {
		return "", true
	}
	if spec.Speculative {
		if err := s.ladder.MayWiden(landing.Speculative); err != nil {
			return landing.GateReason(err), false
		}
	}
	if strings.HasPrefix(spec.Kind, AgentKindPrefix) {
		if err := s.ladder.MayWiden(landing.SubAgent); err != nil {
			return landing.GateReason(err), false
		}
	}
	if err := s.ladder.Admit(s.b.Estimates().Kind(spec.Kind), spec.Ceiling); err != nil {
		return landing.GateReason(err), false
	}
	return "", true
}

// callOf records how a call ended, for the landing summary. A call left
// unfinished by the run's end (its deadline, the quiet clock, a
// cancellation) was in flight; one cut by its own ceiling while the run
// went on failed, and the run knew it. An orphaned write is always listed
// in flight: nobody knows yet whether it happened. A sub-agent's call
// (kind agent:NAME) that answered a partial result is done, with the
// cause its child landed on.
func callOf(step int, name, kind string, res tools.Result) landing.Call {
	c := landing.Call{Step: step, Tool: name, Key: string(res.Key)}
	switch {
	case landing.StaysInFlight(string(res.State), errors.Is(res.Cause, budget.ErrLeaseExpired)):
		c.Outcome, c.State = landing.Interrupted, string(res.State)
		if oe, ok := errors.AsType[*tools.OrphanError](res.Cause); ok {
			// harness reconcile settles it only when the journal holds it
			// and names a way to ask its tool (issue 17).
			c.Unreachable = !oe.Journaled || !oe.Reachable
			c.Next = oe.Next
		}
	case res.Refused:
		c.Outcome, c.Summary = landing.Refused, oneLine(res.Err)
	case res.Err != "":
		c.Outcome, c.Summary = landing.Failed, oneLine(res.Err)
	default:
		c.Outcome, c.Summary = landing.Done, oneLine(outputText(res.Output))
		c.Landed = landedOf(kind, res.Output)
	}
	return c
}

// landedOf is the cause a sub-agent's child landed on, read from its
// labeled result, the call's output; empty when the call is not a
// sub-agent's or its child answered complete. A sub-agent that `harness
// serve` serves is of that kind too, and answers the same object.
func landedOf(kind string, output json.RawMessage) landing.Cause {
	if !strings.HasPrefix(kind, AgentKindPrefix) {
		return ""
	}
	var r struct {
		Status landing.Status `json:"status"`
		Cause  landing.Cause  `json:"cause"`
	}
	if json.Unmarshal(output, &r) != nil {
		return ""
	}
	return landing.Result{Status: r.Status, Cause: r.Cause}.Landed()
}

// outputText is a tool's output as a person reads it: a JSON string
// unquoted, anything else as sent.
func outputText(out json.RawMessage) string {
	var s string
	if json.Unmarshal(out, &s) == nil {
		return s
	}
	return string(out)
}

// maxSummary bounds a call's one-line summary in the landing record.
const maxSummary = 200

// oneLine is the first line of s, cut to maxSummary bytes on a rune
// boundary.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i]) + " …"
	}
	if len(s) <= maxSummary {
		return s
	}
	cut := maxSummary
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
