package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
)

// The APIs a [Client] speaks ([Config.API]).
const (
	APIChat      = "chat"      // Chat Completions, POST /chat/completions: the default
	APIResponses = "responses" // the Responses API, POST /responses
)

// ErrAPI is matched by the error of [New] for a [Config.API] it does not
// know.
var ErrAPI = errors.New("model: unknown API")

// checkAPI reports whether api names an API a Client speaks; "" is chat.
func checkAPI(api string) error {
	switch api {
	case "", APIChat, APIResponses:
		return nil
	}
	return fmt.Errorf("%w %q: want %s or %s", ErrAPI, api, APIChat, APIResponses)
}

// outputField is the field of an assistant message, beside its content
// and tool calls, that carries the output items of the response it came
// from (reasoning, message, function calls) to the next request as they
// came, ids and encrypted_content included, as the Responses API asks: a
// reasoning model's function calls are sent back with the reasoning that
// made them, and a reasoning item with the item that followed it. It is
// read only by the Responses path; Chat Completions requests never see it
// (the harness keeps it on the messages it stores, [AssistantOf]).
const outputField = "glidepath_response_output"

// AssistantOf is the model's reply m as the next request sends it back:
// [AssistantParam] of its content and tool calls and, for a reply that
// came over the Responses API, the output items it came in, reasoning
// included, to be sent back as they came.
func AssistantOf(m openai.ChatCompletionMessage) openai.ChatCompletionMessageParamUnion {
	return withOutput(AssistantParam(m.Content, ToolCallsOf(m.ToolCalls)), OutputOf(m))
}

// OutputOf is the output items the model's reply m came in over the
// Responses API, as they came, for a host that keeps its conversation
// as plain data ([Message.Output]); nil for a reply of Chat Completions.
func OutputOf(m openai.ChatCompletionMessage) json.RawMessage {
	if f, ok := m.JSON.ExtraFields[outputField]; ok && f.Raw() != "" {
		return json.RawMessage(f.Raw())
	}
	return nil
}

// withOutput is the assistant message p carrying output, the output
// items its reply came in, to the next request; p as it is when there
// are none.
func withOutput(p openai.ChatCompletionMessageParamUnion, output json.RawMessage) openai.ChatCompletionMessageParamUnion {
	if len(output) > 0 {
		p.OfAssistant.SetExtraFields(map[string]any{outputField: output})
	}
	return p
}

// respond is attempt for the Responses API: one streaming request on
// lease, its events folded into a chat completion, so that the rest of
// the client, and of the harness, does not know which API answered. Its
// end is the chat path's ([Client.end]).
func (c *Client) respond(ctx context.Context, lease budget.Lease, n int, req *Request, counts *counter, obs *trace.Observer) (*Response, time.Duration, *trace.AttemptError) {
	actx, cancel := lease.Context(ctx)
	defer cancel()
	start := time.Now()
	*counts = counter{obs: obs, events: true}
	stream := c.openResponse(actx, lease, n, start, req, counts)
	var g *gathered
	for stream.Next() {
		g = c.addEvent(g, stream, counts)
	}
	err := stream.Err()
	stream.Close()
	acc, err := g.completion(err)
	return c.end(actx, lease, n, start, counts, acc, err)
}

// openResponse reports the attempt's start and sends its request.
//
//go:noinline
func (c *Client) openResponse(actx context.Context, lease budget.Lease, n int, start time.Time, req *Request, counts *counter) *ssestream.Stream[responses.ResponseStreamEventUnion] {
	counts.obs.OnAttemptStart(trace.Attempt{Step: Kind, N: n, Lease: lease, Start: start})
	var params responses.ResponseNewParams
	params.Model = c.cfg.Model
	params.Input.OfInputItemList = inputItems(req.Messages)
	if len(req.Tools) > 0 {
		params.Tools = functionTools(req.Tools)
		params.ParallelToolCalls = openai.Bool(req.Parallel)
	}
	if req.MaxOutputTokens > 0 {
		params.MaxOutputTokens = openai.Int(int64(req.MaxOutputTokens))
	}
	return c.oa.Responses.NewStreaming(actx, params,
		option.WithHeader(budget.Header, lease.Millis()),
		option.WithMiddleware(counts.middleware),
	)
}

// gathered is what a Responses stream has said so far.
type gathered struct {
	text    strings.Builder
	calls   []ToolCall
	output  []json.RawMessage // the output items, as they came, to carry
	usage   openai.CompletionUsage
	model   string
	status  string // the response's final status; "" until the stream gave one
	reason  string // why it is incomplete, when it is
	failure error  // an error the stream reported in an event
}

