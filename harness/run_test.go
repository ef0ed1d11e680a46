package harness_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/kit"
	"github.com/glidepath/glidepath/trace"
)

// The real model client speaks to the sim over in-memory connections
// inside a synctest bubble, so every instant below is exact. The bubble
// also checks that no goroutine outlives a test.

func TestACompleteRunAnswersFromToolsCalledInParallel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(nil)
		defer srv.Close()
		c := newCalls()
		reg := registry(t, c.sleeper("search", time.Second, "3 cats"), c.sleeper("fetch", time.Second, "a page"))
		var tr bytes.Buffer
		var second collect
		start := time.Now()

		res, err := run(t, t.Context(), time.Minute, harness.Config{Task: "find cats", Model: newModel(t, srv), Tools: reg,
			Sinks: []trace.Sink{&second}}, &tr)

		if err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != time.Second {
			t.Errorf("returned after %v, want 1s: both tools of one second at once", got)
		}
		want := `[sim] Answer to "find cats": search returned "3 cats"; fetch returned "a page".`
		if res.Status != landing.Complete || res.Cause != "" || res.Answer != want || res.Boundary != "" {
			t.Errorf("result %+v, want complete with the sim's answer %q", res, want)
		}
		if res.Steps != 2 || res.Attempts != 4 || res.Orphans != 0 || !strings.HasPrefix(res.RunID, "run-") {
			t.Errorf("steps %d, attempts %d, orphans %d, run id %q; want 2, 4, 0, run-…", res.Steps, res.Attempts, res.Orphans, res.RunID)
		}
		if res.Budget != (landing.BudgetReport{TotalMs: 60000, SpentMs: 1000, ReserveMs: 15000, RemainingMs: 59000}) {
			t.Errorf("budget %+v", res.Budget)
		}

		recs := records(t, &tr)
		if recs[0].Event != trace.RunStart || recs[0].TotalMs != 60000 || recs[len(recs)-1].Event != trace.RunEnd {
			t.Errorf("trace runs from %s to %s, want run_start … run_end", recs[0].Event, recs[len(recs)-1].Event)
		}
		if end := recs[len(recs)-1]; end.Result != "complete" || end.Cause != "" {
			t.Errorf("run_end %+v", end)
		}
		for i, r := range recs {
			if r.Seq != int64(i+1) || r.RunID != res.RunID {
				t.Errorf("record %d: seq %d, run id %q", i, r.Seq, r.RunID)
			}
		}
		reqs := chatRequests(srv)
		starts := only(recs, trace.AttemptStart, "model")
		if len(starts) != len(reqs) || len(reqs) != 2 {
			t.Fatalf("%d model attempt_start records, %d requests; want 2 each", len(starts), len(reqs))
		}
		for i, r := range reqs {
			if sent := r.Header.Get(budget.Header); sent != strconv.FormatInt(starts[i].GrantedMs, 10) {
				t.Errorf("request %d sent %s=%s, trace says granted_ms %d", i+1, budget.Header, sent, starts[i].GrantedMs)
			}
			if r.Parallel == nil || !*r.Parallel {
				t.Errorf("request %d: parallel_tool_calls %v, want true in explore", i+1, r.Parallel)
			}
		}
		if n := len(only(recs, trace.AttemptStart, "")); n != res.Attempts {
			t.Errorf("%d attempt_start records, result counts %d attempts", n, res.Attempts)
		}
		for _, name := range []string{"search", "fetch"} {
			if at, _ := c.at(c.starts, name); at != 0 {
				t.Errorf("%s started at %v, want 0: in parallel", name, at)
			}
		}

		// A second sink gets exactly what the trace file gets.
		got := second.all()
		if len(got) != len(recs) {
			t.Fatalf("the second sink got %d records, the trace %d", len(got), len(recs))
		}
		for i := range recs {
			r := got[i]
			if !r.TS.Equal(recs[i].TS) {
				t.Errorf("record %d: ts %v in the sink, %v in the trace", i+1, r.TS, recs[i].TS)
			}
			r.TS = recs[i].TS
			if r != recs[i] {
				t.Errorf("record %d differs:\nsink  %+v\ntrace %+v", i+1, r, recs[i])
			}
		}
	})
}

