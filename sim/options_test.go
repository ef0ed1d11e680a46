package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// bothWays runs f as a subtest twice, with stream false and true, each
// time against a new default server.
func bothWays(t *testing.T, name string, f func(t *testing.T, srv *Server, c openai.Client, stream bool)) {
	for _, stream := range []bool{false, true} {
		t.Run(strings.TrimPrefix(fmt.Sprintf("%s/stream=%v", name, stream), "/"), func(t *testing.T) {
			srv := NewServer(nil)
			defer srv.Close()
			f(t, srv, clientFor(srv), stream)
		})
	}
}

func named(name string) openai.ChatCompletionToolChoiceOptionUnionParam {
	return openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: name})
}

func mode(m string) openai.ChatCompletionToolChoiceOptionUnionParam {
	return openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String(m)}
}

func allowed(m string, names ...string) openai.ChatCompletionToolChoiceOptionUnionParam {
	var tools []map[string]any
	for _, n := range names {
		tools = append(tools, map[string]any{"type": "function", "function": map[string]any{"name": n}})
	}
	return openai.ToolChoiceOptionAllowedTools(openai.ChatCompletionAllowedToolsParam{Mode: openai.ChatCompletionAllowedToolsMode(m), Tools: tools})
}

func jsonSchema(name string, strict bool, schema string) openai.ChatCompletionNewParamsResponseFormatUnion {
	js := shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: name, Schema: json.RawMessage(schema)}
	if strict {
		js.Strict = openai.Bool(true)
	}
	return openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{JSONSchema: js}}
}

// answerAll appends msg and a result for each of its tool calls.
func answerAll(params *openai.ChatCompletionNewParams, msg openai.ChatCompletionMessage) {
	params.Messages = append(params.Messages, msg.ToParam())
	for _, tc := range msg.ToolCalls {
		params.Messages = append(params.Messages, openai.ToolMessage(tc.Function.Name+" ok", tc.ID))
	}
}

func callNames(msg openai.ChatCompletionMessage) []string {
	var names []string
	for _, tc := range msg.ToolCalls {
		names = append(names, tc.Function.Name)
	}
	return names
}