// addEvent folds the stream's current event into g, made now if it is
// nil, and signals what it meant: a finished message or function call is
// semantic, as a finished message or tool call is on the chat path; a
// finished reasoning summary part is the model call's progress. A delta
// is a chunk of the answer, streamed tokens, as a chat chunk is; a
// lifecycle event is nothing of it. It is not inlined: its frame holds an
// event, several KB.
//
//go:noinline
func (c *Client) addEvent(g *gathered, stream *ssestream.Stream[responses.ResponseStreamEventUnion], counts *counter) *gathered {
	if g == nil {
		g = new(gathered)
	}
	obs := counts.obs
	ev := stream.Current()
	if strings.HasSuffix(ev.Type, ".delta") { // text, a call's arguments, reasoning raw (vLLM, Ollama) or summarized
		counts.chunk()
	}
	switch ev.Type {
	case "response.output_item.done":
		g.item(ev.Item, obs)
	case "response.reasoning_summary_part.done":
		// A model call's key is "" (trace.Signal), which is how its
		// progress records join its attempts on a timeline and in spans.
		// The units are the summary parts this client has heard, so that
		// they rise from call to call: the watchdog keeps the most a key
		// reported, and the run may hear them under the model call's key
		// on its quiet clock ("model"), which each turn's end ends.
		obs.OnSignal(trace.Signal{Event: watchdog.Progress, Step: Kind,
			Units: c.thoughts.Add(1), Message: "reasoning"})
	case "response.completed", "response.incomplete", "response.failed":
		g.end(ev.Type, ev.Response, obs)
	case "error":
		g.failure = streamFailure(ev.Type, ev.Code, "", ev.Message)
	}
	return g
}

// item keeps a finished output item.
func (g *gathered) item(it responses.ResponseOutputItemUnion, obs *trace.Observer) {
	switch it.Type {
	case "message":
		for _, part := range it.Content {
			g.text.WriteString(part.Text)
		}
		obs.OnSignal(trace.Signal{Event: watchdog.ModelMessage, Step: Kind})
	case "function_call":
		g.calls = append(g.calls, ToolCall{ID: it.CallID, Name: it.Name, Arguments: json.RawMessage(it.Arguments.OfString)})
		obs.OnSignal(trace.Signal{Event: watchdog.ModelMessage, Step: Kind})
	case "reasoning":
	default:
		return // not an item the conversation can carry
	}
	g.output = append(g.output, json.RawMessage(it.RawJSON()))
}

// end keeps how the response ended: its status, model and usage, why it
// is incomplete, or how it failed; and its output, when no item came
// before it on its own (a server that sends only the final response).
func (g *gathered) end(event string, r responses.Response, obs *trace.Observer) {
	g.status, g.model = string(r.Status), string(r.Model)
	if g.status == "" {
		g.status = strings.TrimPrefix(event, "response.")
	}
	u := r.Usage
	g.usage = openai.CompletionUsage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: u.TotalTokens}
	g.usage.CompletionTokensDetails.ReasoningTokens = u.OutputTokensDetails.ReasoningTokens
	g.usage.PromptTokensDetails.CachedTokens = u.InputTokensDetails.CachedTokens
	g.reason = r.IncompleteDetails.Reason
	if event == "response.failed" {
		g.failure = streamFailure(event, string(r.Error.Code), "", r.Error.Message)
	}
	if len(g.output) == 0 {
		for _, it := range r.Output {
			g.item(it, obs)
		}
	}
}

// finish is the chat finish reason of the response's end: tool_calls or
// stop when it completed, length or content_filter when it is
// incomplete; "" when the stream never said it ended.
func (g *gathered) finish() string {
	switch g.status {
	case "completed":
		if len(g.calls) > 0 {
			return "tool_calls"
		}
		return "stop"
	case "incomplete":
		switch g.reason {
		case "max_output_tokens", "":
			return "length"
		}
		return g.reason // content_filter, as Chat Completions names it too
	}
	return ""
}

