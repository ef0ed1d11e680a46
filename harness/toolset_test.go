package harness_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/kit"
	"github.com/glidepath/glidepath/trace"
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
			Models: func(name string) (harness.Model, error) {
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
			"not offered: agent scribe: model missing: no such model"}
		for _, w := range want {
			if !slices.ContainsFunc(warnings, func(s string) bool { return strings.Contains(s, w) }) {
				t.Errorf("warnings %q lack %q", warnings, w)
			}
		}
		// The child's url tool got its manifest, fetched as the parent's setup.
		lookup := tc.Entries[0].Agent.Tools.Entries[0]
		if lookup.Description != "Looks things up." || lookup.Effect != tools.Read {
			t.Errorf("the child's tool after Resolve: %+v", lookup)
		}
		if setup := only(recs.all(), trace.AttemptEnd, harness.SetupStep); len(setup) != 1 || setup[0].Outcome != trace.OK {
			t.Errorf("setup records %+v, want the child's manifest fetched once, as the parent's setup", setup)
		}
	})
}
