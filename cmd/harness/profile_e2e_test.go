package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/trace"
)

// Two runs in a row on one profile, against a model that takes 2s a turn.
// The second, on 2.5s (1.825s of work lease at most), has its first model
// call refused before any I/O: the first run saw the model take 2s. With
// --profile off it starts cold, and sends the request.
func TestE2EASecondRunLeasesByWhatTheFirstObserved(t *testing.T) {
	for _, tc := range []struct {
		profile     string
		wantRefused bool
	}{
		{"", true},
		{"off", false},
	} {
		t.Run("profile "+tc.profile, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "profile.json")
			if tc.profile == "" {
				tc.profile = file
			}
			srv := sim.NewServer(&sim.Scenario{Rules: []sim.Rule{{Delay: 2 * time.Second}}})
			defer srv.Close()
			env := []string{"OPENAI_API_KEY=x"}
			if _, stderr, code := runHarness(t, env, "run", "--model", "gpt-4.1", "--base-url", srv.URL, "--budget", "20s", "--profile", file, "q"); code != exitOK {
				t.Fatalf("the first run: exit %d\n%s", code, stderr)
			}
			trc := filepath.Join(t.TempDir(), "trace.jsonl")

			stdout, stderr, code := runHarness(t, env, "run", "--model", "gpt-4.1", "--base-url", srv.URL, "--budget", "2.5s",
				"--profile", tc.profile, "--trace", trc, "--json", "q")

			if code != exitPartial {
				t.Fatalf("the second run: exit %d\n%s%s", code, stdout, stderr)
			}
			recs := readTrace(t, trc)
			refused := only(recs, trace.Refused, "model")
			if got := len(refused) == 1 && refused[0].Reason == "below p50"; got != tc.wantRefused {
				t.Errorf("the second run's refusals %+v; want refused below p50: %v", refused, tc.wantRefused)
			}
			// The first turn is a work lease: refused, it sends nothing; the
			// landing call that follows spends the reserve.
			if starts := only(recs, trace.AttemptStart, "model"); tc.wantRefused && (len(starts) != 1 || starts[0].StepIndex != 0) {
				t.Errorf("model attempts %+v, want the landing call alone", starts)
			}
		})
	}
}

// A corrupt profile is reported, ignored, and set aside by the run's own
// record: the run goes on.
func TestE2EACorruptProfileIsReportedAndIgnored(t *testing.T) {
	file := filepath.Join(t.TempDir(), "profile.json")
	if err := os.WriteFile(file, []byte("{not a profile"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runHarness(t, nil, "run", "--budget", "5s", "--profile", file, "q")
	if code != exitOK || !strings.Contains(stderr, "corrupt") || !strings.Contains(stderr, "ignored") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	stdout, stderr, code := runHarness(t, nil, "profile", "--profile", file, "--json")
	var sum struct{ Kinds []struct{ Kind string } }
	if code != exitOK || json.Unmarshal([]byte(stdout), &sum) != nil || len(sum.Kinds) == 0 {
		t.Errorf("after the run, harness profile: exit %d, %s %s", code, stdout, stderr)
	}
}

// Eight runs at once, one profile: none of their observations is lost.
func TestE2EConcurrentRunsLoseNoObservation(t *testing.T) {
	file := filepath.Join(t.TempDir(), "profile.json")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, stderr, code := runHarness(t, nil, "run", "--budget", "10s", "--profile", file, "q"); code != exitOK {
				t.Errorf("exit %d: %s", code, stderr)
			}
		})
	}
	wg.Wait()
	stdout, stderr, code := runHarness(t, nil, "profile", "--profile", file, "--json")
	var sum struct {
		Kinds []struct {
			Kind  string
			Count int
		}
	}
	if code != exitOK || json.Unmarshal([]byte(stdout), &sum) != nil {
		t.Fatalf("harness profile: exit %d, %s %s", code, stdout, stderr)
	}
	for _, k := range sum.Kinds {
		if k.Kind == "model" && k.Count != 8 {
			t.Errorf("%d model observations, want 8: one per run", k.Count)
		}
	}
}

// Issue 18: a profile that holds another model's history — a real API
// whose p50 is 2s — leaves the embedded model's run as it is on a fresh
// machine: make demo's short run, step for step, on the profile and
// without one.
func TestE2EAnotherModelsHistoryDoesNotChangeTheDemosRun(t *testing.T) {
	polluted := filepath.Join(t.TempDir(), "profile.json")
	srv := sim.NewServer(&sim.Scenario{Rules: []sim.Rule{{Delay: 2 * time.Second}}})
	defer srv.Close()
	if _, stderr, code := runHarness(t, []string{"OPENAI_API_KEY=x"}, "run", "--model", "gpt-4.1", "--base-url", srv.URL,
		"--budget", "20s", "--profile", polluted, "q"); code != exitOK {
		t.Fatalf("the real model's run: exit %d\n%s", code, stderr)
	}
	if stdout, _, _ := runHarness(t, nil, "profile", "--profile", polluted); !strings.Contains(stdout, "gpt-4.1 @ 127.0.0.1") {
		t.Fatalf("the profile does not place the real model's history:\n%s", stdout)
	}

	type result struct {
		Status, Answer, Boundary string
		Cause                    *string
		Steps, Attempts, Orphans int
	}
	demo := func(profile string) (result, []trace.Record) {
		dir := t.TempDir()
		trc := filepath.Join(dir, "trace.jsonl")
		stdout, stderr, code := runHarness(t, nil, "run", "--budget", "1.2s", "--tools", demoToolsFile,
			"--journal", filepath.Join(dir, "orphans.jsonl"), "--profile", profile, "--trace", trc, "--json",
			"Pay_invoice_43_then_explain_deadline_budgets")
		if code != exitPartial {
			t.Fatalf("--profile %s: exit %d\n%s%s", profile, code, stdout, stderr)
		}
		var r result
		if err := json.Unmarshal([]byte(stdout), &r); err != nil {
			t.Fatal(err)
		}
		return r, readTrace(t, trc)
	}
	fresh, freshTrace := demo("off")
	got, gotTrace := demo(polluted)
	if got.Status != fresh.Status || *got.Cause != *fresh.Cause || got.Steps != fresh.Steps || got.Attempts != fresh.Attempts || got.Orphans != fresh.Orphans {
		t.Errorf("on the polluted profile: %+v\non none: %+v", got, fresh)
	}
	// A history refuses by the model's p50; a turn refused below the floor
	// says only how many milliseconds the run's last call left, which
	// differs from run to run whatever the profile.
	byP50 := func(recs []trace.Record) (n int) {
		for _, r := range only(recs, trace.Refused, "model") {
			if r.Reason == budget.BelowP50.String() {
				n++
			}
		}
		return n
	}
	if n, want := byP50(gotTrace), byP50(freshTrace); n != want {
		t.Errorf("%d model refusals below p50 on the polluted profile, %d on none: another model's history refused this one's calls", n, want)
	}
}
