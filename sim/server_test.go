package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

func clientFor(srv *Server) openai.Client {
	return openai.NewClient(
		option.WithBaseURL(srv.URL),
		option.WithAPIKey("sk-secret"),
		option.WithMaxRetries(0),
		option.WithHTTPClient(srv.Client()),
	)
}

func tool(name, property string) openai.ChatCompletionToolUnionParam {
	return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: name,
		Parameters: shared.FunctionParameters{
			"type":       "object",
			"properties": map[string]any{property: map[string]any{"type": "string"}},
			"required":   []string{property},
		},
	})
}

func userAsks(task string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    "sim",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(task)},
	}
}

// complete runs one request, streamed or not, and returns the assistant
// message, the finish reason and the usage.
func complete(ctx context.Context, c openai.Client, params openai.ChatCompletionNewParams, stream bool) (openai.ChatCompletionMessage, string, openai.CompletionUsage, error) {
	if !stream {
		res, err := c.Chat.Completions.New(ctx, params)
		if err != nil {
			return openai.ChatCompletionMessage{}, "", openai.CompletionUsage{}, err
		}
		return res.Choices[0].Message, res.Choices[0].FinishReason, res.Usage, nil
	}
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	s := c.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		if !acc.AddChunk(s.Current()) {
			return openai.ChatCompletionMessage{}, "", openai.CompletionUsage{}, fmt.Errorf("chunk rejected by the accumulator: %s", s.Current().RawJSON())
		}
	}
	if err := s.Err(); err != nil {
		return openai.ChatCompletionMessage{}, "", openai.CompletionUsage{}, err
	}
	if len(acc.Choices) == 0 {
		return openai.ChatCompletionMessage{}, "", openai.CompletionUsage{}, errors.New("no choices")
	}
	return acc.Choices[0].Message, acc.Choices[0].FinishReason, acc.Usage, nil
}

func TestAnAgentLoopAgainstTheSimCallsEachToolOnceThenAnswersThenSummarizes(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := NewServer(nil)
			defer srv.Close()
			c := clientFor(srv)
			params := userAsks("find cats")
			params.Tools = []openai.ChatCompletionToolUnionParam{tool("search", "query"), tool("fetch", "url")}

			msg, finish, use, err := complete(t.Context(), c, params, stream)
			if err != nil {
				t.Fatal(err)
			}
			var calls []string
			for _, tc := range msg.ToolCalls {
				calls = append(calls, tc.Function.Name+" "+tc.Function.Arguments)
			}
			wantCalls := []string{`search {"query":"find cats"}`, `fetch {"url":"https://example.com/sim"}`}
			if !reflect.DeepEqual(calls, wantCalls) || finish != "tool_calls" || use.TotalTokens == 0 {
				t.Fatalf("turn 1: calls %q finish %q usage %d; want %q, tool_calls, usage", calls, finish, use.TotalTokens, wantCalls)
			}
			params.Messages = append(params.Messages, msg.ToParam())
			for _, tc := range msg.ToolCalls {
				params.Messages = append(params.Messages, openai.ToolMessage(tc.Function.Name+" result", tc.ID))
			}

			msg, finish, _, err = complete(t.Context(), c, params, stream)
			if err != nil {
				t.Fatal(err)
			}
			wantAnswer := `[sim] Answer to "find cats": search returned search result; fetch returned fetch result.`
			if msg.Content != wantAnswer || len(msg.ToolCalls) != 0 || finish != "stop" {
				t.Fatalf("turn 2: %q (calls %d, finish %q), want %q", msg.Content, len(msg.ToolCalls), finish, wantAnswer)
			}

			params.Messages = append(params.Messages, msg.ToParam())
			params.Tools = nil
			msg, _, _, err = complete(t.Context(), c, params, stream)
			if err != nil {
				t.Fatal(err)
			}
			wantSummary := "[sim] Summary of \"find cats\"\nEstablished: search returned search result; fetch returned fetch result.\nNot established: nothing."
			if msg.Content != wantSummary {
				t.Fatalf("landing: %q, want %q", msg.Content, wantSummary)
			}

			reqs := srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("recorded %d requests, want 3", len(reqs))
			}
			for i, want := range []Request{
				{Index: 1, Completion: 1, Turn: 1, Tools: 2, HasTools: true, Stream: stream, IncludeUsage: stream},
				{Index: 2, Completion: 2, Turn: 2, Tools: 2, HasTools: true, Stream: stream, IncludeUsage: stream},
				{Index: 3, Completion: 3, Turn: 3, Tools: 0, HasTools: false, Stream: stream, IncludeUsage: stream},
			} {
				r := reqs[i]
				got := Request{Index: r.Index, Completion: r.Completion, Turn: r.Turn, Tools: r.Tools, HasTools: r.HasTools, Stream: r.Stream, IncludeUsage: r.IncludeUsage}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("request %d: %+v, want %+v", i+1, got, want)
				}
			}
		})
	}
}

