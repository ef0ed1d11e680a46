package sim

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

func TestAReplyLongerThanItsLimitIsCutThere(t *testing.T) {
	search := ToolCall{ID: "call_1", Name: "search", Arguments: `{"query":"find cats"}`} // 27 bytes: 7 tokens
	cases := []struct {
		name       string
		rep        reply
		reasoning  int
		limit      int64
		want       reply
		wantFinish string
		wantTokens int
	}{
		{"no limit leaves it whole", reply{content: "abcdefghij"}, 2, 0,
			reply{content: "abcdefghij", reasoning: 2}, "stop", 5},
		{"a reply that fits exactly is whole", reply{content: "abcdefgh"}, 0, 2,
			reply{content: "abcdefgh"}, "stop", 2},
		{"a longer answer keeps four bytes a token", reply{content: "abcdefghij"}, 0, 2,
			reply{content: "abcdefgh", limit: 2}, "length", 2},
		{"a rune is never split", reply{content: "ab☕cdef"}, 0, 1,
			reply{content: "ab", limit: 1}, "length", 1},
		{"reasoning is spent first", reply{content: "abcdefghijkl"}, 3, 5,
			reply{content: "abcdefgh", reasoning: 3, limit: 5}, "length", 5},
		{"reasoning that takes the whole limit leaves no reply", reply{content: "abcd"}, 10, 4,
			reply{reasoning: 4, limit: 4}, "length", 4},
		{"a tool call is cut in its arguments", reply{toolCalls: []ToolCall{search}}, 0, 3,
			reply{toolCalls: []ToolCall{{ID: "call_1", Name: "search", Arguments: `{"quer`}}, limit: 3}, "length", 3},
		{"a call whose name does not fit is not begun", reply{toolCalls: []ToolCall{{Name: "a", Arguments: "{}"}, search}}, 0, 2,
			reply{toolCalls: []ToolCall{{Name: "a", Arguments: "{}"}}, limit: 2}, "length", 2},
		{"a cut answer begins no call", reply{content: "hello world", toolCalls: []ToolCall{search}}, 0, 1,
			reply{content: "hell", limit: 1}, "length", 1},
		{"a tool call that fits is whole", reply{toolCalls: []ToolCall{search}}, 1, 8,
			reply{toolCalls: []ToolCall{search}, reasoning: 1}, "tool_calls", 8},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.rep.spend(tc.reasoning, tc.limit)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("spend(%d, %d) = %+v, want %+v", tc.reasoning, tc.limit, got, tc.want)
			}
			if f := got.finishReason(); f != tc.wantFinish {
				t.Errorf("finish reason %q, want %q", f, tc.wantFinish)
			}
			if n := got.outputTokens(); n != tc.wantTokens {
				t.Errorf("output tokens %d, want %d", n, tc.wantTokens)
			}
		})
	}
}

// landingAnswer is the sim's summary of a conversation of one user
// message, "hi there": 73 bytes, 19 tokens.
const landingAnswer = "[sim] Summary of \"hi there\"\nEstablished: nothing.\nNot established: nothing."

func TestAChatAnswerIsCutAtItsMaxCompletionTokens(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole", true: "streamed"}[stream], func(t *testing.T) {
			srv := NewServer(nil)
			defer srv.Close()
			params := userAsks("hi there")
			params.MaxCompletionTokens = openai.Int(5)
			msg, finish, use, err := complete(t.Context(), clientFor(srv), params, stream)
			if err != nil {
				t.Fatal(err)
			}
			if msg.Content != landingAnswer[:20] || finish != "length" || use.CompletionTokens != 5 {
				t.Errorf("answer %q, finish %q, %d output tokens; want %q, length, 5", msg.Content, finish, use.CompletionTokens, landingAnswer[:20])
			}
			if got := srv.Requests()[0].MaxOutputTokens; got != 5 {
				t.Errorf("recorded limit %d, want 5", got)
			}
		})
	}
}

func TestAnAnswerWithinItsLimitIsWhole(t *testing.T) {
	srv := NewServer(nil)
	defer srv.Close()
	params := userAsks("hi there")
	params.MaxCompletionTokens = openai.Int(19)
	msg, finish, use, err := complete(t.Context(), clientFor(srv), params, true)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Content != landingAnswer || finish != "stop" || use.CompletionTokens != 19 {
		t.Errorf("answer %q, finish %q, %d output tokens; want the whole answer, stop, 19", msg.Content, finish, use.CompletionTokens)
	}
}

func TestTheLegacyMaxTokensIsALimitToo(t *testing.T) {
	srv := NewServer(nil)
	defer srv.Close()
	params := userAsks("hi there")
	params.MaxTokens = openai.Int(7)
	_, finish, use, err := complete(t.Context(), clientFor(srv), params, false)
	if err != nil {
		t.Fatal(err)
	}
	if finish != "length" || use.CompletionTokens != 7 || srv.Requests()[0].MaxOutputTokens != 7 {
		t.Errorf("finish %q, %d tokens, recorded %d; want length, 7, 7", finish, use.CompletionTokens, srv.Requests()[0].MaxOutputTokens)
	}
}

func TestATruncatedToolCallIsSentAsFarAsItGotWithFinishReasonLength(t *testing.T) {
	srv := NewServer(nil)
	defer srv.Close()
	params := userAsks("find cats")
	params.Tools = []openai.ChatCompletionToolUnionParam{tool("search", "query")}
	params.MaxCompletionTokens = openai.Int(3)
	msg, finish, _, err := complete(t.Context(), clientFor(srv), params, true)
	if err != nil {
		t.Fatal(err)
	}
	if finish != "length" || len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Name != "search" ||
		json.Valid([]byte(msg.ToolCalls[0].Function.Arguments)) {
		t.Errorf("finish %q, calls %+v; want length and one search call with its arguments cut short", finish, msg.ToolCalls)
	}
}

