package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/glidepath/glidepath/cancel"
)

// statusTool answers status requests from a table of keys, and records
// every request it gets.
type statusTool struct {
	mu       sync.Mutex
	answers  map[cancel.Key]toolAnswer // missing: 404
	requests []string
}

type toolAnswer struct {
	code int
	body string
}

func (s *statusTool) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r.Method+" "+r.URL.Path)
	a, ok := s.answers[cancel.Key(r.PathValue("key"))]
	if r.Method != http.MethodGet || r.PathValue("tool") != "pay" || !ok {
		a = toolAnswer{http.StatusNotFound, `{"error":{"message":"no such call"}}`}
	}
	w.WriteHeader(a.code)
	fmt.Fprint(w, a.body)
}

func (s *statusTool) set(k cancel.Key, a toolAnswer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers[k] = a
}

func (s *statusTool) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := slices.Clone(s.requests)
	slices.Sort(r) // the asks run in parallel
	return r
}

func newStatusTool(t *testing.T, answers map[cancel.Key]toolAnswer) (*statusTool, string) {
	tool := &statusTool{answers: answers}
	mux := http.NewServeMux()
	mux.Handle("/tools/{tool}/calls/{key}", tool)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return tool, srv.URL
}

func TestReconcileAppendsWhatSettledAndLeavesTheRestOpen(t *testing.T) {
	tool, u := newStatusTool(t, map[cancel.Key]toolAnswer{
		"gp_done":  {200, `{"state":"done","output":{"receipt":"r-17"}}`},
		"gp_busy":  {200, `{"state":"running","units":4}`},
		"gp_flaky": {503, `{"error":{"message":"status store down"}}`},
	})
	dark := httptest.NewServer(http.NotFoundHandler())
	dark.Close() // a tool that is gone: its status endpoint is unreachable

	path := filepath.Join(t.TempDir(), "orphans.jsonl")
	writeJournal(t, path,
		orphan("gp_done", u, cancel.Open),
		orphan("gp_old", u, cancel.Open),
		orphan("gp_gone", u, cancel.Open), // 404: the tool never got it
		orphan("gp_old", u, "failed"),     // settled by an earlier reconcile
		orphan("gp_busy", u, cancel.Open),
		orphan("gp_dark", dark.URL, cancel.Open),
		orphan("gp_flaky", u, cancel.Open),
	)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	stdout := runCode(t, exitPartial, "reconcile", "--journal", path) // some stay open
	for _, want := range []string{
		`gp_done   pay  done, output {"receipt":"r-17"}`,
		"gp_gone   pay  never received: the tool never got the call; it may be sent again with the same key",
		"gp_busy   pay  still open: the tool says running (units 4)",
		"gp_dark   pay  still open: cancel: status endpoint unreachable: GET " + dark.URL + "/tools/pay/calls/gp_dark: dial tcp",
		"gp_flaky  pay  still open: cancel: status endpoint unreachable: GET " + u + "/tools/pay/calls/gp_flaky: 503 Service Unavailable: tool says: status store down",
		"reconciled 5 open orphans: 1 done, 0 failed, 1 never received; 3 still open\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout does not contain %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "gp_old") {
		t.Errorf("a settled orphan was asked about again:\n%s", stdout)
	}
	wantAsks := []string{"GET /tools/pay/calls/gp_busy", "GET /tools/pay/calls/gp_done", "GET /tools/pay/calls/gp_flaky", "GET /tools/pay/calls/gp_gone"}
	if got := tool.seen(); !slices.Equal(got, wantAsks) {
		t.Errorf("tool saw %q, want one GET per open orphan and nothing else", got)
	}

	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(after, before) {
		t.Fatalf("the journal's earlier bytes changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	appended := readEntries(t, after[len(before):])
	wantAppended := []cancel.Entry{orphan("gp_done", u, "done"), orphan("gp_gone", u, "never_received")}
	if len(appended) != len(wantAppended) {
		t.Fatalf("appended %d entries, want %d:\n%s", len(appended), len(wantAppended), after[len(before):])
	}
	for i, got := range appended {
		want := wantAppended[i]
		if got.TS.IsZero() || !got.TS.After(orphanTS) {
			t.Errorf("appended entry %d has ts %v, want the time of the reconcile", i, got.TS)
		}
		got.TS = want.TS
		if got != want {
			t.Errorf("appended entry %d:\n%+v\nwant\n%+v", i, got, want)
		}
	}

	if got, want := runOK(t, "orphans", "--journal", path), ""+
		"gp_busy   pay  "+u+"  since 2025-03-14T15:09:26Z  run run-1\n"+
		"gp_dark   pay  "+dark.URL+"  since 2025-03-14T15:09:26Z  run run-1\n"+
		"gp_flaky  pay  "+u+"  since 2025-03-14T15:09:26Z  run run-1\n"; got != want {
		t.Errorf("orphans after reconcile:\n%s\nwant:\n%s", got, want)
	}

	// The long job finishes and the status store is back: the next
	// reconcile settles both.
	tool.set("gp_busy", toolAnswer{200, `{"state":"failed"}`})
	tool.set("gp_flaky", toolAnswer{200, `{"state":"done"}`})
	mid, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if stdout := runCode(t, exitPartial, "reconcile", "--journal", path); !strings.Contains(stdout, "reconciled 3 open orphans: 1 done, 1 failed, 0 never received; 1 still open\n") {
		t.Errorf("second reconcile:\n%s", stdout)
	}
	end, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(end, mid) {
		t.Fatal("the second reconcile changed earlier bytes")
	}
	got := readEntries(t, end[len(mid):])
	if len(got) != 2 || got[0].IdempotencyKey != "gp_busy" || got[0].State != "failed" || got[1].IdempotencyKey != "gp_flaky" || got[1].State != "done" {
		t.Errorf("second reconcile appended %+v, want gp_busy failed and gp_flaky done", got)
	}
	if got := runOK(t, "orphans", "--journal", path); !strings.HasPrefix(got, "gp_dark ") || strings.Count(got, "\n") != 1 {
		t.Errorf("orphans after the second reconcile:\n%s\nwant gp_dark alone", got)
	}
}

func TestReconcile(t *testing.T) {
	dir := t.TempDir()
	_, u := newStatusTool(t, map[cancel.Key]toolAnswer{"gp_done": {200, `{"state":"done"}`}})
	settled := filepath.Join(dir, "settled.jsonl")
	writeJournal(t, settled, orphan("gp_done", u, cancel.Open), orphan("gp_done", u, "done"))
	open := filepath.Join(dir, "open.jsonl")
	writeJournal(t, open, orphan("gp_done", u, cancel.Open))
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badMiddle := filepath.Join(dir, "middle.jsonl")
	if err := os.WriteFile(badMiddle, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeJournal(t, badMiddle, orphan("gp_done", u, cancel.Open))
	byHand := filepath.Join(dir, "byhand.jsonl")
	writeJournal(t, byHand, orphan("gp_local", "", cancel.Open))

	cases := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string // a substring; "" when stdout must be empty
		wantStderr string // a substring; "" when stderr must be empty
	}{
		{
			name:       "a missing journal has nothing to reconcile",
			args:       []string{"reconcile", "--journal", filepath.Join(dir, "none.jsonl")},
			wantStderr: "harness reconcile: no open orphans in " + filepath.Join(dir, "none.jsonl"),
		},
		{
			name:       "a journal of settled orphans has nothing to reconcile",
			args:       []string{"reconcile", "--journal", settled},
			wantStderr: "no open orphans",
		},
		{
			name:       "a budget settles what it can",
			args:       []string{"reconcile", "--budget", "10s", "--journal", open},
			wantStdout: "gp_done  pay  done\nreconciled 1 open orphan: 1 done, 0 failed, 0 never received; 0 still open\n",
		},
		{
			// 1ms less its 0.25ms reserve is below the 50ms floor: the
			// ask is refused before any I/O.
			name:       "a budget too small to ask leaves the orphan open, and says so with exit 3",
			args:       []string{"reconcile", "--budget", "1ms", "--journal", filepath.Join(dir, "open2.jsonl")},
			wantCode:   exitPartial,
			wantStdout: "gp_x  pay  still open: not asked: budget: refused call",
			wantStderr: "1 orphan is still open",
		},
		{
			name:     "an orphan whose tool has no URL is not asked, and stays open, naming the command that settles it by hand",
			args:     []string{"reconcile", "--journal", filepath.Join(dir, "local.jsonl")},
			wantCode: exitPartial,
			wantStdout: "gp_local  pay  still open: not asked: its tool (-) came from no tools file and has no URL: " +
				"the program that made the call can reconcile it (cancel.ReconcileJournal); check it by hand, then record what you found: " +
				"harness reconcile --journal " + filepath.Join(dir, "local.jsonl") + " --settle gp_local=done if it happened, or =failed if not\n",
			wantStderr: "1 orphan is still open: only a person can settle it, as its line says",
		},
		{
			name:       "a bad journal line is named and skipped",
			args:       []string{"reconcile", "--journal", bad},
			wantStderr: bad + ":1: no idempotency_key, skipped\nharness reconcile: " + bad + ": 1 bad line skipped, 0 entries read\nharness reconcile: no open orphans in " + bad + "\n",
		},
		{
			name:       "a bad journal line in the middle costs that line alone",
			args:       []string{"reconcile", "--journal", badMiddle},
			wantStdout: "gp_done  pay  done\nreconciled 1 open orphan: 1 done, 0 failed, 0 never received; 0 still open\n",
			wantStderr: badMiddle + ":1: no idempotency_key, skipped\nharness reconcile: " + badMiddle + ": 1 bad line skipped, 1 entry read\n",
		},
		{
			name:       "an orphan a person checked is settled by hand",
			args:       []string{"reconcile", "--journal", byHand, "--settle", "gp_local=failed"},
			wantStdout: "gp_local  pay  failed, settled by hand\n",
		},
		{
			name:       "a key that is not an open orphan cannot be settled",
			args:       []string{"reconcile", "--journal", settled, "--settle", "gp_done=done"},
			wantCode:   2,
			wantStderr: "harness reconcile: --settle gp_done=done: gp_done is not an open orphan of " + settled + " (harness orphans lists them)\ntry: harness reconcile --help\n",
		},
		{
			name:       "a settle without a state is bad usage",
			args:       []string{"reconcile", "--journal", byHand, "--settle", "gp_local"},
			wantCode:   2,
			wantStderr: `--settle "gp_local": want KEY=STATE`,
		},
		{
			name:       "a settle to a state that is not settled is bad usage",
			args:       []string{"reconcile", "--journal", byHand, "--settle", "gp_local=running"},
			wantCode:   2,
			wantStderr: `--settle gp_local=running: state "running": want done, failed or never_received`,
		},
		{
			name:       "a settle asks no tool, so takes no --tools nor --budget",
			args:       []string{"reconcile", "--journal", byHand, "--settle", "gp_local=done", "--budget", "1s"},
			wantCode:   2,
			wantStderr: "--settle records what a person found and asks no tool: not with --tools or --budget",
		},
		{
			name:       "an unreadable journal is an internal error",
			args:       []string{"reconcile", "--journal", dir},
			wantCode:   1,
			wantStderr: "is a directory",
		},
		{
			name:       "a zero budget is bad usage",
			args:       []string{"reconcile", "--budget", "0s", "--journal", open},
			wantCode:   2,
			wantStderr: "harness reconcile: --budget 0s: must be positive\ntry: harness reconcile --help\n",
		},
		{
			name:       "a budget that is not a duration is bad usage",
			args:       []string{"reconcile", "--budget", "soon"},
			wantCode:   2,
			wantStderr: `--budget soon: not a duration`,
		},
		{
			name:       "an argument is bad usage",
			args:       []string{"reconcile", open},
			wantCode:   2,
			wantStderr: "unexpected argument",
		},
		{
			name:       "help on reconcile prints its flags",
			args:       []string{"help", "reconcile"},
			wantStdout: "usage: harness reconcile [--journal FILE] [--tools FILE] [--budget D]",
		},
	}
	writeJournal(t, filepath.Join(dir, "open2.jsonl"), orphan("gp_x", u, cancel.Open))
	writeJournal(t, filepath.Join(dir, "local.jsonl"), orphan("gp_local", "", cancel.Open))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), tc.args, nil, &stdout, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, &stdout, &stderr)
			}
			for _, c := range []struct {
				name string
				got  string
				want string
			}{{"stdout", stdout.String(), tc.wantStdout}, {"stderr", stderr.String(), tc.wantStderr}} {
				if c.want == "" && c.got != "" || !strings.Contains(c.got, c.want) {
					t.Errorf("%s:\n%s\nwant it to contain %q", c.name, c.got, c.want)
				}
			}
		})
	}
	// The orphan settled by hand is closed, by a person's word.
	entries, err := cancel.ReadJournal(byHand)
	if err != nil || len(entries) != 2 || entries[1].State != "failed" || !entries[1].ByHand || entries[1].IdempotencyKey != "gp_local" {
		t.Errorf("%s: %+v (%v), want gp_local's open entry, then failed by hand", byHand, entries, err)
	}
}

