package sim

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

const (
	searchTool = `{"type":"function","function":{"name":"search","description":"web search",
		"parameters":{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer"}},"required":["query"]}}}`
	fetchTool = `{"type":"function","function":{"name":"fetch","parameters":{"type":"object",
		"properties":{"url":{"type":"string","format":"uri"}},"required":["url"]}}}`
	skippedTool = `{"type":"function","function":{"name":"delete_all","description":"dangerous [sim:skip]"}}`
)

// conversationOf decodes a request body as the handler does.
func conversationOf(t *testing.T, body string) (*chatRequest, []Message) {
	t.Helper()
	var req chatRequest
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatalf("bad test body: %v", err)
	}
	if e := req.decodeTools(); e != nil {
		t.Fatalf("bad test tools: %s", e.msg)
	}
	msgs, e := req.messages()
	if e != nil {
		t.Fatalf("bad test messages: %s", e.msg)
	}
	if e := req.decodeOptions(msgs); e != nil {
		t.Fatalf("bad test options: %s", e.msg)
	}
	return &req, msgs
}

func TestTheDefaultPolicyCallsEachUsefulToolOnceThenAnswers(t *testing.T) {
	called := `{"role":"assistant","content":null,"tool_calls":[
		{"id":"c1","type":"function","function":{"name":"search","arguments":"{}"}},
		{"id":"c2","type":"function","function":{"name":"fetch","arguments":"{}"}}]}`
	cases := []struct {
		name        string
		body        string
		wantCalls   []string // name and arguments of each call
		wantContent string
	}{
		{
			name:      "calls every offered tool at once",
			body:      `{"model":"sim","messages":[{"role":"user","content":"find cats"}],"tools":[` + searchTool + `,` + fetchTool + `]}`,
			wantCalls: []string{`search {"query":"find cats"}`, `fetch {"url":"https://example.com/sim"}`},
		},
		{
			name:      "calls one tool per turn when parallel tool calls are off",
			body:      `{"model":"sim","parallel_tool_calls":false,"messages":[{"role":"user","content":"find cats"}],"tools":[` + searchTool + `,` + fetchTool + `]}`,
			wantCalls: []string{`search {"query":"find cats"}`},
		},
		{
			name:      "never calls a tool marked [sim:skip]",
			body:      `{"model":"sim","messages":[{"role":"user","content":"x"}],"tools":[` + skippedTool + `,` + searchTool + `]}`,
			wantCalls: []string{`search {"query":"x"}`},
		},
		{
			name: "calls only the tools not yet called",
			body: `{"model":"sim","messages":[{"role":"user","content":"find cats"},
				{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"search","arguments":"{}"}}]},
				{"role":"tool","tool_call_id":"c1","content":"3 cats"}],"tools":[` + searchTool + `,` + fetchTool + `]}`,
			wantCalls: []string{`fetch {"url":"https://example.com/sim"}`},
		},
		{
			name: "answers from the results once every tool has one",
			body: `{"model":"sim","messages":[{"role":"user","content":"find cats"},` + called + `,
				{"role":"tool","tool_call_id":"c1","content":"3 cats"},
				{"role":"tool","tool_call_id":"c2","content":[{"type":"text","text":"a page\nabout cats"}]}],
				"tools":[` + searchTool + `,` + fetchTool + `,` + skippedTool + `]}`,
			wantContent: `[sim] Answer to "find cats": search returned 3 cats; fetch returned a page about cats.`,
		},
		{
			name: "answers with the failures it saw",
			body: `{"model":"sim","messages":[{"role":"user","content":"find cats"},` + called + `,
				{"role":"tool","tool_call_id":"c1","content":"Error: search timed out"},
				{"role":"tool","tool_call_id":"c2","content":"{\"error\":\"404\"}"}],"tools":[` + searchTool + `,` + fetchTool + `]}`,
			wantContent: `[sim] Answer to "find cats": search failed: Error: search timed out; fetch failed: {"error":"404"}.`,
		},
		{
			name:        "answers without calling when tool_choice is none",
			body:        `{"model":"sim","tool_choice":"none","messages":[{"role":"user","content":"find cats"}],"tools":[` + searchTool + `]}`,
			wantContent: `[sim] Answer to "find cats": no tool results.`,
		},
		{
			name: "summarizes what is and is not established when offered no tools",
			body: `{"model":"sim","messages":[{"role":"user","content":"find cats"},` + called + `,
				{"role":"tool","tool_call_id":"c1","content":"3 cats"},
				{"role":"tool","tool_call_id":"c2","content":"error: timeout"},
				{"role":"user","content":"Budget: 2s left. Summarize."}]}`,
			wantContent: "[sim] Summary of \"find cats\"\nEstablished: search returned 3 cats.\nNot established: fetch failed: error: timeout.",
		},
		{
			name:        "summarizes an empty conversation when offered an empty tools list",
			body:        `{"model":"sim","tools":[],"messages":[{"role":"user","content":"find cats"}]}`,
			wantContent: "[sim] Summary of \"find cats\"\nEstablished: nothing.\nNot established: nothing.",
		},
		{
			name:      "leaves the budget note out of the task",
			body:      `{"model":"sim","messages":[{"role":"system","content":"You are an agent.\n[budget] 40s left, phase explore"},{"role":"user","content":"find cats\nBudget: 40s left"}],"tools":[` + searchTool + `]}`,
			wantCalls: []string{`search {"query":"find cats"}`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, msgs := conversationOf(t, tc.body)
			rep := decide(req, msgs, 0, 0)
			var calls []string
			for _, c := range rep.toolCalls {
				calls = append(calls, c.Name+" "+c.Arguments)
				if !strings.HasPrefix(c.ID, "call_sim_") {
					t.Errorf("call id %q does not say it is the sim's", c.ID)
				}
			}
			if !reflect.DeepEqual(calls, tc.wantCalls) || rep.content != tc.wantContent {
				t.Errorf("calls %q content %q\nwant calls %q content %q", calls, rep.content, tc.wantCalls, tc.wantContent)
			}
			wantFinish := "stop"
			if len(tc.wantCalls) > 0 {
				wantFinish = "tool_calls"
			}
			if got := rep.finishReason(); got != wantFinish {
				t.Errorf("finish reason %q, want %q", got, wantFinish)
			}
		})
	}
}

