package harness_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/kit"
	"github.com/glidepath/glidepath/trace"
	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"
)

// writeConfigs writes files under a new folder and loads the first.
func writeConfigs(t *testing.T, files ...[2]string) *tools.Config {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f[0]), []byte(f[1]), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tc, err := tools.LoadConfig(filepath.Join(dir, files[0][0]), nil)
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

func TestAToolsetRegistersSubAgentsInTheFilesOrderWithTheirOwnTools(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := startKit(t, kit.Tool{Name: "lookup", Description: "Looks things up.", Effect: kit.Read,
			Handler: func(context.Context, *kit.Call) (any, error) { return "found", nil }})
		defer k.close()
		tc := writeConfigs(t,
			[2]string{"top.yaml", `tools:
  - name: researcher
    description: Researches one question.
    ceiling: 30s
    agent:
      instructions: You research.
      tools: researcher.yaml
      model: other
  - name: echo
    command: [cat]
  - name: scribe
    agent:
      model: missing
`},
			[2]string{"researcher.yaml", "tools:\n  - name: lookup\n    url: http://tools.invalid\n"})
		srv := sim.NewPipeServer(nil)
		defer srv.Close()
		parent, other := newModel(t, srv), newModel(t, srv)
		var warnings []string
		ts := &harness.Toolset{Config: tc, Model: parent, Client: k.client(),
			Models: func(name, _ string) (harness.Model, error) {
				if name == "other" {
					return other, nil
				}
				return nil, errors.New("no such model")
			},
			Warn: func(err error) { warnings = append(warnings, err.Error()) }}
		b, err := budget.New(budget.Config{Total: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		var recs collect
		reg := tools.NewRegistry(nil)
		s, ctx, err := harness.Start(t.Context(), b, harness.Config{Task: "q", Model: parent, Tools: reg, Sinks: []trace.Sink{&recs}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()

		ts.Resolve(ctx, s)
		ts.Register(reg)

		var names []string
		for _, sp := range reg.Specs() {
			names = append(names, sp.Name)
		}
		if !slices.Equal(names, []string{"researcher", "echo"}) {
			t.Errorf("offered %v, want researcher and echo, in the file's order, and not scribe, whose model is missing", names)
		}
		r, _ := reg.Lookup("researcher")
		if sp := r.Spec(); sp.Kind != "agent:researcher" || sp.Ceiling != 30*time.Second || sp.Effect != tools.Write {
			t.Errorf("researcher's spec %+v", sp)
		}
		want := []string{"tool echo: neither its entry nor its manifest says whether it only reads",
			"tool scribe is unavailable: agent scribe: model missing: no such model"}
		for _, w := range want {
			if !slices.ContainsFunc(warnings, func(s string) bool { return strings.Contains(s, w) }) {
				t.Errorf("warnings %q lack %q", warnings, w)
			}
		}
		if u := s.Unavailable(); len(u) != 1 || u[0].Tool != "scribe" {
			t.Errorf("unavailable %+v, want scribe, the sub-agent that cannot be made (issue 24)", u)
		}
		// The child's url tool got its manifest, fetched as the parent's setup.
		lookup := tc.Entries[0].Agent.Tools.Entries[0]
		if lookup.Description != "Looks things up." || lookup.Effect != tools.Read {
			t.Errorf("the child's tool after Resolve: %+v", lookup)
		}
		s.Close() // the sinks are fed off the run's path: Close hands them every record
		if setup := only(recs.all(), trace.AttemptEnd, harness.SetupStep); len(setup) != 1 || setup[0].Outcome != trace.OK {
			t.Errorf("setup records %+v, want the child's manifest fetched once, as the parent's setup", setup)
		}
	})
}

// An MCP server at a url, and one that is not there: the first's tools
// are offered as mcp__SERVER__TOOL after a setup step, and the run uses
// them; the second is a warning, and the run goes on without it.
func TestAToolsetOffersTheToolsOfTheMCPServersThatCameUp(t *testing.T) {
	srv := sdkmcp.NewServer(&sdkmcp.Implementation{Name: "test", Version: "1"}, nil)
	srv.AddTool(&sdkmcp.Tool{Name: "echo", Description: "Echoes.", InputSchema: map[string]any{"type": "object"},
		Annotations: &sdkmcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *sdkmcp.CallToolRequest) (*sdkmcp.CallToolResult, error) {
			return &sdkmcp.CallToolResult{Content: []sdkmcp.Content{&sdkmcp.TextContent{Text: "echoed"}}}, nil
		})
	up := httptest.NewServer(sdkmcp.NewStreamableHTTPHandler(func(*http.Request) *sdkmcp.Server { return srv }, nil))
	defer up.Close()
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	tc, err := tools.ParseConfig("t.yaml", []byte("mcpServers:\n  up:\n    url: "+up.URL+"\n    trust_hints: true\n  down:\n    url: "+down.URL+"/mcp\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	sim := sim.NewPipeServer(nil)
	defer sim.Close()
	var warnings []string
	var mu sync.Mutex
	ts := &harness.Toolset{Config: tc, Warn: func(err error) { mu.Lock(); warnings = append(warnings, err.Error()); mu.Unlock() }}
	b, err := budget.New(budget.Config{Total: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var recs collect
	reg := tools.NewRegistry(nil)
	s, ctx, err := harness.Start(t.Context(), b, harness.Config{Task: "say it", Model: newModel(t, sim), Tools: reg, Sinks: []trace.Sink{&recs}})
	if err != nil {
		t.Fatal(err)
	}

	ts.Resolve(ctx, s)
	ts.Register(reg)
	res := s.Run(ctx)
	s.Close()
	reg.Close(t.Context())
	ts.Close(t.Context())

	if res.Status != "complete" || !strings.Contains(res.Answer, "mcp__up__echo returned") {
		t.Errorf("result %+v, want the model's answer from mcp__up__echo", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warnings) != 1 || !strings.Contains(warnings[0], "tool mcp server down is unavailable: its mcp server down did not come up") {
		t.Errorf("warnings %q, want one for the server that is down", warnings)
	}
	if len(res.Unavailable) != 1 || res.Unavailable[0].Tool != "mcp server down" {
		t.Errorf("unavailable %+v, want the server that is down (SPEC §4)", res.Unavailable)
	}
	var setups []string
	for _, r := range only(recs.all(), trace.AttemptEnd, harness.SetupStep) {
		setups = append(setups, r.Message)
	}
	if len(setups) != 2 {
		t.Errorf("setup records %q, want a connect of each server", setups)
	}
}

// mcpServers serves, over in-memory connections, a go-sdk server at each
// /NAME/mcp, whose tools are the names given; DELETE, which ends a
// session, takes deleteTakes. The server's tools/list answers give the
// tools of schemas theirs.
func mcpServers(t *testing.T, deleteTakes time.Duration, schemas map[string]any, servers map[string][]string) *handlerServer {
	t.Helper()
	mux := http.NewServeMux()
	var all []*sdkmcp.Server
	for name, names := range servers {
		srv := sdkmcp.NewServer(&sdkmcp.Implementation{Name: name, Version: "1"}, nil)
		for _, tool := range names {
			srv.AddTool(&sdkmcp.Tool{Name: tool, InputSchema: map[string]any{"type": "object"}, Annotations: &sdkmcp.ToolAnnotations{ReadOnlyHint: true}},
				func(context.Context, *sdkmcp.CallToolRequest) (*sdkmcp.CallToolResult, error) {
					return &sdkmcp.CallToolResult{Content: []sdkmcp.Content{&sdkmcp.TextContent{Text: tool}}}, nil
				})
		}
		// The go-sdk's server refuses a schema that is not an object's,
		// other servers do not: its answer is rewritten on the way out.
		srv.AddReceivingMiddleware(func(next sdkmcp.MethodHandler) sdkmcp.MethodHandler {
			return func(ctx context.Context, method string, req sdkmcp.Request) (sdkmcp.Result, error) {
				res, err := next(ctx, method, req)
				if lr, ok := res.(*sdkmcp.ListToolsResult); ok {
					for i, tool := range lr.Tools {
						if schema, ok := schemas[tool.Name]; ok {
							c := *tool
							c.InputSchema = schema
							lr.Tools[i] = &c
						}
					}
				}
				return res, err
			}
		})
		all = append(all, srv)
		h := sdkmcp.NewStreamableHTTPHandler(func(*http.Request) *sdkmcp.Server { return srv }, nil)
		mux.Handle("/"+name+"/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodDelete {
				time.Sleep(deleteTakes)
			}
			h.ServeHTTP(w, r)
		}))
	}
	hs := serveHandler(mux)
	t.Cleanup(func() {
		hs.close()
		for _, srv := range all {
			for ss := range srv.Sessions() {
				ss.Close()
			}
		}
	})
	return hs
}

func mcpConfig(t *testing.T, names ...string) *tools.Config {
	t.Helper()
	var src strings.Builder
	src.WriteString("mcpServers:\n")
	for _, name := range names {
		fmt.Fprintf(&src, "  %q:\n    url: http://tools.invalid/%s/mcp\n    trust_hints: true\n", name, name)
	}
	tc, err := tools.ParseConfig("t.yaml", []byte(src.String()), nil)
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

// Servers whose DELETE takes 1s each: closing the Toolset takes 1s, not
// one after the other.
func TestClosingAToolsetClosesItsMCPServersAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hs := mcpServers(t, time.Second, nil, map[string][]string{"one": {"echo"}, "two": {"echo"}, "three": {"echo"}})
		ts := &harness.Toolset{Config: mcpConfig(t, "one", "two", "three"), Client: hs.client(),
			Warn: func(err error) { t.Errorf("warning: %v", err) }}
		ts.Resolve(t.Context(), nil)
		start := time.Now()

		err := ts.Close(t.Context())

		if took := time.Since(start); err != nil || took != time.Second {
			t.Errorf("Close: %v after %v, want nil after the 1s of each server's DELETE, at once", err, took)
		}
	})
}

// Tools that cannot be offered are warnings that name them as their
// servers do: a schema that is not an object's, and a name that two
// servers' tools share once sanitized (mcp__a_b__echo for both).
func TestAToolsetWarnsOfMCPToolsItCannotOfferByTheirOwnNames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		schemas := map[string]any{"list": map[string]any{"type": "array"}}
		hs := mcpServers(t, 0, schemas, map[string][]string{"a.b": {"echo", "list"}, "a_b": {"echo"}})
		var warnings []string
		var mu sync.Mutex
		ts := &harness.Toolset{Config: mcpConfig(t, "a.b", "a_b"), Client: hs.client(),
			Warn: func(err error) { mu.Lock(); warnings = append(warnings, err.Error()); mu.Unlock() }}
		ts.Resolve(t.Context(), nil)
		defer ts.Close(t.Context())
		reg := tools.NewRegistry(nil)

		ts.Register(reg)

		var names []string
		for _, sp := range reg.Specs() {
			names = append(names, sp.Name)
		}
		if !slices.Equal(names, []string{"mcp__a_b__echo"}) {
			t.Errorf("offered %v, want a.b's echo alone", names)
		}
		if res := reg.Call(t.Context(), &tools.Run{ID: "r", Budget: mustBudget(t)}, "mcp__a_b__echo", nil); string(res.Output) != `"echo"` {
			t.Errorf("mcp__a_b__echo: %+v", res)
		}
		mu.Lock()
		defer mu.Unlock()
		want := []string{
			`mcp server a.b: tool "list" is not offered: its inputSchema is of type "array", not "object"`,
			`mcp server a_b: tool "echo" is not offered: its name would be mcp__a_b__echo, as that of tool "echo" of mcp server a.b is`,
		}
		if !slices.Equal(warnings, want) {
			t.Errorf("warnings\n%q\nwant\n%q", warnings, want)
		}
	})
}

