package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/glidepath/glidepath/admit"
	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
)

// AgentKindPrefix starts the step kind of a sub-agent's calls: a sub-agent
// named researcher is leased and recorded as "agent:researcher".
const AgentKindPrefix = tools.AgentKindPrefix

// AgentParameters is the JSON Schema of every sub-agent's arguments (SPEC
// §5b): the task, which is all the child is told.
var AgentParameters = json.RawMessage(`{"type":"object","properties":{"task":{"type":"string"}},"required":["task"]}`)

// ErrParentEnded is the cause of a sub-agent's context when its parent
// stopped before the child's slice ended: the parent was cancelled, stalled
// or began to land. The child lands at once with cause cancelled and still
// returns its labeled partial.
var ErrParentEnded = errors.New("harness: the parent run ended")

// An Agent is a sub-agent as a tool (SPEC §5b): a call runs a child harness
// on a slice of the caller's budget, never a fresh one, and the child's
// labeled result, the JSON object of `harness run --json`, is the call's
// output. The slice is min(ceiling, available − keep), where keep ([Keep])
// is what the parent needs to receive and use the answer; the child has its
// own reserve, ladder, quiet clock and landing inside it.
//
// Inside a [Session]'s call, the child is the parent's: its records go to
// the parent's sinks, each with the parent's run id as parent_run_id; its
// orphans are journaled once, in the parent's journal, and listed in the
// parent's in_flight; its work counts for the parent's quiet clock, as
// progress whose units grow with each of its attempts; and the parent's
// end (a cancellation, its quiet clock, its landing) cancels it. Called
// outside a Session, it runs on its own [Config] alone.
//
// An Agent is safe for concurrent use: each call runs a child of its own.
type Agent struct {
	spec tools.Spec
	cfg  Config
}

// NewAgent returns the sub-agent of spec, whose calls run children on
// cfg. Of spec, Name and Description are what the parent's model sees;
// Ceiling is the most a child may get (zero: all the parent can spare);
// Effect is Read or Write (empty: write, SPEC §5b), though in-process a
// call never fails but before its child starts, with nothing to retry:
// the child always lands with a labeled result, which is the call's
// output, partial or not (the effect matters to a sub-agent harness serve
// serves, whose call may fail on the way); P50 and P95 are as for any
// tool. Its
// Kind and Parameters are the Agent's own: [AgentKindPrefix] + Name and
// [AgentParameters].
//
// cfg is the child's run. Its Task is each call's task, and its RunID,
// ParentRunID and CallKey are each child's own. A zero Model, Quiet,
// Parallel or Journal is the parent's when the call comes from a Session;
// cfg.Sinks receive the child's records beside the parent's sinks. The
// Agent owns cfg.Tools from now on: [Agent.Close] closes them when they
// are a [tools.Closer], as a [*tools.Registry] is.
func NewAgent(spec tools.Spec, cfg Config) *Agent {
	spec.Kind = AgentKindPrefix + spec.Name
	spec.Parameters = AgentParameters
	if spec.Effect == "" {
		spec.Effect = tools.Write
	}
	return &Agent{spec: spec, cfg: cfg}
}

// Spec returns the sub-agent's spec, as [NewAgent] made it.
func (a *Agent) Spec() tools.Spec { return a.spec }

// Keep is what a parent on b holds back from a sub-agent's slice to
// receive and use the answer: its p95 for one model turn, declared or
// observed, and at least twice the floor.
func Keep(b *budget.Budget) time.Duration {
	return budget.SliceKeep(b.Estimates().Kind(model.Kind).P95(), b.Floor())
}

// Attempt runs one child on call's lease and answers its labeled result.
// A child always lands with a result, so the only failure is one before
// it started: a bad task or a configuration that cannot run.
func (a *Agent) Attempt(ctx context.Context, call *tools.Call) tools.Answer {
	task, err := landing.ChildTask(a.spec.Name, call.Args) // a Session has read it before the attempt
	if err != nil {
		return tools.Answer{Err: err, Outcome: trace.Invalid}
	}
	progress := func(units int64, msg string) { call.Progress(units, 0, msg) }
	res, err := a.run(ctx, call.Budget.Child(call.Lease), task, string(call.Key), progress, call.Pause, nil)
	if err != nil {
		return tools.Answer{Err: err, Outcome: trace.Invalid}
	}
	// The tool message is the core's, as on Temporal (issue 25).
	out, err := landing.ChildMessage(res)
	if err != nil {
		return tools.Answer{Err: err, Outcome: trace.Invalid, Stopped: true}
	}
	// The child has landed and closed: nothing of the call is left running.
	return tools.Answer{Output: out, Stopped: true}
}

// A ChildCall is what [Agent.Run] is told of the call a child answers.
type ChildCall struct {
	// Key is the call's idempotency key, on the child's run_start record.
	Key string

	// Progress, if not nil, hears the child work: units grow by one at
	// each attempt the child starts or ends, each progress it records and
	// its landing, with a line on what it did. It must not block.
	Progress func(units int64, message string)

	// Admit is the door of the process serving the call (`harness serve
	// --max-runs`): a child it refuses is not started, and its labeled
	// result, cause [landing.CauseAtCapacity], is returned at once. Nil:
	// every child is admitted.
	Admit *admit.Limiter
}

// Run runs one child on b, a budget the caller made for it (the lease a
// remote caller sent, as `harness serve` does), for task, and returns its
// labeled result once it has landed and closed. It returns an error, and
// starts nothing, only when the child cannot run: an empty task, a
// configuration [Config.Validate] rejects, no model. ctx's end cancels the
// child, which then lands at once with cause cancelled.
func (a *Agent) Run(ctx context.Context, b *budget.Budget, task string, call ChildCall) (landing.Result, error) {
	return a.run(ctx, b, task, call.Key, call.Progress, nil, call.Admit)
}

