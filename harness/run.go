package harness

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// Run runs one agent: it validates cfg (a [*ConfigError] naming the field,
// before anything is sent), starts the budget, the watchdog and the
// ladder, and loops model turns and tool calls until the model answers
// (complete) or the run must land: the budget reached its reserve, the
// quiet clock fired, ctx was cancelled, the steps ran out, or the model
// failed. It always returns a labeled [landing.Result] when cfg is valid,
// complete or partial, within the budget.
//
// The error is non-nil for an invalid cfg, with no result, and when the
// trace could not be written ([ErrTrace]), beside a result that is still
// the run's: the run goes on without its record rather than stop.
func Run(ctx context.Context, cfg Config) (landing.Result, error) {
	if err := cfg.validate(); err != nil {
		return landing.Result{}, err
	}
	cfg = cfg.withDefaults()
	// validate has checked what budget.New and watchdog.Start check; their
	// errors are still reported as config errors, should they check more.
	b, err := budget.New(budget.Config{Total: cfg.Budget, Reserve: cfg.Reserve, Floor: cfg.Floor, Estimates: cfg.Estimates})
	if err != nil {
		return landing.Result{}, &ConfigError{Field: "budget", Value: cfg.Budget.String(), Err: err}
	}
	r := newRun(cfg, b)
	runCtx, stop := budget.WithBudget(ctx, b)
	defer stop()
	w, wctx, err := watchdog.Start(runCtx, watchdog.Config{Quiet: cfg.Quiet, Wall: b.Deadline()})
	if err != nil {
		return landing.Result{}, &ConfigError{Field: "quiet", Value: cfg.Quiet.String(), Err: err}
	}
	defer w.Stop()
	r.w = w
	r.write(trace.Record{Event: trace.RunStart, TotalMs: b.Total().Milliseconds()})
	r.status()

	res := r.loop(wctx, ctx)

	w.Stop()
	r.write(trace.Record{Event: trace.RunEnd, TotalMs: b.Total().Milliseconds(),
		Cause: string(res.Cause), Result: string(res.Status)})
	return res, r.traceErr()
}

// run is the state of one Run.
type run struct {
	cfg     Config
	id      string
	b       *budget.Budget
	ladder  *landing.Ladder
	w       *watchdog.Watchdog
	tw      *trace.Writer // nil without Config.Trace
	specs   map[string]tools.Spec
	offered []openai.ChatCompletionToolUnionParam

	// phase is the ladder's phase as OnChange last reported it, so that
	// the trace and the status line can read it without calling back into
	// the Ladder, which OnChange must not do.
	phase    atomic.Uint32
	attempts atomic.Int64 // physical requests started: model attempts, the landing call, tool attempts
	orphans  atomic.Int64

	mu       sync.Mutex // guards calls and werr
	calls    []landing.Call
	werr     error // the first trace write failure
	statusMu sync.Mutex
	step     int      // guarded by statusMu
	flying   []string // guarded by statusMu: what is in flight, in start order
}

func newRun(cfg Config, b *budget.Budget) *run {
	r := &run{cfg: cfg, id: cfg.RunID, b: b, specs: make(map[string]tools.Spec)}
	if r.id == "" {
		r.id = "run-" + strings.ToLower(rand.Text())
	}
	specs := cfg.Tools.Specs()
	for _, s := range specs {
		r.specs[s.Name] = s
		// The ladder's fit gate reads the p95 from the run's estimates,
		// which need not be the ones the registry declared on.
		b.Estimates().Kind(tools.KindPrefix+s.Name).Declare(s.P50, s.P95)
	}
	r.offered = offer(specs)
	r.ladder = landing.New(b, landing.Config{OnChange: r.phaseChanged})
	if cfg.Trace != nil {
		r.tw = trace.NewWriter(cfg.Trace, r.id, b, r.phaseName)
	}
	return r
}

// offer turns the registry's specs into the tools field of a request; nil
// when there are none, so that the request carries no tools field at all.
func offer(specs []tools.Spec) []openai.ChatCompletionToolUnionParam {
	if len(specs) == 0 {
		return nil
	}
	out := make([]openai.ChatCompletionToolUnionParam, 0, len(specs))
	for _, s := range specs {
		fd := shared.FunctionDefinitionParam{Name: s.Name}
		if s.Description != "" {
			fd.Description = openai.String(s.Description)
		}
		// Register compiled the schema, so it is JSON; one that is not an
		// object (a bare true) is sent as no parameters.
		var params shared.FunctionParameters
		if json.Unmarshal(s.Parameters, &params) == nil {
			fd.Parameters = params
		}
		out = append(out, openai.ChatCompletionFunctionTool(fd))
	}
	return out
}

