package harness_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/kit"
	"github.com/glidepath/glidepath/trace"
)

// hangs is a local read that works until its lease ends.
func hangs(name string) tools.Tool {
	return tools.Func(tools.Spec{Name: name, Effect: tools.Read}, func(ctx context.Context, _ json.RawMessage, _ tools.Progress) (any, error) {
		<-ctx.Done()
		return nil, context.Cause(ctx)
	})
}

// researcher is a sub-agent whose children have the given tools, on the
// parent's model.
func researcher(t *testing.T, name string, ts ...tools.Tool) *harness.Agent {
	t.Helper()
	return harness.NewAgent(tools.Spec{Name: name, Description: "Researches one question."},
		harness.Config{Instructions: "You research one question.", Tools: registry(t, ts...)})
}

// childRuns returns the run_start and run_end records of every child in
// recs, by run id.
func childRuns(recs []trace.Record) (starts, ends map[string]trace.Record) {
	starts, ends = map[string]trace.Record{}, map[string]trace.Record{}
	for _, r := range recs {
		switch {
		case r.ParentRunID == "":
		case r.Event == trace.RunStart:
			starts[r.RunID] = r
		case r.Event == trace.RunEnd:
			ends[r.RunID] = r
		}
	}
	return starts, ends
}

// B = 10s: R = 2.5s and 7.5s available; the model is instant, so the
// parent keeps 2F = 100ms. Two sub-agents called in one explore step run at
// once, each on a slice of 7.4s, the same deadline: their tools hang, so
// each lands partial with cause budget inside its slice, and the parent,
// given both labeled partials, answers inside its own budget.
func TestTwoSubAgentsInParallelEachLandInsideTheirSliceAndTheParentAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(nil)
		defer srv.Close()
		reg := registry(t, researcher(t, "alpha", hangs("crawl")), researcher(t, "beta", hangs("crawl")))
		var tr bytes.Buffer
		start := time.Now()

		res, err := run(t, t.Context(), 10*time.Second, harness.Config{Task: "find cats", Model: newModel(t, srv), Tools: reg}, &tr)

		if err != nil || res.Status != landing.Complete {
			t.Fatalf("parent %+v, %v; want it complete", res, err)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("the parent took %v of its 10s", took)
		}
		recs := records(t, &tr)
		starts, ends := childRuns(recs)
		if len(starts) != 2 || len(ends) != 2 {
			t.Fatalf("%d child run_starts and %d run_ends, want 2 of each", len(starts), len(ends))
		}
		var agentLeases []trace.Record
		for _, step := range []string{"agent:alpha", "agent:beta"} {
			agentLeases = append(agentLeases, only(recs, trace.AttemptStart, step)...)
		}
		for id, s := range starts {
			if s.ParentRunID != res.RunID || s.TotalMs > 7400 || s.TotalMs < 7300 {
				t.Errorf("child %s: parent %q, total %dms; want %s's, at most available − keep = 7400ms", id, s.ParentRunID, s.TotalMs, res.RunID)
			}
			if !leasedAs(agentLeases, s) {
				t.Errorf("child %s (key %s, %dms) matches no agent attempt of the parent %+v", id, s.Key, s.TotalMs, agentLeases)
			}
			e := ends[id]
			// elapsed_ms is the time that passed, not capped at total_ms
			// (SPEC §3), and a child past its deadline says late_ms: so
			// this fails for a child that ended late.
			if e.Cause != "budget" || e.Result != "partial" || e.ElapsedMs > s.TotalMs || e.LateMs != 0 {
				t.Errorf("child %s ended %s/%s at %dms of %dms (late %dms); want partial, budget, inside its slice", id, e.Result, e.Cause, e.ElapsedMs, s.TotalMs, e.LateMs)
			}
		}
		// The parent's model read each child's labeled result.
		reqs := chatRequests(srv)
		last := reqs[len(reqs)-1]
		partials := 0
		for _, m := range last.Messages {
			var child landing.Result
			if m.Role == "tool" && json.Unmarshal([]byte(m.Content), &child) == nil && child.Status == landing.Partial && child.Cause == landing.CauseBudget {
				partials++
			}
		}
		if partials != 2 {
			t.Errorf("the parent's last request carries %d labeled partials, want 2: %+v", partials, last.Messages)
		}
	})
}