func TestATooSlowToolLandsTheRunAtTheReserve(t *testing.T) {
	// B = 10s: reserve 2.5s, floor 50ms. The tool's lease is the work
	// time left, 7.45s; then the next turn has no lease, and the run lands.
	const B = 10 * time.Second
	const cut = 7450 * time.Millisecond
	cases := []struct {
		name string
		fn   func(release <-chan struct{}) tools.Fn
	}{
		{"a tool that honors its context", func(<-chan struct{}) tools.Fn {
			return func(ctx context.Context, _ json.RawMessage, _ tools.Progress) (any, error) {
				<-ctx.Done()
				return nil, context.Cause(ctx)
			}
		}},
		{"a tool that ignores its context", func(release <-chan struct{}) tools.Fn {
			return func(context.Context, json.RawMessage, tools.Progress) (any, error) {
				<-release
				return "too late", nil
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := sim.NewPipeServer(nil)
				defer srv.Close()
				release := make(chan struct{})
				reg := registry(t, tools.Func(tools.Spec{Name: "slow", Effect: tools.Read}, tc.fn(release)))
				defer reg.Wait()
				defer close(release)
				var tr bytes.Buffer
				start := time.Now()

				res, err := run(t, t.Context(), B, harness.Config{Task: "find cats", Model: newModel(t, srv), Tools: reg}, &tr)

				if err != nil {
					t.Fatal(err)
				}
				if got := time.Since(start); got != cut {
					t.Errorf("returned after %v, want %v, before the deadline %v", got, cut, B)
				}
				wantBoundary := "Ran out of allotted time at step 1: slow was in flight and is not included."
				if res.Status != landing.Partial || res.Cause != landing.CauseBudget || res.Boundary != wantBoundary {
					t.Errorf("result %s, cause %s, boundary %q; want partial, budget, %q", res.Status, res.Cause, res.Boundary, wantBoundary)
				}
				if len(res.InFlight) != 1 || res.InFlight[0].Tool != "slow" || res.InFlight[0].State != landing.StateCancelled ||
					res.InFlight[0].IdempotencyKey == "" {
					t.Errorf("in flight %+v, want slow, cancelled, with its key", res.InFlight)
				}
				if res.Steps != 1 || !strings.HasPrefix(res.Answer, "[sim] Summary") {
					t.Errorf("steps %d, answer %q; want 1 step and the model's summary", res.Steps, res.Answer)
				}
				reqs := chatRequests(srv)
				last := reqs[len(reqs)-1]
				if len(reqs) != 2 || last.HasTools || reqs[0].Tools != 1 {
					t.Errorf("%d requests, the last with a tools field: %v; want the turn, then a landing without one", len(reqs), last.HasTools)
				}
				recs := records(t, &tr)
				land := only(recs, trace.Landing, "")
				if len(land) != 1 || land[0].Cause != "budget" || land[0].Result != "model" {
					t.Errorf("landing records %+v", land)
				}
				if refused := only(recs, trace.Refused, "model"); len(refused) != 1 || refused[0].Reason == "" {
					t.Errorf("refused model records %+v, want the second turn refused by a lease rule", refused)
				}
				if n := len(only(recs, trace.AttemptStart, "")); n != res.Attempts || n != 3 {
					t.Errorf("%d attempt_start records, %d attempts; want 3: a turn, the tool, the landing", n, res.Attempts)
				}
			})
		})
	}
}

func TestARunReturnsWithinItsBudgetWhenTheModelHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Every request hangs until the client leaves, and the quiet clock
		// is longer than the run: only the budget ends it. The turn's
		// lease ends at B − R − F = 7.45s, with nothing sent: the model is
		// named, and not sent the landing call, which would hang there as
		// long (issue 18, SPEC §4): the harness summarizes at once.
		srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{Hang: true}}})
		defer srv.Close()
		var tr bytes.Buffer
		start := time.Now()

		res, err := run(t, t.Context(), 10*time.Second, harness.Config{Task: "find cats", Quiet: time.Hour, Model: newModel(t, srv)}, &tr)

		if err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 7450*time.Millisecond {
			t.Errorf("returned after %v, want 7.45s: when the turn's lease ended", got)
		}
		if res.Status != landing.Partial || res.Cause != landing.CauseBudget || !strings.HasPrefix(res.Answer, "Partial answer, summarized by the harness") {
			t.Errorf("result %+v, want partial, budget, summarized by the harness", res)
		}
		if want := "Stopped at step 1: the model sent nothing for 7.4s."; res.Boundary != want {
			t.Errorf("boundary %q, want %q", res.Boundary, want)
		}
		recs := records(t, &tr)
		var outcomes []trace.Outcome
		for _, r := range only(recs, trace.AttemptEnd, "model") {
			outcomes = append(outcomes, r.Outcome)
		}
		if !slices.Equal(outcomes, []trace.Outcome{trace.GaveUp}) {
			t.Errorf("model attempts ended %v, want the turn given up, and no landing call", outcomes)
		}
		// The ladder is read when asked: the clock passed 60% at 6s, the
		// run learned it at 7.45s, and landing was forced then.
		ph := only(recs, trace.PhaseChange, "")
		if len(ph) != 2 || ph[0].To != "narrow" || ph[1].To != "land" || ph[1].Reason != "forced" || ph[1].ElapsedMs != 7450 {
			t.Errorf("phase records %+v, want narrow, then land forced at 7.45s", ph)
		}
	})
}

