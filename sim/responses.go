package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The Responses API, POST /v1/responses, as openai-go v3's responses
// package and the OpenAI Node SDK read it: the same policy and scenarios
// as Chat Completions, in its own shapes (see # Wire in the package doc).

// opening is how many events of a Responses stream come with its headers,
// before FirstToken: response.created, response.in_progress and the
// reasoning item's response.output_item.added, as a reasoning model sends
// them before it goes silent to think.
const opening = 3

// responsesRequest is a POST /v1/responses body, limited to what the sim
// reads.
type responsesRequest struct {
	Model             string          `json:"model"`
	Input             json.RawMessage `json:"input"`
	Instructions      *string         `json:"instructions"`
	Tools             json.RawMessage `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	Stream            bool            `json:"stream"`
	Store             *bool           `json:"store"`
	Include           []string        `json:"include"`
	MaxOutputTokens   *int64          `json:"max_output_tokens"`
	Text              *struct {
		Format json.RawMessage `json:"format"`
	} `json:"text"`
}

// inputItem is one item of input: a message, a function call, its
// output, or a reasoning item carried from an earlier response.
type inputItem struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// response serves one POST /v1/responses: it reads the request into the
// form the Chat Completions side decides on, so that both follow one
// policy and one set of rules, and answers in the Responses API's shapes.
func (h *handler) response(w http.ResponseWriter, r *http.Request, rec Request) {
	var rr responsesRequest
	apiErr := readRequest(w, r, &rr)
	var req chatRequest
	var msgs []Message
	if apiErr == nil {
		req, apiErr = rr.chat()
	}
	var reasoning []string
	if apiErr == nil {
		msgs, reasoning, apiErr = rr.messages()
	}
	if apiErr == nil {
		apiErr = req.decodeOptions(msgs)
	}
	var reps []reply
	if apiErr == nil {
		reps, apiErr = replies(&req, msgs, h.sc.Seed)
	}
	rec.Model, rec.Stream, rec.Parallel, rec.Messages, rec.N = rr.Model, rr.Stream, rr.ParallelToolCalls, msgs, 1
	rec.Reasoning, rec.MaxOutputTokens = reasoning, req.limit
	rec.HasTools, rec.Tools = len(rr.Tools) > 0, len(req.tools)
	rec.ToolChoice, rec.ResponseFormat = req.choice.record, req.format.record()
	rec.Turn = 1
	for _, m := range msgs {
		if m.Role == "assistant" {
			rec.Turn++
		}
	}
	rec.BudgetNote = readConversation(msgs).note
	rule, ok := h.admitted(w, &rec, apiErr)
	if !ok {
		return
	}
	h.respondResponse(w, r, &rr, msgs, rec, rule, reps[0])
}

// chat is the request as the Chat Completions side reads it: its tools,
// tool_choice and text.format in that API's shapes, to be decoded and
// checked by the same code.
func (rr *responsesRequest) chat() (chatRequest, *apiError) {
	req := chatRequest{Model: rr.Model, Tools: rr.Tools, ParallelToolCalls: rr.ParallelToolCalls, Stream: rr.Stream,
		maxOutputTokens: rr.MaxOutputTokens}
	if raw := bytes.TrimSpace(rr.Tools); len(raw) > 0 && string(raw) != "null" {
		var tools []responsesTool
		if json.Unmarshal(raw, &tools) != nil {
			return req, invalid("tools", "tools must be an array of {type: \"function\", name, description, parameters}")
		}
		for i, t := range tools {
			if t.Type != "function" {
				return req, invalid(fmt.Sprintf("tools[%d].type", i), fmt.Sprintf("Invalid value: '%s'. The sim supports only 'function' tools.", t.Type))
			}
			if t.Name == "" {
				return req, invalid(fmt.Sprintf("tools[%d].name", i), fmt.Sprintf("Missing required parameter: 'tools[%d].name'.", i))
			}
			var wt wireTool
			wt.Type, wt.Function.Name, wt.Function.Description, wt.Function.Parameters = "function", t.Name, t.Description, t.Parameters
			req.tools = append(req.tools, wt)
		}
	}
	req.ToolChoice = chatToolChoice(rr.ToolChoice)
	if rr.Text != nil {
		req.ResponseFormat = chatFormat(rr.Text.Format)
	}
	return req, nil
}

// chatToolChoice restates a Responses tool_choice in Chat Completions'
// shape: {"type":"function","name":X} names its function at the top
// level, and allowed_tools lists {"type":"function","name":X}. Anything
// else is passed as it came, for readToolChoice to accept or refuse.
func chatToolChoice(raw json.RawMessage) json.RawMessage {
	var c struct {
		Type  string `json:"type"`
		Name  string `json:"name"`
		Mode  string `json:"mode"`
		Tools []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tools"`
	}
	if json.Unmarshal(raw, &c) != nil {
		return raw
	}
	type fn struct {
		Name string `json:"name"`
	}
	type named struct {
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	var v any
	switch c.Type {
	case "function":
		v = named{Type: "function", Function: fn{c.Name}}
	case "allowed_tools":
		at := struct {
			Mode  string  `json:"mode"`
			Tools []named `json:"tools"`
		}{Mode: c.Mode, Tools: []named{}}
		for _, t := range c.Tools {
			at.Tools = append(at.Tools, named{Type: t.Type, Function: fn{t.Name}})
		}
		v = map[string]any{"type": "allowed_tools", "allowed_tools": at}
	default:
		return raw
	}
	b, _ := json.Marshal(v)
	return b
}

