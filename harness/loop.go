package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/tools"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// Run runs one agent on b, the budget the caller started, until the model
// answers (complete) or the run must land: the budget reached its reserve,
// the quiet clock fired, ctx was cancelled, the steps ran out, or the model
// failed. It is [Start], then [Session.Run], then [Session.Close]: a cfg
// that [Config.Validate] rejects is a [*ConfigError], with no result;
// otherwise Run always returns a labeled [landing.Result], complete or
// partial, within the budget.
//
// The error is non-nil for an invalid cfg, with no result, and when a sink
// could not take the run's records ([ErrTrace]), beside a result that is
// still the run's: the run goes on without its record rather than stop.
func Run(ctx context.Context, b *budget.Budget, cfg Config) (landing.Result, error) {
	s, rctx, err := start(ctx, b, &cfg)
	if err != nil {
		if res, refused := AtCapacity(b, cfg.RunID, err); refused {
			return res, nil
		}
		return landing.Result{}, err
	}
	// The loop's state, the result included, is on the heap; Run's frame,
	// which stays on the stack while the run streams, holds pointers.
	l := s.newLoop()
	l.run(rctx)
	err = s.Close()
	return *l.res, err
}

// start is the start of [Run]. It is a function of its own, not inlined,
// because Run stays on the stack while the run streams and is kept small
// (issue 13): the copies of cfg that validating and starting take are
// made here.
//
//go:noinline
func start(ctx context.Context, b *budget.Budget, cfg *Config) (*Session, context.Context, error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	if cfg.Model == nil {
		return nil, nil, &ConfigError{Field: "model", Err: errRequired}
	}
	if b == nil {
		return nil, nil, &ConfigError{Field: "budget", Err: errRequired}
	}
	return startValid(ctx, b, *cfg)
}

// Run drives the session with the harness's own agent loop, on ctx, the
// run's context that [Start] returned, and returns its result: model turns
// with [Config.Model] and the tools' calls they ask for, until the model
// answers or the run must land. The conversation opens with a system
// message that explains the job and the budget, and the task as the user
// message; every request adds the budget note as its last message.
func (s *Session) Run(ctx context.Context) landing.Result {
	if !s.started() {
		return noSession()
	}
	if ctx == nil {
		ctx = s.ctx
	}
	l := s.newLoop()
	l.run(ctx)
	return *l.res
}

// loop is the state of the harness's own agent loop. It lives on the heap,
// and the frames that stay on the stack while a turn streams (Run, run,
// Session.turn) hold pointers to it, because a run spends most of its life
// blocked in a model stream: with the conversation, the request and the
// response in those frames the run's goroutine stack was held at 64 KB
// where a bare openai-go call holds 16 KB (issue 13; see # Stack at
// model.Client.call).
type loop struct {
	s       *Session
	conv    []openai.ChatCompletionMessageParamUnion
	offered offering
	req     model.Request   // the turn about to be made
	resp    *model.Response // what the turn answered, nil while it streams
	err     error           // how the turn failed
	res     *landing.Result // the run's result, once done
}

func (s *Session) newLoop() *loop {
	prompt := landing.System(s.cfg.Instructions)
	return &loop{s: s, conv: []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage(prompt),
		openai.UserMessage(s.cfg.Task),
	}}
}

// run runs the loop until the run has its result, l.res.
func (l *loop) run(ctx context.Context) {
	for l.next(ctx) {
		l.resp, l.err = l.s.turn(ctx, l.req)
		l.took(ctx)
	}
}

// next reports whether the loop makes another turn, with l.req; if not,
// the run has its result, l.res: it had one already, it has no model, or
// it must land now.
func (l *loop) next(ctx context.Context) bool {
	s := l.s
	switch {
	case l.res != nil:
		return false
	case s.cfg.Model == nil:
		l.end(s.Land(ctx, landing.CauseUpstream, nil))
		return false
	}
	if cause, ok := s.MustLand(ctx); ok {
		l.end(s.Land(ctx, cause, s.summarizer(l.conv)))
		return false
	}
	specs := s.usable(s.cfg.Tools.Specs()) // one whose ceiling is below its p50 is left out
	l.req = model.Request{
		Messages: withNote(l.conv, s.note(specs)),
		Tools:    l.offered.of(specs),
		Parallel: s.cfg.Parallel > 1,
	}
	l.resp, l.err = nil, nil
	return true
}