// leasedAs reports whether child's run_start matches one of the parent's
// agent attempts: the same key, and the child's total the lease granted.
func leasedAs(attempts []trace.Record, child trace.Record) bool {
	for _, a := range attempts {
		if a.Key == child.Key && a.GrantedMs-child.TotalMs >= 0 && a.GrantedMs-child.TotalMs <= 1 {
			return true
		}
	}
	return false
}

// The parent is cancelled while two children work: both land, cancelled,
// each with its labeled partial; the parent lands; nothing is left running.
func TestCancellingTheParentLandsEveryChildAndLeavesNoGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(nil)
		defer srv.Close()
		before := runtime.NumGoroutine()
		reg := registry(t, researcher(t, "alpha", hangs("crawl")), researcher(t, "beta", hangs("crawl")))
		ctx, cancel := context.WithCancelCause(t.Context())
		time.AfterFunc(time.Second, func() { cancel(harness.ErrInterrupted) })
		var tr bytes.Buffer

		res, err := run(t, ctx, time.Minute, harness.Config{Task: "find cats", Model: newModel(t, srv), Tools: reg}, &tr)

		if err != nil || res.Cause != landing.CauseCancelled {
			t.Fatalf("parent %+v, %v; want it landed, cancelled", res, err)
		}
		_, ends := childRuns(records(t, &tr))
		if len(ends) != 2 {
			t.Fatalf("%d children ended, want 2", len(ends))
		}
		for id, e := range ends {
			if e.Cause != "cancelled" || e.Result != "partial" {
				t.Errorf("child %s ended %s/%s, want partial, cancelled", id, e.Result, e.Cause)
			}
		}
		if err := reg.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if after := runtime.NumGoroutine(); after > before {
			t.Errorf("%d goroutines before the run, %d after", before, after)
		}
	})
}

// B = 10s, tools one per turn: a 6.5s call takes the run into narrow, and
// the sub-agent the model asks for next is refused by the gate, with the
// gate's words in the tool message the model reads.
func TestASubAgentInNarrowIsRefusedAndTheModelReadsWhy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(nil)
		defer srv.Close()
		c := newCalls()
		reg := registry(t, c.sleeper("survey", 6500*time.Millisecond, "surveyed"), researcher(t, "alpha", hangs("crawl")))

		res, err := run(t, t.Context(), 10*time.Second, harness.Config{Task: "find cats", Model: newModel(t, srv), Tools: reg, Parallel: 1}, nil)

		if err != nil {
			t.Fatal(err)
		}
		const why = "the narrow phase allows no new parallel branches, sub-agents or speculative calls"
		read := false
		for _, r := range chatRequests(srv) {
			for _, m := range r.Messages {
				read = read || m.Role == "tool" && strings.Contains(m.Content, why)
			}
		}
		if !read {
			t.Errorf("no tool message says %q; result %+v", why, res)
		}
	})
}