func runOK(t *testing.T, args ...string) string {
	t.Helper()
	return runCode(t, exitOK, args...)
}

// runCode runs harness with args, wants exit code want, and returns stdout.
func runCode(t *testing.T, want int, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), args, nil, &stdout, &stderr); code != want {
		t.Fatalf("harness %s: exit code %d, want %d\nstderr:\n%s", strings.Join(args, " "), code, want, &stderr)
	}
	return stdout.String()
}

// readEntries parses journal lines as ReadJournal does, from a file.
func readEntries(t *testing.T, lines []byte) []cancel.Entry {
	t.Helper()
	path := filepath.Join(t.TempDir(), "part.jsonl")
	if err := os.WriteFile(path, lines, 0o600); err != nil {
		t.Fatal(err)
	}
	entries, err := cancel.ReadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// TestReconcileSaysOfEveryKindWhyItWasNotAskedAndWhatAPersonDoes builds
// the tools of the tools files the journal names again, and asks only
// those that can say how a call went; every other orphan stays open with
// the reason and the command with which a person settles it (issue 24).
// --tools stands in for a tools file that moved.
func TestReconcileSaysOfEveryKindWhyItWasNotAskedAndWhatAPersonDoes(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tools.yaml")
	err := os.WriteFile(file, []byte(`tools:
  - {name: look, builtin: search}
  - {name: deploy, effect: write, command: [sh, -c, "exit 0"]}
  - {name: helper, agent: {instructions: help, tools: child.yaml}}
mcpServers:
  everything: {command: npx, args: [-y, "@modelcontextprotocol/server-everything"]}
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	child := filepath.Join(dir, "child.yaml")
	err = os.WriteFile(child, []byte(`tools:
  - {name: child_pay, effect: write, command: [sh, -c, "exit 0"], status: [sh, -c, "echo '{\"state\":\"done\"}'"]}
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(dir, "moved.yaml") // other.yaml, which the journal names, as it is now
	err = os.WriteFile(moved, []byte(`tools:
  - {name: pay, effect: write, command: [sh, -c, "exit 0"], status: [sh, -c, "echo '{\"state\":\"failed\"}'"]}
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	from := func(k cancel.Key, tool, file string) cancel.Entry {
		e := orphan(k, "", cancel.Open)
		e.Tool, e.Kind, e.ToolsFile = tool, "tool:"+tool, file
		return e
	}
	other := filepath.Join(dir, "other.yaml")
	journal := filepath.Join(dir, "orphans.jsonl")
	writeJournal(t, journal,
		from("gp_look", "look", file),
		from("gp_deploy", "deploy", file),
		from("gp_helper", "helper", file),
		from("gp_mcp", "mcp__everything__echo", file),
		from("gp_gone", "gone", file),
		from("gp_other", "pay", other),
		from("gp_child", "child_pay", child), // a sub-agent's tools file
	)
	byHand := func(k string) string {
		return "; check it by hand, then record what you found: harness reconcile --journal " + journal + " --settle " + k + "=done if it happened, or =failed if not\n"
	}
	cases := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
	}{
		{"the tools files the journal names", []string{"reconcile", "--journal", journal}, exitPartial, []string{
			"gp_look    look                   still open: not asked: builtin search lived inside the process that ran it, and its record of the call ended with that process" + byHand("gp_look"),
			"gp_deploy  deploy                 still open: not asked: command tool deploy has no status command (give its entry one, status: [...], for the next run)" + byHand("gp_deploy"),
			"gp_helper  helper                 still open: not asked: a sub-agent has no status to ask" + byHand("gp_helper"),
			"gp_mcp     mcp__everything__echo  still open: not asked: an MCP server's tool has no status to ask (SPEC §5b)" + byHand("gp_mcp"),
			"gp_gone    gone                   still open: not asked: " + file + " has no tool gone now" + byHand("gp_gone"),
			"gp_other   pay                    still open: not asked: its tools file cannot be read now (tools: " + other + ": open " + other +
				": no such file or directory); if it moved, give it with --tools FILE" + byHand("gp_other"),
			"gp_child   child_pay              done\n",
			"reconciled 7 open orphans: 1 done, 0 failed, 0 never received; 6 still open",
		}},
		{"--tools for a tools file that moved", []string{"reconcile", "--journal", journal, "--tools", moved}, exitPartial, []string{
			"gp_other   pay                    failed: the tool reports the call failed; it is not retried\n",
			"reconciled 6 open orphans: 0 done, 1 failed, 0 never received; 5 still open",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(t.Context(), tc.args, nil, &stdout, &stderr); code != tc.wantCode {
				t.Errorf("exit code %d, want %d\nstderr:\n%s", code, tc.wantCode, &stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout:\n%s\nwant it to contain %q", &stdout, w)
				}
			}
		})
	}
	entries, err := cancel.ReadJournal(journal)
	if err != nil || len(entries) != 9 || entries[7].IdempotencyKey != "gp_child" || entries[7].State != "done" ||
		entries[8].IdempotencyKey != "gp_other" || entries[8].State != "failed" {
		t.Errorf("journal %+v (%v), want the 7 open entries, gp_child's done one and gp_other's failed one", entries, err)
	}
}

func TestReconcileRefusesABadToolsFileBeforeAsking(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(bad, []byte("tools:\n  - {name: x, command: [sh], status: [sh], cancellable: true}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"reconcile", "--tools", bad, "--journal", filepath.Join(t.TempDir(), "j.jsonl")}, nil, &stdout, &stderr)
	if code != exitUsage || !strings.Contains(stderr.String(), `tools[0].cancellable "true": a command tool cannot be cancelled by key`) {
		t.Errorf("exit %d, stderr:\n%s\nwant bad usage naming the field", code, &stderr)
	}
}
