package tools

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/model"
)

var demo = map[string]Tool{
	"clock": Func(Spec{Name: "clock", Description: "the time", Effect: Read, Speculative: true},
		func(context.Context, json.RawMessage, Progress) (any, error) { return "noon", nil }),
}

func TestAGoodConfigParsesInYAMLAndJSON(t *testing.T) {
	yamlFile := `
tools:
  - name: search
    url: http://127.0.0.1:9000
    effect: read
    ceiling: 10s
    p50: 300ms
    p95: 2s
    silence: 5s
    cancellable: true
    max_attempts: 4
    parameters:
      type: object
      properties:
        q: {type: string}
      required: [q]
  - name: grep
    command: [grep, -r, "--", pattern]
    description: search files
  - name: now
    builtin: clock
    speculative: false
`
	jsonFile := `{
	"tools": [
		{"name": "search", "url": "http://127.0.0.1:9000", "effect": "read", "ceiling": "10s", "p50": "300ms", "p95": "2s",
		 "silence": "5s", "cancellable": true, "max_attempts": 4,
		 "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}},
		{"name": "grep", "command": ["grep", "-r", "--", "pattern"], "description": "search files"},
		{"name": "now", "builtin": "clock", "speculative": false}
	]
}`
	for name, src := range map[string]string{"tools.yaml": yamlFile, "tools.json": jsonFile} {
		t.Run(name, func(t *testing.T) {
			c, err := ParseConfig(name, []byte(src), demo)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Entries) != 3 {
				t.Fatalf("%d entries", len(c.Entries))
			}
			reg := NewRegistry(budget.NewEstimates())
			for _, tool := range c.Tools(nil) {
				if err := reg.Register(tool); err != nil {
					t.Fatal(err)
				}
			}
			specs := reg.Specs()
			s := specs[0]
			if s.Name != "search" || s.Effect != Read || s.Ceiling != 10*time.Second || s.P50 != 300*time.Millisecond ||
				s.P95 != 2*time.Second || s.Silence != 5*time.Second || !s.Cancellable || s.MaxAttempts != 4 {
				t.Errorf("search spec %+v", s)
			}
			if !jsonEqual(s.Parameters, []byte(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)) {
				t.Errorf("parameters %s", s.Parameters)
			}
			if g := specs[1]; g.Effect != Write || g.MaxAttempts != DefaultMaxAttempts || g.Description != "search files" || string(g.Parameters) != `{"type":"object"}` {
				t.Errorf("grep spec %+v: want the defaults", g)
			}
			if n := specs[2]; n.Name != "now" || n.Description != "the time" || n.Effect != Read || n.Speculative {
				t.Errorf("builtin spec %+v: want the builtin's, renamed, speculative turned off by the entry", n)
			}
			res := reg.Call(t.Context(), &Run{Budget: newBudget(t, time.Minute)}, "now", nil)
			if string(res.Output) != `"noon"` {
				t.Errorf("the builtin under its config name answered %+v", res)
			}
		})
	}
}