func TestToolChoiceDecidesWhatTheSimCalls(t *testing.T) {
	skipped := openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "wipe", Description: openai.String("dangerous " + SkipMarker)})
	cases := []struct {
		name       string
		choice     openai.ChatCompletionToolChoiceOptionUnionParam
		parallel   bool // parallel_tool_calls false when set
		calledOnce bool // the conversation has called and answered every useful tool once
		wantCalls  []string
		wantAnswer string // the answer when no calls are wanted
		wantRecord string
	}{
		{name: "absent is auto", wantCalls: []string{"search", "fetch"}},
		{name: "auto calls each useful tool", choice: mode("auto"), wantCalls: []string{"search", "fetch"}, wantRecord: "auto"},
		{name: "auto answers once each was called", choice: mode("auto"), calledOnce: true,
			wantAnswer: `[sim] Answer to "find cats": search returned search ok; fetch returned fetch ok.`, wantRecord: "auto"},
		{name: "none calls nothing", choice: mode("none"), wantAnswer: `[sim] Answer to "find cats": no tool results.`, wantRecord: "none"},
		{name: "required calls each useful tool", choice: mode("required"), wantCalls: []string{"search", "fetch"}, wantRecord: "required"},
		{name: "required calls again once each was called", choice: mode("required"), calledOnce: true, wantCalls: []string{"search"}, wantRecord: "required"},
		{name: "required one at a time", choice: mode("required"), parallel: true, wantCalls: []string{"search"}, wantRecord: "required"},
		{name: "a named function is called", choice: named("fetch"), wantCalls: []string{"fetch"}, wantRecord: "function:fetch"},
		{name: "a named function is called every turn", choice: named("fetch"), calledOnce: true, wantCalls: []string{"fetch"}, wantRecord: "function:fetch"},
		{name: "a named function is called even if marked skip", choice: named("wipe"), wantCalls: []string{"wipe"}, wantRecord: "function:wipe"},
		{name: "allowed tools narrow auto", choice: allowed("auto", "fetch"), wantCalls: []string{"fetch"}, wantRecord: "allowed_tools:auto"},
		{name: "allowed tools required call again", choice: allowed("required", "fetch", "wipe"), calledOnce: true, wantCalls: []string{"fetch"}, wantRecord: "allowed_tools:required"},
	}
	for _, tc := range cases {
		bothWays(t, tc.name, func(t *testing.T, srv *Server, c openai.Client, stream bool) {
			params := userAsks("find cats")
			params.Tools = []openai.ChatCompletionToolUnionParam{tool("search", "query"), tool("fetch", "url"), skipped}
			if tc.calledOnce {
				msg, _, _, err := complete(t.Context(), c, params, stream)
				if err != nil {
					t.Fatal(err)
				}
				answerAll(&params, msg)
			}
			params.ToolChoice = tc.choice
			if tc.parallel {
				params.ParallelToolCalls = openai.Bool(false)
			}
			msg, finish, _, err := complete(t.Context(), c, params, stream)
			if err != nil {
				t.Fatal(err)
			}
			if got := callNames(msg); !reflect.DeepEqual(got, tc.wantCalls) || msg.Content != tc.wantAnswer {
				t.Errorf("calls %q content %q, want calls %q content %q", got, msg.Content, tc.wantCalls, tc.wantAnswer)
			}
			if wantFinish := map[bool]string{true: "tool_calls", false: "stop"}[len(tc.wantCalls) > 0]; finish != wantFinish {
				t.Errorf("finish_reason %q, want %q", finish, wantFinish)
			}
			reqs := srv.Requests()
			if got := reqs[len(reqs)-1].ToolChoice; got != tc.wantRecord {
				t.Errorf("recorded tool_choice %q, want %q", got, tc.wantRecord)
			}
		})
	}
}