// A child's write is cut and cannot be asked: it is an orphan, journaled
// once, by the child, and the parent's own: listed in its in_flight, so the
// parent's answer is unsettled.
func TestAChildsOrphanIsTheParentsJournaledOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(nil)
		defer srv.Close()
		pay := tools.Func(tools.Spec{Name: "pay", Effect: tools.Write, Ceiling: 500 * time.Millisecond},
			func(ctx context.Context, _ json.RawMessage, _ tools.Progress) (any, error) {
				<-ctx.Done()
				return nil, context.Cause(ctx)
			})
		path := filepath.Join(t.TempDir(), "orphans.jsonl")
		j, err := cancel.OpenJournal(path)
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()

		res, err := run(t, t.Context(), time.Minute, harness.Config{Task: "pay 5", Model: newModel(t, srv),
			Tools: registry(t, researcher(t, "clerk", pay)), Journal: j}, nil)

		if err != nil {
			t.Fatal(err)
		}
		if res.Status != landing.Partial || res.Cause != landing.CauseUnsettled || res.Orphans != 1 ||
			len(res.InFlight) != 1 || res.InFlight[0].Tool != "clerk/pay" || res.InFlight[0].State != landing.StateOrphaned {
			t.Fatalf("parent %s/%s, orphans %d, in flight %+v; want unsettled with clerk/pay orphaned", res.Status, res.Cause, res.Orphans, res.InFlight)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(data), res.InFlight[0].IdempotencyKey); n != 1 {
			t.Errorf("the journal names the orphan %d times, want once:\n%s", n, data)
		}
	})
}

// Quiet = 2s. A child whose tool works 5s, reporting progress, keeps its
// parent alive; a child whose tool is silent does not: the parent's quiet
// clock fires.
func TestAWorkingChildKeepsItsParentAliveAndAStalledOneDoesNot(t *testing.T) {
	working := tools.Func(tools.Spec{Name: "build", Effect: tools.Read}, func(ctx context.Context, _ json.RawMessage, p tools.Progress) (any, error) {
		for i := range 10 {
			select {
			case <-time.After(500 * time.Millisecond):
				p.Report(int64(i+1), 10, "compiling")
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}
		return "built", nil
	})
	cases := []struct {
		name string
		tool tools.Tool
		want landing.Status
	}{
		{"working", working, landing.Complete},
		{"stalled", hangs("build"), landing.Partial},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := sim.NewPipeServer(nil)
				defer srv.Close()

				res, err := run(t, t.Context(), time.Minute, harness.Config{Task: "build it", Quiet: 2 * time.Second,
					Model: newModel(t, srv), Tools: registry(t, researcher(t, "builder", tc.tool))}, nil)

				if err != nil || res.Status != tc.want {
					t.Fatalf("parent %+v, %v; want %s", res, err, tc.want)
				}
				if tc.want == landing.Partial && res.Cause != landing.CauseQuiet {
					t.Errorf("a stalled child: the parent landed for %s, want quiet", res.Cause)
				}
			})
		})
	}
}

// The model knows: the parent's note says what a sub-agent could get now,
// and the child's own note gives the child's own time.
func TestTheParentsNoteSaysWhatASubAgentCouldGetAndTheChildsItsOwnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(nil)
		defer srv.Close()

		_, err := run(t, t.Context(), 10*time.Second, harness.Config{Task: "find cats", Model: newModel(t, srv),
			Tools: registry(t, researcher(t, "alpha"))}, nil)

		if err != nil {
			t.Fatal(err)
		}
		reqs := chatRequests(srv)
		parentNote, childNote := lastSystem(reqs[0].Messages), ""
		for _, r := range reqs {
			if strings.HasPrefix(r.Messages[0].Content, "You research one question.") {
				childNote = lastSystem(r.Messages)
				break
			}
		}
		if want := "A sub-agent started now would get at most 7.4s"; !strings.Contains(parentNote, want) {
			t.Errorf("the parent's note %q does not say %q", parentNote, want)
		}
		if want := "Budget: 7.4s left until the deadline"; !strings.HasPrefix(childNote, want) {
			t.Errorf("the child's note %q does not start %q", childNote, want)
		}
	})
}

func lastSystem(msgs []sim.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "system" {
			return msgs[i].Content
		}
	}
	return ""
}