func TestSummaryCallsAToolCallWithoutAResultNotEstablished(t *testing.T) {
	// The handler refuses such conversations as OpenAI does; the policy
	// still labels them rather than guess.
	msgs := []Message{
		{Role: "user", Content: "book a flight"},
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "a", Name: "lookup"}, {ID: "b", Name: "book"}}},
		{Role: "tool", ToolCallID: "a", Content: "flight 12"},
	}
	got := decide(&chatRequest{}, msgs, 0, 0).content
	want := "[sim] Summary of \"book a flight\"\nEstablished: lookup returned flight 12.\nNot established: book has no result."
	if got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
}

func TestDefaultPolicyIsDeterministicForASeed(t *testing.T) {
	body := `{"model":"sim","messages":[{"role":"user","content":"find cats"}],"tools":[` + searchTool + `,
		{"type":"function","function":{"name":"tag","parameters":{"type":"object","properties":{"label":{"type":"string"}},"required":["label"]}}}]}`
	req, msgs := conversationOf(t, body)
	a, b, other := decide(req, msgs, 1, 0), decide(req, msgs, 1, 0), decide(req, msgs, 2, 0)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("the same seed gave %+v and %+v", a, b)
	}
	if a.toolCalls[0].ID == other.toolCalls[0].ID || a.toolCalls[1].Arguments == other.toolCalls[1].Arguments {
		t.Errorf("seeds 1 and 2 gave the same ids or strings: %+v, %+v", a, other)
	}
}

func TestBudgetNoteIsTheLastNoteSeen(t *testing.T) {
	_, msgs := conversationOf(t, `{"model":"sim","messages":[
		{"role":"system","content":"Budget: 60s left"},
		{"role":"user","content":"plan a trip on a budget"},
		{"role":"user","content":"  [Budget] 12s left, phase fit"}]}`)
	cv := readConversation(msgs)
	if cv.note != "[Budget] 12s left, phase fit" || cv.task != "plan a trip on a budget" {
		t.Errorf("note %q task %q", cv.note, cv.task)
	}
}

func TestAToolResultFailedWhenItSaysError(t *testing.T) {
	cases := map[string]bool{
		"error: timeout":           true,
		"  ERROR 500":              true,
		`{"error":"boom"}`:         true,
		`{"error":{"code":1}}`:     true,
		`{"error":null,"ok":true}`: false,
		`{"result":"fine"}`:        false,
		"3 results":                false,
		"":                         false,
		"err":                      false,
	}
	for in, want := range cases {
		if got := isErrorResult(in); got != want {
			t.Errorf("isErrorResult(%q) = %v, want %v", in, got, want)
		}
	}
}