// completion is what the stream said as a chat completion, for
// [Client.end], and the error the attempt ended with: err, or the
// failure the stream reported. It is nil when no event came.
func (g *gathered) completion(err error) (*openai.ChatCompletionAccumulator, error) {
	if se, ok := errors.AsType[*ssestream.StreamError](err); ok {
		// An error event whose error is nested, as OpenAI's servers send
		// it: the SDK ends the stream on it.
		err = nestedFailure(se, err)
	}
	if g == nil {
		return nil, err
	}
	if err == nil {
		err = g.failure
	}
	acc := new(openai.ChatCompletionAccumulator)
	acc.Model, acc.Usage = g.model, g.usage
	acc.Choices = []openai.ChatCompletionChoice{{FinishReason: g.finish(), Message: g.message()}}
	return acc, err
}

// message is the assistant's message: its text, its function calls as
// tool calls, and the output items to carry ([AssistantOf]).
func (g *gathered) message() openai.ChatCompletionMessage {
	type function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type call struct {
		ID       string   `json:"id"`
		Type     string   `json:"type"`
		Function function `json:"function"`
	}
	m := struct {
		Role      string            `json:"role"`
		Content   string            `json:"content"`
		Refusal   *string           `json:"refusal"`
		ToolCalls []call            `json:"tool_calls,omitempty"`
		Output    []json.RawMessage `json:"glidepath_response_output,omitempty"`
	}{Role: "assistant", Content: g.text.String(), Output: g.output}
	for _, c := range g.calls {
		m.ToolCalls = append(m.ToolCalls, call{ID: c.ID, Type: "function", Function: function{c.Name, string(c.Arguments)}})
	}
	// Decoded rather than filled in, so that the output items are the
	// message's extra field, as a server's own fields would be.
	var out openai.ChatCompletionMessage
	b, _ := json.Marshal(m)
	json.Unmarshal(b, &out)
	return out
}

// streamFailure is an error a Responses stream reported in an event, as
// the SDK's error for the HTTP status its code stands for, so that it is
// classified, retried and described as that status is on the chat path
// ([Classify]): rate_limit_exceeded as 429, server_error as 500,
// server_is_overloaded as 503, a code of the request's as 400.
func streamFailure(event, code, typ, msg string) *openai.Error {
	status := statusOfCode(code, typ)
	what := event
	if code != "" {
		what += " " + code
	}
	if msg = strings.TrimSpace(msg); msg == "" {
		msg = http.StatusText(status)
	}
	return &openai.Error{StatusCode: status, Code: code, Type: typ,
		Message: fmt.Sprintf("%s (in the stream: %s)", msg, what)}
}

// statusOfCode is the HTTP status OpenAI answers an error of this code,
// or else of this type, with. An error with neither is the server's
// (500); a code it does not know is the request's (400): asking again
// gets the same answer.
func statusOfCode(code, typ string) int {
	switch code {
	case "rate_limit_exceeded", "too_many_requests", "insufficient_quota":
		return http.StatusTooManyRequests
	case "server_error", "internal_error":
		return http.StatusInternalServerError
	case "server_is_overloaded", "service_unavailable", "overloaded", "slow_down":
		return http.StatusServiceUnavailable
	case "":
		switch typ {
		case "requests", "tokens", "too_many_requests", "rate_limit_error":
			return http.StatusTooManyRequests
		case "", "server_error", "api_error":
			return http.StatusInternalServerError
		}
	}
	return http.StatusBadRequest
}

