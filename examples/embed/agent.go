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
// lines marked ◆ (and the client's harness.ClientOptions, whose middleware
// leases, retries and records every request) are all it takes to run it on
// one deadline, with a labeled answer.
func agent(ctx context.Context, b *budget.Budget, client openai.Client, reg *tools.Registry, task string) (landing.Result, error) {
	s, ctx, err := harness.Start(ctx, b, harness.Config{Task: task, Tools: reg}) // ◆
	if err != nil {
		return landing.Result{}, err
	}
	defer s.Close() // ◆

	msgs := []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("Answer the user's question with the tools you have."),
		openai.UserMessage(task),
	}
	// ask streams one request, the conversation and then more, as a turn.
	ask := func(ctx context.Context, more ...openai.ChatCompletionMessageParamUnion) (m openai.ChatCompletionMessage, err error) {
		tctx, turn, err := s.BeginTurn(ctx) // ◆ refused when the run must land
		if err != nil {
			return m, err
		}
		stream := client.Chat.Completions.NewStreaming(tctx, openai.ChatCompletionNewParams{Model: "sim",
			Tools:         s.Tools(),                                                     // ◆ the run's tools; none on the landing call
			Messages:      append(append(msgs, openai.SystemMessage(s.Note())), more...), // ◆ the model reads its time
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
		defer stream.Close()
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err = turn.End(stream.Err()); err == nil { // ◆ a reply cut at its token limit is a failure too
			m = acc.Choices[0].Message
		}
		return m, err
	}
	// summarize is the landing call: no tools, just what is known.
	summarize := func(ctx context.Context, prompt string) (string, error) {
		m, err := ask(ctx, openai.UserMessage(prompt))
		return m.Content, err
	}

	for {
		m, err := ask(ctx)
		if err != nil {
			return s.Land(ctx, err, summarize), nil // ◆ the right words for whatever stopped the loop
		}
		if len(m.ToolCalls) == 0 {
			return s.Answer(m.Content), nil // ◆
		}
		msgs = append(msgs, harness.AssistantMessage(m))
		for _, c := range m.ToolCalls {
			res := s.Call(ctx, harness.ToolCall{Name: c.Function.Name, Arguments: json.RawMessage(c.Function.Arguments)})[0] // ◆
			msgs = append(msgs, openai.ToolMessage(res.Content(), c.ID))
		}
	}
}