// Outside a Session, a sub-agent runs on the budget it is given: its
// result is labeled, and a task it cannot run is an error, with nothing
// started.
func TestAnAgentRunsOnTheBudgetItIsGiven(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(nil)
		defer srv.Close()
		a := harness.NewAgent(tools.Spec{Name: "alpha"}, harness.Config{Model: newModel(t, srv)})
		b, err := budget.New(budget.Config{Total: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var units []int64
		res, err := a.Run(t.Context(), b, "find cats", harness.ChildCall{Key: "gp_1", Progress: func(n int64, _ string) { units = append(units, n) }})
		if err != nil || res.Status != landing.Complete || res.Budget.TotalMs != 5000 {
			t.Errorf("result %+v, %v", res, err)
		}
		if len(units) == 0 || units[len(units)-1] != int64(len(units)) {
			t.Errorf("progress units %v, want 1, 2, … one per attempt and landing", units)
		}
		if _, err := a.Run(t.Context(), b, "  ", harness.ChildCall{}); !errors.Is(err, harness.ErrConfig) {
			t.Errorf("an empty task: %v, want a config error", err)
		}
		if a.Spec().Kind != "agent:alpha" || a.Spec().Effect != tools.Write || string(a.Spec().Parameters) != string(harness.AgentParameters) {
			t.Errorf("spec %+v", a.Spec())
		}
	})
}

// A loop of its own lands its run while a sub-agent works: landing the
// parent cancels the child, which lands at once with cause cancelled.
func TestLandingTheParentCancelsItsChild(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(nil)
		defer srv.Close()
		b, err := budget.New(budget.Config{Total: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		var recs collect
		s, ctx, err := harness.Start(t.Context(), b, harness.Config{Task: "find cats", Model: newModel(t, srv),
			Tools: registry(t, researcher(t, "alpha", hangs("crawl"))), Sinks: []trace.Sink{&recs}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		called := make(chan tools.Result)
		go func() {
			called <- s.Call(ctx, harness.ToolCall{Name: "alpha", Arguments: json.RawMessage(`{"task":"find cats"}`)})[0]
		}()
		time.Sleep(time.Second)

		parent := s.Land(ctx, &harness.MustLandError{Cause: landing.CauseBudget}, nil)
		res := <-called

		var child landing.Result
		if err := json.Unmarshal(res.Output, &child); err != nil || child.Cause != landing.CauseCancelled || child.Status != landing.Partial {
			t.Errorf("the child's result %s (%v), want partial, cancelled", res.Output, err)
		}
		if len(parent.Established) != 1 || !strings.HasPrefix(parent.Established[0], "alpha (partial: cancelled): ") {
			t.Errorf("the parent's result %+v does not hold the child's partial, labeled", parent)
		}
		if want := "Ran out of allotted time at step 0: alpha cancelled."; parent.Boundary != want {
			t.Errorf("the parent's boundary %q, want %q: the child was cancelled, not done", parent.Boundary, want)
		}
		if _, ends := childRuns(recs.all()); len(ends) != 1 {
			t.Errorf("%d children ended, want 1", len(ends))
		}
	})
}

// B = 1m, R = 15s; a child at work when the parent is cancelled at 1s, and
// every landing call after it hangs. Land now means within R of the
// cancel, child or no child: the child lands from its own record at once,
// and the parent's landing call is leased what is left of R.
func TestACancelledParentWithAChildAnswersWithinItsReserve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{Request: 1}, {Request: 2}, {Hang: true}}})
		defer srv.Close()
		ctx, cancel := context.WithCancelCause(t.Context())
		time.AfterFunc(time.Second, func() { cancel(harness.ErrInterrupted) })
		start := time.Now()

		res, err := run(t, ctx, time.Minute, harness.Config{Task: "find cats", Quiet: time.Hour, Model: newModel(t, srv),
			Tools: registry(t, researcher(t, "alpha", hangs("crawl")))}, nil)

		if err != nil || res.Cause != landing.CauseCancelled {
			t.Fatalf("parent %+v, %v; want landed, cancelled", res, err)
		}
		if took := time.Since(start); took > time.Second+15*time.Second {
			t.Errorf("the parent answered %v after the cancel, want within R = 15s", took-time.Second)
		}
		if n := len(chatRequests(srv)); n != 3 {
			t.Errorf("%d model requests, want 3: the parent's turn, the child's, the parent's landing call; "+
				"a child its parent cancelled makes no landing call of its own", n)
		}
		if len(res.Established) != 1 || !strings.HasPrefix(res.Established[0], "alpha (partial: cancelled): ") {
			t.Errorf("the parent's result %+v does not hold the child's partial, labeled", res)
		}
	})
}