func TestABadConfigNamesTheFieldAndTheLine(t *testing.T) {
	entry := func(lines ...string) string {
		return "tools:\n  - name: t\n" + "    " + strings.Join(lines, "\n    ") + "\n"
	}
	cases := []struct {
		name      string
		src       string
		wantLine  int // -1: any line, as the YAML parser reports it
		wantField string
		wantMsg   string
	}{
		{"an unknown top-level field", "tool: []\n", 1, "tool", "unknown field"},
		{"an unknown entry field", entry("url: http://x", "colour: red"), 4, "tools[0].colour", "unknown field"},
		{"an unknown effect", entry("url: http://x", "effect: sometimes"), 4, "tools[0].effect", "read or write"},
		{"a bad duration", entry("url: http://x", "ceiling: soon"), 4, "tools[0].ceiling", "not a duration"},
		{"a duration without a unit", entry("url: http://x", "p50: 300"), 4, "tools[0].p50", "not a duration"},
		{"a negative duration", entry("url: http://x", "p95: -1s"), 4, "tools[0].p95", "negative"},
		{"two kinds", entry("url: http://x", "command: [ls]"), 4, "tools[0].command", "only one of"},
		{"no kind", entry("effect: read"), 2, "tools[0]", "one of url, command, builtin or agent"},
		{"no name", "tools:\n  - url: http://x\n", 2, "tools[0].name", "required"},
		{"a bad name", "tools:\n  - name: web search\n    url: http://x\n", 2, "tools[0].name", "letters"},
		{"a duplicate name", entry("url: http://x") + "  - name: t\n    command: [ls]\n", 4, "tools[1].name", "first given at line 2"},
		{"max_attempts zero", entry("url: http://x", "max_attempts: 0"), 4, "tools[0].max_attempts", "1 or more"},
		{"max_attempts not a number", entry("url: http://x", "max_attempts: many"), 4, "tools[0].max_attempts", "not an integer"},
		{"a URL that is not http", entry("url: ftp://x"), 3, "tools[0].url", "http"},
		{"a URL without a host", entry("url: http://"), 3, "tools[0].url", "no host"},
		{"an empty command", entry("command: []"), 3, "tools[0].command", "no program"},
		{"a command that is not a list", entry("command: ls -l"), 3, "tools[0].command", "not a list"},
		{"an unknown builtin", entry("builtin: calendar"), 3, "tools[0].builtin", "unknown builtin (known: clock)"},
		{"parameters that are no schema", entry("url: http://x", "parameters: {type: objekt}"), 4, "tools[0].parameters", "JSON Schema"},
		{"parameters with an external ref", entry("url: http://x", "parameters: {$ref: 'http://evil/x.json'}"), 4, "tools[0].parameters", "not allowed"},
		{"parameters that are no object", entry("url: http://x", "parameters: [1]"), 4, "tools[0].parameters", "not a JSON Schema object"},
		{"a repeated key", entry("url: http://x", "url: http://y"), 4, "tools[0].url", "repeated; first given at line 3"},
		{"p50 above p95", entry("url: http://x", "p50: 2s", "p95: 1s"), 2, "tools[0].p50", "above p95"},
		{"a ceiling below p50", entry("url: http://x", "p50: 2s", "ceiling: 1s"), 2, "tools[0].ceiling", "every call would be refused"},
		{"speculative not a bool", entry("url: http://x", "speculative: maybe"), 4, "tools[0].speculative", "true or false"},
		{"a name that is a number", "tools:\n  - name: 12\n    url: http://x\n", 2, "tools[0].name", "not a string"},
		{"tools not a list", "tools: {name: t}\n", 1, "tools", "not a list"},
		{"an entry not a mapping", "tools:\n  - t\n", 2, "tools[0]", "not a mapping"},
		{"not a mapping at all", "- tools\n", 1, "", "not a mapping"},
		{"a syntax error", "tools:\n  - name: t\n    url: [x\n", -1, "", "did not find expected"},
		{"a second document", "tools: []\n---\ntools: []\n", 2, "", "second document"},
		{"an empty builtin", entry("builtin: ''"), 3, "tools[0].builtin", "unknown builtin (known: clock)"},
		{"an empty URL", entry("url: ''"), 3, "tools[0].url", "not an http or https URL"},
		{"a command word that is a list", entry("command: [ls, [-l]]"), 3, "tools[0].command[1]", "not a single value"},
		{"an unknown field left null", entry("url: http://x", "colour: ~"), 4, "tools[0].colour", "unknown field"},
		{"an alias", "x: &c [ls]\ntools:\n  - name: a\n    command: *c\n", 4, "tools[0].command", "aliases are not supported; write out the value anchored at line 1"},
		{"a merge key", "tools:\n  - &a {name: a, command: [ls]}\n  - <<: *a\n    name: b\n", 3, "tools[1].<<", "aliases are not supported"},
		{"a sub-agent with parameters", entry("agent: {instructions: x}", "parameters: {type: object}"), 4, "tools[0].parameters", "does not apply to a sub-agent"},
		{"a sub-agent said cancellable", entry("agent: {}", "cancellable: true"), 4, "tools[0].cancellable", "does not apply to a sub-agent"},
		{"a sub-agent with no steps", entry("agent:", "  max_steps: 0"), 4, "tools[0].agent.max_steps", "1 or more"},
		{"a command said cancellable", entry("command: [ls]", "cancellable: true"), 4, "tools[0].cancellable", "a command tool cannot be cancelled by key"},
		{"a builtin that cannot cancel said cancellable", entry("builtin: clock", "cancellable: true"), 4, "tools[0].cancellable", "builtin clock cannot be cancelled by key"},
		{"a status command without a command", entry("url: http://x", "status: [ls]"), 4, "tools[0].status", "only a command entry has a status command"},
		{"an empty status command", entry("command: [ls]", "status: []"), 4, "tools[0].status", "no program"},
		{"an env without a command", entry("url: http://x", "env: {A: b}"), 4, "tools[0].env", "only a command entry has an environment"},
		{"an env that is not a mapping", entry("command: [ls]", "env: [A=b]"), 4, "tools[0].env", "not a mapping"},
		{"an env name holding =", entry("command: [ls]", "env: {'A=B': c}"), 4, "tools[0].env.A=B", "not an environment variable's name"},
		{"an unknown agent field", entry("agent:", "  prompt: hi"), 4, "tools[0].agent.prompt", "unknown field"},
		{"an agent that is not a mapping", entry("agent: researcher"), 3, "tools[0].agent", "not a mapping"},
		{"an agent with an empty tools file", entry("agent:", "  tools: ''"), 4, "tools[0].agent.tools", "leave tools out"},
		{"an agent beside a url", entry("url: http://x", "agent: {}"), 4, "tools[0].agent", "only one of"},
		{"an agent on an API that is none", entry("agent:", "  model: gpt-5", "  api: completions"), 5, "tools[0].agent.api", "must be chat or responses"},
		{"an agent on an empty API", entry("agent:", "  api: ''"), 4, "tools[0].agent.api", "leave api out for the parent's"},
		{"an agent whose API is spelled in capitals", entry("agent:", "  api: Responses"), 4, "tools[0].agent.api", "must be chat or responses"},
		{"an agent whose API is a list", entry("agent:", "  api: [chat]"), 4, "tools[0].agent.api", "not a string"},
		{"JSON with an unknown effect", "{\"tools\": [\n  {\"name\": \"t\",\n   \"url\": \"http://x\",\n   \"effect\": \"rw\"}\n]}", 4, "tools[0].effect", "read or write"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig("tools.yaml", []byte(tc.src), demo)
			if err == nil {
				t.Fatalf("parsed %+v; want an error", c.Entries)
			}
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("%v does not match ErrConfig", err)
			}
			ce, ok := errors.AsType[*ConfigError](err)
			if !ok {
				t.Fatalf("%v is not a *ConfigError", err)
			}
			if tc.wantLine > 0 && ce.Line != tc.wantLine || ce.Line <= 0 || ce.Field != tc.wantField {
				t.Errorf("line %d field %q; want line %d field %q (%v)", ce.Line, ce.Field, tc.wantLine, tc.wantField, err)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("%q does not say %q", err, tc.wantMsg)
			}
			if want := "tools: tools.yaml:"; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("%q does not start with %q", err, want)
			}
		})
	}
}

