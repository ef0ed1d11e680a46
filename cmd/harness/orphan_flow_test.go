package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/tools"
)

// TestAnOrphanGoesFromARunThroughOrphansToReconcile follows one write from
// the call that loses track of it to the command that settles it: the tool
// takes the payment but never answers in time, and its status endpoint is
// down; the run journals an orphan; `harness orphans` lists it; once the
// tool answers again, `harness reconcile` records it done and it is no
// longer listed. Real HTTP on loopback; time is only bounded.
func TestAnOrphanGoesFromARunThroughOrphansToReconcile(t *testing.T) {
	var statusUp atomic.Bool
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/tools/pay":
			posts.Add(1)
			io.Copy(io.Discard, r.Body) // net/http notices a caller leaving only once the body is read
			<-r.Context().Done()        // commits, but answers only after the caller left
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/tools/pay/calls/"):
			if !statusUp.Load() {
				http.Error(w, `{"error":{"message":"status store down"}}`, http.StatusServiceUnavailable)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"state":"done","output":{"receipt":"r-1"},"units":1}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	path := filepath.Join(t.TempDir(), "orphans.jsonl")
	journal, err := cancel.OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	defer journal.Close()
	b, err := budget.New(budget.Config{Total: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var reg tools.Registry
	pay := tools.Spec{Name: "pay", Description: "take a payment", Effect: tools.Write, Ceiling: 200 * time.Millisecond,
		Parameters: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integer"}},"required":["amount"]}`)}
	if err := reg.Register(tools.Remote(pay, srv.URL, srv.Client())); err != nil {
		t.Fatal(err)
	}
	res := reg.Call(t.Context(), &tools.Run{ID: "run-1", Budget: b, Journal: journal}, "pay", json.RawMessage(`{"amount":5}`))
	if res.State != tools.StateOrphaned || res.Key == "" {
		t.Fatalf("call ended %+v, want an orphan", res)
	}
	if n := posts.Load(); n != 1 {
		t.Errorf("the write was POSTed %d times, want once", n)
	}

	list := func() string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"orphans", "--journal", path}, strings.NewReader(""), &stdout, &stderr); code != exitOK {
			t.Fatalf("harness orphans: exit %d: %s", code, stderr.String())
		}
		return stdout.String()
	}
	if out := list(); !strings.Contains(out, string(res.Key)) || !strings.Contains(out, "pay") || !strings.Contains(out, "run-1") {
		t.Fatalf("harness orphans does not list the orphan %s:\n%s", res.Key, out)
	}

	statusUp.Store(true)
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"reconcile", "--journal", path}, strings.NewReader(""), &stdout, &stderr); code != exitOK {
		t.Fatalf("harness reconcile: exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), string(res.Key)) || !strings.Contains(stdout.String(), "done") {
		t.Errorf("reconcile said:\n%s", stdout.String())
	}
	if out := list(); strings.Contains(out, string(res.Key)) {
		t.Errorf("the settled orphan is still listed:\n%s", out)
	}
	entries, err := cancel.ReadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[0].State != cancel.Open || entries[1].State != "done" || entries[1].IdempotencyKey != res.Key {
		t.Errorf("journal %+v, want the open line then its done line", entries)
	}
	if n := posts.Load(); n != 1 {
		t.Errorf("reconcile POSTed the write again: %d POSTs", n)
	}
}