func mustBudget(t *testing.T) *budget.Budget {
	t.Helper()
	b, err := budget.New(budget.Config{Total: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Review of issue 27: a sub-agent's own sub-agents took the root's model
// and API where they named none, where README says the parent's.
func TestASubAgentsSubAgentsTakeItsModelAndAPIWhereTheyNameNone(t *testing.T) {
	tc := writeConfigs(t,
		[2]string{"top.yaml", "tools:\n  - name: deep\n    agent:\n      tools: deep.yaml\n      model: nano\n      api: responses\n"},
		[2]string{"deep.yaml", "tools:\n  - name: chatty\n    agent:\n      api: chat\n  - name: other\n    agent:\n      model: mini\n"})
	srv := sim.NewPipeServer(nil)
	defer srv.Close()
	root := newModel(t, srv)
	var asked []string
	ts := &harness.Toolset{Config: tc, Model: root, Models: func(name, api string) (harness.Model, error) {
		asked = append(asked, name+"/"+api)
		return newModel(t, srv), nil
	}}
	reg := tools.NewRegistry(nil)
	ts.Register(reg)
	defer reg.Close(t.Context())
	want := []string{"nano/responses", "nano/chat", "mini/responses"}
	if !slices.Equal(asked, want) {
		t.Errorf("models asked for %v, want %v: each grandchild on its parent's model and API where it names none", asked, want)
	}
}