// chatFormat restates text.format as a response_format: a json_schema
// format carries its name, schema and strict at the top level.
func chatFormat(raw json.RawMessage) json.RawMessage {
	var f struct {
		Type   string          `json:"type"`
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema,omitempty"`
		Strict *bool           `json:"strict,omitempty"`
	}
	if json.Unmarshal(raw, &f) != nil || f.Type != "json_schema" {
		return raw
	}
	b, _ := json.Marshal(map[string]any{"type": "json_schema", "json_schema": map[string]any{
		"name": f.Name, "schema": f.Schema, "strict": f.Strict}})
	return b
}

// messages turns input (and instructions) into the conversation the
// policy reads, and checks it as OpenAI does: every function_call_output
// answers a function_call earlier in the input, and every function_call
// is answered. The assistant items that come together (a reasoning item,
// a message, function calls) are one assistant message, one turn.
func (rr *responsesRequest) messages() ([]Message, []string, *apiError) {
	if rr.Model == "" {
		return nil, nil, invalid("model", "Missing required parameter: 'model'.")
	}
	items, e := rr.items()
	if e != nil {
		return nil, nil, e
	}
	var out []Message
	if rr.Instructions != nil && *rr.Instructions != "" {
		out = append(out, Message{Role: "system", Content: *rr.Instructions})
	}
	assistant := -1          // index in out of the assistant message being gathered; -1: none
	var open, known []string // function call ids not yet answered, and all of them
	var reasoning []string   // the reasoning items' ids
	gather := func() *Message {
		if assistant < 0 {
			out = append(out, Message{Role: "assistant"})
			assistant = len(out) - 1
		}
		return &out[assistant]
	}
	for i, it := range items {
		switch it.Type {
		case "", "message":
			text, err := (&wireMessage{Content: it.Content}).text()
			if err != nil {
				return nil, nil, invalid(fmt.Sprintf("input[%d].content", i), err.Error())
			}
			switch it.Role {
			case "assistant":
				m := gather()
				m.Content += text
				continue
			case "user", "system", "developer":
				out = append(out, Message{Role: it.Role, Content: text})
			default:
				return nil, nil, invalid(fmt.Sprintf("input[%d].role", i), fmt.Sprintf(
					"Invalid value: '%s'. Supported values are: 'assistant', 'system', 'developer', and 'user'.", it.Role))
			}
		case "function_call":
			for _, f := range [][2]string{{"call_id", it.CallID}, {"name", it.Name}} {
				if f[1] == "" {
					return nil, nil, invalid(fmt.Sprintf("input[%d].%s", i, f[0]), fmt.Sprintf("Missing required parameter: 'input[%d].%s'.", i, f[0]))
				}
			}
			m := gather()
			m.ToolCalls = append(m.ToolCalls, ToolCall{ID: it.CallID, Name: it.Name, Arguments: it.Arguments})
			open, known = append(open, it.CallID), append(known, it.CallID)
			continue
		case "function_call_output":
			if !slices.Contains(known, it.CallID) {
				return nil, nil, invalid("input", fmt.Sprintf("No tool call found for function call output with call_id %s.", it.CallID))
			}
			open = slices.DeleteFunc(open, func(id string) bool { return id == it.CallID })
			text, err := (&wireMessage{Content: it.Output}).text()
			if err != nil {
				return nil, nil, invalid(fmt.Sprintf("input[%d].output", i), "output must be a string or an array of content parts")
			}
			out = append(out, Message{Role: "tool", Content: text, ToolCallID: it.CallID})
		case "reasoning":
			// What the model thought, carried for it: recorded, and
			// otherwise read by none of the policy.
			reasoning = append(reasoning, it.ID)
			continue
		default:
			return nil, nil, invalid(fmt.Sprintf("input[%d].type", i), fmt.Sprintf(
				"Invalid value: '%s'. The sim supports input items of type 'message', 'function_call', 'function_call_output' and 'reasoning'.", it.Type))
		}
		assistant = -1
	}
	if len(open) > 0 {
		return nil, nil, invalid("input", fmt.Sprintf("No tool output found for function call %s.", open[0]))
	}
	return out, reasoning, nil
}

