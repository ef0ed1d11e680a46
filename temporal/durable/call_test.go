package durable_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/temporal/durable"
	"github.com/glidepath/glidepath/tools/demo"
	"github.com/glidepath/glidepath/trace"
)

// toolGate stands in front of the demo's tool server: it turns the first
// call of each key away with a 503 and retryAfter (when set), and holds
// every call and every cancel until its request ends (when hang).
type toolGate struct {
	mu         sync.Mutex
	retryAfter string
	hang       bool
	failWith   string         // every call fails with this message, when set
	byKey      map[string]int // POSTs per Idempotency-Key
}

func (g *toolGate) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		ra, hang, fail := g.retryAfter, g.hang, g.failWith
		g.mu.Unlock()
		if fail != "" && r.Method == http.MethodPost {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":{"message":%q}}`, fail)
			return
		}
		if (r.Method == http.MethodDelete || r.Method == http.MethodPost) && hang {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return
		}
		if tool, ok := strings.CutPrefix(r.URL.Path, "/tools/"); ok && r.Method == http.MethodPost && !strings.Contains(tool, "/") {
			key := r.Header.Get("Idempotency-Key")
			g.mu.Lock()
			g.byKey[key]++
			first := g.byKey[key] == 1
			g.mu.Unlock()
			if first && ra != "" {
				w.Header().Set("Retry-After", ra)
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

func (g *toolGate) set(retryAfter string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.retryAfter, g.byKey = retryAfter, map[string]int{}
}

func (g *toolGate) posts(key string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.byKey[key]
}

// A server's Retry-After is followed on Temporal by harness run's rule,
// the call machine's (issue 25): one too large to be meaningful gives up
// at once with retry_after_exceeds_budget (it was retried after ~140ms of
// jitter), and "Retry-After: 1" is a floor, spread by the run's seeded
// source, not an appointment every run keeps to the millisecond.
func TestAServersRetryAfterIsFollowedAsHarnessRunFollowsIt(t *testing.T) {
	g := &toolGate{byKey: map[string]int{}}
	toolServer := httptest.NewServer(g.wrap(demo.NewServer(demo.ServerConfig{})))
	defer toolServer.Close()
	e := newEnv(t, "tools:\n  - name: search\n    url: "+toolServer.URL+"\n")

	t.Run("a Retry-After too large to be meaningful gives up at once", func(t *testing.T) {
		g.set("999999999")
		out, _ := e.run(t, durable.Input{Task: "search for deadlines", Budget: 10 * time.Second})
		starts := records(out, trace.AttemptStart, "tool:search")
		bo := records(out, trace.Backoff, "tool:search")
		if len(starts) != 1 || g.posts(starts[0].Key) != 1 {
			t.Fatalf("%d attempts of search (%d POSTs), want 1\n%s", len(starts), g.posts(starts[0].Key), dump(out))
		}
		// The give-up's record keeps the value it could not use, as
		// harness run's does (issue 25: it was dropped on Temporal).
		if len(bo) != 1 || !bo[0].GaveUp || bo[0].Reason != budget.RetryAfterExceedsBudget || bo[0].RetryAfterInvalid != "999999999" {
			t.Errorf("backoff records %+v, want one that gave up with %s, retry_after_invalid 999999999", bo, budget.RetryAfterExceedsBudget)
		}
	})
	t.Run("Retry-After: 1 is a floor, spread", func(t *testing.T) {
		g.set("1")
		out, _ := e.run(t, durable.Input{Task: "search for deadlines", Budget: 10 * time.Second})
		ends := records(out, trace.AttemptEnd, "tool:search")
		bo := records(out, trace.Backoff, "tool:search")
		if len(ends) != 2 || ends[1].Outcome != trace.OK {
			t.Fatalf("search attempts %+v, want a 503 then ok\n%s", ends, dump(out))
		}
		// The spread is uniform in [0, 250ms]: exactly 1000ms is one draw
		// in 250,001, and what every run slept before.
		if len(bo) != 1 || bo[0].Source != "retry_after" || bo[0].SleepMs <= 1000 || bo[0].SleepMs > 1000+budget.DefaultBase.Milliseconds() {
			t.Errorf("backoff records %+v, want one retry_after sleep in (1000ms, 1250ms]", bo)
		}
	})
}

// The cancel of a cut attempt goes out and is not waited for (SPEC §5):
// a tool whose cancel hangs does not hold the call (it held it up to its
// 1s lease), and the run still ends with its cancel given up.
func TestAHungCancelDoesNotHoldTheCall(t *testing.T) {
	g := &toolGate{byKey: map[string]int{}, hang: true}
	toolServer := httptest.NewServer(g.wrap(demo.NewServer(demo.ServerConfig{})))
	defer toolServer.Close()
	e := newEnv(t, "tools:\n  - name: long_job\n    url: "+toolServer.URL+"\n    ceiling: 500ms\n    p50: 100ms\n    max_attempts: 1\n")
	out, _ := e.run(t, durable.Input{Task: "a long job", Budget: 15 * time.Second})
	ends := records(out, trace.AttemptEnd, "tool:long_job")
	if len(ends) != 1 || ends[0].Outcome != trace.GaveUp {
		t.Fatalf("long_job attempts %+v, want one cut\n%s", ends, dump(out))
	}
	var sent, next int64 = -1, -1
	for _, r := range out.Trace {
		switch {
		case r.Event == trace.CancelSent && sent < 0:
			sent = r.ElapsedMs
		case r.Event == trace.AttemptStart && r.Step == "model" && r.ElapsedMs >= ends[0].ElapsedMs && next < 0:
			next = r.ElapsedMs
		}
	}
	if sent < 0 || next < 0 {
		t.Fatalf("no cancel sent (%d) or no model turn after the cut (%d)\n%s", sent, next, dump(out))
	}
	if gap := next - ends[0].ElapsedMs; gap >= 900 {
		t.Errorf("the next model turn started %dms after the cut attempt ended: the hung cancel held the call\n%s", gap, dump(out))
	}
	if out.Result.Status == "" {
		t.Errorf("no result")
	}
}

// A sub-agent's tool is checked against its own parameters, not against
// its parent's tool of the same name (issue 25: the schema was cached by
// tool name across toolsets, so the child's valid arguments were refused).
func TestASubAgentsToolIsCheckedAgainstItsOwnParameters(t *testing.T) {
	e := newEnvFiles(t, map[string]string{
		"tools.yaml": `tools:
  - name: search
    description: Search the notes by tag.
    effect: read
    parameters: {"type": "object", "properties": {"tag": {"type": "string"}}, "required": ["tag"], "additionalProperties": false}
    command: [sh, -c, "echo '{\"notes\": []}'"]
  - name: researcher
    description: Researches one question.
    ceiling: 8s
    agent:
      instructions: You research one question.
      tools: child.yaml
      max_steps: 4
`,
		"child.yaml": `tools:
  - name: search
    builtin: search
`,
	}, nil, nil)
	out, _ := e.run(t, durable.Input{Task: "research deadlines", Budget: 20 * time.Second})
	if out.Result.Status != landing.Complete {
		t.Fatalf("status %s: %s\n%s", out.Result.Status, out.Result.Boundary, dump(out))
	}
	var child, parent int
	for _, r := range records(out, trace.AttemptEnd, "tool:search") {
		if r.Outcome == trace.Invalid {
			t.Errorf("search (run %s) refused its arguments: %s", r.RunID, r.Message)
		}
		if r.ParentRunID != "" {
			child++
		} else {
			parent++
		}
	}
	if child == 0 || parent == 0 {
		t.Errorf("search called %d times by the parent and %d by the sub-agent, want both\n%s", parent, child, dump(out))
	}
}

// What a tool says back may quote a secret: the attempt's message is
// redacted in the workflow's trace, as harness run's records are (issue
// 25: it was recorded as the tool said it).
func TestAToolsAttemptMessageIsRedacted(t *testing.T) {
	const secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"
	g := &toolGate{byKey: map[string]int{}, failWith: "upstream refused the key " + secret}
	toolServer := httptest.NewServer(g.wrap(demo.NewServer(demo.ServerConfig{})))
	defer toolServer.Close()
	e := newEnv(t, "tools:\n  - name: search\n    url: "+toolServer.URL+"\n")
	out, _ := e.run(t, durable.Input{Task: "search for deadlines", Budget: 10 * time.Second})
	ends := records(out, trace.AttemptEnd, "tool:search")
	if len(ends) == 0 || !strings.Contains(ends[0].Message, "[redacted]") {
		t.Fatalf("search attempts %+v, want a failure whose message is redacted\n%s", ends, dump(out))
	}
	if d := dump(out); strings.Contains(d, secret) {
		t.Errorf("the trace holds the secret:\n%s", d)
	}
}

// Explore's parallel calls run as a sliding window of Input.Parallel, as
// harness's Session.Call runs them: a call starts as soon as one in flight
// ends (issue 25: they ran in fixed batches, so the third of three calls
// at width 2 waited for the slowest of the first two).
func TestExploresParallelCallsRunAsASlidingWindow(t *testing.T) {
	e := newEnv(t, `tools:
  - name: quick_notes
    description: Look up the notes, quickly.
    effect: read
    command: [sh, -c, "sleep 0.2; echo '\"notes\"'"]
  - name: slow_archive
    description: Look up the archive, slowly.
    effect: read
    command: [sh, -c, "sleep 3; echo '\"archive\"'"]
  - name: quick_index
    description: Look up the index, quickly.
    effect: read
    command: [sh, -c, "sleep 0.2; echo '\"index\"'"]
`)
	out, _ := e.run(t, durable.Input{Task: "look everything up", Budget: 30 * time.Second, Parallel: 2})
	first := func(ev trace.Event, step string) trace.Record {
		rs := records(out, ev, step)
		if len(rs) == 0 {
			t.Fatalf("no %s of %s\n%s", ev, step, dump(out))
		}
		return rs[0]
	}
	slowEnd, quickStart := first(trace.AttemptEnd, "tool:slow_archive"), first(trace.AttemptStart, "tool:quick_index")
	if quickStart.StepIndex != slowEnd.StepIndex {
		t.Fatalf("the calls were made in different turns\n%s", dump(out))
	}
	if quickStart.ElapsedMs >= slowEnd.ElapsedMs {
		t.Errorf("quick_index started at %dms, after slow_archive ended at %dms: a batch, not a sliding window\n%s",
			quickStart.ElapsedMs, slowEnd.ElapsedMs, dump(out))
	}
}

// A call whose lease was the run's time for work, not its tool's ceiling,
// is cut when the run's work ends: the run did not know how it went, so
// it stays in in_flight, and its attempt says what cut it, as in process
// (issue 25: Temporal took every cut lease for the tool's ceiling, said
// "lease expired", and left the call out of in_flight).
func TestACallTheRunsTimeForWorkCutStaysInFlight(t *testing.T) {
	sc := &sim.Scenario{Rules: []sim.Rule{{Request: 1, ToolCalls: []sim.ToolCall{{Name: "stuck", Arguments: "{}"}}}}}
	e := newEnvWith(t, "tools:\n  - name: stuck\n    effect: read\n    command: [sh, -c, \"sleep 30\"]\n", nil, sc)
	out, _ := e.run(t, durable.Input{Task: "wait for it", Budget: 4 * time.Second})
	ends := records(out, trace.AttemptEnd, "tool:stuck")
	if len(ends) != 1 || ends[0].Outcome != trace.GaveUp || !strings.Contains(ends[0].Message, budget.ErrDeadline.Error()) {
		t.Fatalf("stuck attempts %+v, want one cut by the run's deadline\n%s", ends, dump(out))
	}
	if in := out.Result.InFlight; len(in) != 1 || in[0].Tool != "stuck" || in[0].State == "" {
		t.Errorf("in_flight %+v, want stuck", in)
	}
}