// loop runs model turns until the model answers or the run must land.
// ctx is the watchdog's run context; parent is the caller's, which the
// landing call outlives.
func (r *run) loop(ctx, parent context.Context) landing.Result {
	conv := []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage(systemPrompt),
		openai.UserMessage(r.cfg.Task),
	}
	steps := 0
	for {
		if cause := r.stopCause(ctx); cause != "" {
			return r.land(parent, conv, cause, steps)
		}
		if steps >= r.cfg.MaxSteps {
			return r.land(parent, conv, landing.CauseMaxSteps, steps)
		}
		n := steps + 1
		r.setStep(n)
		r.w.Mark(watchdog.ModelCall)
		req := model.Request{
			Messages: withNote(conv, r.ladder.Note()),
			Tools:    r.offered,
			Parallel: r.cfg.Parallel > 1 && r.ladder.MayWiden(landing.Parallel) == nil,
		}
		r.begin(model.Kind)
		resp, err := r.cfg.Model.Complete(ctx, r.b, req, r.modelObserver(n, r.w))
		r.end(model.Kind)
		if err != nil {
			// A turn the budget refused before sending anything is not a
			// step: nothing was asked.
			if resp.Attempts > 0 || !errors.Is(err, budget.ErrRefused) {
				steps = n
			}
			return r.land(parent, conv, r.causeOf(ctx, err), steps)
		}
		steps = n
		calls := resp.Message.ToolCalls
		if len(calls) == 0 {
			if !answered(resp) {
				// A reply cut at the token limit, withheld by a filter or
				// empty is not the answer (SPEC §3: a partial result is
				// never presented as complete). What it said so far goes to
				// the landing call, which can use it.
				if resp.Message.Content != "" {
					conv = append(conv, assistantMessage(resp.Message))
				}
				return r.land(parent, conv, landing.CauseUpstream, steps)
			}
			return r.result(landing.Result{Status: landing.Complete, Answer: resp.Message.Content}, steps)
		}
		conv = append(conv, assistantMessage(resp.Message))
		outs := r.runTools(ctx, n, calls)
		// Every call gets its tool message, refused and failed ones too:
		// the API rejects a conversation that leaves one unanswered.
		for i, c := range calls {
			conv = append(conv, openai.ToolMessage(outs[i], c.ID))
		}
	}
}

// answered reports whether a reply without tool calls is a whole answer:
// it says something, and the model stopped on its own rather than at the
// token limit ("length") or by a content filter ("content_filter"). Other
// finish reasons pass, since OpenAI-compatible servers spell "stop" in
// more ways than one.
func answered(resp model.Response) bool {
	switch resp.FinishReason {
	case "length", "content_filter":
		return false
	}
	return strings.TrimSpace(resp.Message.Content) != ""
}

// withNote returns the request's messages: the conversation and, last, a
// fresh budget note. The note is never stored in the conversation, so each
// turn's replaces the one before and the conversation's prefix stays the
// same from turn to turn, as prompt caches want.
func withNote(conv []openai.ChatCompletionMessageParamUnion, note string) []openai.ChatCompletionMessageParamUnion {
	return append(slices.Clip(conv), openai.SystemMessage(note))
}

// assistantMessage turns the model's answer back into a message of the
// conversation. It is built field by field because the SDK's ToParam drops
// a tool call whose type the stream did not name; only function tools are
// offered, so every call is one.
func assistantMessage(m openai.ChatCompletionMessage) openai.ChatCompletionMessageParamUnion {
	var p openai.ChatCompletionAssistantMessageParam
	if m.Content != "" {
		p.Content.OfString = openai.String(m.Content)
	}
	for _, c := range m.ToolCalls {
		p.ToolCalls = append(p.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID: c.ID,
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
					Name:      c.Function.Name,
					Arguments: c.Function.Arguments,
				},
			},
		})
	}
	return openai.ChatCompletionMessageParamUnion{OfAssistant: &p}
}

// stopCause says why the run must land before its next turn, or "".
func (r *run) stopCause(ctx context.Context) landing.Cause {
	if ctx.Err() != nil {
		return causeOfContext(ctx)
	}
	if r.ladder.MustLand() {
		return landing.CauseBudget
	}
	return ""
}

