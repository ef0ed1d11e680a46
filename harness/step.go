package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	grun "github.com/glidepath/glidepath/internal/run"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	"golang.org/x/sync/semaphore"
)

// A ToolCall is one tool call a model asked for: the tool's name and the
// arguments as the model wrote them.
type ToolCall struct {
	Name      string
	Arguments json.RawMessage
	ID        string // the model's id of the call, if it gave one: tool_call_id in the trace
}

// Call makes the tool calls of the current step through the ladder's
// gates, each on leases of the budget, and returns how each ended, in
// order; every call gets a result, refused ones included, since a
// chat API rejects a conversation that leaves one unanswered. In the
// explore phase several calls run at once, at most [Config.Parallel]; from
// narrow on they run one by one, since width is bought with budget the run
// no longer has (SPEC §3). The phase is asked again before each call
// starts, not once per step: a call that waited for a slot while the run
// entered narrow is a new branch, so it waits for the calls in flight to
// end and then runs alone. A single call runs on the caller's goroutine.
// Every goroutine it starts has ended when it returns.
func (s *Session) Call(ctx context.Context, calls ...ToolCall) []tools.Result {
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
	width := int64(max(s.cfg.Parallel, 1))
	// Slots are taken here, in call order, and only here, so the wait for
	// all of them cannot deadlock: each call in flight ends on its lease and
	// gives its slots back. How many a call takes is tools.Slots's rule,
	// the one the durable host follows (issue 25). The wait is not cut by
	// ctx: a call that finds the run stopping still owes the model its
	// result, which the gate gives at once.
	slots := semaphore.NewWeighted(width)
	wait := context.WithoutCancel(ctx)
	var wg sync.WaitGroup
	for i, c := range calls {
		slots.Acquire(wait, 1) // cannot fail: wait is never done
		// The phase once it has a slot: a call that waited for one while
		// the run left explore takes them all.
		held := int64(tools.Slots(s.ladder.Phase(), int(width)))
		slots.Acquire(wait, held-1)
		if len(calls) == 1 || held == width {
			// Alone: on this goroutine, with nothing else in flight.
			out[i] = s.call(ctx, step, specs, c)
			slots.Release(held)
			continue
		}
		wg.Go(func() {
			defer slots.Release(held)
			out[i] = s.call(ctx, step, specs, c)
		})
	}
	wg.Wait()
	s.callsMade(calls, out)
	return out
}

// callsMade tells the run's machine the calls of a step and their
// results, once they have all ended: it counts the repeated ones, of
// which the run lands stuck after [Config.MaxRepeats] (SPEC §3).
func (s *Session) callsMade(calls []ToolCall, out []tools.Result) {
	made := make([]grun.Made, len(calls))
	for i, c := range calls {
		made[i] = grun.Made{Tool: c.Name, Args: c.Arguments, Result: out[i].Content()}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m.CallsMade(made)
}

// toolRun is what a tool call of step, the model's call callID, needs to
// know of the run; same reports whether the call names the tool and
// arguments of a call of an earlier step, whose issue and result the
// quiet clock does not hear (Session.call hears a new result).
func (s *Session) toolRun(step int, callID string, same bool) *tools.Run {
	obs := s.observerFor(step, s.w, callID)
	if same {
		o := &repeatObserver{observer{s: s, index: step, w: s.w, callID: callID}}
		o.obs.Listener = o
		obs = &o.obs
	}
	return &tools.Run{ID: s.id, Budget: s.b, Journal: s.cfg.Journal, Observer: obs, Cancels: &s.cancels,
		Keep: Keep(s.b), MaxSilence: s.cfg.MaxSilence}
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
	g := tools.Gate{Tool: c.Name, Kind: kind, Phase: s.ladder.Phase(), Stopping: ctx.Err() != nil || s.over(),
		Known: known, Speculative: spec.Speculative, Agent: strings.HasPrefix(spec.Kind, AgentKindPrefix),
		Ceiling: spec.Ceiling, Left: s.b.Available()}
	if known {
		g.P95 = s.b.Estimates().Kind(spec.Kind).P95()
	}
	if res, ok := g.Admit(); !ok {
		s.recordCall(res.Landing(step, kind))
		s.record(g.Refusal(res, step, c.ID))
		return res
	}
	if s.runsAgent(c.Name) {
		// The task of a sub-agent the run starts itself is read before
		// any I/O, by the rule the workflow reads it by too: a call that
		// names none makes no attempt (issue 25).
		if _, err := landing.ChildTask(c.Name, c.Arguments); err != nil {
			res := tools.Result{Tool: c.Name, Outcome: trace.Invalid, Err: err.Error(), Cause: err}
			s.recordCall(res.Landing(step, kind))
			return res
		}
	}
	if g.Agent {
		s.agentCalls.Add()
		defer s.agentCalls.Done() // after its record: Land waits for it
	}
	same := s.sameCall(c, g.Agent)
	res := s.cfg.Tools.Call(withParent(ctx, s, step), s.toolRun(step, c.ID, same), c.Name, c.Arguments)
	s.recordCall(res.Landing(step, kind))
	if same && !s.sameResult(c, res.Content()) {
		s.w.Mark(watchdog.ToolResult) // the same call, with news: progress after all
	}
	return res
}

// sameCall reports whether c names the tool and arguments of a call of an
// earlier step, as the run's machine says (agent: c calls a sub-agent).
func (s *Session) sameCall(c ToolCall, agent bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m.SameCall(c.Name, c.Arguments, agent)
}

// sameResult reports whether c, which answered result, got what the same
// call of an earlier step got, as the run's machine says.
func (s *Session) sameResult(c ToolCall, result string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m.SameResult(c.Name, c.Arguments, result)
}

// callerEnded returns an error matching [ErrCallerEnded] when ctx, bound
// to the run, has ended while the run goes on: the caller's own context
// ended it. Nil otherwise.
func (s *Session) callerEnded(ctx context.Context) error {
	if ctx == nil || ctx.Err() == nil || s.over() {
		return nil
	}
	if run, _ := s.boundTo(); run.Err() != nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrCallerEnded, context.Cause(ctx))
}

// runsAgent reports whether the tool called name is an [Agent] the run
// starts itself, as its registry holds it: a sub-agent served elsewhere
// reads its own arguments.
func (s *Session) runsAgent(name string) bool {
	reg, ok := s.cfg.Tools.(interface {
		Lookup(string) (tools.Tool, bool)
	})
	if !ok {
		return false
	}
	t, _ := reg.Lookup(name)
	_, local := t.(*Agent)
	return local
}
