package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// The wire shapes below follow openai-go v3's ChatCompletion,
// ChatCompletionChunk and their params, limited to what the sim reads or
// writes. Fields the SDK marks nullable are sent as null, as OpenAI does.

type chatRequest struct {
	Model             string          `json:"model"`
	Messages          []wireMessage   `json:"messages"`
	Tools             json.RawMessage `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	Stream            bool            `json:"stream"`
	StreamOptions     *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	N              *int            `json:"n"`
	ResponseFormat json.RawMessage `json:"response_format"`

	MaxCompletionTokens *int64 `json:"max_completion_tokens"`
	MaxTokens           *int64 `json:"max_tokens"`
	maxOutputTokens     *int64 // a Responses request's max_output_tokens, read in its stead
	limit               int64  // the limit read, by decodeLimit: 0 when none

	tools  []wireTool     // Tools decoded, by decodeTools
	choice toolChoice     // ToolChoice decoded, by decodeToolChoice
	n      int            // N read, by decodeN: 1 when absent
	format responseFormat // ResponseFormat decoded, by decodeFormat
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// apiError is a 4xx answer about the request itself, in OpenAI's words
// where OpenAI has them.
type apiError struct {
	status int
	param  string
	msg    string
	code   string // empty: the code [writeError] gives the status
}

// invalid is a 400 about param.
func invalid(param, msg string) *apiError {
	return &apiError{status: 400, param: param, msg: msg}
}

// text flattens a message content: a string, or an array of parts whose
// text parts are joined. Other parts (images, audio) have no text.
func (m *wireMessage) text() (string, error) {
	c := bytes.TrimSpace(m.Content)
	if len(c) == 0 || string(c) == "null" {
		return "", nil
	}
	if c[0] == '"' {
		var s string
		err := json.Unmarshal(c, &s)
		return s, err
	}
	var parts []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	}
	if err := json.Unmarshal(c, &parts); err != nil {
		return "", fmt.Errorf("content must be a string or an array of content parts")
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
		b.WriteString(p.Refusal)
	}
	return b.String(), nil
}

// messages turns the request's messages into their recorded form and
// checks them the way OpenAI does: known roles, and every assistant tool
// call answered by a tool message before the conversation goes on.
func (req *chatRequest) messages() ([]Message, *apiError) {
	if req.Model == "" {
		return nil, invalid("model", "you must provide a model parameter")
	}
	if len(req.Messages) == 0 {
		return nil, invalid("messages", "[] is too short - 'messages'")
	}
	out := make([]Message, 0, len(req.Messages))
	var open []string // tool call ids not yet answered
	for i, wm := range req.Messages {
		text, err := wm.text()
		if err != nil {
			return nil, invalid(fmt.Sprintf("messages.[%d].content", i), err.Error())
		}
		m := Message{Role: wm.Role, Content: text, Name: wm.Name, ToolCallID: wm.ToolCallID}
		switch wm.Role {
		case "system", "developer", "user", "assistant", "function":
		case "tool":
			at := slices.Index(open, wm.ToolCallID)
			if at < 0 {
				return nil, invalid(fmt.Sprintf("messages.[%d].role", i),
					"Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.")
			}
			open = slices.Delete(open, at, at+1)
			out = append(out, m)
			continue
		default:
			return nil, invalid(fmt.Sprintf("messages.[%d].role", i),
				fmt.Sprintf("Invalid value: '%s'. Supported values are: 'system', 'developer', 'user', 'assistant', 'tool', and 'function'.", wm.Role))
		}
		if len(open) > 0 {
			return nil, unanswered(i, open)
		}
		for _, c := range wm.ToolCalls {
			m.ToolCalls = append(m.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
			open = append(open, c.ID)
		}
		out = append(out, m)
	}
	if len(open) > 0 {
		return nil, unanswered(len(req.Messages), open)
	}
	return out, nil
}

func unanswered(i int, ids []string) *apiError {
	return invalid(fmt.Sprintf("messages.[%d].role", i),
		"An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: "+
			strings.Join(ids, ", "))

}

// decodeTools reads the tools field: absent and null offer none.
func (req *chatRequest) decodeTools() *apiError {
	raw := bytes.TrimSpace(req.Tools)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, &req.tools); err != nil {
		return invalid("tools", "tools must be an array of {type: \"function\", function: {name, description, parameters}}")
	}
	for i, t := range req.tools {
		if t.Type != "function" {
			return invalid(fmt.Sprintf("tools[%d].type", i), fmt.Sprintf("Invalid value: '%s'. The sim supports only 'function' tools.", t.Type))
		}
		if t.Function.Name == "" {
			return invalid(fmt.Sprintf("tools[%d].function.name", i), "Missing required parameter: 'tools["+fmt.Sprint(i)+"].function.name'.")
		}
	}
	return nil
}

// toolChoice is tool_choice decoded.
type toolChoice struct {
	mode    string   // "auto" (also when absent), "none" or "required"
	name    string   // the function a named choice forces (mode "required"); empty for none
	allowed []string // allowed_tools: the only tools the sim may call; nil: every offered tool
	record  string   // as [Request.ToolChoice] records it
}

// decodeToolChoice reads tool_choice and checks it against the tools
// offered, as OpenAI does: a choice needs tools, and a tool it names
// must be one of them. It needs the tools decoded.
func (req *chatRequest) decodeToolChoice() *apiError {
	req.choice = toolChoice{mode: "auto"}
	raw := bytes.TrimSpace(req.ToolChoice)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	c, e := readToolChoice(raw)
	if e != nil {
		return e
	}
	req.choice = c
	if len(req.tools) == 0 {
		return invalid("tool_choice", "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.")
	}
	for _, name := range append([]string{c.name}, c.allowed...) {
		if name != "" && !slices.ContainsFunc(req.tools, func(t wireTool) bool { return t.Function.Name == name }) {
			return invalid("tool_choice", fmt.Sprintf("Invalid value for 'tool_choice': function '%s' not found in 'tools'.", name))
		}
	}
	return nil
}

// readToolChoice reads the shape of a tool_choice: a mode, a named
// function, or an allowed_tools list.
func readToolChoice(raw []byte) (toolChoice, *apiError) {
	var mode string
	if json.Unmarshal(raw, &mode) == nil {
		if mode != "none" && mode != "auto" && mode != "required" {
			return toolChoice{}, invalid("tool_choice", fmt.Sprintf("Invalid value: '%s'. Supported values are: 'none', 'auto', and 'required'.", mode))
		}
		return toolChoice{mode: mode, record: mode}, nil
	}
	type named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	var obj struct {
		named
		AllowedTools struct {
			Mode  string  `json:"mode"`
			Tools []named `json:"tools"`
		} `json:"allowed_tools"`
	}
	if json.Unmarshal(raw, &obj) != nil {
		return toolChoice{}, invalid("tool_choice", "Invalid type for 'tool_choice': expected 'none', 'auto', 'required' or an object.")
	}
	switch obj.Type {
	case "function":
		if obj.Function.Name == "" {
			return toolChoice{}, invalid("tool_choice.function.name", "Missing required parameter: 'tool_choice.function.name'.")
		}
		return toolChoice{mode: "required", name: obj.Function.Name, record: "function:" + obj.Function.Name}, nil
	case "allowed_tools":
		at := obj.AllowedTools
		if at.Mode != "auto" && at.Mode != "required" {
			return toolChoice{}, invalid("tool_choice.allowed_tools.mode",
				fmt.Sprintf("Invalid value: '%s'. Supported values are: 'auto' and 'required'.", at.Mode))
		}
		if len(at.Tools) == 0 {
			return toolChoice{}, invalid("tool_choice.allowed_tools.tools",
				"Invalid 'tool_choice.allowed_tools.tools': empty array. Expected an array with minimum length 1, but got an empty array instead.")
		}
		c := toolChoice{mode: at.Mode, record: "allowed_tools:" + at.Mode}
		for i, t := range at.Tools {
			if t.Type != "function" || t.Function.Name == "" {
				return toolChoice{}, invalid(fmt.Sprintf("tool_choice.allowed_tools.tools[%d]", i),
					"The sim allows only function tools, named as {type: \"function\", function: {name}}.")
			}
			c.allowed = append(c.allowed, t.Function.Name)
		}
		return c, nil
	}
	return toolChoice{}, invalid("tool_choice.type",
		fmt.Sprintf("Invalid value: '%s'. The sim supports tool_choice of type 'function' and 'allowed_tools'.", obj.Type))
}

// decodeOptions reads what shapes the answer: tool_choice, n and
// response_format. It needs the tools and messages decoded.
func (req *chatRequest) decodeOptions(msgs []Message) *apiError {
	if e := req.decodeToolChoice(); e != nil {
		return e
	}
	if e := req.decodeN(); e != nil {
		return e
	}
	if e := req.decodeLimit(); e != nil {
		return e
	}
	return req.decodeFormat(msgs)
}

// maxChoices is the largest n OpenAI accepts.
const maxChoices = 128

// decodeN reads n, the number of choices: absent or null is 1.
func (req *chatRequest) decodeN() *apiError {
	req.n = 1
	if req.N == nil {
		return nil
	}
	switch n := *req.N; {
	case n < 1:
		e := invalid("n", fmt.Sprintf("Invalid 'n': integer below minimum value. Expected a value >= 1, but got %d instead.", n))
		e.code = "integer_below_min_value"
		return e
	case n > maxChoices:
		e := invalid("n", fmt.Sprintf("Invalid 'n': integer above maximum value. Expected a value <= %d, but got %d instead.", maxChoices, n))
		e.code = "integer_above_max_value"
		return e
	default:
		req.n = n
	}
	return nil
}

type completion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	SystemFingerprint string       `json:"system_fingerprint"`
	Choices           []choice     `json:"choices"`
	Usage             *usageReport `json:"usage,omitempty"`
}

type choice struct {
	Index        int        `json:"index"`
	Message      outMessage `json:"message"`
	Logprobs     *struct{}  `json:"logprobs"`
	FinishReason string     `json:"finish_reason"`
}

type outMessage struct {
	Role      string        `json:"role"`
	Content   *string       `json:"content"`
	Refusal   *string       `json:"refusal"`
	ToolCalls []outToolCall `json:"tool_calls,omitempty"`
}

type outToolCall struct {
	Index    *int        `json:"index,omitempty"` // only in chunks
	ID       string      `json:"id,omitempty"`
	Type     string      `json:"type,omitempty"`
	Function outFunction `json:"function"`
}

type outFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type chunk struct {
	ID                string        `json:"id"`
	Object            string        `json:"object"`
	Created           int64         `json:"created"`
	Model             string        `json:"model"`
	SystemFingerprint string        `json:"system_fingerprint"`
	Choices           []chunkChoice `json:"choices"`
	Usage             *usageReport  `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int       `json:"index"`
	Delta        delta     `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type delta struct {
	Role      string        `json:"role,omitempty"`
	Content   *string       `json:"content,omitempty"`
	ToolCalls []outToolCall `json:"tool_calls,omitempty"`
}

type usageReport struct {
	PromptTokens      int                `json:"prompt_tokens"`
	CompletionTokens  int                `json:"completion_tokens"`
	TotalTokens       int                `json:"total_tokens"`
	PromptDetails     *promptDetails     `json:"prompt_tokens_details,omitempty"`
	CompletionDetails *completionDetails `json:"completion_tokens_details,omitempty"`
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}