func TestAStalledModelLandsOnTheQuietClock(t *testing.T) {
	cases := []struct {
		name    string
		rule    sim.Rule
		wantAt  time.Duration
		landing string // who summarized
	}{
		// Issue 24: a model that sent only keepalives is not asked to land
		// either; the harness summarizes at once.
		{"the first request sends only keepalives", sim.Rule{Request: 1, Keepalive: sim.Forever}, 5 * time.Second, "harness"},
		{"every request sends only keepalives", sim.Rule{Keepalive: sim.Forever}, 5 * time.Second, "harness"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{tc.rule}})
				defer srv.Close()
				var tr bytes.Buffer
				start := time.Now()

				res, err := run(t, t.Context(), time.Minute, harness.Config{Task: "find cats", Quiet: 5 * time.Second, Model: newModel(t, srv)}, &tr)

				if err != nil {
					t.Fatal(err)
				}
				if got := time.Since(start); got != tc.wantAt {
					t.Errorf("returned after %v, want %v", got, tc.wantAt)
				}
				if res.Status != landing.Partial || res.Cause != landing.CauseQuiet ||
					res.Boundary != "Stopped at step 1: no progress for 5s: the model sent only keepalives for 5s (nothing is known of how long it usually takes: the quiet period alone applied)." {
					t.Errorf("result %s, cause %s, boundary %q", res.Status, res.Cause, res.Boundary)
				}
				recs := records(t, &tr)
				ends := only(recs, trace.AttemptEnd, "model")
				if len(ends) != 1 || ends[0].Outcome != trace.Quiet || ends[0].Keepalives < 4 || ends[0].ElapsedMs != 5000 {
					t.Errorf("model attempt ends %+v, want the turn ended quiet at 5s after a keepalive a second (the one due at 5s may come first)", ends)
				}
				if land := only(recs, trace.Landing, ""); len(land) != 1 || land[0].Result != tc.landing || land[0].Cause != "quiet" {
					t.Errorf("landing records %+v, want one by the %s", land, tc.landing)
				}
				if tc.landing == "harness" && !strings.HasPrefix(res.Answer, "Partial answer, summarized by the harness") {
					t.Errorf("answer %q, want the harness's summary", res.Answer)
				}
			})
		})
	}
}

// The landing call is watched by a quiet clock of its own: one that sends
// only keepalives ends as a stall does, and the harness summarizes.
func TestALandingCallThatSendsOnlyKeepalivesEndsOnItsOwnQuietClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{Request: 2, Keepalive: sim.Forever}}})
		defer srv.Close()
		c := newCalls()
		reg := registry(t, c.sleeper("search", time.Minute, "3 cats"))
		ctx, cancel := context.WithCancelCause(t.Context())
		time.AfterFunc(2*time.Second, func() { cancel(harness.ErrInterrupted) })
		var tr bytes.Buffer
		start := time.Now()

		res, err := run(t, ctx, time.Minute, harness.Config{Task: "find cats", Quiet: 5 * time.Second, Model: newModel(t, srv), Tools: reg}, &tr)

		if err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 7*time.Second {
			t.Errorf("returned after %v, want 7s: cancelled at 2s, the landing call quiet for 5s", got)
		}
		if res.Cause != landing.CauseCancelled || !strings.HasPrefix(res.Answer, "Partial answer, summarized by the harness") {
			t.Errorf("cause %s, answer %q; want cancelled, the harness's summary", res.Cause, res.Answer)
		}
		recs := records(t, &tr)
		if ends := only(recs, trace.AttemptEnd, "model"); len(ends) != 2 || ends[1].StepIndex != 0 || ends[1].Outcome != trace.Quiet {
			t.Errorf("model attempt ends %+v, want the landing call's ended quiet", ends)
		}
		if land := only(recs, trace.Landing, ""); len(land) != 1 || land[0].Result != "harness" {
			t.Errorf("landing records %+v, want one by the harness", land)
		}
	})
}

func TestCancellingTheRunLandsWithCauseCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(nil)
		defer srv.Close()
		c := newCalls()
		reg := registry(t, c.sleeper("search", time.Minute, "3 cats"))
		ctx, cancel := context.WithCancelCause(t.Context())
		time.AfterFunc(2*time.Second, func() { cancel(harness.ErrInterrupted) })
		var tr bytes.Buffer
		start := time.Now()

		res, err := run(t, ctx, time.Minute, harness.Config{Task: "find cats", Model: newModel(t, srv), Tools: reg}, &tr)

		if err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 2*time.Second {
			t.Errorf("returned after %v, want 2s", got)
		}
		if res.Cause != landing.CauseCancelled || res.Boundary != "Cancelled at step 1: search was in flight and is not included." {
			t.Errorf("cause %s, boundary %q", res.Cause, res.Boundary)
		}
		if !strings.HasPrefix(res.Answer, "[sim] Summary") {
			t.Errorf("answer %q, want the model's summary: the landing call outlives the cancelled context", res.Answer)
		}
		recs := records(t, &tr)
		if ends := only(recs, trace.AttemptEnd, "tool:search"); len(ends) != 1 || ends[0].Outcome != trace.Cancelled {
			t.Errorf("tool attempt ends %+v, want one cancelled", ends)
		}
		if end := recs[len(recs)-1]; end.Event != trace.RunEnd || end.Cause != "cancelled" || end.Result != "partial" {
			t.Errorf("last record %+v", end)
		}
	})
}

func TestARunLandsWhenItsStepsRunOutOrTheModelFails(t *testing.T) {
	cases := []struct {
		name         string
		scenario     *sim.Scenario
		maxSteps     int
		wantCause    landing.Cause
		wantSteps    int
		wantAttempts int // model attempts, tool attempts and the landing call
		wantBackoffs int
	}{
		{"one step that calls a tool", nil, 1, landing.CauseMaxSteps, 1, 3, 0},
		{"a model that answers 500 three times", &sim.Scenario{Rules: []sim.Rule{{Status: 500, Times: 3}}}, 0, landing.CauseUpstream, 1, 4, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := sim.NewPipeServer(tc.scenario)
				defer srv.Close()
				c := newCalls()
				reg := registry(t, c.sleeper("search", time.Second, "3 cats"))
				var tr bytes.Buffer

				res, err := run(t, t.Context(), time.Minute, harness.Config{Task: "find cats", MaxSteps: tc.maxSteps, Model: newModel(t, srv), Tools: reg}, &tr)

				if err != nil {
					t.Fatal(err)
				}
				if res.Status != landing.Partial || res.Cause != tc.wantCause || res.Steps != tc.wantSteps || res.Attempts != tc.wantAttempts {
					t.Errorf("result %s, cause %s, steps %d, attempts %d; want partial, %s, %d, %d",
						res.Status, res.Cause, res.Steps, res.Attempts, tc.wantCause, tc.wantSteps, tc.wantAttempts)
				}
				recs := records(t, &tr)
				if n := len(only(recs, trace.Backoff, "model")); n != tc.wantBackoffs {
					t.Errorf("%d backoff records, want %d", n, tc.wantBackoffs)
				}
				if reqs := chatRequests(srv); reqs[len(reqs)-1].HasTools {
					t.Error("the landing request has a tools field")
				}
				if land := only(recs, trace.Landing, ""); len(land) != 1 || land[0].Cause != string(tc.wantCause) || land[0].Result != "model" {
					t.Errorf("landing records %+v", land)
				}
			})
		})
	}
}

func TestTheModelReadsAFreshBudgetNoteAtEveryTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(nil)
		defer srv.Close()
		c := newCalls()
		// One call per turn, ten seconds each: three turns, notes apart.
		reg := registry(t, c.sleeper("search", 10*time.Second, "3 cats"), c.sleeper("fetch", 10*time.Second, "a page"))

		res, err := run(t, t.Context(), time.Minute, harness.Config{Task: "find cats", Parallel: 1, Model: newModel(t, srv), Tools: reg}, nil)

		if err != nil || res.Status != landing.Complete || res.Steps != 3 {
			t.Fatalf("result %+v, %v; want complete in 3 steps", res, err)
		}
		want := []string{
			"Budget: 1m0s left until the deadline, 45s until landing begins.",
			"Budget: 50s left until the deadline, 35s until landing begins.",
			"Budget: 40s left until the deadline, 25s until landing begins.",
		}
		reqs := chatRequests(srv)
		if len(reqs) != len(want) {
			t.Fatalf("%d requests, want %d", len(reqs), len(want))
		}
		for i, r := range reqs {
			if !strings.HasPrefix(r.BudgetNote, want[i]) {
				t.Errorf("turn %d read %q, want it to begin %q", i+1, r.BudgetNote, want[i])
			}
			var notes int
			for _, m := range r.Messages {
				if strings.HasPrefix(m.Content, "Budget:") {
					notes++
				}
			}
			if last := r.Messages[len(r.Messages)-1]; notes != 1 || last.Role != "system" || !strings.HasPrefix(last.Content, "Budget:") {
				t.Errorf("turn %d: %d notes, last message %+v; want one, last, the previous one replaced", i+1, notes, last)
			}
		}
	})
}

