package main

import (
	"context"
	"encoding/json"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/tools"
	"github.com/openai/openai-go/v3"
)

// agent is an agent loop as people write it with openai-go: ask the model,
// run the tools it asks for, give it their results, until it answers. The
// lines marked ◆ (and the client's harness.ClientOptions) are all it takes
// to run it on one deadline: the Session leases, retries and records each
// model request and tool call, gates the tool calls by the ladder, tells
// the model its time, and lands the run with a labeled answer.
func agent(ctx context.Context, b *budget.Budget, client openai.Client, reg *tools.Registry, task string) (landing.Result, error) {
	s, ctx, err := harness.Start(ctx, b, harness.Config{Task: task, Tools: reg}) // ◆
	if err != nil {
		return landing.Result{}, err
	}
	defer s.Close() // ◆

	// ask streams one request on a lease of the run's budget.
	ask := func(ctx context.Context, p openai.ChatCompletionNewParams) (m openai.ChatCompletionMessage, err error) {
		tctx, turn, err := s.BeginTurn(ctx) // ◆
		if err != nil {
			return m, err
		}
		p.Model, p.StreamOptions.IncludeUsage = "sim", openai.Bool(true)
		stream := client.Chat.Completions.NewStreaming(tctx, p) // ◆ on the turn's context: leased, retried, recorded
		defer stream.Close()
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			acc.AddChunk(stream.Current())
			turn.Chunk(stream.Current()) // ◆ tokens and finish reason, on the record
		}
		if err = turn.End(stream.Err()); err == nil { // ◆ whose failure, and why; a reply cut at its token limit is one
			m = acc.Choices[0].Message
		}
		return m, err
	}
	msgs := []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("Answer the user's question with the tools you have."),
		openai.UserMessage(task),
	}
	// summarize is the landing call: no tools, just what is known.
	summarize := func(ctx context.Context, prompt string) (string, error) {
		m, err := ask(ctx, openai.ChatCompletionNewParams{
			Messages: append(msgs, openai.SystemMessage(s.Note()), openai.UserMessage(prompt))})
		return m.Content, err
	}

	for {
		if _, ok := s.MustLand(ctx); ok { // ◆ the reserve, the quiet clock, the caller, the steps
			return s.LandOn(ctx, nil, summarize), nil // ◆
		}
		m, err := ask(ctx, openai.ChatCompletionNewParams{Tools: s.Tools(), // ◆ the run's tools, offered
			Messages: append(msgs, openai.SystemMessage(s.Note()))}) // ◆ the model reads its time
		if err != nil {
			return s.LandOn(ctx, err, summarize), nil // ◆ the right words for any failure
		}
		if len(m.ToolCalls) == 0 {
			return s.Answer(m.Content), nil // ◆
		}
		msgs = append(msgs, harness.AssistantMessage(m))
		for _, c := range m.ToolCalls {
			res := s.Call(ctx, c.Function.Name, json.RawMessage(c.Function.Arguments)) // ◆
			msgs = append(msgs, openai.ToolMessage(res.Content(), c.ID))
		}
	}
}
