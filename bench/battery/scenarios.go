package battery

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/kit"
	"github.com/glidepath/glidepath/watchdog"
)

// Stall kinds: which part of a run a scenario stalls.
const (
	StallNone  = ""
	StallTool  = "tool"
	StallModel = "model"
)

// A Scenario is one fault, run the same way against every [System]: the
// same task, the same sim rules, the same tool server with the same tool
// and its ceiling.
type Scenario struct {
	// Name identifies the scenario, e.g. "hung-tool".
	Name string
	// Summary says what goes wrong, for a person.
	Summary string
	// Fault gives the fault's parameters, for a person.
	Fault string

	// Budget is B: Glidepath's one deadline, and what every system's wall
	// time is judged against.
	Budget time.Duration
	// Quiet is Glidepath's quiet period Q.
	Quiet time.Duration
	// Cap is the outer safety bound of every run (3·B): a run still going
	// then is stopped and counted as not returned by the cap.
	Cap time.Duration
	// ToolCeiling is the tool's per-call ceiling, the same for every
	// system: the baselines' context.WithTimeout, Glidepath's spec ceiling.
	ToolCeiling time.Duration
	// ModelTimeout is the per-request timeout of the per-call baseline's
	// model calls (B/2); the defaults baseline has none, Glidepath leases.
	ModelTimeout time.Duration
	// Stall is which part stalls (StallTool, StallModel), or StallNone:
	// only a stalling scenario measures the time to detect the stall.
	Stall string
	// Silent is which part of a healthy scenario works in silence
	// (StallTool, StallModel), or StallNone. Of the stalled part, or of
	// this one, a Glidepath run states the allowance of silence its quiet
	// clock gave the call ([Result.Allowance]).
	Silent string
	// Write reports whether the scenario's tool is a write, whose
	// duplicate commits are counted.
	Write bool
	// MCP reports whether Glidepath reaches the tool over MCP (tools/mcp);
	// the baselines call the same tool over the plain HTTP protocol.
	MCP bool
	// Healthy reports whether nothing goes wrong in the scenario: its
	// calls are slow, quiet or rate-limited but would all succeed if
	// waited for. It is a case where a defence can cost (SPEC §7: the
	// battery is two-sided), and every attempt a system cuts in it is a
	// false stall ([Result.FalseStalls]).
	Healthy bool
	// Agent reports whether Glidepath runs the scenario's work in a
	// sub-agent, on a slice of its budget (SPEC §5b): its model calls a
	// sub-agent tool whose child calls the tool. The baselines, which have
	// no sub-agents, call the tool directly, as in the unsliced twin.
	Agent bool
	// API is the model API every system speaks in the scenario:
	// model.APIResponses, or Chat Completions ("", model.APIChat).
	API string
	// Twin names the Chat Completions scenario a Responses API one
	// mirrors, the same fault on the other API; "" for none.
	Twin string

	task           string
	tool           toolDef
	model          *sim.Scenario
	keepaliveEvery time.Duration // the tool server's; zero: the kit's default
	// modelProfile is what a latency profile of earlier runs knows of the
	// model's turns, warmed into Glidepath's estimates before the run
	// (budget.Kind.Warm): its p95 gives the model's calls an allowance of
	// silence. Nil: the model is cold, nothing is known of it.
	modelProfile []time.Duration
	cancelHangs  bool // the DELETE endpoint hangs
	loseFirst    bool // the first POST of each write is lost
}

// toolDef is a scenario's one tool, as its server runs it and as each
// system is told of it.
type toolDef struct {
	name, description string
	params            json.RawMessage
	effect            kit.Effect
	p50, p95          time.Duration
	cancellable       bool
	handler           func(w *world) kit.Handler
}

func (d toolDef) kitTool(w *world) kit.Tool {
	return kit.Tool{
		Name: d.name, Description: d.description, Parameters: d.params, Effect: d.effect,
		Cancellable: d.cancellable, P50: d.p50, P95: d.p95, Max: time.Minute, Handler: d.handler(w),
	}
}

// spec is the tool as a Glidepath tools entry declares it.
func (sc *Scenario) spec() tools.Spec {
	d := sc.tool
	return tools.Spec{
		Name: d.name, Description: d.description, Parameters: d.params, Effect: tools.Effect(d.effect),
		Ceiling: sc.ToolCeiling, P50: d.p50, P95: d.p95, Cancellable: d.cancellable,
	}
}