func TestALimitBelowWhatTheAPIAcceptsIsA400(t *testing.T) {
	srv := NewServer(nil)
	defer srv.Close()
	c := clientFor(srv)
	params := userAsks("hi there")
	params.MaxCompletionTokens = openai.Int(0)
	_, err := c.Chat.Completions.New(t.Context(), params)
	if e, ok := errors.AsType[*openai.Error](err); !ok || e.StatusCode != 400 || e.Param != "max_completion_tokens" ||
		!strings.Contains(e.Message, "Expected a value >= 1, but got 0 instead.") {
		t.Errorf("chat: %v, want a 400 about max_completion_tokens", err)
	}
	_, err = c.Responses.New(t.Context(), responses.ResponseNewParams{Model: "sim",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi there")}, MaxOutputTokens: openai.Int(15)})
	if e, ok := errors.AsType[*openai.Error](err); !ok || e.StatusCode != 400 || e.Param != "max_output_tokens" ||
		!strings.Contains(e.Message, "Expected a value >= 16, but got 15 instead.") {
		t.Errorf("responses: %v, want a 400 about max_output_tokens", err)
	}
}

func TestAResponseCutAtMaxOutputTokensIsIncomplete(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole", true: "streamed"}[stream], func(t *testing.T) {
			srv := NewServer(nil)
			defer srv.Close()
			c := clientFor(srv)
			params := responses.ResponseNewParams{Model: "sim",
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi there")}, MaxOutputTokens: openai.Int(16)}
			var r *responses.Response
			if stream {
				s := c.Responses.NewStreaming(t.Context(), params)
				for s.Next() {
					if ev := s.Current(); ev.Type == "response.incomplete" || ev.Type == "response.completed" {
						r = new(ev.Response)
					}
				}
				if s.Err() != nil || r == nil {
					t.Fatalf("stream ended %v with no end event", s.Err())
				}
			} else {
				var err error
				if r, err = c.Responses.New(t.Context(), params); err != nil {
					t.Fatal(err)
				}
			}
			// "[sim] Next: answer." is 5 reasoning tokens, which leaves the
			// answer 11: 44 bytes.
			if r.Status != "incomplete" || r.IncompleteDetails.Reason != "max_output_tokens" || r.MaxOutputTokens != 16 {
				t.Errorf("status %q, incomplete %+v, max_output_tokens %d; want incomplete for max_output_tokens at 16", r.Status, r.IncompleteDetails, r.MaxOutputTokens)
			}
			if u := r.Usage; u.OutputTokens != 16 || u.OutputTokensDetails.ReasoningTokens != 5 {
				t.Errorf("usage %d out, %d reasoning; want 16, 5", u.OutputTokens, u.OutputTokensDetails.ReasoningTokens)
			}
			if got := r.OutputText(); got != landingAnswer[:44] {
				t.Errorf("text %q, want %q", got, landingAnswer[:44])
			}
			if last := r.Output[len(r.Output)-1]; last.Status != "incomplete" {
				t.Errorf("the cut message's status %q, want incomplete", last.Status)
			}
			if got := srv.Requests()[0].MaxOutputTokens; got != 16 {
				t.Errorf("recorded limit %d, want 16", got)
			}
		})
	}
}

func TestARuleReportsCachedAndReasoningTokensOnBothAPIs(t *testing.T) {
	srv := NewServer(&Scenario{Rules: []Rule{{CachedTokens: 4, ReasoningTokens: 30}}})
	defer srv.Close()
	c := clientFor(srv)
	params := userAsks("hi there")
	_, _, use, err := complete(t.Context(), c, params, true)
	if err != nil {
		t.Fatal(err)
	}
	if use.PromptTokensDetails.CachedTokens != 4 || use.CompletionTokensDetails.ReasoningTokens != 30 || use.CompletionTokens != 30+19 {
		t.Errorf("chat usage %+v; want 4 cached, 30 reasoning within 49 output", use)
	}
	r, err := c.Responses.New(t.Context(), responses.ResponseNewParams{Model: "sim",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi there")}})
	if err != nil {
		t.Fatal(err)
	}
	if u := r.Usage; u.InputTokensDetails.CachedTokens != 4 || u.OutputTokensDetails.ReasoningTokens != 30 || u.OutputTokens != 30+19 {
		t.Errorf("responses usage %+v; want 4 cached, 30 reasoning within 49 output", u)
	}
}

func TestCachedTokensAreAtMostTheInput(t *testing.T) {
	srv := NewServer(&Scenario{Rules: []Rule{{CachedTokens: 1 << 20}}})
	defer srv.Close()
	_, _, use, err := complete(t.Context(), clientFor(srv), userAsks("hi there"), false)
	if err != nil {
		t.Fatal(err)
	}
	if use.PromptTokensDetails.CachedTokens != use.PromptTokens {
		t.Errorf("%d cached of %d input, want all of it", use.PromptTokensDetails.CachedTokens, use.PromptTokens)
	}
}

func TestUsageWithoutCachedOrReasoningTokensHasNoDetails(t *testing.T) {
	srv := NewServer(nil)
	defer srv.Close()
	c := clientFor(srv)
	res, err := c.Chat.Completions.New(t.Context(), userAsks("hi there"))
	if err != nil {
		t.Fatal(err)
	}
	if raw := res.Usage.RawJSON(); strings.Contains(raw, "details") {
		t.Errorf("usage %s, want it as it was: no details", raw)
	}
}
