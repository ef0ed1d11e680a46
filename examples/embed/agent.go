package main

import (
	"context"
	"encoding/json"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/tools"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// agent is an agent loop as people write it with openai-go: ask the model,
// run the tools it asks for, give it their results, until it answers. The
// lines marked ◆ are all it takes to run it on one deadline: the Session
// leases each model request and tool call from the budget, gates the tool
// calls by the ladder, tells the model its time, and lands the run with a
// labeled answer when the time, the quiet clock or the caller says so.
func agent(ctx context.Context, b *budget.Budget, client openai.Client, reg *tools.Registry,
	offered []openai.ChatCompletionToolUnionParam, task string) (landing.Result, error) {
	s, ctx, err := harness.Start(ctx, b, harness.Config{Task: task, Tools: reg}) // ◆
	if err != nil {
		return landing.Result{}, err
	}
	defer s.Close() // ◆

	// ask sends one request on a lease of the run's budget.
	ask := func(ctx context.Context, p openai.ChatCompletionNewParams) (*openai.ChatCompletion, error) {
		tctx, turn, err := s.BeginTurn(ctx) // ◆
		if err != nil {
			return nil, err
		}
		resp, err := client.Chat.Completions.New(tctx, p, option.WithHeader(budget.Header, turn.Lease().Millis()))
		return resp, turn.End(err) // ◆ the failure as the run sees it: whose, and why
	}
	msgs := []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("Answer the user's question with the tools you have."),
		openai.UserMessage(task),
	}
	// summarize is the landing call: no tools, just what is known.
	summarize := func(ctx context.Context, prompt string) (string, error) {
		resp, err := ask(ctx, openai.ChatCompletionNewParams{Model: "sim",
			Messages: append(msgs, openai.SystemMessage(s.Note()), openai.UserMessage(prompt))})
		if err != nil {
			return "", err
		}
		return resp.Choices[0].Message.Content, nil
	}

	for {
		if cause, ok := s.MustLand(ctx); ok { // ◆
			return s.Land(ctx, cause, summarize), nil
		}
		resp, err := ask(ctx, openai.ChatCompletionNewParams{Model: "sim", Tools: offered,
			Messages: append(msgs, openai.SystemMessage(s.Note()))}) // ◆ the model reads its time
		if err != nil {
			return s.Land(ctx, harness.CauseOf(ctx, err), summarize), nil // ◆
		}
		m := resp.Choices[0].Message
		if len(m.ToolCalls) == 0 {
			return s.Answer(m.Content), nil // ◆
		}
		msgs = append(msgs, m.ToParam())
		for _, c := range m.ToolCalls {
			res := s.Call(ctx, c.Function.Name, json.RawMessage(c.Function.Arguments)) // ◆
			msgs = append(msgs, openai.ToolMessage(res.Content(), c.ID))
		}
	}
}