var discardLogger = slog.New(slog.DiscardHandler)

var (
	lookupParams = json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`)
	payParams    = json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"},"amount":{"type":"integer","minimum":1}},"required":["order_id","amount"]}`)
	topicParams  = json.RawMessage(`{"type":"object","properties":{"topic":{"type":"string"}},"required":["topic"]}`)
)

// Handlers of the scenarios' tools. Each records its arrival and its
// progress as the world's record of real work.

func fastLookup(w *world) kit.Handler {
	return func(ctx context.Context, call *kit.Call) (any, error) {
		w.worked(call)
		if err := (budget.Delay{Sleep: 5 * time.Millisecond}).Wait(ctx); err != nil {
			return nil, err
		}
		return map[string]any{"results": 3}, nil
	}
}

// hang works until its caller leaves.
func hang(w *world) kit.Handler {
	return func(ctx context.Context, call *kit.Call) (any, error) {
		w.worked(call)
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}
}

// slowLookup answers after 9 steps of 100ms (900ms, 90% of its 1s
// ceiling), reporting progress at each.
func slowLookup(w *world) kit.Handler {
	return func(ctx context.Context, call *kit.Call) (any, error) {
		w.worked(call)
		for i := int64(1); i <= 9; i++ {
			if err := (budget.Delay{Sleep: 100 * time.Millisecond}).Wait(ctx); err != nil {
				return nil, err
			}
			w.progress(call, i, 9)
		}
		return map[string]any{"results": 3}, nil
	}
}

// lateCommitAfter is when a late write commits, counted from its arrival.
const lateCommitAfter = 1500 * time.Millisecond

// latePay commits lateCommitAfter after it arrives, whatever its context
// says: the commit happens after the caller's lease has ended.
func latePay(w *world) kit.Handler {
	return func(ctx context.Context, call *kit.Call) (any, error) {
		w.worked(call)
		t := time.NewTimer(lateCommitAfter)
		<-t.C
		order := orderOf(call.Args)
		w.commit(order)
		return map[string]any{"order_id": order, "status": "paid"}, nil
	}
}

// pay commits at once.
func pay(w *world) kit.Handler {
	return func(ctx context.Context, call *kit.Call) (any, error) {
		w.worked(call)
		order := orderOf(call.Args)
		w.commit(order)
		return map[string]any{"order_id": order, "status": "paid"}, nil
	}
}

// ignoresCancelFor is how long a tool that ignores cancellation keeps
// working: longer than any cap, so that only the end of the world stops
// it.
const ignoresCancelFor = 30 * time.Second

// stubborn keeps working after its context ends and after its DELETE,
// until the world ends.
func stubborn(w *world) kit.Handler {
	return func(ctx context.Context, call *kit.Call) (any, error) {
		w.worked(call)
		t := time.NewTimer(ignoresCancelFor)
		defer t.Stop()
		select {
		case <-t.C:
		case <-w.release:
		}
		return "too late", nil
	}
}

// stalls reports progress three times, 100ms apart, then goes silent
// until its caller leaves.
func stalls(w *world) kit.Handler {
	return func(ctx context.Context, call *kit.Call) (any, error) {
		w.worked(call)
		for i := int64(1); i <= 3; i++ {
			if err := (budget.Delay{Sleep: 100 * time.Millisecond}).Wait(ctx); err != nil {
				return nil, err
			}
			w.progress(call, i, 10)
		}
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}
}

// silentFor works for d in silence, then answers: a healthy tool that
// reports no progress.
func silentFor(d time.Duration) func(w *world) kit.Handler {
	return func(w *world) kit.Handler {
		return func(ctx context.Context, call *kit.Call) (any, error) {
			w.worked(call)
			if err := (budget.Delay{Sleep: d}).Wait(ctx); err != nil {
				return nil, err
			}
			return map[string]any{"results": 3}, nil
		}
	}
}

// reportingFor works for d, reporting progress every 100ms, then
// answers: a healthy slow tool that says so.
func reportingFor(d time.Duration) func(w *world) kit.Handler {
	const every = 100 * time.Millisecond
	return func(w *world) kit.Handler {
		return func(ctx context.Context, call *kit.Call) (any, error) {
			w.worked(call)
			steps := int64(d / every)
			for i := int64(1); i <= steps; i++ {
				if err := (budget.Delay{Sleep: every}).Wait(ctx); err != nil {
					return nil, err
				}
				w.progress(call, i, steps)
			}
			return map[string]any{"results": 3}, nil
		}
	}
}