func TestRequestsOpenAIRefusesAre400s(t *testing.T) {
	search := []openai.ChatCompletionToolUnionParam{tool("search", "query")}
	cases := []struct {
		name      string
		edit      func(p *openai.ChatCompletionNewParams)
		opts      []option.RequestOption
		wantParam string
		wantCode  string
		wantInMsg string
	}{
		{"a named tool that was not offered", func(p *openai.ChatCompletionNewParams) { p.Tools, p.ToolChoice = search, named("fetch") },
			nil, "tool_choice", "", "function 'fetch' not found in 'tools'"},
		{"required with no tools", func(p *openai.ChatCompletionNewParams) { p.ToolChoice = mode("required") },
			nil, "tool_choice", "", "'tool_choice' is only allowed when 'tools' are specified"},
		{"none with an empty tools list", func(p *openai.ChatCompletionNewParams) {
			p.Tools, p.ToolChoice = []openai.ChatCompletionToolUnionParam{}, mode("none")
		}, nil, "tool_choice", "", "only allowed when 'tools' are specified"},
		{"an unknown mode", func(p *openai.ChatCompletionNewParams) { p.Tools, p.ToolChoice = search, mode("sometimes") },
			nil, "tool_choice", "", "Invalid value: 'sometimes'"},
		{"a named tool without a name", func(p *openai.ChatCompletionNewParams) { p.Tools = search },
			[]option.RequestOption{option.WithJSONSet("tool_choice", map[string]any{"type": "function", "function": map[string]any{}})},
			"tool_choice.function.name", "", "Missing required parameter"},
		{"allowed tools that were not offered", func(p *openai.ChatCompletionNewParams) {
			p.Tools, p.ToolChoice = search, allowed("auto", "search", "fetch")
		},
			nil, "tool_choice", "", "function 'fetch' not found"},
		{"n of 0", func(p *openai.ChatCompletionNewParams) {}, []option.RequestOption{option.WithJSONSet("n", 0)},
			"n", "integer_below_min_value", "Expected a value >= 1, but got 0"},
		{"n over 128", func(p *openai.ChatCompletionNewParams) { p.N = openai.Int(129) },
			nil, "n", "integer_above_max_value", "Expected a value <= 128, but got 129"},
		{"json_object without the word json", func(p *openai.ChatCompletionNewParams) {
			p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
		}, nil, "messages", "", "must contain the word 'json'"},
		{"an unknown response format", func(p *openai.ChatCompletionNewParams) {},
			[]option.RequestOption{option.WithJSONSet("response_format", map[string]any{"type": "yaml"})}, "response_format.type", "", "Invalid value: 'yaml'"},
		{"a json_schema without a name", func(p *openai.ChatCompletionNewParams) { p.ResponseFormat = jsonSchema("", false, `{"type":"object"}`) },
			nil, "response_format.json_schema.name", "", "Missing required parameter"},
		{"a json_schema with a bad name", func(p *openai.ChatCompletionNewParams) {
			p.ResponseFormat = jsonSchema("cat facts", false, `{"type":"object"}`)
		},
			nil, "response_format.json_schema.name", "", "does not match pattern"},
		{"a schema that is not a schema", func(p *openai.ChatCompletionNewParams) {
			p.ResponseFormat = jsonSchema("cats", false, `{"type":"kitten"}`)
		},
			nil, "response_format", "", "Invalid schema for response_format 'cats'"},
		{"a schema referring outside itself", func(p *openai.ChatCompletionNewParams) {
			p.ResponseFormat = jsonSchema("cats", false, `{"$ref":"https://example.com/cat.json"}`)
		}, nil, "response_format", "", "only references within the schema"},
		{"a pattern Go cannot read", func(p *openai.ChatCompletionNewParams) {
			p.ResponseFormat = jsonSchema("cats", false, `{"type":"object","properties":{"s":{"type":"string","pattern":"^(?!x)"}},"required":["s"]}`)
		}, nil, "response_format", "", "Invalid schema for response_format 'cats'"},
		{"a schema no finite value meets", func(p *openai.ChatCompletionNewParams) {
			p.ResponseFormat = jsonSchema("chain", false, `{"type":"object","properties":{"next":{"$ref":"#"}},"required":["next"]}`)
		}, nil, "response_format", "", "[sim] cannot build a value that satisfies the schema of response_format 'chain'"},
		{"a schema the simplest values miss", func(p *openai.ChatCompletionNewParams) {
			p.ResponseFormat = jsonSchema("odd", false, `{"type":"object","properties":{"n":{"type":"integer","not":{"const":1}}},"required":["n"]}`)
		}, nil, "response_format", "", "at '/n'"},
		{"an unmeetable schema on a turn that calls tools", func(p *openai.ChatCompletionNewParams) {
			p.Tools = search
			p.ResponseFormat = jsonSchema("never", false, `false`)
		}, nil, "response_format", "", "'never'"},
	}
	for _, tc := range cases {
		bothWays(t, tc.name, func(t *testing.T, srv *Server, c openai.Client, stream bool) {
			params := userAsks("find cats")
			tc.edit(&params)
			var err error
			if stream {
				s := c.Chat.Completions.NewStreaming(t.Context(), params, tc.opts...)
				for s.Next() {
					t.Errorf("got a chunk: %s", s.Current().RawJSON())
				}
				err = s.Err()
			} else {
				_, err = c.Chat.Completions.New(t.Context(), params, tc.opts...)
			}
			e, ok := errors.AsType[*openai.Error](err)
			if !ok {
				t.Fatalf("error %v, want an *openai.Error", err)
			}
			if e.StatusCode != 400 || e.Type != "invalid_request_error" || e.Param != tc.wantParam || e.Code != tc.wantCode || !strings.Contains(e.Message, tc.wantInMsg) {
				t.Errorf("%d %s param %q code %q: %q\nwant 400 invalid_request_error param %q code %q containing %q",
					e.StatusCode, e.Type, e.Param, e.Code, e.Message, tc.wantParam, tc.wantCode, tc.wantInMsg)
			}
			if r := srv.Requests()[0]; r.Err != e.Message || r.Rule != 0 {
				t.Errorf("recorded error %q rule %d, want the message sent and no rule", r.Err, r.Rule)
			}
		})
	}
}

