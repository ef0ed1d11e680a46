package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glidepath/glidepath/trace"
)

// Issue 18, "Words that are not what happened": each error a user can
// cause with a flag or a file names what they wrote and where.
func TestBadUsageNamesWhatTheUserWroteAndWhere(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", dir)
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	write("missing-cmd.yaml", "tools:\n  - name: lister\n    command: [./no-such-program]\n")
	misindented := write("misindented.yaml", "tools:\n  - name: search\n    builtin: search\n    ceiling: 1s\n   effect: read\n")
	tabbed := write("tabbed.yaml", "# faults\nrules:\n  - request: 1\n\tstatus: 500\n")
	cases := []struct {
		name    string
		args    []string
		want    string
		notWant string
	}{
		{"a budget below the default floor names --budget, the flag given",
			[]string{"run", "--budget", "1ns", "q"}, "harness run: --budget 1ns: must be more than the floor, 50ms (--floor)", "--floor 50ms"},
		{"a floor given above the budget given names both",
			[]string{"run", "--budget", "10ms", "--floor", "20ms", "q"}, "harness run: --floor 20ms: must be less than --budget 10ms", ""},
		{"a number that is not one says so",
			[]string{"run", "--max-steps", "abc", "q"}, "harness run: --max-steps abc: not a whole number", "parse error"},
		{"a negative --max-repeats is bad usage",
			[]string{"run", "--max-repeats", "-1", "q"}, "harness run: --max-repeats -1: must not be negative", ""},
		{"a boolean that is not one says so",
			[]string{"report", "--json=maybe", "x.jsonl"}, "harness report: --json maybe: want true or false", "parse error"},
		{"a journal that cannot be opened is bad usage naming --journal",
			[]string{"run", "--journal", dir, "--tools", demoTools, "q"}, "harness run: --journal " + dir + ": ", "cancel: open journal"},
		{"harness serve's journal that cannot be opened is bad usage too, before anything is served",
			[]string{"serve", "--addr", "127.0.0.1:0", "--tools", write("agents.yaml", "tools:\n  - name: r\n    agent: {}\n"), "--journal", dir},
			"harness serve: --journal " + dir + ": ", ""},
		{"harness serve refuses a child's command that is not there, before anything is served",
			[]string{"serve", "--addr", "127.0.0.1:0", "--tools", write("served.yaml", "tools:\n  - name: r\n    agent:\n      tools: missing-cmd.yaml\n"), "--model", "sim"},
			"command \"./no-such-program\"", ""},
		{"a tools file's syntax error names the line of the fault",
			[]string{"run", "--tools", misindented, "q"}, "misindented.yaml:5: did not find expected '-' indicator", ""},
		{"a scenario's tab names the line it is on",
			[]string{"sim", "serve", "--addr", "127.0.0.1:0", "--scenario", tabbed}, "tabbed.yaml:4: found a tab character", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), tc.args, strings.NewReader(""), &stdout, &stderr)
			if code != exitUsage {
				t.Errorf("exit %d, want %d (bad usage); stderr:\n%s", code, exitUsage, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr:\n%s\nwant it to say %q", stderr.String(), tc.want)
			}
			if tc.notWant != "" && strings.Contains(stderr.String(), tc.notWant) {
				t.Errorf("stderr:\n%s\nsays %q", stderr.String(), tc.notWant)
			}
		})
	}
}

func TestAnUnsettledRunSaysTheModelAnsweredAndToReconcile(t *testing.T) {
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools.yaml")
	// A write (no effect given) that outlasts its ceiling: the model
	// answers, the write's outcome stays unknown.
	if err := os.WriteFile(tools, []byte("tools:\n  - name: search\n    command: [sh, -c, 'sleep 5']\n    ceiling: 300ms\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "trace.jsonl")
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"run", "--budget", "30s", "--tools", tools, "--journal", filepath.Join(dir, "j.jsonl"),
		"--trace", path, "find it"}, strings.NewReader(""), &stdout, &stderr)
	recs := readTrace(t, path)
	last := recs[len(recs)-1]
	if code != exitPartial || last.Event != trace.RunEnd || last.Cause != "unsettled" {
		t.Fatalf("exit %d, last record %+v; want exit 3 and a run that ended unsettled", code, last)
	}
	// The trace says the model answered: its last turn ended ok, and no
	// landing call was made.
	for _, r := range recs {
		if r.Event == trace.Landing {
			t.Errorf("a landing record %+v in a run whose model answered", r)
		}
	}
	// The command named is the one that works: it reads this run's
	// journal, not the default one (issue 24 item 7).
	for _, want := range []string{"the model answered", "unknown", "run harness reconcile --journal " + filepath.Join(dir, "j.jsonl")} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr:\n%s\nwant it to say %q", stderr.String(), want)
		}
	}
	if strings.Contains(stderr.String(), "landed early") {
		t.Errorf("stderr:\n%s\nsays the run landed early; its model answered", stderr.String())
	}
}