// run runs one child. Inside a parent's call, pause stops the parent's
// quiet clock while the child sleeps before a retry. door is the process's
// admission for a child served to another process; nil for one inside a
// run of this process, which is part of that run.
func (a *Agent) run(ctx context.Context, b *budget.Budget, task, key string, progress func(int64, string), pause func() func(), door *admit.Limiter) (landing.Result, error) {
	parent := parentOf(ctx)
	cfg := a.child(parent, task, key)
	cfg.Admit = door
	if progress != nil {
		cfg.Sinks = append(cfg.Sinks, &activity{report: progress})
	}
	if cfg.Model == nil {
		return landing.Result{}, fmt.Errorf("%s: %w", a.spec.Name, ErrNoModel)
	}
	if parent != nil {
		cfg.parent = &parentCall{s: parent.s, step: parent.step, pause: pause}
		b = b.WithEstimates(childEstimates(parent.s, cfg.Model))
	}
	// The parent's end is the child's cancellation, whatever the parent's
	// cause: the child's own deadline, the lease's end, is the one instant
	// where the child's budget says it ran out.
	cctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	unwatch := context.AfterFunc(ctx, func() {
		c := context.Cause(ctx)
		if errors.Is(c, budget.ErrDeadline) || errors.Is(c, budget.ErrLeaseExpired) {
			cancel(budget.ErrDeadline)
			return
		}
		cancel(fmt.Errorf("%w: %v", ErrParentEnded, c))
	})
	defer unwatch()
	s, rctx, err := Start(cctx, b, cfg)
	if err != nil {
		if res, refused := AtCapacity(b, "", err); refused {
			return res, nil
		}
		return landing.Result{}, fmt.Errorf("%s: %w", a.spec.Name, err)
	}
	if parent != nil {
		parent.s.adopt(s, cancel)
		defer parent.s.release(s)
	}
	res := s.Run(rctx)
	s.Close() // a sink's failure is the parent's too, which reports it
	if parent != nil {
		parent.s.adoptOrphans(parent.step, a.spec.Name, res.InFlight)
	}
	return res, nil
}

// child is the Config of one child of a, whose parent (nil: none) made the
// call with key, for task.
func (a *Agent) child(parent *parentCall, task, key string) Config {
	cfg := a.cfg
	cfg.Task, cfg.RunID, cfg.CallKey, cfg.ParentRunID = task, "", key, ""
	if parent == nil {
		cfg.Sinks = slices.Clip(cfg.Sinks)
		return cfg
	}
	pc := parent.s.cfg
	cfg.ParentRunID = parent.s.id
	if cfg.Model == nil {
		cfg.Model = pc.Model
	}
	own := landing.Inherited{Quiet: cfg.Quiet, Parallel: cfg.Parallel}
	got := landing.Inherit(own, landing.Inherited{Quiet: pc.Quiet, Parallel: pc.Parallel}, false)
	cfg.Quiet, cfg.Parallel = got.Quiet, got.Parallel
	// The child's records go where the parent's do: the parent's secrets
	// are kept from them too.
	cfg.Secrets = slices.Concat(cfg.Secrets, pc.Secrets)
	if cfg.Journal == nil {
		cfg.Journal = pc.Journal
	}
	// The parent's sinks, but for its own heartbeat to its own parent: a
	// grandchild's work reaches that one through this child's progress.
	var sinks []trace.Sink
	for _, sink := range pc.Sinks {
		if _, heartbeat := sink.(*activity); !heartbeat {
			sinks = append(sinks, sink)
		}
	}
	cfg.Sinks = append(sinks, a.cfg.Sinks...)
	return cfg
}

// childEstimates are the latency estimates of a child of parent on m: its
// own, so that its tools, which may share their names with the parent's,
// and a model other than the parent's do not move the parent's. What it
// starts from of its model is [landing.Inherit]'s.
func childEstimates(parent *Session, m Model) *budget.Estimates {
	est := budget.NewEstimates()
	k := parent.b.Estimates().Kind(model.Kind)
	got := landing.Inherit(landing.Inherited{}, landing.Inherited{ModelP50: k.P50(), ModelP95: k.P95()}, m == parent.cfg.Model)
	est.Kind(model.Kind).Declare(got.ModelP50, got.ModelP95)
	return est
}

// Close closes the children's tools, when they are a [tools.Closer]. It
// makes the Agent one, so that the registry it is registered on closes
// it.
func (a *Agent) Close(ctx context.Context) error {
	if c, ok := a.cfg.Tools.(tools.Closer); ok {
		return c.Close(ctx)
	}
	return nil
}

// parentCall is the Session a tool call comes from, and its step: what a
// sub-agent needs of its parent.
type parentCall struct {
	s     *Session
	step  int
	pause func() (resume func()) // stops the parent's quiet clock for the call; nil: none
}

type parentKey struct{}

// withParent returns ctx carrying the session s and step, for the
// sub-agents the call may run.
func withParent(ctx context.Context, s *Session, step int) context.Context {
	return context.WithValue(ctx, parentKey{}, &parentCall{s: s, step: step})
}

func parentOf(ctx context.Context) *parentCall {
	p, _ := ctx.Value(parentKey{}).(*parentCall)
	return p
}

// activity is the sink that tells a child's caller it works: each record
// of work is one more unit of progress, which the parent's quiet clock
// counts as a semantic heartbeat. Keepalives and tokens make no records,
// so a child that only streams them does not keep its parent alive.
type activity struct {
	units  atomic.Int64
	report func(units int64, message string)
}

func (a *activity) Record(r trace.Record) error {
	if msg, ok := landing.ChildWork(r); ok {
		a.report(a.units.Add(1), msg)
	}
	return nil
}