func TestResponseFormatAnswersWithJSONThatMeetsTheSchema(t *testing.T) {
	text := "[sim] Summary of \"find cats\"\nEstablished: nothing.\nNot established: nothing."
	quoted, _ := json.Marshal(text)
	summary := strings.Trim(string(quoted), `"`)
	cases := []struct {
		name   string
		format openai.ChatCompletionNewParamsResponseFormatUnion
		want   string
	}{
		{"text", openai.ChatCompletionNewParamsResponseFormatUnion{OfText: &shared.ResponseFormatTextParam{}}, text},
		{"json_object", openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}},
			`{"answer":"` + summary + `"}`},
		{"a json_schema without a schema", jsonSchema("free", false, `null`), `{"answer":"` + summary + `"}`},
		{"required properties only", jsonSchema("cats", false,
			`{"type":"object","properties":{"answer":{"type":"string"},"count":{"type":"integer"}},"required":["answer"]}`),
			`{"answer":"` + summary + `"}`},
		{"every property when strict", jsonSchema("cats", true,
			`{"type":"object","properties":{"answer":{"type":"string"},"count":{"type":"integer"}},"required":["answer"],"additionalProperties":false}`),
			`{"answer":"` + summary + `","count":1}`},
		{"each type's simplest value", jsonSchema("kinds", true, `{"type":"object","additionalProperties":false,
			"required":["s","n","x","b","l","e","c","z","maybe"],"properties":{
			"s":{"type":"string"},"n":{"type":"integer","minimum":3},"x":{"type":"number","exclusiveMaximum":0},"b":{"type":"boolean"},
			"l":{"type":"array","items":{"type":"string","enum":["tabby","siamese"]},"minItems":2},
			"e":{"enum":["red","green"]},"c":{"const":"cat"},"z":{"type":"null"},"maybe":{"type":["string","null"],"format":"email"}}}`),
			`{"b":true,"c":"cat","e":"red","l":["tabby","tabby"],"maybe":"sim@example.com","n":3,"s":"sim-adfbafb2","x":-1,"z":null}`},
		{"nested objects and references", jsonSchema("report", true, `{"type":"object","additionalProperties":false,
			"required":["summary","where","pets"],"properties":{
			"summary":{"type":"string","maxLength":5},
			"where":{"$ref":"#/$defs/place"},
			"pets":{"type":"array","minItems":1,"items":{"type":"object","properties":{"name":{"type":"string"},"home":{"$ref":"#/$defs/place"}},"required":["name","home"]}}},
			"$defs":{"place":{"type":"object","properties":{"zip":{"type":"string","pattern":"^[0-9]{5}$"},"url":{"type":"string","format":"uri"}},"required":["zip","url"]}}}`),
			`{"pets":[{"home":{"url":"https://example.com/sim","zip":"00000"},"name":"sim-f32d5827"}],"summary":"[sim]","where":{"url":"https://example.com/sim","zip":"00000"}}`},
		{"a root that is not an object", jsonSchema("list", false, `{"type":"array","items":{"type":"integer"},"minItems":1}`), `[1]`},
	}
	for _, tc := range cases {
		bothWays(t, tc.name, func(t *testing.T, srv *Server, c openai.Client, stream bool) {
			params := userAsks("find cats")
			params.Messages = append(params.Messages, openai.SystemMessage("Answer in JSON."))
			params.ResponseFormat = tc.format
			msg, finish, _, err := complete(t.Context(), c, params, stream)
			if err != nil {
				t.Fatal(err)
			}
			if msg.Content != tc.want || finish != "stop" {
				t.Errorf("content %s (finish %q)\nwant    %s", msg.Content, finish, tc.want)
			}
			if js := tc.format.OfJSONSchema; js != nil && js.JSONSchema.Schema != nil && string(js.JSONSchema.Schema.(json.RawMessage)) != "null" {
				meets(t, js.JSONSchema.Schema.(json.RawMessage), msg.Content)
			}
		})
	}
}