// nestedFailure reads the error of an error event the SDK ended the
// stream on ({"type":"error","error":{"type","code","message"}}); any
// other stream error is err, as on the chat path.
func nestedFailure(se *ssestream.StreamError, err error) error {
	var d struct {
		Type  string `json:"type"`
		Error struct {
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
			Message string          `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(se.Event.Data, &d) != nil || d.Type != "error" {
		return err
	}
	var code string
	if json.Unmarshal(d.Error.Code, &code) != nil {
		code = strings.Trim(string(d.Error.Code), `"`)
		if code == "null" {
			code = ""
		}
	}
	return streamFailure("error", code, d.Error.Type, d.Error.Message)
}

// inputItems restates a conversation as the Responses API's input: each
// system, developer and user message as a message item, an assistant's
// message as the output items it came in, as they came ([AssistantOf]),
// or else its text as a message and its tool calls as function_call
// items, and each tool message as the function_call_output of its call.
// A message of another role is left out, as [Params] leaves it.
func inputItems(msgs []openai.ChatCompletionMessageParamUnion) responses.ResponseInputParam {
	out := make(responses.ResponseInputParam, 0, len(msgs))
	message := func(text string, role responses.EasyInputMessageRole) {
		out = append(out, responses.ResponseInputItemParamOfMessage(text, role))
	}
	for _, m := range msgs {
		switch {
		case m.OfSystem != nil:
			message(textOf(m.OfSystem.Content.OfString, m.OfSystem.Content.OfArrayOfContentParts), responses.EasyInputMessageRoleSystem)
		case m.OfDeveloper != nil:
			message(textOf(m.OfDeveloper.Content.OfString, m.OfDeveloper.Content.OfArrayOfContentParts), responses.EasyInputMessageRoleDeveloper)
		case m.OfUser != nil:
			var parts []openai.ChatCompletionContentPartTextParam
			for _, p := range m.OfUser.Content.OfArrayOfContentParts {
				if p.OfText != nil {
					parts = append(parts, *p.OfText)
				}
			}
			message(textOf(m.OfUser.Content.OfString, parts), responses.EasyInputMessageRoleUser)
		case m.OfAssistant != nil:
			if carried := carriedItems(m.OfAssistant); carried != nil {
				out = append(out, carried...)
			} else {
				out = append(out, assistantItems(m.OfAssistant)...)
			}
		case m.OfTool != nil:
			text := textOf(m.OfTool.Content.OfString, m.OfTool.Content.OfArrayOfContentParts)
			out = append(out, responses.ResponseInputItemParamOfFunctionCallOutput(text))
			out[len(out)-1].OfFunctionCallOutput.CallID = openai.String(m.OfTool.ToolCallID)
		}
	}
	return out
}

// carriedItems are the output items an assistant message carries from the
// response it came in, each sent as it came; nil when it carries none.
func carriedItems(a *openai.ChatCompletionAssistantMessageParam) []responses.ResponseInputItemUnionParam {
	raw, ok := a.ExtraFields()[outputField].(json.RawMessage)
	if !ok {
		return nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil || len(items) == 0 {
		return nil
	}
	out := make([]responses.ResponseInputItemUnionParam, 0, len(items))
	for _, it := range items {
		var kind struct {
			Type string `json:"type"`
		}
		json.Unmarshal(it, &kind)
		switch kind.Type {
		case "reasoning":
			r := param.Override[responses.ResponseReasoningItemParam](it)
			out = append(out, responses.ResponseInputItemUnionParam{OfReasoning: &r})
		case "message":
			m := param.Override[responses.ResponseOutputMessageParam](it)
			out = append(out, responses.ResponseInputItemUnionParam{OfOutputMessage: &m})
		case "function_call":
			f := param.Override[responses.ResponseFunctionToolCallParam](it)
			out = append(out, responses.ResponseInputItemUnionParam{OfFunctionCall: &f})
		}
	}
	return out
}

// assistantItems are an assistant message's text and tool calls, for one
// that carries no output items: a message the conversation began with,
// or one that came over Chat Completions.
func assistantItems(a *openai.ChatCompletionAssistantMessageParam) []responses.ResponseInputItemUnionParam {
	var out []responses.ResponseInputItemUnionParam
	var parts []openai.ChatCompletionContentPartTextParam
	for _, p := range a.Content.OfArrayOfContentParts {
		if p.OfText != nil {
			parts = append(parts, *p.OfText)
		}
	}
	if text := textOf(a.Content.OfString, parts); text != "" {
		out = append(out, responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleAssistant))
	}
	for _, tc := range a.ToolCalls {
		if f := tc.OfFunction; f != nil {
			out = append(out, responses.ResponseInputItemParamOfFunctionCall(f.Function.Arguments, f.ID, f.Function.Name))
		}
	}
	return out
}

// textOf is a message's text: its string, or its text parts joined.
func textOf(s param.Opt[string], parts []openai.ChatCompletionContentPartTextParam) string {
	if s.Valid() {
		return s.Value
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// functionTools restates Chat Completions' function tools as the
// Responses API's, strict only where they said so, as on the chat path.
func functionTools(tools []openai.ChatCompletionToolUnionParam) []responses.ToolUnionParam {
	out := make([]responses.ToolUnionParam, 0, len(tools))
	for _, t := range tools {
		if t.OfFunction == nil {
			continue
		}
		fd := t.OfFunction.Function
		ft := &responses.FunctionToolParam{Name: fd.Name, Parameters: fd.Parameters, Description: fd.Description,
			Strict: openai.Bool(fd.Strict.Valid() && fd.Strict.Value)}
		if ft.Parameters == nil {
			ft.Parameters = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		out = append(out, responses.ToolUnionParam{OfFunction: ft})
	}
	return out
}