// took goes on from the turn that answered l.resp or failed with l.err:
// it lands the run, takes the answer, or makes the tool calls asked for
// and adds their results to the conversation.
func (l *loop) took(ctx context.Context) {
	s, resp := l.s, l.resp
	if l.err != nil {
		l.end(s.landFailed(ctx, l.err, s.summarizer(l.conv)))
		return
	}
	calls := resp.Message.ToolCalls
	if len(calls) == 0 {
		if !answered(*resp) {
			// A reply cut at the token limit, withheld by a filter or
			// empty is not the answer (SPEC §3: a partial result is
			// never presented as complete). What it said so far goes to
			// the landing call, which can use it.
			if resp.Message.Content != "" {
				l.conv = append(l.conv, AssistantMessage(resp.Message))
			}
			// The boundary says which: cut, withheld, or empty.
			why := model.CheckFinish(resp.FinishReason)
			if why == nil {
				why = errEmptyAnswer
			}
			l.end(s.landFailed(ctx, why, s.summarizer(l.conv)))
			return
		}
		l.end(s.Answer(resp.Message.Content))
		return
	}
	l.conv = append(l.conv, AssistantMessage(resp.Message))
	asked := make([]ToolCall, len(calls))
	for i, c := range calls {
		asked[i] = ToolCall{Name: c.Function.Name, Arguments: json.RawMessage(c.Function.Arguments), ID: c.ID}
	}
	// Every call gets its tool message, refused and failed ones too:
	// the API rejects a conversation that leaves one unanswered.
	for i, res := range s.CallAll(ctx, asked) {
		l.conv = append(l.conv, openai.ToolMessage(res.Content(), calls[i].ID))
	}
}

// end keeps the run's result.
func (l *loop) end(res landing.Result) { l.res = &res }

// summarizer is the landing call of the harness's own loop: the
// conversation so far, the budget note and the landing prompt, sent to the
// model with no tools.
func (s *Session) summarizer(conv []openai.ChatCompletionMessageParamUnion) func(context.Context, string) (string, error) {
	return func(ctx context.Context, prompt string) (string, error) {
		msgs := append(withNote(conv, s.Note()), openai.UserMessage(prompt))
		resp, err := s.Turn(ctx, model.Request{Messages: msgs})
		return resp.Message.Content, err
	}
}

// offering is the tools field of the loop's requests, made again only when
// the tools on offer change (a setup step may register more), since
// decoding every schema at every turn is the loop's own cost per step.
type offering struct {
	specs []tools.Spec
	tools []openai.ChatCompletionToolUnionParam
}

func (o *offering) of(specs []tools.Spec) []openai.ChatCompletionToolUnionParam {
	same := func(a, b tools.Spec) bool {
		return a.Name == b.Name && a.Description == b.Description && bytes.Equal(a.Parameters, b.Parameters)
	}
	if o.specs == nil || !slices.EqualFunc(o.specs, specs, same) {
		o.specs, o.tools = specs, Offer(specs)
	}
	return o.tools
}

// Offer turns tools' specs into the tools field of an openai-go Chat
// Completions request, as the harness's own loop offers them; nil when
// there are none, so that the request carries no tools field at all (the
// landing call's must not). A schema that is not a JSON object is offered
// as no parameters. [Session.Tools] is Offer of the tools the run offers
// now.
func Offer(specs []tools.Spec) []openai.ChatCompletionToolUnionParam {
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

// answered reports whether a reply without tool calls is a whole answer:
// it says something, and the model stopped on its own rather than at the
// token limit or by a content filter ([model.CheckFinish]).
func answered(resp model.Response) bool {
	return model.CheckFinish(resp.FinishReason) == nil && strings.TrimSpace(resp.Message.Content) != ""
}

// withNote returns the request's messages: the conversation and, last, a
// fresh budget note. The note is never stored in the conversation, so each
// turn's replaces the one before and the conversation's prefix stays the
// same from turn to turn, as prompt caches want.
func withNote(conv []openai.ChatCompletionMessageParamUnion, note string) []openai.ChatCompletionMessageParamUnion {
	return append(slices.Clip(conv), openai.SystemMessage(note))
}

// AssistantMessage turns the model's reply back into a message of the
// conversation, for the next request: the harness's own loop does, and a
// loop of its own that accumulates a stream should too. It is built field
// by field because the SDK's ToParam drops a tool call whose type the
// stream did not name; only function tools are offered ([Offer]), so every
// call is one.
func AssistantMessage(m openai.ChatCompletionMessage) openai.ChatCompletionMessageParamUnion {
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