// meets checks content against schema, as a client's parser would.
func meets(t *testing.T, schema json.RawMessage, content string) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(content))
	if err != nil {
		t.Fatalf("content is not JSON: %v", err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("content does not meet the schema: %v", err)
	}
}

func TestAStructuredAnswerComesAfterTheToolCalls(t *testing.T) {
	srv := NewServer(nil)
	defer srv.Close()
	c := clientFor(srv)
	params := userAsks("find cats")
	params.Tools = []openai.ChatCompletionToolUnionParam{tool("search", "query")}
	params.ResponseFormat = jsonSchema("cats", true, `{"type":"object","properties":{"answer":{"type":"string"},"query":{"type":"string"}},"required":["answer","query"],"additionalProperties":false}`)
	msg, finish, _, err := complete(t.Context(), c, params, true)
	if err != nil || finish != "tool_calls" || msg.Content != "" {
		t.Fatalf("turn 1: %q finish %q, %v; want tool calls only", msg.Content, finish, err)
	}
	answerAll(&params, msg)
	msg, _, _, err = complete(t.Context(), c, params, true)
	want := `{"answer":"[sim] Answer to \"find cats\": search returned search ok.","query":"find cats"}`
	if err != nil || msg.Content != want {
		t.Errorf("turn 2: %s, %v\nwant    %s", msg.Content, err, want)
	}
	if got := srv.Requests()[1].ResponseFormat; got != "json_schema:cats" {
		t.Errorf("recorded response_format %q", got)
	}
}

func TestAStructuredAnswerIsDeterministicForASeed(t *testing.T) {
	schema := jsonSchema("tag", false, `{"type":"object","properties":{"label":{"type":"string"}},"required":["label"]}`)
	get := func(seed int64) string {
		srv := NewServer(&Scenario{Seed: seed})
		defer srv.Close()
		params := userAsks("x")
		params.ResponseFormat = schema
		msg, _, _, err := complete(t.Context(), clientFor(srv), params, false)
		if err != nil {
			t.Fatal(err)
		}
		return msg.Content
	}
	a, again, other := get(1), get(1), get(2)
	if a != again || a == other || !strings.HasPrefix(a, `{"label":"sim-`) {
		t.Errorf("seed 1 gave %s then %s, seed 2 %s; want the same twice, another for another seed", a, again, other)
	}
}

