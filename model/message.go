package model

import (
	"encoding/json"

	"github.com/openai/openai-go/v3"
)

// A Message is one message of a conversation as plain data: what a host
// that keeps its conversation outside the process (a Temporal workflow's
// history) encodes as JSON, turned into openai-go's types only for a
// request ([Params]).
type Message struct {
	Role       string     `json:"role"` // system, user, assistant, tool
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	// Output is, on an assistant message that came over the Responses
	// API, the output items it came in, reasoning included, sent back as
	// they came ([OutputOf]); none on Chat Completions, so that a
	// message of that API encodes as it did before.
	Output json.RawMessage `json:"output,omitempty"`
}

// A ToolCall is a tool call the model asked for, as plain data.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Params turns msgs into openai-go's messages for a [Request]. A message
// of a role it does not know is left out.
func Params(msgs []Message) []openai.ChatCompletionMessageParamUnion {
	out := make([]openai.ChatCompletionMessageParamUnion, 0, len(msgs))
	for _, m := range msgs {
		switch m.Role {
		case "system":
			out = append(out, openai.SystemMessage(m.Content))
		case "user":
			out = append(out, openai.UserMessage(m.Content))
		case "tool":
			out = append(out, openai.ToolMessage(m.Content, m.ToolCallID))
		case "assistant":
			out = append(out, withOutput(AssistantParam(m.Content, m.ToolCalls), m.Output))
		}
	}
	return out
}

// AssistantParam is the assistant's message of content and calls as the
// next request sends it back: no content field when content is empty. It
// is built field by field because the SDK's ToParam drops a tool call
// whose type the stream did not name; only function tools are offered, so
// every call is one.
func AssistantParam(content string, calls []ToolCall) openai.ChatCompletionMessageParamUnion {
	var p openai.ChatCompletionAssistantMessageParam
	if content != "" {
		p.Content.OfString = openai.String(content)
	}
	for _, c := range calls {
		p.ToolCalls = append(p.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID: c.ID,
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
					Name:      c.Name,
					Arguments: string(c.Arguments),
				},
			},
		})
	}
	return openai.ChatCompletionMessageParamUnion{OfAssistant: &p}
}

// ToolCallsOf is the calls of a reply's message as plain data.
func ToolCallsOf(calls []openai.ChatCompletionMessageToolCallUnion) []ToolCall {
	var out []ToolCall
	for _, c := range calls {
		out = append(out, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: json.RawMessage(c.Function.Arguments)})
	}
	return out
}