// replayArgs are arguments for a replay of the scenario's read tool: its
// handlers do not read them, the kit only checks they are an object.
func (sc *Scenario) replayArgs() json.RawMessage {
	if sc.tool.name == "research" {
		return json.RawMessage(`{"topic":"order 7"}`)
	}
	return json.RawMessage(`{"query":"order 7"}`)
}

func lookup(h func(w *world) kit.Handler, p50, p95 time.Duration, cancellable bool) toolDef {
	return toolDef{
		name: "lookup", description: "Looks up what the task asks about.", params: lookupParams,
		effect: kit.Read, p50: p50, p95: p95, cancellable: cancellable, handler: h,
	}
}

func payTool(h func(w *world) kit.Handler) toolDef {
	return toolDef{
		name: "pay", description: "Pays an order. It charges the customer: never pay an order twice.", params: payParams,
		effect: kit.Write, p50: 300 * time.Millisecond, p95: 400 * time.Millisecond, handler: h,
	}
}

// scenario fills in what every scenario derives from its budget.
func scenario(sc Scenario) Scenario {
	sc.Cap = 3 * sc.Budget
	sc.ModelTimeout = sc.Budget / 2
	if sc.Quiet == 0 {
		sc.Quiet = sc.Budget / 4
	}
	if sc.task == "" {
		sc.task = "find the status of order 7"
	}
	return sc
}

