package durable_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/temporal/durable"
	"github.com/glidepath/glidepath/trace"
)

// The quiet clock lives in the workflow and watches across activities: a
// tool that works in silence — no progress, no answer — for longer than Q
// is cut with outcome quiet, and the run lands with cause quiet at Q after
// the call was issued, long before the tool or the budget would have ended
// it.
func TestTheQuietClockFiresAcrossActivitiesOnASilentTool(t *testing.T) {
	e := newEnv(t, `tools:
  - name: silent
    description: works in silence
    effect: read
    ceiling: 10s
    command: [sh, -c, "sleep 8"]
`)
	const quiet = 1500 * time.Millisecond
	out, _ := e.run(t, durable.Input{Task: "a silent tool", Budget: 30 * time.Second, Quiet: quiet})
	res := out.Result
	if res.Status != landing.Partial || res.Cause != landing.CauseQuiet {
		t.Fatalf("status %s cause %q, want partial quiet: %s\n%s", res.Status, res.Cause, res.Boundary, dump(out))
	}
	if !strings.Contains(res.Boundary, "no progress for 1.5s") {
		t.Errorf("boundary %q does not say how long nothing happened", res.Boundary)
	}
	starts, ends := records(out, trace.AttemptStart, "tool:silent"), records(out, trace.AttemptEnd, "tool:silent")
	if len(starts) != 1 || len(ends) != 1 || ends[0].Outcome != trace.Quiet {
		t.Fatalf("silent attempts %+v / %+v, want one ended quiet\n%s", starts, ends, dump(out))
	}
	// Nothing happened after the call was issued: the clock fires Q after
	// it (a workflow timer is late by up to about a second on the test
	// server, never early).
	if took := ends[0].ElapsedMs - starts[0].ElapsedMs; took < quiet.Milliseconds() || took > quiet.Milliseconds()+3000 {
		t.Errorf("the silent call was cut %dms after it was issued, want Q (%v) or a little more", took, quiet)
	}
	// The attempt heard its cancellation at its next heartbeat and killed
	// its process: the call is cancelled, not left running.
	if len(res.InFlight) != 1 || res.InFlight[0].Tool != "silent" || res.InFlight[0].State != landing.StateCancelled {
		t.Errorf("in flight %+v, want silent, cancelled", res.InFlight)
	}
	if l := records(out, trace.Landing, ""); len(l) != 1 || l[0].Cause != string(landing.CauseQuiet) {
		t.Errorf("landing records %+v, want one with cause quiet", l)
	}
	if end := records(out, trace.RunEnd, ""); end[0].ElapsedMs > 8000 {
		t.Errorf("the run ended at %dms: it waited for the tool (8s)", end[0].ElapsedMs)
	}
}

// Progress whose units grow, sent by the running activity as coalesced
// signals, is a semantic event in the workflow: a tool that reports every
// 500ms for 2s is not stalled by a quiet clock of 1.5s, and each report
// is on the record with its units.
func TestProgressFromARunningActivityKeepsTheQuietClockFromFiring(t *testing.T) {
	e := newEnv(t, `tools:
  - name: deep_research
    builtin: deep_research
`)
	out, _ := e.run(t, durable.Input{Task: "research deadlines", Budget: 30 * time.Second, Quiet: 1500 * time.Millisecond})
	if res := out.Result; res.Status != landing.Complete {
		t.Fatalf("status %s cause %q, want complete: %s\n%s", res.Status, res.Cause, res.Boundary, dump(out))
	}
	ends := records(out, trace.AttemptEnd, "tool:deep_research")
	if len(ends) != 1 || ends[0].Outcome != trace.OK {
		t.Fatalf("deep_research attempts %+v, want one ok\n%s", ends, dump(out))
	}
	progress := records(out, trace.Progress, "tool:deep_research")
	if len(progress) < 2 {
		t.Fatalf("%d progress records, want the heartbeats on the record\n%s", len(progress), dump(out))
	}
	for i, p := range progress {
		if p.Key != ends[0].Key || p.Total != 4 || (i > 0 && p.Units <= progress[i-1].Units) {
			t.Errorf("progress %d: %+v, want growing units of 4 under the call's key %s", i, p, ends[0].Key)
		}
	}
}

// A wait the run chose is not silence: a backoff sleep pauses the quiet
// clock. A model turn answered 503 with Retry-After longer than Q is
// slept through and retried, and the run completes.
func TestABackoffSleepLongerThanQIsNotAStall(t *testing.T) {
	e := newEnvWith(t, "", nil, retryAfterOnce(2))
	out, _ := e.run(t, durable.Input{Task: "answer after a wait", Budget: 30 * time.Second, Quiet: 1500 * time.Millisecond})
	if res := out.Result; res.Status != landing.Complete {
		t.Fatalf("status %s cause %q, want complete: %s\n%s", res.Status, res.Cause, res.Boundary, dump(out))
	}
	b := records(out, trace.Backoff, "model")
	if len(b) != 1 || b[0].SleepMs < 2000 {
		t.Fatalf("backoff records %+v, want one sleep of the server's 2s\n%s", b, dump(out))
	}
}

// retryAfterOnce answers the first model request 503 with Retry-After
// secs, and the rest as the default policy does.
func retryAfterOnce(secs int) *sim.Scenario {
	return &sim.Scenario{Rules: []sim.Rule{{Request: 1, Status: 503, RetryAfter: strconv.Itoa(secs)}}}
}
