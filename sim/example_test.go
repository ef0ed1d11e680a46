package sim_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/glidepath/glidepath/sim"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

func stringTool(name, property string) openai.ChatCompletionToolUnionParam {
	return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: name,
		Parameters: shared.FunctionParameters{
			"type":       "object",
			"properties": map[string]any{property: map[string]any{"type": "string"}},
			"required":   []string{property},
		},
	})
}

// An agent loop against the default policy: the sim calls each tool once,
// answers from the results, and, offered no tools, summarizes.
func ExampleNewServer() {
	srv := sim.NewServer(nil)
	defer srv.Close()
	client := openai.NewClient(
		option.WithBaseURL(srv.URL),
		option.WithAPIKey("unused"),
		option.WithMaxRetries(0),
		option.WithHTTPClient(srv.Client()),
	)
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{
		Model:    sim.ModelID,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("find cats")},
		Tools:    []openai.ChatCompletionToolUnionParam{stringTool("search", "query"), stringTool("fetch", "url")},
	}
	res, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		fmt.Println(err)
		return
	}
	msg := res.Choices[0].Message
	params.Messages = append(params.Messages, msg.ToParam())
	results := map[string]string{"search": "3 cats", "fetch": "error: timeout"}
	for _, call := range msg.ToolCalls {
		fmt.Println("call:", call.Function.Name, call.Function.Arguments)
		params.Messages = append(params.Messages, openai.ToolMessage(results[call.Function.Name], call.ID))
	}

	res, err = client.Chat.Completions.New(ctx, params)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Choices[0].Message.Content)

	params.Tools = nil // the landing call offers no tools
	res, err = client.Chat.Completions.New(ctx, params)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Choices[0].Message.Content)
	// Output:
	// call: search {"query":"find cats"}
	// call: fetch {"url":"https://example.com/sim"}
	// [sim] Answer to "find cats": search returned 3 cats; fetch failed: error: timeout.
	// [sim] Summary of "find cats"
	// Established: search returned 3 cats.
	// Not established: fetch failed: error: timeout.
}

func ExampleParseScenario() {
	sc, err := sim.ParseScenario([]byte(`
seed: 7
rules:
  - request: 1
    status: 500
  - request: 2
    status: 429
    retry_after_ms: "200"
  - first_token: 2s
    chunk_gap: 50ms
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, r := range sc.Rules {
		fmt.Printf("rule %d: request %d status %d retry-after-ms %q first token %v gap %v\n",
			i+1, r.Request, r.Status, r.RetryAfterMs, r.FirstToken, r.ChunkGap)
	}
	// Output:
	// rule 1: request 1 status 500 retry-after-ms "" first token 0s gap 0s
	// rule 2: request 2 status 429 retry-after-ms "200" first token 0s gap 0s
	// rule 3: request 0 status 0 retry-after-ms "" first token 2s gap 50ms
}

// An outage: every request in the first 300ms gets 503 with Retry-After:
// 1. The window opens with the server's first chat completion request,
// whenever that comes, so that first request always meets it.
func ExampleParseScenario_outage() {
	sc, err := sim.ParseScenario([]byte(`
rules:
  - after: 0s
    for: 300ms
    status: 503
    retry_after: "1"
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	r := sc.Rules[0]
	fmt.Printf("after %v for %v: status %d retry-after %q\n", r.After, r.For, r.Status, r.RetryAfter)

	srv := sim.NewServer(sc)
	defer srv.Close()
	res, err := srv.Client().Post(srv.URL+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"sim","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	res.Body.Close()
	fmt.Println(res.StatusCode, res.Header.Get("Retry-After"), srv.Requests()[0].At)
	// Output:
	// after 0s for 300ms: status 503 retry-after "1"
	// 503 1 0s
}

func ExampleParseScenario_invalid() {
	_, err := sim.ParseScenario([]byte("rules:\n  - status: 500\n    first_token: 2s\n"))
	fmt.Println(err)
	fmt.Println(errors.Is(err, sim.ErrScenario))
	// Output:
	// sim: scenario line 3: rules[0].first_token: conflicts with status 500: an error response carries no completion
	// true
}

func ExampleServer_Requests() {
	srv := sim.NewServer(&sim.Scenario{Rules: []sim.Rule{{Request: 1, Status: 503, RetryAfter: "1"}}})
	defer srv.Close()
	client := openai.NewClient(
		option.WithBaseURL(srv.URL),
		option.WithAPIKey("sk-not-logged"),
		option.WithMaxRetries(0),
		option.WithHTTPClient(srv.Client()),
	)
	params := openai.ChatCompletionNewParams{
		Model:    sim.ModelID,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	}
	for range 2 {
		if _, err := client.Chat.Completions.New(context.Background(), params); err != nil {
			fmt.Println("error:", err)
		}
	}
	for _, r := range srv.Requests() {
		fmt.Printf("#%d %s rule=%d authorization=%s\n", r.Completion, r.Path, r.Rule, r.Header.Get("Authorization"))
	}
	// Output:
	// error: OpenAI API error: 503 Service Unavailable
	// #1 /v1/chat/completions rule=1 authorization=[redacted]
	// #2 /v1/chat/completions rule=0 authorization=[redacted]
}

func ExampleHandler() {
	ts := httptest.NewServer(sim.Handler(nil))
	defer ts.Close()
	client := openai.NewClient(option.WithBaseURL(ts.URL+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	page, err := client.Models.List(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(page.Data[0].ID)
	// Output:
	// sim
}

// A structured answer: response_format with a JSON schema gets content
// that meets it, the sim's own text in the answer-like field.
func ExampleNewServer_structuredAnswer() {
	srv := sim.NewServer(nil)
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("unused"),
		option.WithMaxRetries(0), option.WithHTTPClient(srv.Client()))
	res, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    sim.ModelID,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("find cats")},
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
				Name:   "cats",
				Strict: openai.Bool(true),
				Schema: map[string]any{"type": "object", "properties": map[string]any{
					"answer": map[string]any{"type": "string"},
					"count":  map[string]any{"type": "integer", "minimum": 3},
				}},
			},
		}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Choices[0].Message.Content)
	// Output:
	// {"answer":"[sim] Summary of \"find cats\"\nEstablished: nothing.\nNot established: nothing.","count":3}
}

// A tool_choice naming a tool that was not offered is refused as OpenAI
// refuses it.
func ExampleNewServer_toolChoice() {
	srv := sim.NewServer(nil)
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("unused"),
		option.WithMaxRetries(0), option.WithHTTPClient(srv.Client()))
	_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:      sim.ModelID,
		Messages:   []openai.ChatCompletionMessageParamUnion{openai.UserMessage("find cats")},
		Tools:      []openai.ChatCompletionToolUnionParam{stringTool("search", "query")},
		ToolChoice: openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "fetch"}),
	})
	if e, ok := errors.AsType[*openai.Error](err); ok {
		fmt.Println(e.StatusCode, e.Type, e.Param)
		fmt.Println(e.Message)
	}
	// Output:
	// 400 invalid_request_error tool_choice
	// Invalid value for 'tool_choice': function 'fetch' not found in 'tools'.
}