// Scenarios returns the battery's scenarios, in the order a report shows
// them. Each call returns fresh values.
func Scenarios() []Scenario {
	fast := lookup(fastLookup, 5*time.Millisecond, 20*time.Millisecond, false)
	chat := []Scenario{
		scenario(Scenario{
			Name:    "hung-tool",
			Summary: "a read tool hangs",
			Fault:   "lookup never answers; it ends when its caller leaves; ceiling 400ms",
			Budget:  2 * time.Second, ToolCeiling: 400 * time.Millisecond, Stall: StallTool,
			tool: lookup(hang, 50*time.Millisecond, 100*time.Millisecond, false),
		}),
		scenario(Scenario{
			Name:    "slow-tool",
			Summary: "a slow read that succeeds at 90% of its ceiling",
			Fault:   "lookup answers after 900ms (ceiling 1s), progress every 100ms",
			Budget:  3 * time.Second, ToolCeiling: time.Second,
			tool: lookup(slowLookup, 900*time.Millisecond, 950*time.Millisecond, false),
		}),
		scenario(Scenario{
			Name:    "429-short",
			Summary: "the model rate-limits with a short Retry-After",
			Fault:   "the first 2 model requests: 429, retry-after-ms 200",
			Budget:  2 * time.Second, ToolCeiling: time.Second,
			tool:  fast,
			model: &sim.Scenario{Rules: []sim.Rule{{Times: 2, Status: 429, RetryAfterMs: "200"}}},
		}),
		scenario(Scenario{
			Name:    "429-long",
			Summary: "the model rate-limits with a long Retry-After",
			Fault:   "every model request: 429, Retry-After 60",
			Budget:  2 * time.Second, ToolCeiling: time.Second,
			tool:  fast,
			model: &sim.Scenario{Rules: []sim.Rule{{Status: 429, RetryAfter: "60"}}},
		}),
		scenario(Scenario{
			Name:    "model-keepalive",
			Summary: "the model's stream sends only keepalives",
			Fault:   "every model stream: headers, then a keepalive comment every 100ms, forever",
			Budget:  2 * time.Second, ToolCeiling: time.Second, Stall: StallModel,
			tool:  fast,
			model: &sim.Scenario{Rules: []sim.Rule{{Keepalive: sim.Forever, KeepaliveEvery: 100 * time.Millisecond}}},
		}),
		scenario(Scenario{
			Name:    "tool-keepalive",
			Summary: "a long tool sends only keepalives",
			Fault:   "lookup streams SSE comments every 50ms, no progress, no result; ceiling 5s (a long tool's)",
			Budget:  2 * time.Second, ToolCeiling: 5 * time.Second, Stall: StallTool,
			tool:           lookup(hang, 50*time.Millisecond, time.Second, false),
			keepaliveEvery: 50 * time.Millisecond,
		}),
		scenario(Scenario{
			Name:    "late-commit",
			Summary: "a write commits after its lease ended",
			Fault:   "pay commits 1.5s after it arrives, whatever its context; ceiling 500ms",
			Budget:  3 * time.Second, ToolCeiling: 500 * time.Millisecond, Write: true,
			task: "pay order 7",
			tool: payTool(latePay),
		}),
		scenario(Scenario{
			Name:    "lost-write",
			Summary: "a write's request is lost on the way",
			Fault:   "the first POST of each order: connection dropped before the tool; status 404 (never received); ceiling 500ms",
			Budget:  2 * time.Second, ToolCeiling: 500 * time.Millisecond, Write: true,
			task:      "pay order 7",
			tool:      payTool(pay),
			loseFirst: true,
		}),
		scenario(Scenario{
			Name:    "midstream",
			Summary: "the model's stream is cut halfway",
			Fault:   "the first 2 model streams: connection closed after 1 chunk",
			Budget:  2 * time.Second, ToolCeiling: time.Second,
			tool:  fast,
			model: &sim.Scenario{Rules: []sim.Rule{{Times: 2, CloseAfterChunks: new(1)}}},
		}),
		scenario(Scenario{
			Name:    "ignores-cancel",
			Summary: "a tool ignores cancellation",
			Fault:   "lookup (cancellable) keeps working 30s after its context ends and after DELETE; ceiling 400ms",
			Budget:  2 * time.Second, ToolCeiling: 400 * time.Millisecond, Stall: StallTool,
			tool: lookup(stubborn, 50*time.Millisecond, 100*time.Millisecond, true),
		}),
		scenario(Scenario{
			Name:    "cancel-hangs",
			Summary: "a tool's cancel endpoint hangs",
			Fault:   "lookup (cancellable) hangs; its DELETE never answers; ceiling 400ms",
			Budget:  2 * time.Second, ToolCeiling: 400 * time.Millisecond, Stall: StallTool,
			tool:        lookup(hang, 50*time.Millisecond, 100*time.Millisecond, true),
			cancelHangs: true,
		}),
		scenario(Scenario{
			Name:    "mcp-progress-stops",
			Summary: "an MCP tool's progress stops",
			Fault:   "research over MCP: progress 3 times 100ms apart, then silence; ceiling 5s (a long tool's); baselines call it over plain HTTP",
			Budget:  2 * time.Second, ToolCeiling: 5 * time.Second, Stall: StallTool, MCP: true,
			task: "research order 7",
			tool: toolDef{
				name: "research", description: "Researches a topic at length.", params: topicParams,
				effect: kit.Read, p50: 50 * time.Millisecond, p95: time.Second, handler: stalls,
			},
		}),

		// A model that hangs, its p95 known from a profile (issue 27):
		// before its headers, the quiet period alone applies; after them,
		// its allowance E holds the quiet clock, and no longer.
		scenario(Scenario{
			Name:    "model-hang-headers",
			Summary: "the model's server never answers",
			Fault:   "every model request: no headers, nothing, until the client leaves; the model's p95 known (profile, E " + profileE() + "); Q 500ms",
			Budget:  reasonBudget, Quiet: reasonQuiet, ToolCeiling: time.Second, Stall: StallModel,
			tool:         fast,
			model:        &sim.Scenario{Rules: []sim.Rule{{Hang: true}}},
			modelProfile: reasoningProfile(),
		}),
		scenario(Scenario{
			Name:    "model-hang-after-headers",
			Summary: "the model's server answers, then sends nothing",
			Fault:   "every model stream: headers, then nothing until the client leaves; the model's p95 known (profile, E " + profileE() + "); Q 500ms",
			Budget:  reasonBudget, Quiet: reasonQuiet, ToolCeiling: time.Second, Stall: StallModel,
			tool:         fast,
			model:        &sim.Scenario{Rules: []sim.Rule{{HangAfterChunks: new(0)}}},
			modelProfile: reasoningProfile(),
		}),
		scenario(Scenario{
			Name:    "repeated-call",
			Summary: "the model asks for the same call every turn",
			Fault:   `every model turn: lookup {"query":"order 7"}, which answers the same each time; baselines stop at their ` + strconv.Itoa(maxTurns) + `-turn loop limit`,
			Budget:  2 * time.Second, ToolCeiling: time.Second,
			tool:  fast,
			model: &sim.Scenario{Rules: []sim.Rule{{ToolCalls: []sim.ToolCall{{Name: "lookup", Arguments: `{"query":"order 7"}`}}}}},
		}),

		// The cases where the defences cost (issue 20): nothing goes
		// wrong, and a system that cuts or refuses loses against one that
		// waits. B 2s and Q = B/4 = 500ms unless a scenario says.
		scenario(Scenario{
			Name:    "silent-0.9Q",
			Summary: "a healthy tool works silently for 0.9·Q",
			Fault:   "none: lookup answers after 450ms (0.9·Q) with no progress; ceiling 1s",
			Budget:  2 * time.Second, ToolCeiling: time.Second, Healthy: true, Silent: StallTool,
			tool: lookup(silentFor(450*time.Millisecond), 400*time.Millisecond, 500*time.Millisecond, false),
		}),
		scenario(Scenario{
			Name:    "silent-1.5Q",
			Summary: "a healthy tool works silently for 1.5·Q, its p95 declared",
			Fault:   "none: lookup answers after 750ms (1.5·Q) with no progress, declares p95 800ms (E " + declaredE(800*time.Millisecond, time.Second) + "); ceiling 1s",
			Budget:  2 * time.Second, ToolCeiling: time.Second, Healthy: true, Silent: StallTool,
			tool: lookup(silentFor(750*time.Millisecond), 700*time.Millisecond, 800*time.Millisecond, false),
		}),
		scenario(Scenario{
			Name:    "silent-1.5Q-cold",
			Summary: "a healthy tool works silently for 1.5·Q, nothing known of it",
			Fault:   "none: lookup answers after 750ms (1.5·Q) with no progress, declares no latency (no E: Q alone); ceiling 1s",
			Budget:  2 * time.Second, ToolCeiling: time.Second, Healthy: true, Silent: StallTool,
			tool: lookup(silentFor(750*time.Millisecond), 0, 0, false),
		}),
		scenario(Scenario{
			Name:    "reasoning-cold",
			Summary: "a reasoning model is silent for 1.5·Q before each turn's first token, nothing known of it",
			Fault:   "none: every model stream sends headers, then nothing for 750ms (1.5·Q), then streams; the model is cold (no E: Q alone); Q 500ms",
			Budget:  reasonBudget, Quiet: reasonQuiet, ToolCeiling: time.Second, Healthy: true, Silent: StallModel,
			tool:  fast,
			model: reasoning(),
		}),
		scenario(Scenario{
			Name:    "reasoning-warm",
			Summary: "the same reasoning model, its p95 known from a profile",
			Fault:   "none: as reasoning-cold, with the model's p95 known (profile, E " + profileE() + "); Q 500ms",
			Budget:  reasonBudget, Quiet: reasonQuiet, ToolCeiling: time.Second, Healthy: true, Silent: StallModel,
			tool:         fast,
			model:        reasoning(),
			modelProfile: reasoningProfile(),
		}),
		scenario(Scenario{
			Name:    "distinct-calls",
			Summary: "a loop of distinct calls, the twin of repeated-call",
			Fault:   `none: model turns 1 to 5 each call lookup with another query ({"query":"order 7 part N"}), turn 6 answers`,
			Budget:  2 * time.Second, ToolCeiling: time.Second, Healthy: true,
			tool:  fast,
			model: distinctCalls(5),
		}),
		scenario(Scenario{
			Name:    "slow-first-token",
			Summary: "the model streams its first token late, then is healthy",
			Fault:   "none: the first model stream sends its first token after 750ms (1.5·Q), then streams normally; the model is cold (no E: Q alone)",
			Budget:  2 * time.Second, ToolCeiling: time.Second, Healthy: true, Silent: StallModel,
			tool:  fast,
			model: &sim.Scenario{Rules: []sim.Rule{{Request: 1, FirstToken: 750 * time.Millisecond}}},
		}),
		scenario(Scenario{
			Name:    "retry-after-1",
			Summary: "a single run told Retry-After: 1",
			Fault:   "the first model request: 429, Retry-After 1 (one second); B 5s",
			Budget:  5 * time.Second, ToolCeiling: time.Second, Healthy: true,
			tool:  fast,
			model: &sim.Scenario{Rules: []sim.Rule{{Times: 1, Status: 429, RetryAfter: "1"}}},
		}),
		scenario(Scenario{
			Name:    "p50-too-high",
			Summary: "a tool declares a p50 far above what it takes",
			Fault:   "none: lookup answers after 50ms but declares p50 1.6s (p95 1.8s), above the 1.45s a 2s run can grant after its reserve; ceiling 2s",
			Budget:  2 * time.Second, ToolCeiling: 2 * time.Second, Healthy: true,
			tool: lookup(silentFor(50*time.Millisecond), 1600*time.Millisecond, 1800*time.Millisecond, false),
		}),
		scenario(Scenario{
			Name:    "p50-too-low",
			Summary: "a tool declares a p50 far below what it takes",
			Fault:   "none: lookup answers after 1.6s, progress every 100ms, but declares p50 20ms (p95 50ms); ceiling 2s",
			Budget:  2 * time.Second, ToolCeiling: 2 * time.Second, Healthy: true,
			tool: lookup(reportingFor(1600*time.Millisecond), 20*time.Millisecond, 50*time.Millisecond, false),
		}),
		scenario(Scenario{
			Name:    "subagent-unsliced",
			Summary: "a slow healthy tool called directly, the twin of subagent-slice",
			Fault:   "none: lookup answers after 1.2s, progress every 100ms, p50 1.2s; ceiling 2s; called by the run itself",
			Budget:  2 * time.Second, ToolCeiling: 2 * time.Second, Healthy: true,
			tool: lookup(reportingFor(1200*time.Millisecond), 1200*time.Millisecond, 1300*time.Millisecond, false),
		}),
		scenario(Scenario{
			Name:    "subagent-slice",
			Summary: "the same work in a sub-agent, on a slice of the budget",
			Fault:   "none: as subagent-unsliced, but Glidepath's model calls a sub-agent whose child calls lookup; the baselines call lookup directly",
			Budget:  2 * time.Second, ToolCeiling: 2 * time.Second, Healthy: true, Agent: true,
			tool: lookup(reportingFor(1200*time.Millisecond), 1200*time.Millisecond, 1300*time.Millisecond, false),
		}),
	}
	return append(chat, responsesScenarios(fast)...)
}

