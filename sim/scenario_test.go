package sim

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseScenarioReportsTheFieldAndLineOfEachMistake(t *testing.T) {
	cases := []struct {
		name      string
		in        string
		wantField string
		wantLine  int
		wantText  string
	}{
		{"an unknown rule field", "rules:\n  - request: 1\n    dealy: 2s\n", "rules[0].dealy", 3, "unknown field"},
		{"an unknown top-level field", "seed: 1\nsedd: 2\n", "sedd", 2, "unknown field"},
		{"a repeated field", "rules:\n  - delay: 1s\n    delay: 2s\n", "rules[0].delay", 3, "repeated; first given at line 2"},
		{"a duration that does not parse", "rules:\n  - delay: 5x\n", "rules[0].delay", 2, `not a duration such as "1s" or "250ms", got "5x"`},
		{"a duration without a unit", "rules:\n  - first_token: 5\n", "rules[0].first_token", 2, `not a duration such as "1s" or "250ms", got "5"`},
		{"a negative duration", "rules:\n  - chunk_gap: -1s\n", "rules[0].chunk_gap", 2, "must not be negative"},
		{"a redirect status", "rules:\n  - status: 302\n", "rules[0].status", 2, "bad status 302"},
		{"a status beyond 599", "rules:\n  - status: 700\n", "rules[0].status", 2, "bad status 700"},
		{"a status that is not a number", "rules:\n  - status: teapot\n", "rules[0].status", 2, `not an integer, got "teapot"`},
		{"a status beyond 32 bits", "rules:\n  - status: 4294967296\n", "rules[0].status", 2, "out of range"},
		{"an answer with an error status", "rules:\n  - status: 500\n    answer: hi\n", "rules[0].answer", 3, "conflicts with status 500"},
		{"a first token after a hang", "rules:\n  - hang: true\n    first_token: 1s\n", "rules[0].first_token", 3, "conflicts with hang"},
		{"a hang after endless keepalives", "rules:\n  - keepalive: forever\n    hang: true\n", "rules[0].hang", 3, "keepalive forever"},
		{"keepalives on an error", "rules:\n  - status: 503\n    keepalive: 1s\n", "rules[0].keepalive", 3, "conflicts with status 503"},
		{"a retry-after without an error status", "rules:\n  - retry_after: \"1\"\n", "rules[0].retry_after", 2, "needs an error status"},
		{"a retry-after-ms on a normal answer", "rules:\n  - status: 200\n    retry_after_ms: 5\n", "rules[0].retry_after_ms", 3, "needs an error status"},
		{"a keepalive gap without keepalives", "rules:\n  - keepalive_every: 1s\n", "rules[0].keepalive_every", 2, "needs keepalive"},
		{"both ways to stop mid-stream", "rules:\n  - hang_after_chunks: 1\n    close_after_chunks: 2\n", "rules[0].close_after_chunks", 3, "conflicts with hang_after_chunks"},
		{"a negative request number", "rules:\n  - request: -1\n", "rules[0].request", 2, "must not be negative"},
		{"negative cached tokens", "rules:\n  - cached_tokens: -5\n", "rules[0].cached_tokens", 2, "must not be negative"},
		{"reasoning tokens that are not a number", "rules:\n  - reasoning_tokens: lots\n", "rules[0].reasoning_tokens", 2, "not an integer"},
		{"reasoning tokens on an error", "rules:\n  - status: 500\n    reasoning_tokens: 8\n", "rules[0].reasoning_tokens", 3, "conflicts with status 500"},
		{"cached tokens on a failed stream", "rules:\n  - failed: server_error\n    cached_tokens: 8\n", "rules[0].cached_tokens", 3, "conflicts with a stream that fails"},
		{"a negative chunk count", "rules:\n  - close_after_chunks: -2\n", "rules[0].close_after_chunks", 2, "must not be negative"},
		{"a window that starts before the clock", "rules:\n  - after: -1s\n    for: 1s\n", "rules[0].after", 2, "must not be negative"},
		{"a window of negative length", "rules:\n  - status: 503\n    for: -300ms\n", "rules[0].for", 3, "must not be negative"},
		{"a window of no time", "rules:\n  - after: 1s\n    for: 0s\n", "rules[0].for", 3, `must be positive: a window of 0s holds no request, got "0s"`},
		{"a window of a bare zero", "rules:\n  - for: 0\n", "rules[0].for", 2, "must be positive"},
		{"a window that is not a duration", "rules:\n  - after: soon\n", "rules[0].after", 2, "not a duration"},
		{"a window length without a unit", "rules:\n  - for: 300\n", "rules[0].for", 2, "not a duration"},
		{"a window given twice", "rules:\n  - for: 1s\n    for: 2s\n", "rules[0].for", 3, "repeated"},
		{"a bool that is not true or false", "rules:\n  - usage: yes\n", "rules[0].usage", 2, "not true or false"},
		{"a seed that is not an integer", "seed: 1.5\n", "seed", 1, "not an integer"},
		{"rules that are not a list", "rules: {request: 1}\n", "rules", 1, "not a list"},
		{"a rule that is not a mapping", "rules:\n  - 5\n", "rules[0]", 2, "not a mapping"},
		{"a tool call without a name", "rules:\n  - tool_calls:\n      - arguments: {a: 1}\n", "rules[0].tool_calls[0].name", 3, "missing"},
		{"tool calls that are not a list", "rules:\n  - tool_calls: search\n", "rules[0].tool_calls", 2, "not a list"},
		{"an empty list of tool calls", "rules:\n  - tool_calls: []\n", "rules[0].tool_calls", 2, "an empty list"},
		{"a tool call named by a number", "rules:\n  - tool_calls:\n      - name: 7\n", "rules[0].tool_calls[0].name", 3, "not a string"},
		{"an unknown tool call field", "rules:\n  - tool_calls:\n      - name: a\n        args: {}\n", "rules[0].tool_calls[0].args", 4, "unknown field"},
		{"a header value with a newline", "rules:\n  - status: 429\n    retry_after: \"1\\r\\nX: y\"\n", "rules[0].retry_after", 3, "not a valid header value"},
		{"a tab in YAML indentation", "seed: 1\n\tx: 2\n", "", 2, "tab character"},
		{"an unclosed quote", "seed: 1\nrules:\n  - delay: \"1s\n", "", 3, "unexpected end"},
		{"an alias", "a: &x 1\nrules:\n  - request: *x\n", "rules[0].request", 3, "aliases are not supported; write out the value anchored at line 1"},
		{"an unknown field left null", "rules:\n  - request: 1\n    colour: ~\n", "rules[0].colour", 3, "unknown field"},
		{"the first of two mistakes", "rules:\n  - delay: soon\nsedd: 2\n", "rules[0].delay", 2, "not a duration"},
		{"a second document", "seed: 1\n---\nseed: 2\n", "", 2, "a second document"},
		{"a top level that is a list", "- request: 1\n", "", 1, "not a mapping"},
		{"an unknown field in JSON", "{\n  \"rules\": [\n    {\"request\": 1,\n     \"hang\": true,\n     \"colour\": 1}\n  ]\n}\n", "rules[0].colour", 5, "unknown field"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := ParseScenario([]byte(tc.in))
			if err == nil {
				t.Fatalf("parsed %+v, want an error", sc)
			}
			e, ok := errors.AsType[*ScenarioError](err)
			if !ok || !errors.Is(err, ErrScenario) {
				t.Fatalf("error %v (%T) is not a *ScenarioError matching ErrScenario", err, err)
			}
			if e.Field != tc.wantField || e.Line != tc.wantLine {
				t.Errorf("field %q line %d, want %q line %d (%v)", e.Field, e.Line, tc.wantField, tc.wantLine, err)
			}
			if !strings.Contains(err.Error(), tc.wantText) || !strings.HasPrefix(err.Error(), "sim: ") {
				t.Errorf("message %q does not start with \"sim: \" and contain %q", err, tc.wantText)
			}
		})
	}
}