// In a run of 200s the reserve is 20s: narrow from 120s, fit from 160s,
// land from 180s. A slow first turn carries the run into a phase.
func TestTheLadderNarrowsThenFitsTheToolCalls(t *testing.T) {
	const B = 200 * time.Second
	calls := func(names ...string) []sim.ToolCall {
		var out []sim.ToolCall
		for _, n := range names {
			out = append(out, sim.ToolCall{Name: n})
		}
		return out
	}
	t.Run("narrow runs calls one by one and refuses speculative ones", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{Turn: 1, Delay: 125 * time.Second, ToolCalls: calls("a", "b", "guess")}}})
			defer srv.Close()
			c := newCalls()
			reg := registry(t, c.sleeper("a", time.Second, "A"), c.sleeper("b", time.Second, "B"),
				c.sleeperSpec(tools.Spec{Name: "guess", Effect: tools.Read, Speculative: true}, time.Second, "G"))
			var tr bytes.Buffer

			res, err := run(t, t.Context(), B, harness.Config{Task: "find cats", Quiet: 10 * time.Minute, Model: newModel(t, srv), Tools: reg}, &tr)

			if err != nil || res.Status != landing.Complete {
				t.Fatalf("result %+v, %v; want complete", res, err)
			}
			aAt, _ := c.at(c.starts, "a")
			bAt, _ := c.at(c.starts, "b")
			if aAt != 125*time.Second || bAt != 126*time.Second {
				t.Errorf("a started at %v, b at %v; want 125s and 126s: one by one", aAt, bAt)
			}
			if _, ran := c.at(c.starts, "guess"); ran {
				t.Error("the speculative call ran in the narrow phase")
			}
			reqs := chatRequests(srv)
			if p := reqs[1].Parallel; p == nil || *p {
				t.Errorf("the second turn's parallel_tool_calls %v, want false in narrow", p)
			}
			got := toolMessage(reqs[1], "guess")
			if !strings.HasPrefix(got, "error: not run: the narrow phase allows no") {
				t.Errorf("the model read %q for the speculative call", got)
			}
			recs := records(t, &tr)
			// The change is recorded when it happens, in the middle of the
			// slow turn, not when the next gate asks.
			if ph := only(recs, trace.PhaseChange, ""); len(ph) != 1 || ph[0].From != "explore" || ph[0].To != "narrow" || ph[0].ElapsedMs != 120000 {
				t.Errorf("phase records %+v, want explore → narrow at 120s", ph)
			}
			if ref := only(recs, trace.Refused, "tool:guess"); len(ref) != 1 || ref[0].Reason != "gated" {
				t.Errorf("refused records %+v", ref)
			}
		})
	})
	t.Run("a call queued in explore runs alone once the run has narrowed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// Two at once from 115s: a and b end at 125s, in narrow, so c
			// and d, which waited for a slot, are no new parallel branches.
			srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{Turn: 1, Delay: 115 * time.Second, ToolCalls: calls("a", "b", "c", "d")}}})
			defer srv.Close()
			c := newCalls()
			reg := registry(t, c.sleeper("a", 10*time.Second, "A"), c.sleeper("b", 10*time.Second, "B"),
				c.sleeper("c", 10*time.Second, "C"), c.sleeper("d", 10*time.Second, "D"))

			res, err := run(t, t.Context(), B, harness.Config{Task: "find cats", Quiet: 10 * time.Minute, Parallel: 2, Model: newModel(t, srv), Tools: reg}, nil)

			if err != nil || res.Status != landing.Complete {
				t.Fatalf("result %+v, %v; want complete", res, err)
			}
			want := map[string]time.Duration{"a": 115 * time.Second, "b": 115 * time.Second, "c": 125 * time.Second, "d": 135 * time.Second}
			for name, at := range want {
				if got, _ := c.at(c.starts, name); got != at {
					t.Errorf("%s started at %v, want %v", name, got, at)
				}
			}
		})
	})
	t.Run("fit refuses a call whose p95 does not fit", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{Turn: 1, Delay: 165 * time.Second, ToolCalls: calls("big", "small")}}})
			defer srv.Close()
			c := newCalls()
			reg := registry(t,
				c.sleeperSpec(tools.Spec{Name: "big", Effect: tools.Read, P95: 30 * time.Second}, time.Second, "BIG"),
				c.sleeperSpec(tools.Spec{Name: "small", Effect: tools.Read, P95: time.Second}, time.Second, "SMALL"))

			res, err := run(t, t.Context(), B, harness.Config{Task: "find cats", Quiet: 10 * time.Minute, Model: newModel(t, srv), Tools: reg}, nil)

			if err != nil || res.Status != landing.Complete {
				t.Fatalf("result %+v, %v; want complete", res, err)
			}
			if _, ran := c.at(c.starts, "big"); ran {
				t.Error("big ran although its p95 of 30s does not fit in the 15s before landing")
			}
			if at, _ := c.at(c.starts, "small"); at != 165*time.Second {
				t.Errorf("small started at %v, want 165s", at)
			}
			reqs := chatRequests(srv)
			if got := toolMessage(reqs[1], "big"); got != "error: not run: its p95 30s does not fit in the 15s left before landing" {
				t.Errorf("the model read %q for big", got)
			}
			if got := toolMessage(reqs[1], "small"); got != `"SMALL"` {
				t.Errorf("the model read %q for small", got)
			}
		})
	})
}

