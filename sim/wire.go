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

	tools []wireTool // Tools decoded, by validate
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
		return nil, &apiError{400, "model", "you must provide a model parameter"}
	}
	if len(req.Messages) == 0 {
		return nil, &apiError{400, "messages", "[] is too short - 'messages'"}
	}
	out := make([]Message, 0, len(req.Messages))
	var open []string // tool call ids not yet answered
	for i, wm := range req.Messages {
		text, err := wm.text()
		if err != nil {
			return nil, &apiError{400, fmt.Sprintf("messages.[%d].content", i), err.Error()}
		}
		m := Message{Role: wm.Role, Content: text, Name: wm.Name, ToolCallID: wm.ToolCallID}
		switch wm.Role {
		case "system", "developer", "user", "assistant", "function":
		case "tool":
			at := slices.Index(open, wm.ToolCallID)
			if at < 0 {
				return nil, &apiError{400, fmt.Sprintf("messages.[%d].role", i),
					"Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."}
			}
			open = slices.Delete(open, at, at+1)
			out = append(out, m)
			continue
		default:
			return nil, &apiError{400, fmt.Sprintf("messages.[%d].role", i),
				fmt.Sprintf("Invalid value: '%s'. Supported values are: 'system', 'developer', 'user', 'assistant', 'tool', and 'function'.", wm.Role)}
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
	return &apiError{400, fmt.Sprintf("messages.[%d].role", i),
		"An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: " +
			strings.Join(ids, ", ")}
}

// decodeTools reads the tools field: absent and null offer none.
func (req *chatRequest) decodeTools() *apiError {
	raw := bytes.TrimSpace(req.Tools)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, &req.tools); err != nil {
		return &apiError{400, "tools", "tools must be an array of {type: \"function\", function: {name, description, parameters}}"}
	}
	for i, t := range req.tools {
		if t.Type != "function" {
			return &apiError{400, fmt.Sprintf("tools[%d].type", i), fmt.Sprintf("Invalid value: '%s'. The sim supports only 'function' tools.", t.Type)}
		}
		if t.Function.Name == "" {
			return &apiError{400, fmt.Sprintf("tools[%d].function.name", i), "Missing required parameter: 'tools[" + fmt.Sprint(i) + "].function.name'."}
		}
	}
	return nil
}

// toolChoiceNone reports whether tool_choice is "none".
func (req *chatRequest) toolChoiceNone() bool {
	return string(bytes.TrimSpace(req.ToolChoice)) == `"none"`
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
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
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