// items reads input: a string is one user message.
func (rr *responsesRequest) items() ([]inputItem, *apiError) {
	raw := bytes.TrimSpace(rr.Input)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, invalid("input", "Missing required parameter: 'input'.")
	}
	if raw[0] == '"' {
		return []inputItem{{Type: "message", Role: "user", Content: raw}}, nil
	}
	var items []inputItem
	if json.Unmarshal(raw, &items) != nil {
		return nil, invalid("input", "Invalid type for 'input': expected a string or an array of input items.")
	}
	return items, nil
}

// respondResponse serves one admitted response along the rule's
// timeline (see [Rule]).
func (h *handler) respondResponse(w http.ResponseWriter, r *http.Request, rr *responsesRequest, msgs []Message, rec Request, rule Rule, rep reply) {
	ctx := r.Context()
	if !h.opening(ctx, w, rec, rule) {
		return
	}
	if len(rule.ToolCalls) > 0 || rule.Answer != "" {
		rep = ruleReplies(rule, h.sc.Seed, rec.Completion, 1)[0]
	}
	b := h.build(rr, msgs, rec, rule, rep)
	if rr.Stream {
		h.stream(ctx, w, rule, b.events(), responsesSSE)
		return
	}
	if code := rule.failure(); code != "" {
		// No stream to fail in: the error comes as its status, when the
		// stream would have failed.
		if h.pause(ctx, w, rule.Keepalive) && h.pause(ctx, w, rule.FirstToken) {
			status, typ := statusOfCode(code)
			d := errorDetail{Message: failureMessage(code, rec), Type: typ, Code: &code}
			writeJSON(w, status, errorBody{Error: d})
		}
		return
	}
	body, _ := json.Marshal(b.final())
	h.whole(ctx, w, rule, len(b.events())-opening, body)
}

// failure is the code of the error the rule makes a response fail with;
// "" for none. A rule sets at most one of StreamError and Failed.
func (r *Rule) failure() string {
	if r.StreamError != "" {
		return r.StreamError
	}
	return r.Failed
}