// toolMessage is what the model read in req for the call of the tool name.
func toolMessage(req sim.Request, name string) string {
	ids := map[string]string{}
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			ids[c.ID] = c.Name
		}
		if m.Role == "tool" && ids[m.ToolCallID] == name {
			return m.Content
		}
	}
	return ""
}

func TestEveryFieldOfTheResultIsPresent(t *testing.T) {
	fields := []string{"run_id", "status", "cause", "answer", "boundary", "established", "not_established", "unavailable",
		"in_flight", "budget", "steps", "attempts", "orphans"}
	cases := []struct {
		name      string
		maxSteps  int
		wantCause string
	}{
		{"complete", 0, "null"},
		{"partial", 1, `"max_steps"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := sim.NewPipeServer(nil)
				defer srv.Close()
				c := newCalls()
				res, err := run(t, t.Context(), time.Minute, harness.Config{Task: "find cats", MaxSteps: tc.maxSteps, RunID: "run-1", Model: newModel(t, srv), Tools: registry(t, c.sleeper("search", time.Second, "3 cats"))}, nil)
				if err != nil {
					t.Fatal(err)
				}
				data, err := json.Marshal(res)
				if err != nil {
					t.Fatal(err)
				}
				var obj map[string]json.RawMessage
				if err := json.Unmarshal(data, &obj); err != nil {
					t.Fatal(err)
				}
				for _, f := range fields {
					v, ok := obj[f]
					if !ok {
						t.Errorf("no %q in %s", f, data)
					}
					if string(v) == "null" && f != "cause" {
						t.Errorf("%q is null in %s", f, data)
					}
				}
				if len(obj) != len(fields) || string(obj["cause"]) != tc.wantCause || string(obj["run_id"]) != `"run-1"` {
					t.Errorf("result %s", data)
				}
			})
		})
	}
}

func TestABadConfigIsRefusedBeforeAnythingIsSent(t *testing.T) {
	var sent int
	client, err := newCountingModel(&sent)
	if err != nil {
		t.Fatal(err)
	}
	b, err := budget.New(budget.Config{Total: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	valid := harness.Config{Task: "find cats", Model: client}
	cases := []struct {
		field string
		edit  func(*harness.Config)
	}{
		{"task", func(c *harness.Config) { c.Task = " \n" }},
		{"quiet", func(c *harness.Config) { c.Quiet = -time.Second }},
		{"model", func(c *harness.Config) { c.Model = nil }},
		{"max-steps", func(c *harness.Config) { c.MaxSteps = -1 }},
		{"parallel", func(c *harness.Config) { c.Parallel = -1 }},
	}
	for _, tc := range cases {
		cfg := valid
		tc.edit(&cfg)
		var sink collect
		cfg.Sinks = []trace.Sink{&sink}
		_, err := harness.Run(t.Context(), b, cfg)
		ce, ok := errors.AsType[*harness.ConfigError](err)
		if !ok || ce.Field != tc.field || !errors.Is(err, harness.ErrConfig) {
			t.Errorf("%s: error %v, want a *ConfigError for %q matching ErrConfig", tc.field, err, tc.field)
		}
		if len(sink.all()) != 0 {
			t.Errorf("%s: %d records written for a bad config", tc.field, len(sink.all()))
		}
	}
	if _, err := harness.Run(t.Context(), nil, valid); !errors.Is(err, harness.ErrConfig) {
		t.Errorf("no budget: error %v, want a config error", err)
	}
	if sent != 0 {
		t.Errorf("%d requests sent for bad configs", sent)
	}
}

func TestATraceThatCannotBeWrittenDoesNotStopTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(nil)
		defer srv.Close()
		disk := errors.New("disk full")

		res, err := run(t, t.Context(), time.Minute, harness.Config{Task: "find cats", Model: newModel(t, srv)}, failingWriter{disk})

		if !errors.Is(err, harness.ErrTrace) || !errors.Is(err, disk) {
			t.Errorf("error %v, want ErrTrace wrapping the write failure", err)
		}
		if res.Status != landing.Complete || !strings.HasPrefix(res.Answer, "[sim]") {
			t.Errorf("result %+v, want the run complete all the same", res)
		}
	})
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

func TestRemoteToolProgressKeepsTheRunAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(nil)
		defer srv.Close()
		k := startKit(t, kitTool("crawl", 4, time.Second))
		defer k.close()
		reg := registry(t, tools.Remote(tools.Spec{Name: "crawl", Effect: tools.Read}, "http://tools.invalid", k.client()))
		var tr bytes.Buffer
		start := time.Now()

		res, err := run(t, t.Context(), time.Minute, harness.Config{Task: "find cats", Quiet: 2 * time.Second, Model: newModel(t, srv), Tools: reg}, &tr)

		if err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 4*time.Second || res.Status != landing.Complete {
			t.Errorf("%s after %v, want complete after 4s: a heartbeat every second resets the 2s quiet clock", res.Status, got)
		}
		recs := records(t, &tr)
		prog := only(recs, trace.Progress, "tool:crawl")
		var units []int64
		for _, p := range prog {
			units = append(units, p.Units)
		}
		if !slices.Equal(units, []int64{1, 2, 3, 4}) || prog[0].Key == "" {
			t.Errorf("progress records %+v, want units 1, 2, 3, 4 with the call's key", prog)
		}
	})
}

func TestAStalledRemoteToolIsCancelledAndTheRunLands(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(nil)
		defer srv.Close()
		k := startKit(t, kitTool("crawl", 1, time.Hour))
		defer k.close()
		reg := registry(t, tools.Remote(tools.Spec{Name: "crawl", Effect: tools.Read, Cancellable: true}, "http://tools.invalid", k.client()))
		var tr bytes.Buffer
		start := time.Now()

		res, err := run(t, t.Context(), time.Minute, harness.Config{Task: "find cats", Quiet: 2 * time.Second, Model: newModel(t, srv), Tools: reg}, &tr)

		if err != nil {
			t.Fatal(err)
		}
		// Its one heartbeat, at once, opens a window of 2s; nothing after.
		if got := time.Since(start); got != 2*time.Second {
			t.Errorf("returned after %v, want 2s", got)
		}
		if res.Cause != landing.CauseQuiet || len(res.InFlight) != 1 || res.InFlight[0].State != landing.StateCancelled {
			t.Errorf("cause %s, in flight %+v; want quiet with crawl cancelled", res.Cause, res.InFlight)
		}
		recs := records(t, &tr)
		// One record when the cancel goes out, on its lease, and one when
		// it is answered.
		cs := only(recs, trace.CancelSent, "tool:crawl")
		if len(cs) != 2 || cs[0].State != "sent" || cs[0].GrantedMs != 2000 || cs[1].State != "accepted" ||
			cs[0].Key != res.InFlight[0].IdempotencyKey || cs[1].Key != cs[0].Key {
			t.Errorf("cancel_sent records %+v", cs)
		}
		if ends := only(recs, trace.AttemptEnd, "tool:crawl"); len(ends) != 1 || ends[0].Outcome != trace.Quiet {
			t.Errorf("tool attempt ends %+v, want one ended quiet", ends)
		}
	})
}

func TestAnOrphanedWriteIsJournaledAndReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(nil)
		defer srv.Close()
		// A handler that ignores its deadline: the kit does not answer for
		// it, so the caller's lease ends the attempt, not the kit's answer
		// racing it at the same instant.
		release := make(chan struct{})
		k := startKit(t, kit.Tool{Name: "commit", Effect: kit.Write,
			Handler: func(context.Context, *kit.Call) (any, error) {
				<-release
				return "committed", nil
			}})
		defer k.close()
		defer close(release)
		reg := registry(t, tools.Remote(tools.Spec{Name: "commit", Effect: tools.Write}, "http://tools.invalid", k.client()))
		path := filepath.Join(t.TempDir(), "orphans.jsonl")
		j, err := cancel.OpenJournal(path)
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		var tr bytes.Buffer

		res, err := run(t, t.Context(), 10*time.Second, harness.Config{Task: "find cats", RunID: "run-orphan", Model: newModel(t, srv), Tools: reg, Journal: j}, &tr)

		if err != nil {
			t.Fatal(err)
		}
		if res.Orphans != 1 || len(res.InFlight) != 1 || res.InFlight[0].State != landing.StateOrphaned {
			t.Fatalf("orphans %d, in flight %+v; want the write orphaned\n%+v\n%s", res.Orphans, res.InFlight, res, tr.String())
		}
		// Reconciling spent the budget: the run keeps the cause that landed
		// it, and the boundary names the write and what to do.
		if res.Cause != landing.CauseBudget || !strings.Contains(res.Boundary, "harness reconcile") ||
			!strings.Contains(res.Boundary, res.InFlight[0].IdempotencyKey) {
			t.Errorf("cause %s, boundary %q; want budget, naming the write", res.Cause, res.Boundary)
		}
		entries, err := cancel.ReadJournal(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 || entries[0].RunID != "run-orphan" || string(entries[0].IdempotencyKey) != res.InFlight[0].IdempotencyKey {
			t.Errorf("journal %+v, want the orphan of run-orphan with its key", entries)
		}
		if o := only(records(t, &tr), trace.Orphan, "tool:commit"); len(o) != 1 || o[0].State != "open" || o[0].Key != res.InFlight[0].IdempotencyKey {
			t.Errorf("orphan records %+v", o)
		}
	})
}

// kitTool reports progress steps times, every, then answers; it honors
// its context.
func kitTool(name string, steps int64, every time.Duration) kit.Tool {
	return kit.Tool{Name: name, Effect: kit.Read, Cancellable: true,
		Handler: func(ctx context.Context, c *kit.Call) (any, error) {
			for i := range steps {
				c.Progress(i+1, steps, "page")
				select {
				case <-time.After(every):
				case <-ctx.Done():
					return nil, context.Cause(ctx)
				}
			}
			return "crawled", nil
		}}
}

// newCountingModel returns a client whose every request is counted and
// refused, for tests in which nothing may be sent.
func newCountingModel(sent *int) (*model.Client, error) {
	return model.New(model.Config{Model: "m", BaseURL: "http://model.invalid/v1", HTTPClient: &http.Client{
		Transport: roundTripper(func(*http.Request) (*http.Response, error) {
			*sent++
			return nil, errors.New("nothing may be sent")
		}),
	}})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestAReplyThatIsNotAWholeAnswerLandsThePartialRun(t *testing.T) {
	cases := []struct {
		name, content, finish, why string
	}{
		{"a reply cut at the token limit", "The cats are in", "length", "its reply was cut at the token limit (finish reason length)"},
		{"a reply withheld by the content filter", "", "content_filter", "its reply was withheld by a content filter (finish reason content_filter)"},
		{"an empty reply", " ", "stop", "its answer was empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var bodies []map[string]any
				client, err := model.New(model.Config{Model: "m", BaseURL: "http://model.invalid/v1", HTTPClient: &http.Client{
					Transport: roundTripper(func(req *http.Request) (*http.Response, error) {
						var body map[string]any
						if err := json.NewDecoder(req.Body).Decode(&body); err != nil {
							return nil, err
						}
						mu.Lock()
						bodies = append(bodies, body)
						first := len(bodies) == 1
						mu.Unlock()
						if first {
							return sse(tc.content, tc.finish), nil
						}
						return sse("Summary: nothing is established.", "stop"), nil
					}),
				}})
				if err != nil {
					t.Fatal(err)
				}

				res, err := run(t, t.Context(), time.Minute, harness.Config{Task: "find cats", Model: client}, nil)

				if err != nil {
					t.Fatal(err)
				}
				if res.Status != landing.Partial || res.Cause != landing.CauseUpstream || res.Steps != 1 ||
					res.Answer != "Summary: nothing is established." || !strings.HasPrefix(res.Text(), "PARTIAL RESULT.") {
					t.Errorf("result %+v, want partial, cause upstream, after 1 step, with the landing call's summary", res)
				}
				if want := "The model failed at step 1: " + tc.why + "."; res.Boundary != want {
					t.Errorf("boundary %q, want %q", res.Boundary, want)
				}
				mu.Lock()
				defer mu.Unlock()
				if len(bodies) != 2 {
					t.Fatalf("%d requests, want the turn and the landing call", len(bodies))
				}
				if _, ok := bodies[1]["tools"]; ok {
					t.Error("the landing request has a tools field")
				}
				if tc.content == "The cats are in" && !strings.Contains(fmt.Sprint(bodies[1]["messages"]), tc.content) {
					t.Errorf("the landing call did not see what the cut reply said: %v", bodies[1]["messages"])
				}
			})
		})
	}
}

// sse is a streamed chat completion that says content and finishes with
// finish.
func sse(content, finish string) *http.Response {
	chunk := func(delta, finish string) string {
		f := "null"
		if finish != "" {
			f = strconv.Quote(finish)
		}
		return fmt.Sprintf(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n", delta, f)
	}
	body := chunk(fmt.Sprintf(`{"role":"assistant","content":%q}`, content), "") + chunk(`{}`, finish) + "data: [DONE]\n\n"
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(strings.NewReader(body))}
}
