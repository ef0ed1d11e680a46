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
	if err := cfg.Validate(); err != nil {
		return landing.Result{}, err
	}
	if cfg.Model == nil {
		return landing.Result{}, &ConfigError{Field: "model", Err: errRequired}
	}
	s, rctx, err := Start(ctx, b, cfg)
	if err != nil {
		return landing.Result{}, err
	}
	res := s.Run(rctx)
	return res, s.Close()
}

// Run drives the session with the harness's own agent loop, on ctx, the
// run's context that [Start] returned, and returns its result: model turns
// with [Config.Model] and the tools' calls they ask for, until the model
// answers or the run must land. The conversation opens with a system
// message that explains the job and the budget, and the task as the user
// message; every request adds the budget note as its last message.
func (s *Session) Run(ctx context.Context) landing.Result {
	if s.cfg.Model == nil {
		return s.Land(ctx, landing.CauseUpstream, nil)
	}
	prompt := systemPrompt
	if in := strings.TrimSpace(s.cfg.Instructions); in != "" {
		prompt = in + "\n\n" + systemPrompt
	}
	conv := []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage(prompt),
		openai.UserMessage(s.cfg.Task),
	}
	var offered offering
	for {
		if cause, ok := s.MustLand(ctx); ok {
			return s.Land(ctx, cause, s.summarizer(conv))
		}
		req := model.Request{
			Messages: withNote(conv, s.Note()),
			Tools:    offered.of(s.cfg.Tools.Specs()),
			Parallel: s.cfg.Parallel > 1,
		}
		resp, err := s.Turn(ctx, req)
		if err != nil {
			return s.LandFailed(ctx, err, s.summarizer(conv))
		}
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
				return s.Land(ctx, landing.CauseUpstream, s.summarizer(conv))
			}
			return s.Answer(resp.Message.Content)
		}
		conv = append(conv, assistantMessage(resp.Message))
		asked := make([]ToolCall, len(calls))
		for i, c := range calls {
			asked[i] = ToolCall{Name: c.Function.Name, Arguments: json.RawMessage(c.Function.Arguments), ID: c.ID}
		}
		// Every call gets its tool message, refused and failed ones too:
		// the API rejects a conversation that leaves one unanswered.
		for i, res := range s.CallAll(ctx, asked) {
			conv = append(conv, openai.ToolMessage(res.Content(), calls[i].ID))
		}
	}
}

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
		o.specs, o.tools = specs, offer(specs)
	}
	return o.tools
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

const systemPrompt = `You are an agent working on the user's task, with the tools you are offered.
Your time is a budget with a hard deadline. At every turn a system note tells you the time left until the deadline and until landing begins, the phase of the run, and what the phase does not allow. Plan for it: prefer the calls that settle the task soonest, and answer within your budget.
When you have what you need, answer without calling a tool. If the run must stop early, you will be asked to summarize what is established, what is not, and what was in flight.`