// statusOfCode is the status and error type an error code stands for, as
// OpenAI answers them over HTTP; a code the sim does not know is a 400
// about the request.
func statusOfCode(code string) (int, string) {
	switch code {
	case "rate_limit_exceeded", "too_many_requests", "insufficient_quota":
		return http.StatusTooManyRequests, "requests"
	case "server_error", "internal_error":
		return http.StatusInternalServerError, "server_error"
	case "server_is_overloaded", "service_unavailable", "overloaded":
		return http.StatusServiceUnavailable, "server_error"
	}
	return http.StatusBadRequest, "invalid_request_error"
}

func failureMessage(code string, rec Request) string {
	return fmt.Sprintf("[sim] injected error %s by rule %d on request %d.", code, rec.Rule, rec.Completion)
}

// builder makes a response's objects and events.
type builder struct {
	rr      *responsesRequest
	rule    Rule
	rec     Request
	rep     reply // as the model gave it under the request's limit ([reply.spend])
	id      string
	created int64
	items   []any // the output items, done
	use     responsesUsage
	seq     int
}

type responsesUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

type summaryText struct {
	Type string `json:"type"` // summary_text
	Text string `json:"text"`
}

type reasoningItem struct {
	ID               string        `json:"id"`
	Type             string        `json:"type"` // reasoning
	Summary          []summaryText `json:"summary"`
	EncryptedContent *string       `json:"encrypted_content,omitempty"`
}

type outputText struct {
	Type        string `json:"type"` // output_text
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
}

type messageItem struct {
	ID      string       `json:"id"`
	Type    string       `json:"type"` // message
	Status  string       `json:"status"`
	Role    string       `json:"role"`
	Content []outputText `json:"content"`
}