// TestE2EACommandToolsOrphanIsSettledByTheCommandItsBoundaryNames follows
// a write of a command tool through processes, as a user meets it:
// `harness run` cuts the payment at its 500ms lease after it committed,
// asks its status command, which is down, and journals an orphan that
// names the tools file. The boundary names the command that settles it,
// `harness orphans` and `harness reconcile` name the same one, and that
// command, as printed, builds the tool again from the tools file the
// journal recorded, asks it once the status command answers, and records
// the call done (issue 24: no dead end). The payment is made once. Real
// processes and clock: bounded generously, asserting outcomes.
func TestE2EACommandToolsOrphanIsSettledByTheCommandItsBoundaryNames(t *testing.T) {
	dir := t.TempDir()
	ledger, down := filepath.Join(dir, "ledger"), filepath.Join(dir, "down")
	if err := os.WriteFile(down, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	pay := writeFile(t, "pay.sh", `cat >/dev/null; echo "$GLIDEPATH_IDEMPOTENCY_KEY" >> `+ledger+`; exec sleep 30`)
	status := writeFile(t, "status.sh", `if [ -e `+down+` ]; then echo "status store down" >&2; exit 1; fi
if grep -qx "$GLIDEPATH_IDEMPOTENCY_KEY" `+ledger+`; then echo '{"state":"done","output":"paid"}'; else echo '{"state":"never_received"}'; fi`)
	file := filepath.Join(dir, "tools.yaml")
	err := os.WriteFile(file, []byte(`tools:
  - name: pay
    description: Take a payment.
    effect: write
    ceiling: 500ms
    parameters: {type: object, properties: {amount: {type: integer}}, required: [amount]}
    command: [sh, `+pay+`]
    status: [sh, `+status+`]
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(dir, "orphans.jsonl")

	stdout, stderr, code := runHarness(t, nil, "run", "--budget", "10s", "--tools", file, "--journal", journal, "--json", "pay-5")
	res := jsonResult(t, stdout)
	if code != exitPartial || res.Orphans != 1 || len(res.InFlight) != 1 || res.InFlight[0].State != "orphaned" {
		t.Fatalf("harness run: exit %d, result %+v, want one orphan\nstderr:\n%s", code, res, stderr)
	}
	key := res.InFlight[0].IdempotencyKey
	next := quotedCommand(res.Boundary, "run `")
	if want := "harness reconcile --journal " + journal; next != want || strings.Contains(res.Boundary, "by hand") {
		t.Fatalf("boundary %q names %q, want %q: its tool can be asked again", res.Boundary, next, want)
	}
	entries, err := cancel.ReadJournal(journal)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].ToolsFile != file || entries[0].Kind != "tool:pay" || string(entries[0].IdempotencyKey) != key {
		t.Fatalf("journal %+v, want one entry naming %s, kind tool:pay, key %s", entries, file, key)
	}

	_, stderr, code = runHarness(t, nil, "orphans", "--journal", journal)
	if code != exitOK || !strings.Contains(stderr, key+": "+next+" asks its tool again") {
		t.Errorf("harness orphans: exit %d\nstderr:\n%s\nwant it to name %q", code, stderr, next)
	}
	// The status command is down: the same command, later.
	stdout, stderr, code = runHarness(t, nil, strings.Fields(next)[1:]...)
	if code != exitPartial || !strings.Contains(stdout, key+"  pay  still open: ") || !strings.Contains(stderr, "run "+next+" again later") {
		t.Errorf("%s while the status is down: exit %d\nstdout:\n%s\nstderr:\n%s\nwant it open, and told to run it again later", next, code, stdout, stderr)
	}

	if err := os.Remove(down); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = runHarness(t, nil, strings.Fields(next)[1:]...)
	if code != exitOK || !strings.Contains(stdout, key+"  pay  done, output \"paid\"") {
		t.Errorf("%s: exit %d\nstdout:\n%s\nstderr:\n%s\nwant the orphan done", next, code, stdout, stderr)
	}
	entries, err = cancel.ReadJournal(journal)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[1].State != "done" || string(entries[1].IdempotencyKey) != key || entries[1].ByHand {
		t.Errorf("journal %+v, want the open entry, then its done one, from the tool", entries)
	}
	paid, err := os.ReadFile(ledger)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(paid), "\n"); got != 1 {
		t.Errorf("the ledger has %d payments, want 1: a cut write is never sent again\n%s", got, paid)
	}
}

// TestE2ETheDemosOrphanIsSettledByTheCommandItsBoundaryNames is make demo's
// short run as a user follows it (issue 24): its payment, a builtin that
// lives inside the run's process, is orphaned; the boundary says only a
// person can check it and names the command that records what they found;
// `harness orphans` and `harness reconcile` name the same command; and
// that command, run as printed, settles the orphan, which is then no
// longer listed.
func TestE2ETheDemosOrphanIsSettledByTheCommandItsBoundaryNames(t *testing.T) {
	journal := filepath.Join(t.TempDir(), "demo-orphans.jsonl")
	stdout, stderr, code := runHarness(t, nil, "run", "--budget", "1.2s", "--tools", demoTools, "--journal", journal, "--json",
		"Pay-invoice-43,-then-explain-deadline-budgets")
	res := jsonResult(t, stdout)
	if code != exitPartial || res.Orphans != 1 {
		t.Fatalf("the demo's short run: exit %d, result %+v, want its payment orphaned\nstderr:\n%s", code, res, stderr)
	}
	var key string
	for _, f := range res.InFlight {
		if f.State == "orphaned" {
			key = f.IdempotencyKey
		}
	}
	settle := quotedCommand(res.Boundary, "record what you found: `")
	if want := "harness reconcile --journal " + journal + " --settle " + key + "=done"; settle != want ||
		!strings.Contains(res.Boundary, "its tool cannot be asked from outside this run; check it by hand") {
		t.Fatalf("boundary %q names %q, want %q", res.Boundary, settle, want)
	}

	_, stderr, code = runHarness(t, nil, "orphans", "--journal", journal)
	if code != exitOK || !strings.Contains(stderr, "builtin late_commit lived inside the process that ran it") || !strings.Contains(stderr, settle+" if it happened") {
		t.Errorf("harness orphans: exit %d\nstderr:\n%s\nwant it to say why and name %q", code, stderr, settle)
	}
	stdout, stderr, code = runHarness(t, nil, "reconcile", "--journal", journal)
	if code != exitPartial || !strings.Contains(stdout, settle+" if it happened") || !strings.Contains(stderr, "only a person can settle it") {
		t.Errorf("harness reconcile: exit %d\nstdout:\n%s\nstderr:\n%s\nwant it open, naming %q", code, stdout, stderr, settle)
	}

	stdout, stderr, code = runHarness(t, nil, strings.Fields(settle)[1:]...)
	if code != exitOK || stdout != key+"  pay  done, settled by hand\n" {
		t.Errorf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", settle, code, stdout, stderr)
	}
	_, stderr, code = runHarness(t, nil, "orphans", "--journal", journal)
	if code != exitOK || !strings.Contains(stderr, "no open orphans") {
		t.Errorf("harness orphans after the settle: exit %d\nstderr:\n%s\nwant none open", code, stderr)
	}
	entries, err := cancel.ReadJournal(journal)
	if err != nil {
		t.Fatal(err)
	}
	if last := entries[len(entries)-1]; len(entries) != 2 || last.State != "done" || !last.ByHand || string(last.IdempotencyKey) != key {
		t.Errorf("journal %+v, want the open entry, then its done one, by hand", entries)
	}
}

// quotedCommand is the command a text names in backquotes right after
// lead: what a user copies from a boundary.
func quotedCommand(text, lead string) string {
	_, after, ok := strings.Cut(text, lead)
	if !ok {
		return ""
	}
	cmd, _, _ := strings.Cut(after, "`")
	return cmd
}
