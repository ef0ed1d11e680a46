package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/cancel"
)

var orphanTS = time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)

func orphan(k cancel.Key, url, state string) cancel.Entry {
	return cancel.Entry{
		TS:             orphanTS,
		RunID:          "run-1",
		Tool:           "pay",
		URL:            url,
		IdempotencyKey: k,
		ArgsSHA256:     cancel.ArgsSHA256(json.RawMessage(`{"amount":5}`)),
		State:          state,
	}
}

// writeJournal appends entries to a journal at path, as runs would.
func writeJournal(t *testing.T, path string, entries ...cancel.Entry) {
	t.Helper()
	j, err := cancel.OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for _, e := range entries {
		if err := j.Append(e); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOrphans(t *testing.T) {
	dir := t.TempDir()
	mixed := filepath.Join(dir, "mixed.jsonl")
	writeJournal(t, mixed,
		orphan("gp_paid", "http://127.0.0.1:9/", cancel.Open),
		orphan("gp_lost", "http://user:s3cret@127.0.0.1:9/", cancel.Open),
		orphan("gp_paid", "http://127.0.0.1:9/", "done"),
	)
	settled := filepath.Join(dir, "settled.jsonl")
	writeJournal(t, settled, orphan("gp_paid", "http://u", cancel.Open), orphan("gp_paid", "http://u", "failed"))
	empty := filepath.Join(dir, "empty.jsonl")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	writeJournal(t, bad, orphan("gp_b", "http://u", cancel.Open))
	if err := os.WriteFile(bad, append(append([]byte("\nnot json\n"), readFileBytes(t, bad)...), `{"idempotency_key":"gp_c","sta`...), 0o600); err != nil {
		t.Fatal(err)
	}
	kinds := filepath.Join(dir, "kinds.jsonl")
	fromFile, custom := orphan("gp_cmd", "", cancel.Open), orphan("gp_job", "", cancel.Open)
	fromFile.ToolsFile, fromFile.Kind = "/etc/tools.yaml", "tool:pay"
	custom.Kind = "queue:pay"
	writeJournal(t, kinds, fromFile, custom)
	xdg := filepath.Join(dir, "xdg")
	writeJournal(t, filepath.Join(xdg, "glidepath", "orphans.jsonl"), orphan("gp_xdg", "http://u", cancel.Open))

	cases := []struct {
		name       string
		args       []string
		xdg        string // XDG_STATE_HOME; the default journal is under it
		wantCode   int
		wantStdout string // exactly
		wantStderr []string
	}{
		{
			name:       "a missing journal has no orphans",
			args:       []string{"orphans", "--journal", filepath.Join(dir, "none.jsonl")},
			wantStderr: []string{"harness orphans: no open orphans in " + filepath.Join(dir, "none.jsonl")},
		},
		{
			name:       "an empty journal has no orphans",
			args:       []string{"orphans", "--journal", empty},
			wantStderr: []string{"no open orphans"},
		},
		{
			name:       "settled orphans are not listed",
			args:       []string{"orphans", "--journal", settled},
			wantStderr: []string{"no open orphans"},
		},
		{
			name:       "open orphans are listed one per line with their key, passwords hidden, and the command that asks them again",
			args:       []string{"orphans", "--journal", mixed},
			wantStdout: "gp_lost  pay  http://user:xxxxx@127.0.0.1:9/  since 2025-03-14T15:09:26Z  run run-1\n",
			wantStderr: []string{"harness orphans: gp_lost: harness reconcile --journal " + mixed + " asks its tool again\n"},
		},
		{
			name: "an orphan with no URL says where its tool is found again, and what a person does when no program can ask it",
			args: []string{"orphans", "--journal", kinds},
			wantStdout: "gp_cmd  pay  /etc/tools.yaml  since 2025-03-14T15:09:26Z  run run-1\n" +
				"gp_job  pay  queue:pay        since 2025-03-14T15:09:26Z  run run-1\n",
			wantStderr: []string{
				"harness orphans: gp_cmd (pay): not asked: its tools file cannot be read now (tools: /etc/tools.yaml: open /etc/tools.yaml: no such file or directory); " +
					"if it moved, give it with --tools FILE; check it by hand, then record what you found: " +
					"harness reconcile --journal " + kinds + " --settle gp_cmd=done if it happened, or =failed if not\n",
				"harness orphans: gp_job (pay): not asked: its tool (queue:pay) came from no tools file and has no URL: " +
					"the program that made the call can reconcile it (cancel.ReconcileJournal); check it by hand, then record what you found: " +
					"harness reconcile --journal " + kinds + " --settle gp_job=done if it happened, or =failed if not\n",
			},
		},
		{
			name:       "flags may follow in any order",
			args:       []string{"orphans", "--json", "--journal", settled},
			wantStdout: "[]\n",
		},
		{
			name:       "the default journal is under XDG_STATE_HOME",
			args:       []string{"orphans"},
			xdg:        xdg,
			wantStdout: "gp_xdg  pay  http://u  since 2025-03-14T15:09:26Z  run run-1\n",
			wantStderr: []string{"harness orphans: gp_xdg: harness reconcile asks its tool again\n"}, // no --journal: the default
		},
		{
			name:       "a bad line is named and skipped, and the orphans of the other lines listed",
			args:       []string{"orphans", "--journal", bad},
			wantStdout: "gp_b  pay  http://u  since 2025-03-14T15:09:26Z  run run-1\n",
			wantStderr: []string{
				bad + ":2: invalid character 'o' in literal null (expecting 'u'), skipped\n",
				bad + ":4: cut short: the last line has no newline (its write was interrupted, or is still going on), skipped\n",
				"harness orphans: " + bad + ": 2 bad lines skipped, 1 entry read\n",
			},
		},
		{
			name:       "an unreadable journal is an internal error",
			args:       []string{"orphans", "--journal", dir},
			wantCode:   1,
			wantStderr: []string{"is a directory"},
		},
		{
			name:       "an argument is bad usage",
			args:       []string{"orphans", "extra"},
			wantCode:   2,
			wantStderr: []string{`harness orphans: unexpected argument "extra"`, "try: harness orphans --help"},
		},
		{
			name:       "an unknown flag is bad usage",
			args:       []string{"orphans", "--all"},
			wantCode:   2,
			wantStderr: []string{"flag provided but not defined: -all"},
		},
		{
			name:       "--help prints its usage on stdout",
			args:       []string{"orphans", "--help"},
			wantStdout: "usage: harness orphans [--journal FILE] [--json]\n",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("XDG_STATE_HOME", tc.xdg)
			invocation{args: tc.args, wantCode: tc.wantCode, wantStdout: tc.wantStdout, wantStderr: tc.wantStderr}.check(t)
		})
	}
}

func readFileBytes(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestOrphansJSONIsAnArrayOfEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orphans.jsonl")
	want := []cancel.Entry{orphan("gp_a", "http://u?x=1&y=2", cancel.Open), orphan("gp_b", "http://u", cancel.Open)}
	writeJournal(t, path, want[0], orphan("gp_c", "http://u", cancel.Open), want[1], orphan("gp_c", "http://u", "never_received"))

	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"orphans", "--journal", path, "--json"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d: %s", code, &stderr)
	}
	if !strings.Contains(stdout.String(), `"url":"http://u?x=1&y=2"`) {
		t.Errorf("stdout escapes HTML characters or lost a field:\n%s", &stdout)
	}
	dec := json.NewDecoder(&stdout)
	var got []cancel.Entry
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if dec.More() {
		t.Error("more than one JSON value on stdout")
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
}

func TestOrphansAndReconcileReportAFailedWriteAsAnInternalError(t *testing.T) {
	_, u := newStatusTool(t, map[cancel.Key]toolAnswer{"gp_a": {200, `{"state":"running"}`}})
	path := filepath.Join(t.TempDir(), "orphans.jsonl")
	writeJournal(t, path, orphan("gp_a", u, cancel.Open))
	for _, args := range [][]string{
		{"orphans", "--journal", path},
		{"orphans", "--journal", path, "--json"},
		{"reconcile", "--journal", path},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stderr bytes.Buffer
			if code := run(t.Context(), args, nil, failingWriter{}, &stderr); code != 1 {
				t.Errorf("exit code %d, want 1", code)
			}
			if want := "harness " + args[0] + ": file already closed\n"; stderr.String() != want {
				t.Errorf("stderr = %q, want %q", stderr.String(), want)
			}
		})
	}
}
