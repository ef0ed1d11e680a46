package durable_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/temporal/durable"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
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
// here first, saying what to do.
func TestCheckedInHistoriesReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.history.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no histories in testdata: " + recordHistories)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if err := replayChecked(t, f, readHistory(t, f)); err != nil {
				t.Error(err)
			}
		})
	}
}

// recordHistories says how to record the histories of testdata again.
const recordHistories = "record them again with `make temporal-histories` " +
	"(cd temporal && go test -count=1 -run TestARunsHistoryReplaysOnAFreshWorker ./durable/ -update)"

func readHistory(t *testing.T, file string) *historypb.History {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// rulesIn is the rules version a history recorded (durable.RulesChange's
// version marker); workflow.DefaultVersion when it has none.
func rulesIn(t *testing.T, h *historypb.History) workflow.Version {
	t.Helper()
	for _, ev := range h.Events {
		m := ev.GetMarkerRecordedEventAttributes()
		if m == nil || m.GetMarkerName() != "Version" {
			continue
		}
		var change string
		var v workflow.Version
		dc := converter.GetDefaultDataConverter()
		if err := dc.FromPayloads(m.GetDetails()["change-id"], &change); err != nil {
			t.Fatal(err)
		}
		if change != durable.RulesChange {
			continue
		}
		if err := dc.FromPayloads(m.GetDetails()["version"], &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	return workflow.DefaultVersion
}

// replayChecked replays history h (of file name) and says, when it does
// not replay, what is to be done (issue 25, item 5): a history of other
// rules is recorded again; a history of this build's rules that no longer
// replays means the workflow's commands changed without a new version.
func replayChecked(t *testing.T, name string, h *historypb.History) error {
	t.Helper()
	if v := rulesIn(t, h); v != durable.RulesVersion {
		recorded := fmt.Sprintf("rules version %d", v)
		if v == workflow.DefaultVersion {
			recorded = "no rules version (before RulesVersion)"
		}
		return fmt.Errorf("%s was recorded under %s, and this build's durable.RulesVersion is %d: "+
			"a run of other rules does not replay on this build; %s", name, recorded, durable.RulesVersion, recordHistories)
	}
	if err := replayer(t).ReplayWorkflowHistory(nil, h); err != nil {
		return fmt.Errorf("%s no longer replays, and its rules version is this build's (%d): the workflow's commands "+
			"changed without a new rules version. Bump durable.RulesVersion (temporal/durable/rules.go), then %s.\nreplay: %w",
			name, durable.RulesVersion, recordHistories, err)
	}
	return nil
}

// A change to the workflow's commands fails the replay of a checked-in
// history with a message that says to bump the rules version; a history
// recorded under other rules says to record it again. The change is made
// to the history here (its first activity renamed; its rules version
// marked one more), which is what a change to the code looks like from
// the history's side.
func TestAChangedRunFailsItsReplayWithWhatToDo(t *testing.T) {
	file := filepath.Join("testdata", "search-and-late-pay.history.json")
	changed := readHistory(t, file)
	for _, ev := range changed.Events {
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			a.ActivityType.Name = "glidepath.another-activity"
			break
		}
	}
	err := replayChecked(t, "changed", changed)
	if err == nil || !strings.Contains(err.Error(), "Bump durable.RulesVersion") || !strings.Contains(err.Error(), "make temporal-histories") {
		t.Errorf("a history whose commands changed: %v, want a message to bump the rules version and record it again", err)
	}

	other := readHistory(t, file)
	for _, ev := range other.Events {
		m := ev.GetMarkerRecordedEventAttributes()
		if m == nil || m.GetMarkerName() != "Version" {
			continue
		}
		p, err := converter.GetDefaultDataConverter().ToPayloads(durable.RulesVersion + 1)
		if err != nil {
			t.Fatal(err)
		}
		m.Details["version"] = p
	}
	err = replayChecked(t, "other", other)
	want := fmt.Sprintf("recorded under rules version %d", durable.RulesVersion+1)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "make temporal-histories") {
		t.Errorf("a history of other rules: %v, want %q and how to record it again", err, want)
	}
}