// The reasoning scenarios: each model turn silent for 1.5·Q before its
// first token, two turns a run, in a budget that holds both.
const (
	reasonBudget  = 4 * time.Second
	reasonQuiet   = 500 * time.Millisecond
	reasonSilence = 3 * reasonQuiet / 2
)

// reasoning is a model silent for 1.5·Q after its headers on every turn,
// as a reasoning model is before its first visible token.
func reasoning() *sim.Scenario {
	return &sim.Scenario{Rules: []sim.Rule{{FirstToken: reasonSilence}}}
}

// reasoningProfile is what a latency profile of earlier runs of the
// reasoning model knows: turns of 750ms to 800ms, whose p95 is 800ms.
func reasoningProfile() []time.Duration {
	var ds []time.Duration
	for i := range 20 {
		ds = append(ds, reasonSilence+time.Duration(i%3)*25*time.Millisecond)
	}
	return ds
}

// profileE is the allowance the reasoning profile gives a model turn,
// for a person, by the rule the run applies, before its lease caps it:
// the lease of every turn of these runs is longer.
func profileE() string {
	var l budget.Latency
	l.Warm(reasoningProfile())
	e, _ := l.Expected().Allowance(0, 0)
	return e.String()
}

// declaredE is the allowance a tool declaring p95 with ceiling has, for
// a person, by the rule the run applies, before its lease caps it.
func declaredE(p95, ceiling time.Duration) string {
	e, _ := watchdog.Expected{P95: p95, From: watchdog.SourceDeclared}.Allowance(ceiling, 0)
	return e.String()
}

// distinctCalls is a model that calls lookup n turns running, each time
// with other arguments, then answers.
func distinctCalls(n int) *sim.Scenario {
	var rules []sim.Rule
	for i := 1; i <= n; i++ {
		rules = append(rules, sim.Rule{Turn: i, ToolCalls: []sim.ToolCall{
			{Name: "lookup", Arguments: fmt.Sprintf(`{"query":"order 7 part %d"}`, i)}}})
	}
	return &sim.Scenario{Rules: rules}
}

// Lookup returns the scenario named name.
func Lookup(name string) (Scenario, bool) {
	for _, sc := range Scenarios() {
		if sc.Name == name {
			return sc, true
		}
	}
	return Scenario{}, false
}
