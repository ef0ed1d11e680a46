package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/trace"
)

// Issue 27, learn from cuts: on a fresh machine, --quiet 1s cuts a model
// whose first token comes 1.5s after its headers, and the profile keeps
// that cut. The next run at the same place allows the model's calls twice
// the cut and completes; without the profile, it is cut again.
func TestE2EASecondRunAllowsTheSilenceTheFirstWasCutAt(t *testing.T) {
	srv := sim.NewServer(&sim.Scenario{Rules: []sim.Rule{{FirstToken: 1500 * time.Millisecond}}})
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "profile.json")
	env := []string{"OPENAI_API_KEY=x"}
	runOn := func(profile string) (stdout, stderr string, code int, recs []trace.Record) {
		trc := filepath.Join(t.TempDir(), "trace.jsonl")
		stdout, stderr, code = runHarness(t, env, "run", "--model", "gpt-4.1", "--base-url", srv.URL, "--quiet", "1s",
			"--budget", "20s", "--profile", profile, "--trace", trc, "--json", "q")
		return stdout, stderr, code, readTrace(t, trc)
	}

	stdout, stderr, code, recs := runOn(file)
	if code != exitPartial || !strings.Contains(stdout, `"cause":"quiet"`) {
		t.Fatalf("the first run: exit %d, want a quiet landing\n%s%s", code, stdout, stderr)
	}
	ends := only(recs, trace.AttemptEnd, "model")
	if len(ends) != 1 || ends[0].Outcome != trace.Quiet {
		t.Fatalf("the first run's model attempts %+v, want one cut by the quiet clock", ends)
	}
	cut := profileOf(t, file)
	if cut.Cuts != 1 || cut.Count != 0 || cut.CutMs < 900 || cut.CutMs >= 1500 {
		t.Fatalf("the profile after the first run: %+v; want the model's one cut, of about 1s, and no observation", cut)
	}

	t.Run("the next run on the profile completes", func(t *testing.T) {
		stdout, stderr, code, recs := runOn(file)
		if code != exitOK {
			t.Fatalf("exit %d, want the model held for twice the cut (%dms)\n%s%s", code, 2*cut.CutMs, stdout, stderr)
		}
		for _, r := range only(recs, trace.AttemptEnd, "model") {
			if r.Outcome != trace.OK {
				t.Errorf("model attempt %+v, want every one ok", r)
			}
		}
		after := profileOf(t, file)
		if after.Cuts != 1 || after.CutMs != cut.CutMs || after.Count < 1 || after.P50Ms < 1500 {
			t.Errorf("the profile after the second run: %+v; want the cut as it was and the model's 1.5s turns", after)
		}
		table, _, _ := runHarness(t, nil, "profile", "--profile", file)
		t.Logf("harness profile:\n%s", table)
		if !strings.Contains(table, "CUT") || !strings.Contains(table, latency(time.Duration(cut.CutMs)*time.Millisecond)) {
			t.Errorf("harness profile does not show the cut of %dms:\n%s", cut.CutMs, table)
		}
	})
	t.Run("a run without the profile is cut again", func(t *testing.T) {
		if stdout, stderr, code, _ := runOn("off"); code != exitPartial || !strings.Contains(stdout, `"cause":"quiet"`) {
			t.Errorf("exit %d, want a quiet landing as the first run's\n%s%s", code, stdout, stderr)
		}
	})
}

// cutSummary is a kind's line of `harness profile --json`.
type cutSummary struct {
	Kind        string
	Count, Cuts int
	P50Ms       int64 `json:"p50_ms"`
	CutMs       int64 `json:"cut_ms"`
}

// profileOf returns the model's line of `harness profile --json` on the
// profile at file, failing unless it is the only one.
func profileOf(t *testing.T, file string) cutSummary {
	t.Helper()
	stdout, stderr, code := runHarness(t, nil, "profile", "--profile", file, "--json")
	var sum struct{ Kinds []cutSummary }
	if code != exitOK || json.Unmarshal([]byte(stdout), &sum) != nil {
		t.Fatalf("harness profile --json: exit %d\n%s%s", code, stdout, stderr)
	}
	if len(sum.Kinds) != 1 || sum.Kinds[0].Kind != "model" {
		t.Fatalf("harness profile --json: %s; want the model alone", stdout)
	}
	return sum.Kinds[0]
}
