package sim

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// postResponse sends body to srv's /v1/responses.
func postResponse(t *testing.T, srv *Server, body string) *http.Response {
	t.Helper()
	res, err := srv.Client().Post(srv.URL+"/responses", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// event is one typed event of a Responses stream, when it came.
type event struct {
	at   time.Duration
	typ  string
	data map[string]any
}

// readEvents reads a Responses stream to its end, timing each event from
// start.
func readEvents(t *testing.T, res *http.Response, start time.Time) []event {
	t.Helper()
	defer res.Body.Close()
	var out []event
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	var typ string
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			typ = v
		}
		if v, ok := strings.CutPrefix(line, "data: "); ok {
			ev := event{at: time.Since(start), typ: typ}
			if err := json.Unmarshal([]byte(v), &ev.data); err != nil {
				t.Fatalf("data %q: %v", v, err)
			}
			if ev.data["type"] != typ {
				t.Errorf("event %s carries type %v", typ, ev.data["type"])
			}
			out = append(out, ev)
		}
	}
	return out
}

func TestAResponsesStreamOpensThenKeepsTheSilenceOfAReasoningModel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := NewPipeServer(&Scenario{Rules: []Rule{{FirstToken: 30 * time.Second}}})
		defer srv.Close()
		start := time.Now()
		events := readEvents(t, postResponse(t, srv, `{"model":"sim","input":"find cats","stream":true}`), start)
		var types []string
		for i, ev := range events {
			types = append(types, ev.typ)
			want := 30 * time.Second
			if i < 3 {
				want = 0
			}
			if ev.at != want {
				t.Errorf("event %d (%s) at %v, want %v", i, ev.typ, ev.at, want)
			}
			if n := ev.data["sequence_number"]; n != float64(i) {
				t.Errorf("event %d has sequence_number %v", i, n)
			}
		}
		want := "response.created response.in_progress response.output_item.added " +
			"response.reasoning_summary_part.added response.reasoning_summary_text.delta response.reasoning_summary_text.done " +
			"response.reasoning_summary_part.done response.output_item.done " +
			"response.output_item.added response.content_part.added"
		if got := strings.Join(types, " "); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "response.output_item.done response.completed") {
			t.Errorf("events %s", got)
		}
	})
}

func TestAResponsesStreamFailsAsTheRuleSays(t *testing.T) {
	cases := []struct {
		name     string
		rule     Rule
		stream   bool
		wantLast string // the last event's type; or, not streamed, the status
		wantCode string
	}{
		{"stream_error is an error event, its error nested", Rule{StreamError: "rate_limit_exceeded"}, true, "error", "rate_limit_exceeded"},
		{"failed is response.failed", Rule{Failed: "server_error"}, true, "response.failed", "server_error"},
		{"stream_error not streamed is its status", Rule{StreamError: "rate_limit_exceeded"}, false, "429", "rate_limit_exceeded"},
		{"failed not streamed is its status", Rule{Failed: "server_is_overloaded"}, false, "503", "server_is_overloaded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := NewServer(&Scenario{Rules: []Rule{tc.rule}})
			defer srv.Close()
			res := postResponse(t, srv, `{"model":"sim","input":"find cats","stream":`+map[bool]string{true: "true", false: "false"}[tc.stream]+`}`)
			if !tc.stream {
				var body errorBody
				json.NewDecoder(res.Body).Decode(&body)
				res.Body.Close()
				if got := res.Status[:3]; got != tc.wantLast || body.Error.Code == nil || *body.Error.Code != tc.wantCode {
					t.Errorf("status %s, error %+v; want %s with code %s", res.Status, body.Error, tc.wantLast, tc.wantCode)
				}
				return
			}
			events := readEvents(t, res, time.Now())
			if len(events) != 4 {
				t.Fatalf("%d events, want the 3 opening ones and the failure", len(events))
			}
			last := events[3]
			var code any
			switch last.typ {
			case "error":
				code = last.data["error"].(map[string]any)["code"]
			case "response.failed":
				code = last.data["response"].(map[string]any)["error"].(map[string]any)["code"]
			}
			if last.typ != tc.wantLast || code != tc.wantCode {
				t.Errorf("last event %s with code %v, want %s with %s", last.typ, code, tc.wantLast, tc.wantCode)
			}
		})
	}
}