type functionCallItem struct {
	ID        string `json:"id"`
	Type      string `json:"type"` // function_call
	Status    string `json:"status"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

func (h *handler) build(rr *responsesRequest, msgs []Message, rec Request, rule Rule, rep reply) *builder {
	seed, n := h.sc.Seed, strconv.Itoa(rec.Completion)
	b := &builder{rr: rr, rule: rule, rec: rec, created: time.Now().Unix(),
		id: fmt.Sprintf("resp_sim_%016x", hash(seed, "response", n))}
	thought := reasoningItem{ID: fmt.Sprintf("rs_sim_%016x", hash(seed, "reasoning", n)), Type: "reasoning",
		Summary: []summaryText{{Type: "summary_text", Text: plan(rep)}}}
	if slices.Contains(rr.Include, "reasoning.encrypted_content") {
		// Not encrypted: the sim has no secret. A client sends it back as
		// it came, which is all a client may do with it.
		enc := fmt.Sprintf("sim-reasoning-%016x", hash(seed, "encrypted", n))
		thought.EncryptedContent = &enc
	}
	b.items = append(b.items, thought)
	reasoning := tokens(len(thought.Summary[0].Text))
	if rule.ReasoningTokens > 0 {
		reasoning = rule.ReasoningTokens
	}
	rep = rep.spend(reasoning, rec.MaxOutputTokens)
	b.rep = rep
	item := b.status() // an item the limit cut is as incomplete as its response
	if rep.content != "" || len(rep.toolCalls) == 0 && rep.limit == 0 {
		b.items = append(b.items, messageItem{ID: fmt.Sprintf("msg_sim_%016x", hash(seed, "message", n)), Type: "message",
			Status: item, Role: "assistant", Content: []outputText{{Type: "output_text", Text: rep.content, Annotations: []any{}, Logprobs: []any{}}}})
	}
	for i, c := range rep.toolCalls {
		b.items = append(b.items, functionCallItem{ID: fmt.Sprintf("fc_sim_%016x", hash(seed, "function_call", n, strconv.Itoa(i))),
			Type: "function_call", Status: item, CallID: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	u := usage(msgs, []reply{rep})
	u.details(rule.CachedTokens, []reply{rep})
	b.use.InputTokens, b.use.OutputTokens = u.PromptTokens, u.CompletionTokens
	if d := u.PromptDetails; d != nil {
		b.use.InputTokensDetails.CachedTokens = d.CachedTokens
	}
	b.use.OutputTokensDetails.ReasoningTokens = rep.reasoning
	b.use.TotalTokens = b.use.InputTokens + b.use.OutputTokens
	return b
}

// status is the response's status once its output is done: completed,
// or incomplete when the output-token limit cut it.
func (b *builder) status() string {
	if b.rep.limit > 0 {
		return "incomplete"
	}
	return "completed"
}

// plan is the sim's reasoning summary: what it is about to do.
func plan(rep reply) string {
	if len(rep.toolCalls) == 0 {
		return "[sim] Next: answer."
	}
	names := make([]string, len(rep.toolCalls))
	for i, c := range rep.toolCalls {
		names[i] = c.Name
	}
	return "[sim] Next: call " + strings.Join(names, ", ") + "."
}

// object is the response object in the state given, with the output and
// usage given.
func (b *builder) object(status string, output []any, use *responsesUsage, fail *errorDetail) map[string]any {
	raw := func(v json.RawMessage, def string) json.RawMessage {
		if v = bytes.TrimSpace(v); len(v) == 0 || string(v) == "null" {
			return json.RawMessage(def)
		}
		return v
	}
	text := json.RawMessage(`{"format":{"type":"text"}}`)
	if b.rr.Text != nil && len(bytes.TrimSpace(b.rr.Text.Format)) > 0 {
		text, _ = json.Marshal(map[string]json.RawMessage{"format": b.rr.Text.Format})
	}
	var failure, incomplete any
	if fail != nil {
		failure = map[string]any{"code": fail.Code, "message": fail.Message}
	}
	if status == "incomplete" {
		incomplete = map[string]string{"reason": "max_output_tokens"}
	}
	return map[string]any{
		"id": b.id, "object": "response", "created_at": b.created, "status": status,
		"error": failure, "incomplete_details": incomplete, "instructions": b.rr.Instructions,
		"max_output_tokens": b.rr.MaxOutputTokens, "model": ModelID, "output": output,
		"parallel_tool_calls":  b.rr.ParallelToolCalls == nil || *b.rr.ParallelToolCalls,
		"previous_response_id": nil, "reasoning": map[string]any{"effort": nil, "summary": nil},
		"store": b.rr.Store == nil || *b.rr.Store, "temperature": 1.0, "text": text,
		"tool_choice": raw(b.rr.ToolChoice, `"auto"`), "tools": raw(b.rr.Tools, `[]`), "top_p": 1.0,
		"truncation": "disabled", "usage": use, "metadata": map[string]string{}, "user": nil,
	}
}

// final is the response done, as a non-streaming answer gives it and
// response.completed (or response.incomplete) carries it; usage: false
// leaves its usage null.
func (b *builder) final() map[string]any {
	use := &b.use
	if b.rule.Usage != nil && !*b.rule.Usage {
		use = nil
	}
	return b.object(b.status(), b.items, use, nil)
}

// event renders one typed event as an SSE frame: its type as the event
// name and in its data, with its sequence number.
func (b *builder) event(typ string, fields map[string]any) []byte {
	fields["type"], fields["sequence_number"] = typ, b.seq
	b.seq++
	data, _ := json.Marshal(fields)
	return fmt.Appendf(nil, "event: %s\ndata: %s\n\n", typ, data)
}

// events is the stream of the response: the opening events, the
// reasoning item's summary, each output item with its deltas, and
// response.completed; or, when the rule fails the response, the opening
// events and the failure.
func (b *builder) events() [][]byte {
	b.seq = 0
	empty := []any{}
	thought := b.items[0].(reasoningItem)
	opened := thought
	opened.Summary, opened.EncryptedContent = []summaryText{}, nil
	out := [][]byte{
		b.event("response.created", map[string]any{"response": b.object("in_progress", empty, nil, nil)}),
		b.event("response.in_progress", map[string]any{"response": b.object("in_progress", empty, nil, nil)}),
		b.event("response.output_item.added", map[string]any{"output_index": 0, "item": opened}),
	}
	if code := b.rule.failure(); code != "" {
		return append(out, b.failure(code))
	}
	at := map[string]any{"item_id": thought.ID, "output_index": 0, "summary_index": 0}
	with := func(extra map[string]any) map[string]any {
		m := map[string]any{}
		maps.Copy(m, at)
		maps.Copy(m, extra)
		return m
	}
	text := thought.Summary[0].Text
	out = append(out,
		b.event("response.reasoning_summary_part.added", with(map[string]any{"part": summaryText{Type: "summary_text", Text: ""}})),
		b.event("response.reasoning_summary_text.delta", with(map[string]any{"delta": text})),
		b.event("response.reasoning_summary_text.done", with(map[string]any{"text": text})),
		b.event("response.reasoning_summary_part.done", with(map[string]any{"part": summaryText{Type: "summary_text", Text: text}})),
		b.event("response.output_item.done", map[string]any{"output_index": 0, "item": thought}),
	)
	for i, item := range b.items[1:] {
		out = append(out, b.itemEvents(i+1, item)...)
	}
	return append(out, b.event("response."+b.status(), map[string]any{"response": b.final()}))
}

// itemEvents streams one output item: added, its deltas, done.
func (b *builder) itemEvents(index int, item any) [][]byte {
	var out [][]byte
	switch it := item.(type) {
	case messageItem:
		opened := it
		opened.Status, opened.Content = "in_progress", []outputText{}
		out = append(out, b.event("response.output_item.added", map[string]any{"output_index": index, "item": opened}))
		text := it.Content[0].Text
		at := func(extra map[string]any) map[string]any {
			extra["item_id"], extra["output_index"], extra["content_index"] = it.ID, index, 0
			return extra
		}
		out = append(out, b.event("response.content_part.added", at(map[string]any{
			"part": outputText{Type: "output_text", Text: "", Annotations: []any{}, Logprobs: []any{}}})))
		for _, word := range words(text) {
			out = append(out, b.event("response.output_text.delta", at(map[string]any{"delta": word, "logprobs": []any{}})))
		}
		out = append(out,
			b.event("response.output_text.done", at(map[string]any{"text": text, "logprobs": []any{}})),
			b.event("response.content_part.done", at(map[string]any{"part": it.Content[0]})))
	case functionCallItem:
		opened := it
		opened.Status, opened.Arguments = "in_progress", ""
		out = append(out, b.event("response.output_item.added", map[string]any{"output_index": index, "item": opened}))
		for _, p := range pieces(it.Arguments, argPiece) {
			out = append(out, b.event("response.function_call_arguments.delta", map[string]any{"item_id": it.ID, "output_index": index, "delta": p}))
		}
		out = append(out, b.event("response.function_call_arguments.done", map[string]any{
			"item_id": it.ID, "output_index": index, "name": it.Name, "arguments": it.Arguments}))
	}
	return append(out, b.event("response.output_item.done", map[string]any{"output_index": index, "item": item}))
}

// failure is the event that fails the response: an error event, in the
// shape OpenAI's servers send (the error nested, as the SDKs raise it),
// or response.failed with the error on the response.
func (b *builder) failure(code string) []byte {
	msg := failureMessage(code, b.rec)
	_, typ := statusOfCode(code)
	if b.rule.StreamError != "" {
		return b.event("error", map[string]any{"error": map[string]any{"type": typ, "code": code, "message": msg, "param": nil}})
	}
	return b.event("response.failed", map[string]any{"response": b.object("failed", []any{}, nil, &errorDetail{Code: &code, Message: msg})})
}
