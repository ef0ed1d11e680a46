package tools

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/trace"
)

func TestTheGateBeforeACall(t *testing.T) {
	known := Gate{Tool: "search", Kind: "tool:search", Known: true, Left: time.Minute}
	with := func(f func(*Gate)) Gate { g := known; f(&g); return g }
	for _, tc := range []struct {
		name string
		g    Gate
		want string // "" admits
	}{
		{"a known call in explore starts", known, ""},
		{"nothing starts once the run stops, not even an unknown tool", with(func(g *Gate) { g.Stopping, g.Known = true, false }),
			"the run is stopping: no more work is started"},
		{"an unknown tool is let through for its registry to answer", with(func(g *Gate) { g.Known, g.Phase = false, landing.Land }), ""},
		{"a speculative call after explore is refused", with(func(g *Gate) { g.Speculative, g.Phase = true, landing.Narrow }),
			"the narrow phase allows no new parallel branches, sub-agents or speculative calls"},
		{"a sub-agent after explore is refused", with(func(g *Gate) { g.Agent, g.Phase = true, landing.Narrow }),
			"the narrow phase allows no new parallel branches, sub-agents or speculative calls"},
		{"in fit a call with neither p95 nor ceiling is refused", with(func(g *Gate) { g.Phase = landing.Fit }),
			"no latency estimate says it fits before landing"},
		{"in fit a call whose p95 fits starts", with(func(g *Gate) { g.Phase, g.P95 = landing.Fit, time.Second }), ""},
		{"in land nothing starts", with(func(g *Gate) { g.Phase = landing.Land }), "the run is landing: no more work is started"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, ok := tc.g.Admit()
			if ok != (tc.want == "") {
				t.Fatalf("admitted %v, want %v (%+v)", ok, tc.want == "", res)
			}
			if ok {
				return
			}
			if res.Err != "not run: "+tc.want || !res.Refused || res.Outcome != trace.GaveUp || !errors.Is(res.Cause, landing.ErrGated) {
				t.Errorf("refusal %+v, want not run: %s", res, tc.want)
			}
			if c := res.Landing(1, tc.g.Kind); c.Outcome != landing.Refused || c.Key != "" {
				t.Errorf("landing %+v, want refused with no key", c)
			}
		})
	}
}

func TestACallAfterExploreTakesEverySlot(t *testing.T) {
	for _, tc := range []struct {
		name  string
		p     landing.Phase
		width int
		want  int
	}{
		{"in explore a call takes one slot", landing.Explore, 4, 1},
		{"in narrow a call takes them all, so it runs alone", landing.Narrow, 4, 4},
		{"a width below one is one", landing.Fit, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Slots(tc.p, tc.width); got != tc.want {
				t.Errorf("Slots(%v, %d) = %d, want %d", tc.p, tc.width, got, tc.want)
			}
		})
	}
}

