package durable_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/temporal/durable"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"
)

var update = flag.Bool("update", false, "rewrite testdata/*.history.json from fresh runs")

func replayer(t *testing.T) worker.WorkflowReplayer {
	t.Helper()
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(durable.Workflow, workflow.RegisterOptions{Name: durable.WorkflowName})
	return r
}

// A run's own history replays: the workflow makes the same decisions from
// it — the same budget, leases, keys and sleeps — so a worker that takes
// the run over after a crash carries on where it was. With -update, the
// histories are written to testdata for TestCheckedInHistoriesReplay.
func TestARunsHistoryReplaysOnAFreshWorker(t *testing.T) {
	cases := []struct {
		name, tools string
		budget      time.Duration
		sc          *sim.Scenario
		quiet       time.Duration
		child       string // a sub-agent's tools file, child.yaml
	}{
		{name: "search-and-late-pay", tools: "tools:\n  - name: search\n    builtin: search\n  - name: pay\n    builtin: late_commit\n    ceiling: 500ms\n", budget: 20 * time.Second},
		{name: "landing-on-budget", tools: "tools:\n  - name: deep_research\n    builtin: deep_research\n    p50: 100ms\n", budget: 2500 * time.Millisecond, sc: slowModel},
		{name: "orphaned-write", tools: "tools:\n  - name: transfer\n    effect: write\n    ceiling: 500ms\n    command: [sh, -c, \"sleep 5\"]\n", budget: 20 * time.Second},
		{name: "quiet-progress-and-stall", tools: "tools:\n  - name: deep_research\n    builtin: deep_research\n  - name: silent\n    effect: read\n    command: [sh, -c, \"sleep 6\"]\n", budget: 20 * time.Second, quiet: 1500 * time.Millisecond},
		{name: "sub-agent", tools: "tools:\n  - name: researcher\n    ceiling: 6s\n    agent:\n      instructions: You research.\n      tools: child.yaml\n", child: "tools:\n  - name: search\n    builtin: search\n", budget: 20 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j, err := cancel.OpenJournal(filepath.Join(t.TempDir(), "orphans.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			files := map[string]string{"tools.yaml": tc.tools}
			if tc.child != "" {
				files["child.yaml"] = tc.child
			}
			e := newEnvFiles(t, files, j, tc.sc)
			_, wr := e.run(t, durable.Input{Task: "a run to replay", Budget: tc.budget, Quiet: tc.quiet})
			h := e.history(t, wr)
			if err := replayer(t).ReplayWorkflowHistory(nil, h); err != nil {
				t.Fatalf("replay: %v", err)
			}
			if *update {
				data, err := protojson.MarshalOptions{Multiline: true}.Marshal(h)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join("testdata", tc.name+".history.json"), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// The histories checked into testdata replay against today's workflow
// code: a change that would break the runs in flight on a fleet fails
// here first.
func TestCheckedInHistoriesReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.history.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no histories in testdata: run go test -run TestARunsHistoryReplays -update")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if err := replayer(t).ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
				t.Errorf("replay of %s: %v", f, err)
			}
		})
	}
}