// TestTheStoryOfTheDemoIsReadFromItsTrace runs make demo's two runs and
// checks that report --story prints one line for each record that shows
// the point, and no line that no record holds.
func TestTheStoryOfTheDemoIsReadFromItsTrace(t *testing.T) {
	dir := t.TempDir()
	journal, profile := filepath.Join(dir, "orphans.jsonl"), filepath.Join(dir, "profile.json")
	runs := []struct {
		budget, task string
		code         int
		wantAll      []string // the demo's point, which each run must show
		extra        []string // flags beside the demo's
	}{
		{"20s", "Pay invoice 42, then explain deadline budgets", exitOK,
			[]string{"fetch cut at its ceiling", "fetch retried with the same key", "accepted", "pay: its status asked by key", "reconciled", "ended complete"}, nil},
		{"1.2s", "Pay invoice 43, then explain deadline budgets", exitPartial,
			[]string{"deep_research refused before it started", "pay orphaned", "landed (cause budget)", "ended partial, cause budget"}, nil},
		// Issue 27: in warn mode a quiet clock says when it would have
		// stopped the run, and the run goes on.
		{"20s", "Pay invoice 44, then explain deadline budgets", exitOK,
			[]string{"quiet clock would have stopped the run (warn mode)", "ended complete"}, []string{"--quiet", "200ms", "--max-silence", "200ms", "--quiet-mode", "warn"}},
	}
	for i, r := range runs {
		path := filepath.Join(dir, fmt.Sprintf("trace%d.jsonl", i))
		var stdout, stderr bytes.Buffer
		args := append([]string{"run", "--budget", r.budget, "--tools", demoTools, "--journal", journal,
			"--profile", profile, "--trace", path}, r.extra...)
		code := run(t.Context(), append(args, r.task), strings.NewReader(""), &stdout, &stderr)
		if code != r.code {
			t.Fatalf("run %d: exit %d, want %d; stderr:\n%s", i, code, r.code, stderr.String())
		}
		stdout.Reset()
		if code := run(t.Context(), []string{"report", "--story", path}, strings.NewReader(""), &stdout, &stderr); code != exitOK {
			t.Fatalf("report --story: exit %d; stderr:\n%s", code, stderr.String())
		}
		recs := readTrace(t, path)
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		if len(lines) == 0 || !strings.HasPrefix(lines[0], "run "+recs[0].RunID+", budget "+r.budget) {
			t.Fatalf("story:\n%s\nwant it to begin with the run's ID and budget", stdout.String())
		}
		story := strings.Join(lines[1:], "\n")
		// Each record that shows the point has its line, with its key.
		want := 0
		for _, rec := range recs {
			var says string
			tool := toolName(rec.Step)
			switch {
			case rec.Event == trace.AttemptEnd && rec.Outcome == trace.GaveUp:
				says = tool + " cut at"
			case rec.Event == trace.AttemptEnd && rec.Attempt > 1:
				says = fmt.Sprintf("%s retried with the same key %s: attempt %d %s", tool, rec.Key, rec.Attempt, rec.Outcome)
			case rec.Event == trace.CancelSent && rec.State != string(trace.CancelStateSent):
				says = fmt.Sprintf("%s: its cancel, key %s, sent at", tool, rec.Key)
			case rec.Event == trace.Reconcile:
				says = fmt.Sprintf("%s: its status asked by key %s: %s after", tool, rec.Key, rec.State)
			case rec.Event == trace.Orphan:
				says = fmt.Sprintf("%s orphaned: whether it took effect is unknown, key %s", tool, rec.Key)
			case rec.Event == trace.Refused:
				says = tool + " refused before it started"
			case rec.Event == trace.QuietWarning:
				says = "quiet clock would have stopped the run (warn mode): " + rec.Message
			case rec.Event == trace.Landing:
				says = "landed (cause " + rec.Cause + ")"
			case rec.Event == trace.RunEnd:
				says = "ended " + rec.Result
			default:
				continue
			}
			want++
			at := fmt.Sprintf("%6.2fs  ", float64(rec.ElapsedMs)/1000)
			key := rec.Key
			if rec.Event == trace.Refused {
				key = "" // minted, never sent: the model is given none
			}
			found := false
			for _, l := range lines[1:] {
				found = found || strings.Contains(l, at+says) && strings.Contains(l, key)
			}
			if !found {
				t.Errorf("run %d: the story has no line %q with key %q for record %d (%s); it reads:\n%s",
					i, at+says, key, rec.Seq, rec.Event, story)
			}
		}
		if len(lines)-1 != want {
			t.Errorf("run %d: %d lines for %d records that show the point:\n%s", i, len(lines)-1, want, story)
		}
		for _, w := range r.wantAll {
			if !strings.Contains(story, w) {
				t.Errorf("run %d: the story does not show %q:\n%s", i, w, story)
			}
		}
	}
}