func TestTheResponsesAPIRefusesWhatOpenAIRefuses(t *testing.T) {
	cases := []struct {
		name, body string
		wantParam  string
		wantText   string
	}{
		{"a body that is not JSON", `nope`, "", "We could not parse the JSON body"},
		{"no model", `{"input":"x"}`, "model", "Missing required parameter: 'model'."},
		{"no input", `{"model":"sim"}`, "input", "Missing required parameter: 'input'."},
		{"an output that answers no call", `{"model":"sim","input":[{"role":"user","content":"x"},{"type":"function_call_output","call_id":"c9","output":"3"}]}`,
			"input", "No tool call found for function call output with call_id c9."},
		{"a call left unanswered", `{"model":"sim","input":[{"role":"user","content":"x"},{"type":"function_call","call_id":"c1","name":"s","arguments":"{}"}]}`,
			"input", "No tool output found for function call c1."},
		{"a tool_choice naming a function not offered", `{"model":"sim","input":"x","tools":[{"type":"function","name":"a"}],"tool_choice":{"type":"function","name":"b"}}`,
			"tool_choice", "Invalid value for 'tool_choice': function 'b' not found in 'tools'."},
		{"a tool that is not a function", `{"model":"sim","input":"x","tools":[{"type":"web_search"}]}`,
			"tools[0].type", "The sim supports only 'function' tools."},
		{"an item of a type not served", `{"model":"sim","input":[{"type":"item_reference","id":"msg_1"}]}`,
			"input[0].type", "Invalid value: 'item_reference'."},
	}
	srv := NewServer(nil)
	defer srv.Close()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := postResponse(t, srv, tc.body)
			defer res.Body.Close()
			var body errorBody
			if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			param := ""
			if body.Error.Param != nil {
				param = *body.Error.Param
			}
			if res.StatusCode != 400 || param != tc.wantParam || !strings.Contains(body.Error.Message, tc.wantText) {
				t.Errorf("%d param %q %q; want 400 param %q containing %q", res.StatusCode, param, body.Error.Message, tc.wantParam, tc.wantText)
			}
		})
	}
}

func TestResponsesAndChatCompletionsShareTheRequestCountAndTheTurns(t *testing.T) {
	srv := NewServer(&Scenario{Rules: []Rule{{Request: 2, Status: 500}}})
	defer srv.Close()
	chat, err := srv.Client().Post(srv.URL+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"sim","messages":[{"role":"user","content":"x"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	chat.Body.Close()
	res := postResponse(t, srv, `{"model":"sim","input":[{"role":"user","content":"x"},{"type":"reasoning","id":"rs_1","summary":[]},
		{"role":"assistant","content":"calling"},{"type":"function_call","call_id":"c1","name":"s","arguments":"{}"},
		{"type":"function_call_output","call_id":"c1","output":"ok"}]}`)
	res.Body.Close()
	if res.StatusCode != 500 {
		t.Errorf("the second model request, a response, got %d, want the rule's 500", res.StatusCode)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[1].Completion != 2 || reqs[1].Turn != 2 || reqs[1].Path != "/v1/responses" ||
		len(reqs[1].Reasoning) != 1 || reqs[1].Reasoning[0] != "rs_1" {
		t.Fatalf("records %+v", reqs)
	}
	m := reqs[1].Messages
	if len(m) != 3 || m[1].Role != "assistant" || m[1].Content != "calling" || len(m[1].ToolCalls) != 1 || m[2].ToolCallID != "c1" {
		t.Errorf("conversation %+v, want the reasoning, message and call as one assistant turn", m)
	}
}

func TestStreamErrorAndFailedParseAndConflict(t *testing.T) {
	sc, err := ParseScenario([]byte("rules:\n  - turn: 1\n    stream_error: rate_limit_exceeded\n  - failed: server_error\n"))
	if err != nil || sc.Rules[0].StreamError != "rate_limit_exceeded" || sc.Rules[1].Failed != "server_error" {
		t.Fatalf("%+v, %v", sc, err)
	}
	for in, field := range map[string]string{
		"rules:\n  - stream_error: a\n    failed: b\n":  "rules[0].failed",
		"rules:\n  - stream_error: a\n    answer: b\n":  "rules[0].answer",
		"rules:\n  - status: 500\n    failed: b\n":      "rules[0].failed",
		"rules:\n  - hang: true\n    stream_error: a\n": "rules[0].stream_error",
	} {
		_, err := ParseScenario([]byte(in))
		if se, ok := err.(*ScenarioError); !ok || se.Field != field {
			t.Errorf("%q: %v, want an error about %s", in, err, field)
		}
	}
}