func TestParallelToolCallsOffMeansOneToolPerTurn(t *testing.T) {
	srv := NewServer(nil)
	defer srv.Close()
	c := clientFor(srv)
	params := userAsks("find cats")
	params.Tools = []openai.ChatCompletionToolUnionParam{tool("search", "query"), tool("fetch", "url")}
	params.ParallelToolCalls = openai.Bool(false)
	var order []string
	for range 3 {
		msg, _, _, err := complete(t.Context(), c, params, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(msg.ToolCalls) == 0 {
			order = append(order, "answer")
			break
		}
		params.Messages = append(params.Messages, msg.ToParam())
		for _, tc := range msg.ToolCalls {
			order = append(order, tc.Function.Name)
			params.Messages = append(params.Messages, openai.ToolMessage("ok", tc.ID))
		}
	}
	if want := []string{"search", "fetch", "answer"}; !reflect.DeepEqual(order, want) {
		t.Errorf("turns went %q, want %q", order, want)
	}
	if p := srv.Requests()[0].Parallel; p == nil || *p {
		t.Errorf("recorded parallel_tool_calls %v, want false", p)
	}
}

func TestInjectedErrorsReachTheSDKAsAPIErrors(t *testing.T) {
	cases := []struct {
		name       string
		rule       Rule
		wantType   string
		wantCode   string
		wantHeader map[string]string
		wantWait   time.Duration
	}{
		{"a 500", Rule{Status: 500}, "server_error", "", nil, 0},
		{"a 429 with retry-after-ms", Rule{Status: 429, RetryAfterMs: "200", RetryAfter: "1"}, "requests", "rate_limit_exceeded",
			map[string]string{"retry-after-ms": "200", "Retry-After": "1"}, 200 * time.Millisecond},
		{"a 503 with an HTTP-date", Rule{Status: 503, RetryAfter: "Wed, 21 Oct 2015 07:28:00 GMT", Message: "overloaded"}, "server_error", "",
			map[string]string{"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := NewServer(&Scenario{Rules: []Rule{tc.rule}})
			defer srv.Close()
			for _, stream := range []bool{false, true} {
				_, _, _, err := complete(t.Context(), clientFor(srv), userAsks("hi"), stream)
				apiErr, ok := errors.AsType[*openai.Error](err)
				if !ok {
					t.Fatalf("stream=%v: error %v (%T), want *openai.Error", stream, err, err)
				}
				if apiErr.StatusCode != tc.rule.Status || apiErr.Type != tc.wantType || apiErr.Code != tc.wantCode {
					t.Errorf("stream=%v: status %d type %q code %q, want %d %q %q", stream, apiErr.StatusCode, apiErr.Type, apiErr.Code, tc.rule.Status, tc.wantType, tc.wantCode)
				}
				if tc.rule.Message != "" && apiErr.Message != tc.rule.Message {
					t.Errorf("message %q, want %q", apiErr.Message, tc.rule.Message)
				}
				if tc.rule.Message == "" && !strings.HasPrefix(apiErr.Message, "[sim] injected status") {
					t.Errorf("message %q does not say the fault is injected", apiErr.Message)
				}
				for k, v := range tc.wantHeader {
					if got := apiErr.Response.Header.Get(k); got != v {
						t.Errorf("header %s = %q, want %q", k, got, v)
					}
				}
				d, ok, err := budget.ParseRetryAfter(apiErr.Response.Header, time.Now())
				if err != nil || (ok && d != tc.wantWait) {
					t.Errorf("budget reads the retry-after as %v, %v, %v; want %v", d, ok, err, tc.wantWait)
				}
			}
			if n := len(srv.Requests()); n != 2 {
				t.Errorf("recorded %d requests, want exactly 2 (one per call, no SDK retries)", n)
			}
		})
	}
}

func TestAFlakyScenarioFailsOnceThenAnswers(t *testing.T) {
	sc, err := LoadScenario("../examples/sim/flaky.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(sc)
	defer srv.Close()
	c := clientFor(srv)
	_, err = c.Chat.Completions.New(t.Context(), userAsks("hi"))
	if apiErr, ok := errors.AsType[*openai.Error](err); !ok || apiErr.StatusCode != 500 {
		t.Fatalf("first call: %v, want a 500", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("after the 500, %d requests recorded, want exactly 1", n)
	}
	res, err := c.Chat.Completions.New(t.Context(), userAsks("hi"))
	if err != nil || !strings.HasPrefix(res.Choices[0].Message.Content, "[sim] ") {
		t.Fatalf("second call: %v, %v; want a [sim] answer", res, err)
	}
	if reqs := srv.Requests(); reqs[0].Rule != 1 || reqs[1].Rule != 0 {
		t.Errorf("rules applied %d, %d; want 1 then none", reqs[0].Rule, reqs[1].Rule)
	}
}

func TestStreamTimingFollowsTheRuleExactly(t *testing.T) {
	cases := []struct {
		name string
		rule Rule
		want []time.Duration // arrival of each chunk: the first ones
	}{
		{"first token after 2s", Rule{FirstToken: 2 * time.Second}, []time.Duration{2 * time.Second, 2 * time.Second, 2 * time.Second}},
		{"a delay, then first token, then gaps", Rule{Delay: time.Second, FirstToken: 500 * time.Millisecond, ChunkGap: 100 * time.Millisecond},
			[]time.Duration{1500 * time.Millisecond, 1600 * time.Millisecond, 1700 * time.Millisecond}},
		{"keepalives before the first token", Rule{Keepalive: 3 * time.Second, FirstToken: time.Second},
			[]time.Duration{4 * time.Second, 4 * time.Second}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := NewPipeServer(&Scenario{Rules: []Rule{tc.rule}})
				defer srv.Close()
				start := time.Now()
				c := clientFor(srv)
				s := c.Chat.Completions.NewStreaming(t.Context(), userAsks("find cats"))
				var got []time.Duration
				var acc openai.ChatCompletionAccumulator
				for s.Next() {
					got = append(got, time.Since(start))
					acc.AddChunk(s.Current())
				}
				if err := s.Err(); err != nil {
					t.Fatal(err)
				}
				if len(got) < len(tc.want) || !reflect.DeepEqual(got[:len(tc.want)], tc.want) {
					t.Errorf("chunks arrived at %v, want the first at %v", got, tc.want)
				}
				if acc.Choices[0].FinishReason != "stop" || !strings.HasPrefix(acc.Choices[0].Message.Content, "[sim] Summary") {
					t.Errorf("stream ended %q with %q", acc.Choices[0].FinishReason, acc.Choices[0].Message.Content)
				}
			})
		})
	}
}