func TestParseScenarioReadsEveryField(t *testing.T) {
	yaml := `
seed: 42
rules:
  - request: 1
    status: 429
    message: slow down
    retry_after: "2"
    retry_after_ms: 200
  - turn: 2
    times: 3
    delay: 100ms
    keepalive: 5s
    keepalive_every: 500ms
    first_token: 2s
    chunk_gap: 10ms
    close_after_chunks: 0
    usage: false
    cached_tokens: 96
    reasoning_tokens: 12
    answer: fixed
    tool_calls:
      - name: search
        arguments: {q: cats, n: 2}
      - name: raw
        id: call_1
        arguments: "{not json"
      - name: bare
  - keepalive: forever
  - keepalive: 1s
    hang: true
  - hang_after_chunks: 4
  - after: 0s
    for: 300ms
    status: 503
    retry_after: "1"
  - after: 2s
    turn: 3
`
	want := &Scenario{Seed: 42, Rules: []Rule{
		{Request: 1, Status: 429, Message: "slow down", RetryAfter: "2", RetryAfterMs: "200"},
		{
			Turn: 2, Times: 3, Delay: 100 * time.Millisecond, Keepalive: 5 * time.Second,
			KeepaliveEvery: 500 * time.Millisecond, FirstToken: 2 * time.Second, ChunkGap: 10 * time.Millisecond,
			CloseAfterChunks: new(0), Usage: new(false), CachedTokens: 96, ReasoningTokens: 12, Answer: "fixed",
			ToolCalls: []ToolCall{
				{Name: "search", Arguments: `{"n":2,"q":"cats"}`},
				{ID: "call_1", Name: "raw", Arguments: "{not json"},
				{Name: "bare"},
			},
		},
		{Keepalive: Forever},
		{Keepalive: time.Second, Hang: true},
		{HangAfterChunks: new(4)},
		{For: 300 * time.Millisecond, Status: 503, RetryAfter: "1"},
		{After: 2 * time.Second, Turn: 3},
	}}
	got, err := ParseScenario([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestParseScenarioTreatsEmptyInputAsTheDefaultPolicy(t *testing.T) {
	for _, in := range []string{"", "# nothing\n", "~\n", "rules:\n", "{}"} {
		sc, err := ParseScenario([]byte(in))
		if err != nil || sc == nil || sc.Seed != 0 || len(sc.Rules) != 0 {
			t.Errorf("ParseScenario(%q) = %+v, %v; want an empty scenario", in, sc, err)
		}
	}
}

func TestParseScenarioLeavesNullFieldsOut(t *testing.T) {
	in := "seed:\nrules:\n  - request: 1\n    delay:\n    usage: ~\n    close_after_chunks: null\n    tool_calls:\n"
	sc, err := ParseScenario([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := &Scenario{Rules: []Rule{{Request: 1}}}
	if !reflect.DeepEqual(sc, want) {
		t.Errorf("got %+v, want %+v", sc, want)
	}
}

func TestParseScenarioReadsJSONIndentedWithTabs(t *testing.T) {
	in := "{\n\t\"seed\": 3,\n\t\"rules\": [\n\t\t{\"request\": 2, \"status\": 503, \"retry_after\": \"1\"}\n\t]\n}\n"
	sc, err := ParseScenario([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := &Scenario{Seed: 3, Rules: []Rule{{Request: 2, Status: 503, RetryAfter: "1"}}}
	if !reflect.DeepEqual(sc, want) {
		t.Errorf("got %+v, want %+v", sc, want)
	}
}

func TestValidateChecksScenariosBuiltInGo(t *testing.T) {
	cases := []struct {
		name      string
		sc        *Scenario
		wantField string
	}{
		{"nil is the default policy", nil, ""},
		{"a zero scenario is valid", &Scenario{}, ""},
		{"a plain fault is valid", &Scenario{Rules: []Rule{{Request: 1, Status: 500}}}, ""},
		{"a bad status", &Scenario{Rules: []Rule{{}, {Status: 99}}}, "rules[1].status"},
		{"a negative delay", &Scenario{Rules: []Rule{{Delay: -time.Second}}}, "rules[0].delay"},
		{"a tool call without a name", &Scenario{Rules: []Rule{{ToolCalls: []ToolCall{{}}}}}, "rules[0].tool_calls"},
		{"an answer after a hang", &Scenario{Rules: []Rule{{Hang: true, Answer: "x"}}}, "rules[0].answer"},
		{"a window is valid", &Scenario{Rules: []Rule{{After: time.Second, For: time.Second, Status: 503}}}, ""},
		{"a window without an end is valid", &Scenario{Rules: []Rule{{After: time.Second}}}, ""},
		{"a window that starts before the clock", &Scenario{Rules: []Rule{{After: -time.Second}}}, "rules[0].after"},
		{"a window of negative length", &Scenario{Rules: []Rule{{}, {For: -time.Second}}}, "rules[1].for"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.sc.Validate()
			if tc.wantField == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			e, ok := errors.AsType[*ScenarioError](err)
			if !ok || e.Field != tc.wantField || e.Line != 0 {
				t.Fatalf("Validate() = %v, want a ScenarioError on %s without a line", err, tc.wantField)
			}
		})
	}
}

func TestLoadScenarioNamesTheFileInItsErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte("rules:\n  - delay: soon\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadScenario(path)
	want := "sim: " + path + `:2: rules[0].delay: not a duration such as "1s" or "250ms", got "soon"`
	if err == nil || err.Error() != want {
		t.Errorf("LoadScenario error %q, want %q", err, want)
	}
	if _, err := LoadScenario(filepath.Join(t.TempDir(), "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadScenario of a missing file: %v, want os.ErrNotExist", err)
	}
}

func TestTheExampleScenariosAreValid(t *testing.T) {
	want := map[string]Rule{
		"flaky.yaml":        {Request: 1, Status: 500},
		"ratelimit.yaml":    {Request: 1, Status: 429, RetryAfterMs: "200", RetryAfter: "1"},
		"hang.yaml":         {Request: 2, Hang: true},
		"keepalive.yaml":    {Keepalive: 90 * time.Second, KeepaliveEvery: time.Second},
		"midstream.yaml":    {Turn: 1, Times: 1, FirstToken: 300 * time.Millisecond, ChunkGap: 50 * time.Millisecond, CloseAfterChunks: new(3)},
		"reasoning.yaml":    {Turn: 1, FirstToken: 20 * time.Second},
		"stream-error.yaml": {Request: 1, StreamError: "rate_limit_exceeded"},
	}
	for name, rule := range want {
		t.Run(name, func(t *testing.T) {
			sc, err := LoadScenario(filepath.Join("..", "examples", "sim", name))
			if err != nil {
				t.Fatal(err)
			}
			if len(sc.Rules) != 1 || !reflect.DeepEqual(sc.Rules[0], rule) {
				t.Errorf("rules %+v, want [%+v]", sc.Rules, rule)
			}
		})
	}
}