func TestNChoicesAnswerEachWithItsIndex(t *testing.T) {
	bothWays(t, "", func(t *testing.T, srv *Server, c openai.Client, stream bool) {
		params := userAsks("find cats")
		params.Tools = []openai.ChatCompletionToolUnionParam{tool("search", "query")}
		params.N = openai.Int(3)
		var res openai.ChatCompletion
		if stream {
			params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			s := c.Chat.Completions.NewStreaming(t.Context(), params)
			var acc openai.ChatCompletionAccumulator
			for s.Next() {
				if !acc.AddChunk(s.Current()) {
					t.Fatalf("chunk rejected: %s", s.Current().RawJSON())
				}
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			res = acc.ChatCompletion
		} else {
			var err error
			r, err := c.Chat.Completions.New(t.Context(), params)
			if err != nil {
				t.Fatal(err)
			}
			res = *r
		}
		if len(res.Choices) != 3 {
			t.Fatalf("%d choices, want 3", len(res.Choices))
		}
		ids := map[string]bool{}
		for i, ch := range res.Choices {
			if ch.Index != int64(i) || ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 ||
				ch.Message.ToolCalls[0].Function.Arguments != `{"query":"find cats"}` {
				t.Errorf("choice %d: index %d finish %q calls %+v", i, ch.Index, ch.FinishReason, ch.Message.ToolCalls)
				continue
			}
			ids[ch.Message.ToolCalls[0].ID] = true
		}
		if len(ids) != 3 {
			t.Errorf("tool call ids %v, want one of its own per choice", ids)
		}
		one := usage(nil, []reply{{toolCalls: []ToolCall{{Name: "search", Arguments: `{"query":"find cats"}`}}}})
		if res.Usage.CompletionTokens != 3*int64(one.CompletionTokens) {
			t.Errorf("completion tokens %d, want 3 × %d", res.Usage.CompletionTokens, one.CompletionTokens)
		}

		// Continuing from the second choice, every choice answers.
		params.Messages = append(params.Messages, res.Choices[1].Message.ToParam(),
			openai.ToolMessage("3 cats", res.Choices[1].Message.ToolCalls[0].ID))
		msg, _, _, err := complete(t.Context(), c, params, stream)
		if err != nil || msg.Content != `[sim] Answer to "find cats": search returned 3 cats.` {
			t.Errorf("after choice 1: %q, %v", msg.Content, err)
		}
		if r := srv.Requests()[0]; r.N != 3 {
			t.Errorf("recorded n %d, want 3", r.N)
		}
	})
}

func TestAStreamOfNChoicesInterleavesThem(t *testing.T) {
	srv := NewServer(nil)
	defer srv.Close()
	params := userAsks("hi there")
	params.N = openai.Int(2)
	c := clientFor(srv)
	s := c.Chat.Completions.NewStreaming(t.Context(), params)
	var order []int64
	for s.Next() {
		for _, ch := range s.Current().Choices {
			order = append(order, ch.Index)
		}
	}
	if s.Err() != nil {
		t.Fatal(s.Err())
	}
	// `[sim] Summary of "hi there"\nEstablished: nothing.\nNot established:
	// nothing.` is 10 words, then the finish chunk: 11 chunks a choice.
	want := []int64{}
	for range 11 {
		want = append(want, 0, 1)
	}
	if !reflect.DeepEqual(order, want) {
		t.Errorf("chunks went to choices %v, want %v", order, want)
	}
}

func TestRulesStillShapeAnswersWithTheseOptions(t *testing.T) {
	sc := &Scenario{Rules: []Rule{
		{Request: 1, Status: 503},
		{Request: 2, Answer: "not json at all"},
		{Request: 3, ToolCalls: []ToolCall{{Name: "search"}}},
	}}
	srv := NewServer(sc)
	defer srv.Close()
	c := clientFor(srv)
	params := userAsks("find cats")
	params.Tools = []openai.ChatCompletionToolUnionParam{tool("search", "query"), tool("fetch", "url")}
	params.ToolChoice = named("fetch")
	params.ResponseFormat = jsonSchema("cats", true, `{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"],"additionalProperties":false}`)
	params.N = openai.Int(2)

	_, err := c.Chat.Completions.New(t.Context(), params)
	if e, ok := errors.AsType[*openai.Error](err); !ok || e.StatusCode != 503 {
		t.Errorf("request 1: %v, want the scripted 503", err)
	}
	res, err := c.Chat.Completions.New(t.Context(), params)
	if err != nil || len(res.Choices) != 2 || res.Choices[0].Message.Content != "not json at all" || res.Choices[1].Message.Content != "not json at all" {
		t.Errorf("request 2: %+v, %v; want the scripted answer, verbatim, in both choices", res, err)
	}
	res, err = c.Chat.Completions.New(t.Context(), params)
	if err != nil || len(res.Choices) != 2 || callNames(res.Choices[0].Message)[0] != "search" ||
		res.Choices[0].Message.ToolCalls[0].ID == res.Choices[1].Message.ToolCalls[0].ID {
		t.Errorf("request 3: %+v, %v; want the scripted call in both choices, with ids of their own", res, err)
	}
}