func TestANonStreamingAnswerTakesAsLongAsItsStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rule := Rule{Delay: time.Second, FirstToken: 2 * time.Second, ChunkGap: 10 * time.Millisecond, Answer: "one two three"}
		srv := NewPipeServer(&Scenario{Rules: []Rule{rule}})
		defer srv.Close()
		start := time.Now()
		c := clientFor(srv)
		res, err := c.Chat.Completions.New(t.Context(), userAsks("x"))
		if err != nil {
			t.Fatal(err)
		}
		// Three word chunks and the finish chunk: 1s + 2s + 3 gaps.
		if got, want := time.Since(start), 3030*time.Millisecond; got != want {
			t.Errorf("answered after %v, want %v", got, want)
		}
		if res.Choices[0].Message.Content != "one two three" {
			t.Errorf("content %q, want the fixed answer", res.Choices[0].Message.Content)
		}
	})
}

// sseLine is one line of a raw event stream and when it arrived.
type sseLine struct {
	at   time.Duration
	text string
}

// readSSE posts a streaming request with the raw client and collects the
// non-empty lines until the body ends or ctx does.
func readSSE(ctx context.Context, t *testing.T, srv *Server) ([]sseLine, error) {
	t.Helper()
	body := `{"model":"sim","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/chat/completions", strings.NewReader(body))
	start := time.Now()
	res, err := srv.Client().Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("Content-Type %q, want text/event-stream", ct)
	}
	var lines []sseLine
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if sc.Text() != "" {
			lines = append(lines, sseLine{time.Since(start), sc.Text()})
		}
	}
	return lines, sc.Err()
}

func TestKeepalivesAreOnlyCommentsUntilTheirPeriodEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := NewPipeServer(&Scenario{Rules: []Rule{{Keepalive: 5 * time.Second, KeepaliveEvery: time.Second}}})
		defer srv.Close()
		lines, err := readSSE(t.Context(), t, srv)
		if err != nil {
			t.Fatal(err)
		}
		for i, at := range []time.Duration{1, 2, 3, 4} {
			if want := (sseLine{at * time.Second, ": keepalive"}); i >= len(lines) || lines[i] != want {
				t.Fatalf("line %d: %+v, want %+v (all: %v)", i, lines[i], want, lines)
			}
		}
		first := lines[4]
		if first.at != 5*time.Second || !strings.HasPrefix(first.text, "data: {") {
			t.Errorf("first data line %+v, want a chunk at exactly 5s", first)
		}
		if last := lines[len(lines)-1]; last.text != "data: [DONE]" {
			t.Errorf("last line %q, want data: [DONE]", last.text)
		}
	})
}

func TestKeepalivesForeverNeverSendData(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc, err := ParseScenario([]byte("rules:\n  - keepalive: forever\n    keepalive_every: 15s\n"))
		if err != nil {
			t.Fatal(err)
		}
		srv := NewPipeServer(sc)
		defer srv.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 61*time.Second)
		defer cancel()
		lines, err := readSSE(ctx, t, srv)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("read ended with %v, want the client's deadline", err)
		}
		want := []sseLine{{15 * time.Second, ": keepalive"}, {30 * time.Second, ": keepalive"}, {45 * time.Second, ": keepalive"}, {60 * time.Second, ": keepalive"}}
		if !reflect.DeepEqual(lines, want) {
			t.Errorf("lines %v, want %v", lines, want)
		}
	})
}

func TestKeepalivesThenHangGoSilent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := NewPipeServer(&Scenario{Rules: []Rule{{Keepalive: 2500 * time.Millisecond, Hang: true}}})
		defer srv.Close()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		lines, err := readSSE(ctx, t, srv)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("read ended with %v, want the client's deadline", err)
		}
		want := []sseLine{{time.Second, ": keepalive"}, {2 * time.Second, ": keepalive"}}
		if !reflect.DeepEqual(lines, want) {
			t.Errorf("lines %v, want %v", lines, want)
		}
	})
}

func TestAHangEndsWhenTheClientGivesUp(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := NewPipeServer(&Scenario{Rules: []Rule{{Hang: true}}})
				ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
				defer cancel()
				start := time.Now()
				_, _, _, err := complete(ctx, clientFor(srv), userAsks("hi"), stream)
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("error %v, want the client's deadline", err)
				}
				if got := time.Since(start); got != 3*time.Second {
					t.Errorf("gave up after %v, want exactly 3s", got)
				}
				if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Rule != 1 {
					t.Errorf("recorded %+v, want the one request under rule 1", reqs)
				}
				// synctest fails the test if Close leaves a goroutine behind.
				srv.Close()
			})
		})
	}
}

func TestCloseReleasesHandlersThatWouldHangForever(t *testing.T) {
	cases := []struct {
		name string
		rule Rule
	}{
		{"a hang before headers", Rule{Hang: true}},
		{"keepalives forever", Rule{Keepalive: Forever}},
		{"a stall mid-stream", Rule{HangAfterChunks: new(2)}},
		{"a long delay", Rule{Delay: time.Hour}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := NewPipeServer(&Scenario{Rules: []Rule{tc.rule}})
				var wg sync.WaitGroup
				var err error
				wg.Go(func() { _, _, _, err = complete(t.Context(), clientFor(srv), userAsks("hi"), true) })
				synctest.Wait()
				if n := len(srv.Requests()); n != 1 {
					t.Fatalf("%d requests arrived before Close, want 1", n)
				}
				start := time.Now()
				srv.Close()
				wg.Wait()
				if time.Since(start) != 0 {
					t.Errorf("Close took %v of fake time, want none", time.Since(start))
				}
				if err == nil {
					t.Errorf("the client saw a complete answer from a server that closed under it")
				}
			})
		})
	}
}

func TestACutStreamEndsWithUnexpectedEOF(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := NewPipeServer(&Scenario{Rules: []Rule{{CloseAfterChunks: new(3), ChunkGap: 100 * time.Millisecond}}})
		defer srv.Close()
		start := time.Now()
		c := clientFor(srv)
		s := c.Chat.Completions.NewStreaming(t.Context(), userAsks("find cats"))
		chunks := 0
		for s.Next() {
			chunks++
			if f := s.Current().Choices[0].FinishReason; f != "" {
				t.Errorf("chunk %d carries finish_reason %q", chunks, f)
			}
		}
		// The SDK's decoder surfaces the scanner's error: net/http's chunked
		// reader reports the connection ending mid-body as io.ErrUnexpectedEOF.
		if err := s.Err(); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("stream error %v, want io.ErrUnexpectedEOF", err)
		}
		if chunks != 3 || time.Since(start) != 200*time.Millisecond {
			t.Errorf("%d chunks in %v, want 3 in 200ms", chunks, time.Since(start))
		}
	})
}

func TestACutNonStreamingAnswerFailsToRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := NewPipeServer(&Scenario{Rules: []Rule{{CloseAfterChunks: new(1)}}})
		defer srv.Close()
		c := clientFor(srv)
		_, err := c.Chat.Completions.New(t.Context(), userAsks("x"))
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("error %v, want io.ErrUnexpectedEOF", err)
		}
	})
}

func TestAStalledStreamKeepsItsChunksAndWaitsForTheClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := NewPipeServer(&Scenario{Rules: []Rule{{HangAfterChunks: new(2)}}})
		defer srv.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		lines, err := readSSE(ctx, t, srv)
		if !errors.Is(err, context.DeadlineExceeded) || len(lines) != 2 {
			t.Errorf("read %d lines then %v, want 2 then the deadline", len(lines), err)
		}
	})
}

func TestRulesMatchByRequestTurnAndTimes(t *testing.T) {
	sc := &Scenario{Rules: []Rule{
		{Turn: 2, Status: 503},
		{Request: 2, Status: 502},
		{Times: 2, Status: 500},
	}}
	srv := NewServer(sc)
	defer srv.Close()
	turn1 := `{"model":"sim","messages":[{"role":"user","content":"hi"}]}`
	turn2 := `{"model":"sim","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"},{"role":"user","content":"again"}]}`
	var got []int
	for _, body := range []string{turn1, turn1, turn2, turn1, turn1, turn1} {
		res, err := srv.Client().Post(srv.URL+"/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		got = append(got, res.StatusCode)
	}
	// 1: times rule; 2: request 2; 3: turn 2; 4: times rule's second use; then none.
	if want := []int{500, 502, 503, 500, 200, 200}; !reflect.DeepEqual(got, want) {
		t.Errorf("statuses %v, want %v", got, want)
	}
	var rules []int
	for _, r := range srv.Requests() {
		rules = append(rules, r.Rule)
	}
	if want := []int{3, 2, 1, 3, 0, 0}; !reflect.DeepEqual(rules, want) {
		t.Errorf("rules %v, want %v", rules, want)
	}
}

func TestFixedToolCallsAndAnswerReplaceThePolicy(t *testing.T) {
	sc := &Scenario{Rules: []Rule{
		{Request: 1, ToolCalls: []ToolCall{{Name: "lookup", Arguments: `{"sku":"A1"}`}, {ID: "mine", Name: "broken", Arguments: `{"sku":`}}},
		{Request: 2, Answer: "a fixed answer"},
	}}
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := NewServer(sc)
			defer srv.Close()
			c := clientFor(srv)
			msg, finish, _, err := complete(t.Context(), c, userAsks("x"), stream)
			if err != nil {
				t.Fatal(err)
			}
			if len(msg.ToolCalls) != 2 || finish != "tool_calls" ||
				msg.ToolCalls[0].Function.Arguments != `{"sku":"A1"}` || !strings.HasPrefix(msg.ToolCalls[0].ID, "call_sim_") ||
				msg.ToolCalls[1].ID != "mine" || msg.ToolCalls[1].Function.Arguments != `{"sku":` {
				t.Errorf("got %+v finish %q", msg.ToolCalls, finish)
			}
			msg, _, _, err = complete(t.Context(), c, userAsks("x"), stream)
			if err != nil || msg.Content != "a fixed answer" {
				t.Errorf("got %q, %v; want the fixed answer", msg.Content, err)
			}
		})
	}
}

func TestUsageCanBeForcedOnOrOff(t *testing.T) {
	srv := NewServer(&Scenario{Rules: []Rule{{Request: 1, Usage: new(true)}, {Request: 2, Usage: new(false)}}})
	defer srv.Close()
	c := clientFor(srv)
	s := c.Chat.Completions.NewStreaming(t.Context(), userAsks("x")) // no include_usage asked
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if s.Err() != nil || acc.Usage.TotalTokens == 0 {
		t.Errorf("forced-on stream usage %+v, %v; want a usage chunk", acc.Usage, s.Err())
	}
	res, err := c.Chat.Completions.New(t.Context(), userAsks("x"))
	if err != nil || res.JSON.Usage.Valid() {
		t.Errorf("forced-off answer: %v, usage present %v; want no usage", err, res.JSON.Usage.Valid())
	}
}

func TestBadRequestsGetOpenAIShapedErrors(t *testing.T) {
	cases := []struct {
		name       string
		method     string
		path       string
		body       string
		wantStatus int
		wantInMsg  string
	}{
		{"a body that is not JSON", "POST", "/v1/chat/completions", "model=sim", 400, "could not parse the JSON body"},
		{"a body over 8 MiB", "POST", "/v1/chat/completions", `{"model":"` + strings.Repeat("x", MaxBody) + `"}`, 413, "too large"},
		{"no model", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`, 400, "model"},
		{"no messages", "POST", "/v1/chat/completions", `{"model":"sim","messages":[]}`, 400, "too short"},
		{"an unknown role", "POST", "/v1/chat/completions", `{"model":"sim","messages":[{"role":"robot","content":"x"}]}`, 400, "'robot'"},
		{"a tool call left unanswered", "POST", "/v1/chat/completions", `{"model":"sim","messages":[{"role":"user","content":"x"},
			{"role":"assistant","tool_calls":[{"id":"c9","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, 400, "c9"},
		{"a tool result for no call", "POST", "/v1/chat/completions", `{"model":"sim","messages":[{"role":"user","content":"x"},
			{"role":"tool","tool_call_id":"c1","content":"r"}]}`, 400, "role 'tool'"},
		{"a tool that is not a function", "POST", "/v1/chat/completions", `{"model":"sim","messages":[{"role":"user","content":"x"}],"tools":[{"type":"web_search"}]}`, 400, "web_search"},
		{"a GET on completions", "GET", "/v1/chat/completions", "", 405, "Only POST"},
		{"an unknown path", "POST", "/v1/embeddings", "{}", 404, "Unknown request URL"},
	}
	srv := NewServer(nil)
	defer srv.Close()
	base := strings.TrimSuffix(srv.URL, "/v1")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), tc.method, base+tc.path, strings.NewReader(tc.body))
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var body struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Code    *string `json:"code"`
				} `json:"error"`
			}
			if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
				t.Fatalf("body is not an OpenAI error: %v", err)
			}
			if res.StatusCode != tc.wantStatus || body.Error.Type != "invalid_request_error" || !strings.Contains(body.Error.Message, tc.wantInMsg) {
				t.Errorf("status %d type %q message %q; want %d invalid_request_error containing %q",
					res.StatusCode, body.Error.Type, body.Error.Message, tc.wantStatus, tc.wantInMsg)
			}
		})
	}
	reqs := srv.Requests()
	if len(reqs) != len(cases) {
		t.Fatalf("recorded %d requests, want %d", len(reqs), len(cases))
	}
	for _, r := range reqs {
		if r.Err == "" || r.Rule != 0 {
			t.Errorf("request %d (%s %s) recorded without its refusal: %+v", r.Index, r.Method, r.Path, r)
		}
	}
}

func TestModelsListsTheSim(t *testing.T) {
	srv := NewServer(nil)
	defer srv.Close()
	c := clientFor(srv)
	page, err := c.Models.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || page.Data[0].ID != ModelID {
		t.Errorf("models %+v, want just %q", page.Data, ModelID)
	}
	m, err := c.Models.Get(t.Context(), ModelID)
	if err != nil || m.ID != ModelID {
		t.Errorf("model %+v, %v", m, err)
	}
}

func TestRequestsRecordWhatArrivedWithSecretsRedacted(t *testing.T) {
	srv := NewServer(nil)
	defer srv.Close()
	params := openai.ChatCompletionNewParams{
		Model: "gpt-x",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("Be brief.\nBudget: 90s left until landing; phase explore"),
			openai.UserMessage("find cats"),
		},
		ParallelToolCalls: openai.Bool(true),
	}
	c := clientFor(srv)
	res, err := c.Chat.Completions.New(t.Context(), params,
		option.WithHeader("Api-Key", "azure-secret"), option.WithHeader("Budget-Remaining-Ms", "90000"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Model != ModelID {
		t.Errorf("answer names model %q, want %q", res.Model, ModelID)
	}
	r := srv.Requests()[0]
	if got := r.Header.Get("Authorization") + r.Header.Get("Api-Key"); got != "[redacted][redacted]" {
		t.Errorf("secret headers recorded as %q", got)
	}
	if r.Header.Get("Budget-Remaining-Ms") != "90000" {
		t.Errorf("Budget-Remaining-Ms not recorded: %v", r.Header)
	}
	want := []Message{{Role: "system", Content: "Be brief.\nBudget: 90s left until landing; phase explore"}, {Role: "user", Content: "find cats"}}
	if r.Model != "gpt-x" || r.Tools != 0 || r.HasTools || r.Parallel == nil || !*r.Parallel || !reflect.DeepEqual(r.Messages, want) {
		t.Errorf("recorded %+v", r)
	}
	if r.BudgetNote != "Budget: 90s left until landing; phase explore" {
		t.Errorf("budget note %q", r.BudgetNote)
	}
	if r.Method != "POST" || r.Path != "/v1/chat/completions" || r.Time.IsZero() {
		t.Errorf("recorded %s %s at %v", r.Method, r.Path, r.Time)
	}
}

func TestAnEmptyToolsListIsRecordedAsPresent(t *testing.T) {
	// openai-go sends "tools":[] for an empty non-nil slice; only a nil
	// slice leaves the field out, as a landing request must (SPEC §4).
	srv := NewServer(nil)
	defer srv.Close()
	c := clientFor(srv)
	empty, absent := userAsks("x"), userAsks("x")
	empty.Tools = []openai.ChatCompletionToolUnionParam{}
	for _, params := range []openai.ChatCompletionNewParams{empty, absent} {
		if _, err := c.Chat.Completions.New(t.Context(), params); err != nil {
			t.Fatal(err)
		}
	}
	reqs := srv.Requests()
	if !reqs[0].HasTools || reqs[0].Tools != 0 || reqs[1].HasTools {
		t.Errorf("HasTools %v (%d tools), %v; want true for an empty list and false for nil", reqs[0].HasTools, reqs[0].Tools, reqs[1].HasTools)
	}
}

func TestConcurrentRequestsAreEachRecordedOnce(t *testing.T) {
	srv := NewServer(&Scenario{Rules: []Rule{{Times: 10, Status: 500}}})
	defer srv.Close()
	c := clientFor(srv)
	const n = 40
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for range n {
		wg.Go(func() {
			_, err := c.Chat.Completions.New(t.Context(), userAsks("x"))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed++
			}
		})
	}
	wg.Wait()
	reqs := srv.Requests()
	seen := map[int]bool{}
	for _, r := range reqs {
		seen[r.Completion] = true
	}
	if len(reqs) != n || len(seen) != n || failed != 10 {
		t.Errorf("%d records, %d distinct numbers, %d failures; want %d, %d, 10", len(reqs), len(seen), failed, n, n)
	}
}

func TestHandlerServesWithoutKeepingRecords(t *testing.T) {
	ts := httptest.NewServer(Handler(&Scenario{Rules: []Rule{{Request: 1, Status: 429, RetryAfterMs: "5"}}}))
	defer ts.Close()
	c := openai.NewClient(option.WithBaseURL(ts.URL+"/v1"), option.WithAPIKey("x"), option.WithMaxRetries(0))
	if _, err := c.Chat.Completions.New(t.Context(), userAsks("x")); err == nil {
		t.Fatal("first request succeeded, want the scripted 429")
	}
	res, err := c.Chat.Completions.New(t.Context(), userAsks("x"))
	if err != nil || !strings.HasPrefix(res.Choices[0].Message.Content, "[sim]") {
		t.Errorf("second request: %v, %v", res, err)
	}
}

func TestInvalidScenariosPanicAtConstruction(t *testing.T) {
	bad := &Scenario{Rules: []Rule{{Status: 42}}}
	for name, f := range map[string]func(){
		"NewServer":     func() { NewServer(bad).Close() },
		"NewPipeServer": func() { NewPipeServer(bad).Close() },
		"Handler":       func() { Handler(bad) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "rules[0].status") {
					t.Errorf("recovered %v, want a panic naming rules[0].status", r)
				}
			}()
			f()
		})
	}
}

func TestCloseIsIdempotent(t *testing.T) {
	srv := NewServer(nil)
	srv.Close()
	srv.Close()
	if _, err := srv.Client().Get(srv.URL + "/models"); err == nil {
		t.Error("a closed server still answered")
	}
}

func TestTheExampleScenariosBehaveAsTheirCommentsSay(t *testing.T) {
	cases := []struct {
		file string
		// check runs two streamed requests and judges what happened.
		check func(t *testing.T, errs [2]error, took [2]time.Duration)
	}{
		{"flaky.yaml", func(t *testing.T, errs [2]error, took [2]time.Duration) {
			if e, ok := errors.AsType[*openai.Error](errs[0]); !ok || e.StatusCode != 500 || errs[1] != nil {
				t.Errorf("errors %v, want a 500 then success", errs)
			}
		}},
		{"ratelimit.yaml", func(t *testing.T, errs [2]error, took [2]time.Duration) {
			e, ok := errors.AsType[*openai.Error](errs[0])
			if !ok || e.StatusCode != 429 || errs[1] != nil {
				t.Fatalf("errors %v, want a 429 then success", errs)
			}
			if d, _, _ := budget.ParseRetryAfter(e.Response.Header, time.Now()); d != 200*time.Millisecond {
				t.Errorf("retry-after read as %v, want 200ms", d)
			}
		}},
		{"hang.yaml", func(t *testing.T, errs [2]error, took [2]time.Duration) {
			if errs[0] != nil || !errors.Is(errs[1], context.DeadlineExceeded) || took[1] != 5*time.Minute {
				t.Errorf("errors %v after %v, want success then the client's 5m deadline", errs, took)
			}
		}},
		{"keepalive.yaml", func(t *testing.T, errs [2]error, took [2]time.Duration) {
			if errs[0] != nil || took[0] != 90*time.Second {
				t.Errorf("first answer %v after %v, want success after exactly 90s", errs[0], took[0])
			}
		}},
		{"midstream.yaml", func(t *testing.T, errs [2]error, took [2]time.Duration) {
			if !errors.Is(errs[0], io.ErrUnexpectedEOF) || took[0] != 400*time.Millisecond || errs[1] != nil {
				t.Errorf("errors %v after %v, want an unexpected EOF at 400ms, then success", errs, took)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			sc, err := LoadScenario("../examples/sim/" + tc.file)
			if err != nil {
				t.Fatal(err)
			}
			synctest.Test(t, func(t *testing.T) {
				srv := NewPipeServer(sc)
				defer srv.Close()
				c := clientFor(srv)
				var errs [2]error
				var took [2]time.Duration
				for i := range 2 {
					ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
					start := time.Now()
					_, _, _, errs[i] = complete(ctx, c, userAsks("find cats"), true)
					took[i] = time.Since(start)
					cancel()
				}
				tc.check(t, errs, took)
			})
		})
	}
}