// Q = 3s; the child's model answers its first request 429, Retry-After 5:
// the child's wait is the run's own choice, not silence, for the child's
// quiet clock and its parent's alike.
func TestAChildsBackoffIsNotItsParentsSilence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{Request: 1}, {Request: 2, Status: 429, RetryAfter: "5"}}})
		defer srv.Close()

		res, err := run(t, t.Context(), time.Minute, harness.Config{Task: "find cats", Quiet: 3 * time.Second,
			Model: newModel(t, srv), Tools: registry(t, researcher(t, "alpha"))}, nil)

		if err != nil || res.Status != landing.Complete {
			t.Fatalf("parent %+v, %v; want complete after the child's 5s wait", res, err)
		}
	})
}

// A sub-agent that harness serve serves says so in its manifest: the
// parent leases it as a slice, keeping its keep, and gates it as a
// sub-agent.
func TestARemoteSubAgentIsLeasedAsASlice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := startKit(t, kit.Tool{Name: "remote", Description: "Researches elsewhere.", Effect: kit.Read, Agent: true,
			Handler: func(context.Context, *kit.Call) (any, error) { return map[string]string{"status": "complete"}, nil }})
		defer k.close()
		srv := sim.NewPipeServer(nil)
		defer srv.Close()
		tc, err := tools.ParseConfig("t.yaml", []byte("tools:\n  - name: remote\n    url: http://tools.invalid\n"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := tc.ResolveServer(t.Context(), k.client(), "http://tools.invalid"); err != nil {
			t.Fatal(err)
		}
		reg := tools.NewRegistry(nil)
		(&harness.Toolset{Config: tc, Client: k.client()}).Register(reg)
		var tr bytes.Buffer

		res, err := run(t, t.Context(), 10*time.Second, harness.Config{Task: "find cats", Model: newModel(t, srv), Tools: reg}, &tr)

		if err != nil || res.Status != landing.Complete {
			t.Fatalf("parent %+v, %v", res, err)
		}
		starts := only(records(t, &tr), trace.AttemptStart, "agent:remote")
		if len(starts) != 1 || starts[0].GrantedMs != 7400 {
			t.Errorf("attempts %+v, want one of agent:remote leased 7400ms: 7.5s available less the parent's keep", starts)
		}
	})
}

// A sub-agent called with a blank task is rejected before any I/O, by the
// rule the workflow applies too (issue 25): no attempt is recorded, the
// call is invalid, and the model reads why.
func TestASubAgentCalledWithABlankTaskMakesNoAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := budget.New(budget.Config{Total: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var tr bytes.Buffer
		s, ctx, err := harness.Start(t.Context(), b, harness.Config{Task: "find cats",
			Tools: registry(t, researcher(t, "alpha")), Sinks: []trace.Sink{trace.NewJSONL(&tr)}})
		if err != nil {
			t.Fatal(err)
		}
		got := s.Call(ctx, harness.ToolCall{Name: "alpha", Arguments: json.RawMessage(`{"task":"  "}`)})[0]
		s.Answer("Nothing to research.")
		s.Close()
		if got.Outcome != trace.Invalid || got.Attempts != 0 || !errors.Is(got.Cause, landing.ErrChildTask) {
			t.Errorf("result %+v, want invalid with no attempt", got)
		}
		if !strings.Contains(got.Content(), "the task is empty") {
			t.Errorf("the model reads %q", got.Content())
		}
		if recs := only(records(t, &tr), trace.AttemptStart, "agent:alpha"); len(recs) != 0 {
			t.Errorf("attempts %+v, want none", recs)
		}
	})
}