// causeOf names why a model turn that failed ends the run.
func (r *run) causeOf(ctx context.Context, err error) landing.Cause {
	if ctx.Err() != nil {
		return causeOfContext(ctx)
	}
	_, gaveUp := errors.AsType[*trace.GaveUpError](err)
	if gaveUp || errors.Is(err, budget.ErrRefused) || errors.Is(err, budget.ErrDeadline) {
		// No lease, a backoff that would outlast the budget, or an
		// attempt cut at the start of the reserve: the time ran out, the
		// model did not fail.
		return landing.CauseBudget
	}
	return landing.CauseUpstream
}

// causeOfContext names why the run's context ended. The wall and the
// budget's deadline are the same instant, D; either may be the cause.
func causeOfContext(ctx context.Context) landing.Cause {
	c := context.Cause(ctx)
	switch {
	case errors.Is(c, watchdog.ErrQuiet):
		return landing.CauseQuiet
	case errors.Is(c, watchdog.ErrWall), errors.Is(c, budget.ErrDeadline):
		return landing.CauseBudget
	}
	return landing.CauseCancelled
}

// result fills what every result carries.
func (r *run) result(res landing.Result, steps int) landing.Result {
	res.RunID = r.id
	res.Budget = landing.ReportOf(r.b)
	res.Steps = steps
	res.Attempts = int(r.attempts.Load())
	res.Orphans = int(r.orphans.Load())
	return res
}

// land ends a run early: the ladder moves to land, one model call without
// tools is asked for a summary and, if it fails or there is no time for
// it, the harness writes the summary from its own record.
func (r *run) land(parent context.Context, conv []openai.ChatCompletionMessageParamUnion, cause landing.Cause, steps int) landing.Result {
	r.ladder.Advance(landing.Land)
	r.setStep(steps)
	r.mu.Lock()
	rec := landing.Record{Task: r.cfg.Task, Cause: cause, Step: steps, Quiet: r.cfg.Quiet, Calls: slices.Clone(r.calls)}
	r.mu.Unlock()
	res := landing.Summarize(rec)
	who, msg := "harness", res.Boundary
	answer, err := r.landingCall(parent, conv, res.Boundary)
	switch {
	case err != nil:
		msg = "landing call failed: " + err.Error()
	case strings.TrimSpace(answer) == "":
		msg = "landing call answered nothing"
	default:
		who, res.Answer = "model", answer
	}
	r.write(trace.Record{Event: trace.Landing, Cause: string(cause), Result: who, Message: msg})
	return r.result(res, steps)
}

// landingCall makes the one landing call. The run's context may be dead
// (the quiet clock, a cancellation), so it runs on the caller's context
// without its cancellation, bounded by the budget's deadline, and watched
// by a quiet clock of its own so that a landing that only streams
// keepalives ends as a stall does, not at the deadline.
func (r *run) landingCall(parent context.Context, conv []openai.ChatCompletionMessageParamUnion, boundary string) (string, error) {
	ctx, stop := budget.WithBudget(context.WithoutCancel(parent), r.b)
	defer stop()
	w, wctx, err := watchdog.Start(ctx, watchdog.Config{Quiet: r.cfg.Quiet, Wall: r.b.Deadline()})
	if err != nil {
		return "", err
	}
	defer w.Stop()
	msgs := append(withNote(conv, r.ladder.Note()), openai.UserMessage(landingPrompt(boundary)))
	r.begin(model.Kind)
	defer r.end(model.Kind)
	resp, err := r.cfg.Model.Land(wctx, r.b, msgs, r.modelObserver(0, w))
	if err != nil {
		return "", err
	}
	return resp.Message.Content, nil
}

const systemPrompt = `You are an agent working on the user's task, with the tools you are offered.
Your time is a budget with a hard deadline. At every turn a system note tells you the time left until the deadline and until landing begins, the phase of the run, and what the phase does not allow. Plan for it: prefer the calls that settle the task soonest, and answer within your budget.
When you have what you need, answer without calling a tool. If the run must stop early, you will be asked to summarize what is established, what is not, and what was in flight.`

func landingPrompt(boundary string) string {
	return fmt.Sprintf(`The run must stop now. %s
Do not call any tool. Summarize for the user what is established, what is not established, and what was in flight when the run stopped. Say plainly that the answer is partial.`, boundary)
}

// traceErr returns the trace's first write failure as an ErrTrace, or nil.
func (r *run) traceErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.werr == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrTrace, r.werr)
}