func TestEveryConfigErrorIsReportedAtOnce(t *testing.T) {
	src := "tools:\n  - name: a\n    url: http://x\n    effect: maybe\n  - name: b\n    command: [ls]\n    ceiling: never\n"
	_, err := ParseConfig("t.yaml", []byte(src), nil)
	for _, want := range []string{"t.yaml:4: tools[0].effect", "t.yaml:7: tools[1].ceiling"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v does not report %q", err, want)
		}
	}
}

func TestAnEmptyConfigHasNoTools(t *testing.T) {
	for _, src := range []string{"", "{}", "tools: []", "tools:", "# nothing\n"} {
		c, err := ParseConfig("t.yaml", []byte(src), nil)
		if err != nil || len(c.Entries) != 0 {
			t.Errorf("%q: %v, %v", src, c, err)
		}
	}
}

func TestANullFieldIsLeftOut(t *testing.T) {
	src := "tools:\n  - name: a\n    command: [ls]\n    ceiling: ~\n    effect:\n    speculative: null\n    max_attempts:\n"
	c, err := ParseConfig("t.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	if e := c.Entries[0]; e.Ceiling != 0 || e.Effect != "" || e.Speculative != nil || e.MaxAttempts != 0 {
		t.Errorf("entry %+v; want every null field left out", e)
	}
}

func TestLoadConfigReadsAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(path, []byte("tools:\n  - name: ls\n    command: [ls]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(path, nil)
	if err != nil || len(c.Entries) != 1 || c.File != path {
		t.Errorf("%+v, %v", c, err)
	}
	if _, err := LoadConfig(path+".missing", nil); !errors.Is(err, ErrConfig) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}

func TestLoadConfigLoadsEveryAgentsToolsFileRelativeToItsOwn(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	top := write("top.yaml", `tools:
  - name: researcher
    description: Researches one question.
    ceiling: 30s
    agent:
      instructions: You research.
      tools: agents/researcher.yaml
      model: sim
      api: responses
      max_steps: 10
  - name: scribe
    agent: {}
`)
	write("agents/researcher.yaml", "tools:\n  - name: deep\n    agent:\n      tools: deep.yaml\n")
	write("agents/deep.yaml", "tools:\n  - name: ls\n    command: [ls]\n")

	c, err := LoadConfig(top, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := c.Entries[0]
	if a := r.Agent; a == nil || a.Instructions != "You research." || a.Model != "sim" || a.API != "responses" || a.MaxSteps != 10 ||
		a.ToolsFile != "agents/researcher.yaml" || r.Ceiling != 30*time.Second {
		t.Fatalf("researcher %+v, agent %+v", r, r.Agent)
	}
	deep := r.Agent.Tools.Entries[0].Agent
	if deep.Tools == nil || deep.Tools.Entries[0].Name != "ls" {
		t.Fatalf("the researcher's own agent did not get its tools, named relative to its file: %+v", deep)
	}
	if s := c.Entries[1].Agent; s == nil || s.Tools != nil {
		t.Errorf("an agent with no tools file: %+v", s)
	}
	if n := len(c.Configs()); n != 3 {
		t.Errorf("Configs() has %d configs, want the top file, the researcher's and the deep one's", n)
	}
	if got := c.Tools(nil); len(got) != 0 {
		t.Errorf("Tools built %d tools of agent entries, which are package harness's to build", len(got))
	}

	write("agents/deep.yaml", "tools:\n  - name: ls\n    command: [ls]\n  - name: again\n    agent:\n      tools: ../top.yaml\n")
	_, err = LoadConfig(top, nil)
	if ce, ok := errors.AsType[*ConfigError](err); !ok || !strings.Contains(err.Error(), "top.yaml → researcher.yaml → deep.yaml → top.yaml") ||
		!strings.HasSuffix(ce.File, "deep.yaml") || ce.Line != 6 || ce.Field != "tools[1].agent.tools" {
		t.Errorf("a cycle of agents: %v", err)
	}

	write("agents/deep.yaml", "tools:\n  - name: ls\n    comand: [ls]\n")
	if _, err := LoadConfig(top, nil); err == nil || !strings.Contains(err.Error(), "deep.yaml:3: tools[0].comand") {
		t.Errorf("a bad child file: %v, want its own name and line", err)
	}
	write("agents/researcher.yaml", "tools:\n  - name: deep\n    agent:\n      tools: missing.yaml\n")
	if _, err := LoadConfig(top, nil); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "researcher.yaml:4: tools[0].agent.tools \"missing.yaml\"") {
		t.Errorf("a missing child file: %v, want the entry that names it", err)
	}
}

func TestTheManifestFillsWhatTheEntryLeftOut(t *testing.T) {
	s := &toolServer{manifest: `{"tools":[
		{"name":"search","description":"from the server","parameters":{"type":"object","required":["q"]},
		 "effect":"read","cancellable":true,"p50_ms":200,"p95_ms":900,"extra":"ignored"},
		{"name":"other","effect":"write"}]}`}
	srv := startServer(t, s)
	src := "tools:\n  - name: search\n    url: " + srv.URL + "\n    description: ours\n    p95: 2s\n    cancellable: false\n" +
		"  - name: missing\n    url: " + srv.URL + "\n  - name: ls\n    command: [ls]\n"
	c, err := ParseConfig("t.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}

	err = c.Resolve(t.Context(), srv.Client(), time.Second)

	me, ok := errors.AsType[*ManifestError](err)
	if !ok || me.Tool != "missing" || !errors.Is(err, ErrManifest) {
		t.Errorf("Resolve: %v; want a manifest error for the tool it does not list", err)
	}
	e := c.Entries[0]
	if e.Description != "ours" || e.P95 != 2*time.Second || e.Cancellable == nil || *e.Cancellable {
		t.Errorf("the entry lost what it said: %+v", e)
	}
	if e.Effect != Read || e.P50 != 200*time.Millisecond || !jsonEqual(e.Parameters, []byte(`{"type":"object","required":["q"]}`)) {
		t.Errorf("the manifest did not fill what the entry left out: %+v", e)
	}
	est := budget.NewEstimates()
	reg := NewRegistry(est)
	if err := reg.Register(c.Tools(srv.Client())[0]); err != nil {
		t.Fatal(err)
	}
	if k := est.Kind("tool:search"); k.P50() != 200*time.Millisecond || k.P95() != 2*time.Second {
		t.Errorf("declared p50 %v p95 %v", k.P50(), k.P95())
	}
}

func TestResolveFailsWithinItsTimeout(t *testing.T) {
	hangs := &toolServer{}
	srv := startServer(t, hangs)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /tools", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	slow := startServer(t, &toolServer{})
	slow.Config.Handler = mux
	down := startServer(t, &toolServer{})
	down.Close()
	src := "tools:\n  - name: a\n    url: " + srv.URL + "\n  - name: b\n    url: " + slow.URL + "\n  - name: c\n    url: " + down.URL + "\n"
	c, err := ParseConfig("t.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = c.Resolve(t.Context(), nil, 200*time.Millisecond)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Resolve took %v with a 200ms timeout", took)
	}
	for _, want := range []string{"HTTP 404", "deadline exceeded", "refused"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v does not report %q", err, want)
		}
	}
}