func TestTheEndingOfACall(t *testing.T) {
	cut := &trace.AttemptError{Step: "tool:pay", Attempt: 2, Outcome: trace.GaveUp, Err: budget.ErrLeaseExpired}
	said := Said{Tool: "pay", Kind: "tool:pay", Key: "gp_k", Last: cut, Failure: "pay: no answer within its ceiling of 1s"}
	with := func(f func(*Said)) Said { s := said; f(&s); return s }
	for _, tc := range []struct {
		name     string
		cmd      CallCommand
		s        Said
		content  string
		state    State
		outcome  landing.Outcome
		inFlight bool
	}{
		{"a success is its output, labeled when cut short", CallCommand{End: EndOK, N: 1},
			with(func(s *Said) { s.Last, s.Output, s.CutShort = nil, []byte(`"half"`), true }),
			"\"half\"\n[output cut short]", "", landing.Done, false},
		{"a write whose status says done takes the status's output", CallCommand{End: EndOK, N: 1, Status: cancel.Done},
			with(func(s *Said) { s.StatusOutput = []byte(`"paid"`) }), `"paid"`, "", landing.Done, false},
		{"a call cut by its own ceiling whose cancel was accepted failed, cancelled, not in flight",
			CallCommand{End: EndFailed, N: 2, State: StateAbandoned}, with(func(s *Said) { s.CancelOut, s.Cancel = true, trace.CancelStateAccepted }),
			"error: pay: no answer within its ceiling of 1s; it was cancelled", StateCancelled, landing.Failed, false},
		{"a cancel with no answer yet says so",
			CallCommand{End: EndFailed, N: 2, State: StateAbandoned}, with(func(s *Said) { s.CancelOut = true }),
			"error: pay: no answer within its ceiling of 1s; a cancel was sent, with no answer yet, so it may still be running", StateAbandoned, landing.Failed, false},
		{"a call the run's end left abandoned stays in flight",
			CallCommand{End: EndRunEnded, N: 1, State: StateAbandoned},
			with(func(s *Said) { s.Last = &trace.AttemptError{Outcome: trace.GaveUp, Err: budget.ErrDeadline} }),
			"error: pay: no answer within its ceiling of 1s; no retry: the run has ended; it could not be cancelled and may still be running",
			StateAbandoned, landing.Interrupted, true},
		{"a refusal before any attempt names no key", CallCommand{End: EndRefused, Refused: &budget.RefusedError{}},
			said, "error: not started: not enough time", "", landing.Refused, false},
		{"a backoff that would outlast the budget gives up", CallCommand{End: EndGaveUp, N: 2},
			with(func(s *Said) {
				s.Last, s.Failure = &trace.AttemptError{Outcome: trace.UpstreamError, Status: 503}, "pay failed: HTTP 503 Service Unavailable"
			}),
			"error: pay failed: HTTP 503 Service Unavailable; no retry: the next attempt would not fit in the time left", "", landing.Failed, false},
		{"a write whose status says failed failed", CallCommand{End: EndStatusFailed, N: 1, Status: cancel.Failed},
			said, "error: pay failed: its status says the call failed", "", landing.Failed, false},
		{"a journaled orphan tells the model not to repeat it", CallCommand{End: EndOrphan, N: 1, State: StateOrphaned},
			with(func(s *Said) { s.Orphan = &OrphanError{Journaled: true, Reachable: true} }),
			"error: pay: no answer in time, and whether it took effect is unknown; it is recorded for reconciliation under key gp_k: do not repeat it",
			StateOrphaned, landing.Interrupted, true},
		{"an orphan in no journal says why", CallCommand{End: EndOrphan, N: 1, State: StateOrphaned},
			with(func(s *Said) { s.Orphan, s.Unjournaled = &OrphanError{}, "no orphan journal is configured" }),
			"error: pay: no answer in time, and whether it took effect is unknown; it was NOT recorded for reconciliation (no orphan journal is configured), " +
				"so nothing will check it later: do not repeat it; tell the user it may have happened, under key gp_k",
			StateOrphaned, landing.Interrupted, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Ending(tc.cmd, tc.s)
			if got := res.Content(); got != tc.content {
				t.Errorf("content\n\t%q\nwant\n\t%q", got, tc.content)
			}
			c := res.Landing(3, "tool:pay")
			if res.State != tc.state || c.Outcome != tc.outcome || (c.State != "") != tc.inFlight {
				t.Errorf("state %q, landing %+v; want state %q, outcome %v, in flight %v", res.State, c, tc.state, tc.outcome, tc.inFlight)
			}
			if res.Attempts != tc.cmd.N || c.Step != 3 || c.Tool != "pay" {
				t.Errorf("attempts %d, landing %+v", res.Attempts, c)
			}
		})
	}
}

func TestAnUnjournaledOrphanIsUnreachableInTheLanding(t *testing.T) {
	res := Ending(CallCommand{End: EndOrphan, N: 1, State: StateOrphaned},
		Said{Tool: "pay", Key: "gp_k", Last: &trace.AttemptError{Outcome: trace.GaveUp}, Orphan: &OrphanError{Reachable: true}})
	if c := res.Landing(1, "tool:pay"); !c.Unreachable || c.Key != "gp_k" || c.State != string(StateOrphaned) {
		t.Errorf("landing %+v, want an unreachable orphan under gp_k", c)
	}
}

func TestAFailedAttemptIsDescribedByWhatEndedIt(t *testing.T) {
	spec := Spec{Name: "fetch", Ceiling: time.Second}
	for _, tc := range []struct {
		name string
		e    trace.AttemptError
		why  error
		want string
	}{
		{"its own ceiling", trace.AttemptError{Outcome: trace.GaveUp}, budget.ErrLeaseExpired, "fetch: no answer within its ceiling of 1s"},
		{"the run's time for work", trace.AttemptError{Outcome: trace.GaveUp}, budget.ErrDeadline, "fetch: stopped: the run's time for work ran out"},
		{"the tool's own words", trace.AttemptError{Outcome: trace.UpstreamError, Status: 500, Err: &ToolError{Message: "disk full"}}, nil,
			"fetch failed: HTTP 500: disk full"},
		{"a failure with no error", trace.AttemptError{Outcome: trace.UpstreamError}, nil, "fetch failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Describe(spec, &tc.e, tc.why, 2*time.Second); got != tc.want {
				t.Errorf("Describe = %q, want %q", got, tc.want)
			}
		})
	}
	if got := Describe(spec, &trace.AttemptError{Outcome: trace.GaveUp}, budget.ErrLeaseExpired, 300*time.Millisecond); !strings.Contains(got, "300ms") {
		t.Errorf("a lease below the ceiling: %q, want the lease named", got)
	}
}
