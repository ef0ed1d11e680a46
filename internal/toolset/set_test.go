package toolset_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/internal/toolset"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
)

// asked is a builtin that can be asked how a call went.
type asked struct{ tools.Tool }

func (asked) Status(context.Context, cancel.Key) (cancel.Status, error) { return cancel.Status{}, nil }

func load(t *testing.T, builtins map[string]tools.Tool, files ...[2]string) *toolset.Set {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f[0]), []byte(f[1]), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := tools.LoadConfig(filepath.Join(dir, files[0][0]), builtins)
	if err != nil {
		t.Fatal(err)
	}
	s := toolset.Load(t.Context(), cfg, toolset.Options{Builtins: builtins})
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// A worker's set: each sub-agent's set by its path, each tool with the
// capabilities of what is behind it, the manifest fetches and what they
// left unavailable, in the file's order.
func TestALoadedSetHasItsSubAgentsByPathTheirCapabilitiesAndItsFetches(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer down.Close()
	builtins := map[string]tools.Tool{"ask": asked{tools.Func(tools.Spec{Name: "ask", Effect: tools.Read},
		func(context.Context, json.RawMessage, tools.Progress) (any, error) { return "ok", nil })}}
	s := load(t, builtins,
		[2]string{"top.yaml", "tools:\n  - name: remote\n    url: " + down.URL + "\n    effect: read\n" +
			"  - name: researcher\n    agent:\n      instructions: You research.\n      tools: child.yaml\n" +
			"  - name: asker\n    builtin: ask\n"},
		[2]string{"child.yaml", "tools:\n  - name: scribe\n    agent:\n      max_steps: 2\n"})

	var names []string
	for _, sp := range s.Specs(func(e tools.Entry) tools.Spec { return tools.Spec{Name: e.Name} }) {
		names = append(names, sp.Name)
	}
	if !slices.Equal(names, []string{"researcher", "asker"}) {
		t.Errorf("offered %v, want researcher and asker in the file's order, not remote, whose server is down", names)
	}
	if u := s.Unavailable(); len(u) != 1 || u[0].Tool != "remote" || !strings.Contains(u[0].Why, "is down") {
		t.Errorf("unavailable %+v, want remote, its server down", u)
	}
	if f := s.Fetches(); len(f) != 1 || f[0].Outcome != trace.UpstreamError || !strings.HasPrefix(f[0].What, "manifest of ") {
		t.Errorf("fetches %+v, want the one manifest's, failed", f)
	}
	if _, impl, ok := s.Lookup("asker"); !ok {
		t.Error("asker is not registered")
	} else if _, can := impl.(cancel.StatusReader); !can {
		t.Errorf("asker's capabilities are %T's, want the builtin's, which can be asked", impl)
	}
	scribe := s.Sub("researcher/scribe")
	if scribe == nil || scribe.Path != "researcher/scribe" || scribe.Agent.MaxSteps != 2 || s.Sub("researcher").Agent.Instructions != "You research." {
		t.Errorf("sub-agent researcher/scribe: %+v", scribe)
	}
	if sp := scribe.Specs(nil); sp != nil {
		t.Errorf("a sub-agent with no tools file offers %v", sp)
	}
	if s.Sub("nobody") != nil {
		t.Error("a path with no sub-agent has a set")
	}
}

// A tool that cannot be registered is unavailable, as one whose server is
// down, on a worker as in process: the rest are offered.
func TestAToolThatCannotBeRegisteredIsUnavailableAndTheRestAreOffered(t *testing.T) {
	fast := tools.Func(tools.Spec{Name: "fast", Effect: tools.Read, P50: 2e9},
		func(context.Context, json.RawMessage, tools.Progress) (any, error) { return "ok", nil })
	s := load(t, map[string]tools.Tool{"fast": fast},
		[2]string{"tools.yaml", "tools:\n  - name: tight\n    builtin: fast\n    ceiling: 1s\n  - name: loose\n    builtin: fast\n"})
	if u := s.Unavailable(); len(u) != 1 || u[0].Tool != "tight" || !strings.Contains(u[0].Why, "ceiling") {
		t.Errorf("unavailable %+v, want tight, whose ceiling is below its builtin's p50", u)
	}
	if _, _, ok := s.Lookup("loose"); !ok {
		t.Error("loose is not offered")
	}
}