func TestRegisterRefusesWhatCannotBeCalled(t *testing.T) {
	nop := func(context.Context, json.RawMessage, Progress) (any, error) { return nil, nil }
	cases := []struct {
		name  string
		tool  Tool
		field string
	}{
		{"a missing name", Func(Spec{}, nop), "name"},
		{"a name with a space", Func(Spec{Name: "a b"}, nop), "name"},
		{"an unknown effect", Func(Spec{Name: "a", Effect: "delete"}, nop), "effect"},
		{"a negative ceiling", Func(Spec{Name: "a", Ceiling: -1}, nop), "ceiling"},
		{"a p50 above the p95", Func(Spec{Name: "a", P50: 2, P95: 1}, nop), "p50"},
		{"negative max attempts", Func(Spec{Name: "a", MaxAttempts: -1}, nop), "max_attempts"},
		{"a schema that does not compile", Func(Spec{Name: "a", Parameters: json.RawMessage(`{"type":1}`)}, nop), "parameters"},
		{"a schema that is not JSON", Func(Spec{Name: "a", Parameters: json.RawMessage(`{`)}, nop), "parameters"},
		{"a nil function", Func(Spec{Name: "a"}, nil), "func"},
		{"an empty command", Command(Spec{Name: "a"}, nil), "command"},
		{"a remote tool without a URL", Remote(Spec{Name: "a"}, "", nil), "url"},
		{"a remote tool with a relative URL", Remote(Spec{Name: "a"}, "/tools", nil), "url"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := NewRegistry(nil).Register(tc.tool)
			se, ok := errors.AsType[*SpecError](err)
			if !ok || se.Field != tc.field || !errors.Is(err, ErrBadSpec) {
				t.Errorf("Register: %v; want a spec error on %s", err, tc.field)
			}
		})
	}
}

func TestRegisteringANameTwiceIsAnError(t *testing.T) {
	nop := func(context.Context, json.RawMessage, Progress) (any, error) { return nil, nil }
	reg := NewRegistry(nil)
	if err := reg.Register(Func(Spec{Name: "a"}, nop)); err != nil {
		t.Fatal(err)
	}
	err := reg.Register(Command(Spec{Name: "a"}, []string{"ls"}))
	if !errors.Is(err, ErrDuplicate) || !errors.Is(err, ErrBadSpec) {
		t.Errorf("second registration: %v", err)
	}
	if tool, ok := reg.Lookup("a"); !ok || tool.Spec().Name != "a" || len(reg.Specs()) != 1 {
		t.Errorf("the first registration was not kept")
	}
	if _, ok := reg.Lookup("b"); ok {
		t.Error("Lookup found an unregistered name")
	}
}

func TestAZeroRegistryDeclaresOnTheRunsEstimates(t *testing.T) {
	var reg Registry
	nop := func(context.Context, json.RawMessage, Progress) (any, error) { return 1, nil }
	if err := reg.Register(Func(Spec{Name: "a", P50: time.Second, P95: 3 * time.Second}, nop)); err != nil {
		t.Fatal(err)
	}
	b := newBudget(t, time.Minute)
	if res := reg.Call(t.Context(), &Run{Budget: b}, "a", nil); res.Err != "" {
		t.Fatal(res.Err)
	}
	if k := b.Estimates().Kind("tool:a"); k.P50() != time.Second || k.P95() != 3*time.Second {
		t.Errorf("p50 %v p95 %v", k.P50(), k.P95())
	}
}

func TestEveryAgentAPIIsOneTheModelClientSpeaks(t *testing.T) {
	for _, api := range apis {
		if _, err := model.New(model.Config{Model: "m", API: api}); err != nil {
			t.Errorf("api: %s is accepted in a tools file, but the model client refuses it: %v", api, err)
		}
	}
}
