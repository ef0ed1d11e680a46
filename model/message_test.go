package model_test

import (
	"encoding/json"
	"testing"

	"github.com/glidepath/glidepath/model"
	"github.com/openai/openai-go/v3"
)

// Each role becomes openai-go's message of that role, as a request sends
// it; an assistant's message with no content sends no content field.
func TestPlainMessagesBecomeTheRequestsMessagesOfTheirRoles(t *testing.T) {
	cases := []struct {
		name string
		msg  model.Message
		want string
	}{
		{"a system message is the system's", model.Message{Role: "system", Content: "Be brief."},
			`{"content":"Be brief.","role":"system"}`},
		{"a user message is the user's", model.Message{Role: "user", Content: "Hi."},
			`{"content":"Hi.","role":"user"}`},
		{"a tool message answers its call by id", model.Message{Role: "tool", Content: `{"ok":true}`, ToolCallID: "c1"},
			`{"content":"{\"ok\":true}","tool_call_id":"c1","role":"tool"}`},
		{"an assistant's calls are sent back with no content field when it said nothing",
			model.Message{Role: "assistant", ToolCalls: []model.ToolCall{{ID: "c1", Name: "search", Arguments: json.RawMessage(`{"q":"x"}`)}}},
			`{"tool_calls":[{"id":"c1","function":{"arguments":"{\"q\":\"x\"}","name":"search"},"type":"function"}],"role":"assistant"}`},
		{"an assistant's words are its content", model.Message{Role: "assistant", Content: "Done."},
			`{"content":"Done.","role":"assistant"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := model.Params([]model.Message{tc.msg})
			if len(got) != 1 {
				t.Fatalf("got %d messages, want 1", len(got))
			}
			b, err := json.Marshal(got[0])
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("got  %s\nwant %s", b, tc.want)
			}
		})
	}
}

// A role Params does not know is left out, not sent as another's.
func TestAMessageOfAnUnknownRoleIsLeftOut(t *testing.T) {
	if got := model.Params([]model.Message{{Role: "narrator", Content: "Meanwhile."}}); len(got) != 0 {
		t.Errorf("got %d messages, want none", len(got))
	}
}

// A Message is encoded with the names a workflow's history holds.
func TestAMessageEncodesWithItsHistorysNames(t *testing.T) {
	m := model.Message{Role: "assistant", ToolCalls: []model.ToolCall{{ID: "c1", Name: "search", Arguments: json.RawMessage(`{}`)}}}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"role":"assistant","tool_calls":[{"id":"c1","name":"search","arguments":{}}]}`; string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

// A reply's calls become plain data that sends them back as they came.
func TestAReplysCallsAsPlainDataAreSentBackAsTheyCame(t *testing.T) {
	var sdk openai.ChatCompletionMessageToolCallUnion
	sdk.ID, sdk.Type, sdk.Function.Name, sdk.Function.Arguments = "c1", "function", "search", `{"q":"x"}`
	calls := model.ToolCallsOf([]openai.ChatCompletionMessageToolCallUnion{sdk})
	b, err := json.Marshal(model.AssistantParam("", calls))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"tool_calls":[{"id":"c1","function":{"arguments":"{\"q\":\"x\"}","name":"search"},"type":"function"}],"role":"assistant"}`; string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	if got := model.ToolCallsOf(nil); got != nil {
		t.Errorf("no calls: got %v, want nil", got)
	}
}
