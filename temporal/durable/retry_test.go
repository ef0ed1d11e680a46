package durable_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/temporal/durable"
	"github.com/glidepath/glidepath/trace"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
)

// toolRequests are the inputs of the tool attempts a history scheduled.
func toolRequests(t *testing.T, h *historypb.History) []durable.ToolRequest {
	t.Helper()
	var out []durable.ToolRequest
	for _, ev := range h.Events {
		a := ev.GetActivityTaskScheduledEventAttributes()
		if a == nil || a.GetActivityType().GetName() != durable.ToolActivity {
			continue
		}
		var req durable.ToolRequest
		if err := converter.GetDefaultDataConverter().FromPayloads(a.GetInput(), &req); err != nil {
			t.Fatal(err)
		}
		out = append(out, req)
	}
	return out
}

// The demo's flaky_fetch hangs past its deadline on the first attempt of
// each key and answers the second: a retry with a fresh key would hang
// again. The 1s ceiling cuts the first attempt; the workflow retries it
// with the key it minted once.
func TestAReadWhoseFirstAttemptHangsIsCutAtItsLeaseAndRetriedWithTheSameKey(t *testing.T) {
	e := newEnv(t, `tools:
  - name: fetch
    builtin: flaky_fetch
    ceiling: 1s
`)
	out, wr := e.run(t, durable.Input{Task: "fetch the page", Budget: 20 * time.Second})
	if out.Result.Status != landing.Complete {
		t.Fatalf("status %s: %s", out.Result.Status, out.Result.Boundary)
	}
	ends := records(out, trace.AttemptEnd, "tool:fetch")
	if len(ends) != 2 {
		t.Fatalf("%d attempts of fetch, want 2: %+v", len(ends), ends)
	}
	if ends[0].Outcome != trace.GaveUp || ends[1].Outcome != trace.OK {
		t.Errorf("outcomes %s, %s; want gave_up, ok", ends[0].Outcome, ends[1].Outcome)
	}
	if ends[0].Key == "" || ends[0].Key != ends[1].Key {
		t.Errorf("keys %q and %q: want one key for both attempts", ends[0].Key, ends[1].Key)
	}
	reqs := toolRequests(t, e.history(t, wr))
	if len(reqs) != 2 || reqs[0].Key != ends[0].Key || reqs[1].Key != reqs[0].Key || reqs[1].Attempt != 2 {
		t.Errorf("scheduled tool attempts %+v, want two with key %s", reqs, ends[0].Key)
	}
	starts := records(out, trace.AttemptStart, "tool:fetch")
	if starts[0].GrantedMs != 1000 {
		t.Errorf("first attempt granted %dms, want its 1s ceiling", starts[0].GrantedMs)
	}
	// The cancel goes out, and how it settled follows in a record of its
	// own, as harness run's trace has it: the call does not wait for it.
	if cs := records(out, trace.CancelSent, "tool:fetch"); len(cs) != 2 || cs[0].Key != ends[0].Key ||
		cs[0].State != string(trace.CancelStateSent) || cs[1].Key != cs[0].Key || cs[1].State == string(trace.CancelStateSent) {
		t.Errorf("cancel_sent records %+v, want the cut attempt's sent, then settled", cs)
	}
}

// The demo's late_commit commits 1.5s after it starts; the 500ms ceiling
// cuts the attempt before it answers. The workflow asks its status by key
// until it says done, and never sends the payment again.
func TestAWriteCutAtItsLeaseIsReconciledByKeyAndNeverSentAgain(t *testing.T) {
	e := newEnv(t, `tools:
  - name: pay
    builtin: late_commit
    ceiling: 500ms
`)
	out, wr := e.run(t, durable.Input{Task: "pay the invoice", Budget: 20 * time.Second})
	if out.Result.Status != landing.Complete {
		t.Fatalf("status %s: %s\n%s", out.Result.Status, out.Result.Boundary, dump(out))
	}
	starts, ends := records(out, trace.AttemptStart, "tool:pay"), records(out, trace.AttemptEnd, "tool:pay")
	if len(starts) != 1 || len(ends) != 1 {
		t.Fatalf("%d attempts of pay, want 1", len(starts))
	}
	// The attempt's own cut answer, not Temporal's timeout (up to a
	// second late), ends it: within its lease, give or take a busy
	// machine.
	if took := ends[0].ElapsedMs - starts[0].ElapsedMs; ends[0].Outcome != trace.GaveUp || took > starts[0].GrantedMs+500 {
		t.Errorf("pay's cut attempt ended %s after %dms on a %dms lease", ends[0].Outcome, took, starts[0].GrantedMs)
	}
	if reqs := toolRequests(t, e.history(t, wr)); len(reqs) != 1 {
		t.Errorf("%d tool attempts scheduled, want 1: %+v", len(reqs), reqs)
	}
	recs := records(out, trace.Reconcile, "tool:pay")
	if len(recs) == 0 || recs[len(recs)-1].State != "done" {
		t.Fatalf("reconcile records %+v, want the last done", recs)
	}
	for _, r := range recs[:len(recs)-1] {
		if r.State != "running" {
			t.Errorf("reconcile before done says %q, want running", r.State)
		}
	}
	if !strings.Contains(out.Result.Answer, "pay") {
		t.Errorf("answer %q does not use pay's output", out.Result.Answer)
	}
}

// A write cut at its lease whose tool cannot say how a call went (a
// command with no status command) is an orphan: journaled by the worker,
// fsync'd, with its key and its tools file, and the run's answer is
// partial (unsettled) with the write in in_flight.
func TestACutWriteThatCannotBeAskedIsJournaledAsAnOrphan(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orphans.jsonl")
	j, err := cancel.OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	e := newEnvJournal(t, `tools:
  - name: transfer
    description: Transfer money.
    effect: write
    ceiling: 500ms
    p50: 100ms
    command: [sh, -c, "sleep 5"]
`, j)
	out, _ := e.run(t, durable.Input{Task: "transfer the money", Budget: 20 * time.Second})
	res := out.Result
	if res.Status != landing.Partial || res.Cause != landing.CauseUnsettled || res.Orphans != 1 {
		t.Fatalf("status %s cause %q orphans %d, want partial unsettled 1: %s", res.Status, res.Cause, res.Orphans, res.Boundary)
	}
	if len(res.InFlight) != 1 || res.InFlight[0].State != landing.StateOrphaned {
		t.Fatalf("in_flight %+v", res.InFlight)
	}
	key := res.InFlight[0].IdempotencyKey
	// The boundary names the command with which a person settles it, as
	// harness run's does (issue 24).
	if want := "`harness reconcile --journal " + path + " --settle " + key + "=done` if it happened"; !strings.Contains(res.Boundary, want) {
		t.Errorf("boundary %q, want it to name %s", res.Boundary, want)
	}
	entries, err := cancel.ReadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || string(entries[0].IdempotencyKey) != key || entries[0].Tool != "transfer" ||
		entries[0].State != cancel.Open || entries[0].RunID != res.RunID || !filepath.IsAbs(entries[0].ToolsFile) {
		t.Errorf("journal %+v, want one open entry for %s of run %s", entries, key, res.RunID)
	}
	if n := len(records(out, trace.AttemptStart, "tool:transfer")); n != 1 {
		t.Errorf("transfer attempted %d times, want once", n)
	}
}
