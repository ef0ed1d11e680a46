package trace_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/glidepath/glidepath/trace"
)

// script builds the records of one run as a Writer would have written
// them, at given milliseconds into the run.
type script struct {
	id              string
	totalMs, landAt int64 // landing begins at landAt, when the reserve starts
	recs            []trace.Record
}

func newScript(id string, totalMs, reserveMs int64) *script {
	return &script{id: id, totalMs: totalMs, landAt: totalMs - reserveMs}
}

func (s *script) at(ms int64, r trace.Record) *script {
	r.RunID, r.Seq = s.id, int64(len(s.recs)+1)
	r.TS = ts.Add(time.Duration(ms) * time.Millisecond)
	r.ElapsedMs, r.RemainingMs = ms, max(s.totalMs-ms, 0)
	r.Phase = "explore"
	if ms >= s.landAt {
		r.Phase = "land"
	}
	s.recs = append(s.recs, r)
	return s
}

func (s *script) start() *script {
	return s.at(0, trace.Record{Event: trace.RunStart, TotalMs: s.totalMs})
}

func (s *script) end(ms int64, cause, result string) *script {
	return s.at(ms, trace.Record{Event: trace.RunEnd, TotalMs: s.totalMs, Cause: cause, Result: result})
}

// call is one attempt: its attempt_start at from and attempt_end at to.
func (s *script) call(step string, index, n int, key string, from, to int64, o trace.Outcome, status int) *script {
	a := trace.Record{Step: step, StepIndex: index, Attempt: n, ResendCount: n - 1, Key: key, GrantedMs: s.landAt - from}
	start, end := a, a
	start.Event = trace.AttemptStart
	end.Event, end.Outcome, end.Status = trace.AttemptEnd, o, status
	return s.at(from, start).at(to, end)
}

// model is a model turn that took from..to and succeeded.
func (s *script) model(index int, from, to int64) *script {
	return s.call("model", index, 1, "", from, to, trace.OK, 200)
}

// exhaustedRun ran out of budget (60s, reserve 15s): at step 3 a slow
// search failed after 10s, slept 2s and took 13s more; the model turns
// after it took 1s each, until step 18's turn held the budget when it ran
// out at 45s. Then the landing call spent the reserve.
func exhaustedRun() *script {
	s := newScript("r-exhausted", 60000, 15000).start()
	s.model(1, 0, 1000).model(2, 1000, 2000).model(3, 2000, 3000)
	s.call("tool:search", 3, 1, "gp_s3", 3000, 13000, trace.UpstreamError, 503)
	s.at(13000, trace.Record{Event: trace.Backoff, SleepMs: 2000, Source: "jitter"})
	s.call("tool:search", 3, 2, "gp_s3", 15000, 28000, trace.OK, 200)
	for i := 4; i <= 17; i++ {
		s.model(i, 28000+int64(i-4)*1000, 29000+int64(i-4)*1000)
	}
	s.call("model", 18, 1, "", 42000, 45000, trace.GaveUp, 0)
	s.at(45000, trace.Record{Event: trace.PhaseChange, From: "explore", To: "land"})
	s.model(19, 45000, 49000)
	s.at(49000, trace.Record{Event: trace.Landing, Cause: "budget", Result: "model"})
	return s.end(49500, "budget", "partial")
}

// completeRun finished in 12s of 60s; a fetch was rate limited with a
// Retry-After longer than the budget, and a sub-agent was refused.
func completeRun() *script {
	s := newScript("r-ok", 60000, 15000).start()
	s.model(1, 0, 2000)
	s.call("tool:fetch", 1, 1, "gp_f", 2000, 2500, trace.RateLimited, 429)
	s.at(2500, trace.Record{Event: trace.Backoff, Step: "tool:fetch", StepIndex: 1, SleepMs: 90000, Source: "retry_after", GaveUp: true, Reason: "retry_after_exceeds_budget"})
	s.model(2, 2500, 5000)
	s.at(5000, trace.Record{Event: trace.Refused, Step: "agent:review", StepIndex: 2, Attempt: 1, Reason: "below_p50"})
	s.call("tool:search", 2, 1, "gp_s", 5000, 11000, trace.OK, 200)
	s.model(3, 11000, 12000)
	return s.end(12000, "", "complete")
}

// quietRun stalled in a payment that never answered, at 30s of 60s.
func quietRun() *script {
	s := newScript("r-quiet", 60000, 15000).start()
	s.model(1, 0, 1000)
	s.call("tool:pay", 1, 1, "gp_pay", 1000, 29000, trace.Quiet, 0)
	s.at(29000, trace.Record{Event: trace.CancelSent, Step: "tool:pay", Key: "gp_pay", State: "accepted"})
	s.at(29050, trace.Record{Event: trace.Reconcile, Step: "tool:mail", Key: "gp_mail", State: "never_received"})
	s.at(29100, trace.Record{Event: trace.Reconcile, Step: "tool:pay", Key: "gp_pay", State: "running"})
	s.at(29200, trace.Record{Event: trace.Orphan, Step: "tool:pay", Key: "gp_pay", State: "open"})
	s.at(29500, trace.Record{Event: trace.Landing, Cause: "quiet", Result: "harness"})
	return s.end(30000, "quiet", "partial")
}

// cutRun's trace ends 3s into a search: the process died.
func cutRun() *script {
	s := newScript("r-cut", 60000, 15000).start()
	s.model(1, 0, 1000)
	s.at(1000, trace.Record{Event: trace.AttemptStart, Step: "tool:search", StepIndex: 1, Attempt: 1, Key: "gp_c"})
	return s.at(4000, trace.Record{Event: trace.Progress, Step: "tool:search", Key: "gp_c", Units: 2})
}

func allRuns() []trace.Record {
	var recs []trace.Record
	for _, s := range []*script{exhaustedRun(), completeRun(), quietRun(), cutRun()} {
		recs = append(recs, s.recs...)
	}
	return recs
}

func TestTheReportSumsUpEveryRun(t *testing.T) {
	const steps = 31500 + 34000 + 28000 + 500
	want := trace.Report{
		Runs:       4,
		Unfinished: 1,
		Results:    map[string]int{"complete": 1, "partial": 2},
		Causes:     map[string]int{"budget": 1, "quiet": 1, "cancelled": 0, "max_steps": 0, "upstream": 0, "unsettled": 0, "tools_failed": 0},
		// 12/60, 30/60, 49.5/60; the cut run has no end.
		Utilization: trace.Utilization{Runs: 3, P50: 0.5, P90: 0.825, P99: 0.825},
		Steps: []trace.StepTime{
			// 25s exhausted (10s, 2s of backoff, 13s) + 6s ok + 3s until the cut run's last record
			{Step: "tool:search", Attempts: 4, Ms: 34000, Share: 34000.0 / steps},
			// 17 turns of 1s, 3s at step 18, 4s landing; 5.5s; 1s; 1s
			{Step: "model", Attempts: 24, Ms: 31500, Share: 31500.0 / steps},
			{Step: "tool:pay", Attempts: 1, Ms: 28000, Share: 28000.0 / steps},
			{Step: "tool:fetch", Attempts: 1, Ms: 500, Share: 500.0 / steps},
		},
		SubAgents: []trace.SubAgent{},
		Exhausted: []trace.Exhaustion{{
			RunID: "r-exhausted", SpentMs: 49500,
			StepIndex: 3, Step: "tool:search", Ms: 26000, Share: 26000.0 / 49500,
			HeldBy: "model", HeldByIndex: 18,
		}},
		Outcomes: trace.Outcomes{
			OK:                 17 + 1 + 1 + 4 + 1 + 1,
			Ours:               trace.Side{Total: 2, By: map[trace.Outcome]int{trace.GaveUp: 1, trace.Quiet: 1, trace.Cancelled: 0}},
			Theirs:             trace.Side{Total: 2, By: map[trace.Outcome]int{trace.UpstreamError: 1, trace.RateLimited: 1, trace.Invalid: 0}},
			Other:              map[string]int{},
			Refused:            1,
			ServerWaitsGivenUp: 1,
		},
		Retries:    1,
		Cancels:    map[string]int{"sent": 0, "accepted": 1, "unknown": 0, "failed": 0},
		Reconciled: map[string]int{"done": 0, "failed": 0, "never_received": 1, "running": 1},
		Orphans:    1,
	}
	recs := allRuns()
	cases := []struct {
		name string
		recs []trace.Record
	}{
		{"in order", recs},
		{"shuffled", shuffled(recs)},
		{"a trace given twice counts once", append(slices.Clone(recs), shuffled(recs)...)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := trace.Summarize(tc.recs); !reflect.DeepEqual(got, want) {
				t.Errorf("got\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

func shuffled(recs []trace.Record) []trace.Record {
	s := slices.Clone(recs)
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	return s
}

func TestARunLandedByAServersWaitDidNotRunOutOfBudget(t *testing.T) {
	s := newScript("r", 10000, 2500).start()
	s.model(1, 0, 1)
	s.at(1, trace.Record{Event: trace.Backoff, Step: "model", StepIndex: 1, SleepMs: 30000, Source: "retry_after", GaveUp: true, Reason: "retry_after_exceeds_budget"})
	rep := trace.Summarize(s.end(2, "budget", "partial").recs)
	if len(rep.Exhausted) != 0 || rep.Causes["budget"] != 1 || rep.Outcomes.ServerWaitsGivenUp != 1 || rep.Outcomes.RetriesGivenUp != 0 {
		t.Errorf("exhausted %+v, causes %v, outcomes %+v; want none exhausted, one server wait given up", rep.Exhausted, rep.Causes, rep.Outcomes)
	}
}

func TestWaitsBetweenStatusAsksAreSpentTimeButNoRetries(t *testing.T) {
	s := newScript("r", 10000, 2500).start()
	s.model(1, 0, 1)
	s.call("tool:pay", 1, 1, "gp_pay", 1, 501, trace.GaveUp, 0)
	s.at(510, trace.Record{Event: trace.Backoff, Step: "tool:pay", StepIndex: 1, Attempt: 1, Key: "gp_pay", SleepMs: 1000, Source: "jitter", Reconciling: true})
	s.at(1520, trace.Record{Event: trace.Backoff, Step: "tool:pay", StepIndex: 1, Attempt: 2, Key: "gp_pay", SleepMs: 9000, Source: "jitter", GaveUp: true,
		Reason: "backoff_exceeds_budget", Reconciling: true})
	s.at(1520, trace.Record{Event: trace.Reconcile, Step: "tool:pay", StepIndex: 1, Key: "gp_pay", State: "running", Attempt: 2})
	rep := trace.Summarize(s.end(1600, "", "complete").recs)
	if rep.Retries != 0 || rep.Outcomes.RetriesGivenUp != 0 {
		t.Errorf("retries %d, given up %d; want none: a status ask again sends nothing again", rep.Retries, rep.Outcomes.RetriesGivenUp)
	}
	for _, st := range rep.Steps {
		if st.Step == "tool:pay" && st.Ms != 1500 {
			t.Errorf("tool:pay spent %dms, want 1500: its attempt and the wait between its status asks", st.Ms)
		}
	}
}

func TestTheRunOutOfBudgetIsPinnedOnTheStepThatSpentIt(t *testing.T) {
	cases := []struct {
		name string
		run  func() *script
		want trace.Exhaustion
	}{
		{
			name: "a slow search, not the model turn holding the budget at the end",
			run:  exhaustedRun,
			want: trace.Exhaustion{RunID: "r-exhausted", SpentMs: 49500, StepIndex: 3, Step: "tool:search", Ms: 26000, Share: 26000.0 / 49500, HeldBy: "model", HeldByIndex: 18},
		},
		{
			name: "the landing call spends the reserve, not the budget",
			run: func() *script {
				s := newScript("r", 10000, 2500).start()
				s.model(1, 0, 3000).model(2, 3000, 7500)
				s.model(3, 7500, 9900) // landing: started in the land phase
				return s.end(9900, "budget", "partial")
			},
			want: trace.Exhaustion{RunID: "r", SpentMs: 9900, StepIndex: 2, Step: "model", Ms: 4500, Share: 4500.0 / 9900, HeldBy: "model", HeldByIndex: 2},
		},
		{
			name: "a backoff sleep counts for the step it names",
			run: func() *script {
				s := newScript("r", 10000, 2500).start()
				s.call("tool:a", 1, 1, "k1", 0, 1000, trace.UpstreamError, 502)
				s.call("tool:b", 1, 1, "k2", 0, 2000, trace.UpstreamError, 502)
				s.at(2000, trace.Record{Event: trace.Backoff, Step: "tool:a", StepIndex: 1, SleepMs: 3000, Source: "jitter"})
				s.call("tool:a", 1, 2, "k1", 5000, 6000, trace.OK, 200)
				return s.end(7500, "budget", "partial")
			},
			// Step 1 holds the clock from 0 to 6s; tool:a 5s of it (1s,
			// the 3s sleep, 1s), tool:b 2s.
			want: trace.Exhaustion{RunID: "r", SpentMs: 7500, StepIndex: 1, Step: "tool:a", Ms: 6000, Share: 6000.0 / 7500, HeldBy: "tool:a", HeldByIndex: 1},
		},
		{
			name: "a backoff sleep without a step counts for the attempt before it",
			run: func() *script {
				s := newScript("r", 10000, 2500).start()
				s.call("tool:a", 1, 1, "k1", 0, 1000, trace.UpstreamError, 502)
				s.call("tool:b", 2, 1, "k2", 1000, 2000, trace.UpstreamError, 502)
				s.at(2000, trace.Record{Event: trace.Backoff, SleepMs: 3000, Source: "jitter"})
				return s.end(7500, "budget", "partial")
			},
			want: trace.Exhaustion{RunID: "r", SpentMs: 7500, StepIndex: 2, Step: "tool:b", Ms: 4000, Share: 4000.0 / 7500, HeldBy: "tool:b", HeldByIndex: 2},
		},
		{
			name: "a backoff that gave up slept nothing",
			run: func() *script {
				s := newScript("r", 10000, 2500).start()
				s.call("tool:a", 1, 1, "k1", 0, 1000, trace.RateLimited, 429)
				s.at(1000, trace.Record{Event: trace.Backoff, SleepMs: 60000, Source: "retry_after", GaveUp: true, Reason: "retry_after_exceeds_budget"})
				s.model(2, 1000, 2500)
				return s.end(7500, "budget", "partial")
			},
			want: trace.Exhaustion{RunID: "r", SpentMs: 7500, StepIndex: 2, Step: "model", Ms: 1500, Share: 1500.0 / 7500, HeldBy: "model", HeldByIndex: 2},
		},
		{
			name: "ties go to the earlier step, and within it to the kind first by name",
			run: func() *script {
				s := newScript("r", 10000, 2500).start()
				s.call("tool:b", 1, 1, "k1", 0, 1000, trace.OK, 200)
				s.call("tool:a", 1, 1, "k2", 0, 1000, trace.OK, 200)
				s.call("model", 2, 1, "", 1000, 2000, trace.OK, 200)
				return s.end(7500, "budget", "partial")
			},
			want: trace.Exhaustion{RunID: "r", SpentMs: 7500, StepIndex: 1, Step: "tool:a", Ms: 1000, Share: 1000.0 / 7500, HeldBy: "model", HeldByIndex: 2},
		},
		{
			name: "calls that ran in parallel spend the run's clock once",
			run: func() *script {
				// Step 1: three searches at once, 3s of the clock (9s of
				// work); step 2: a 4s fetch after its turn, 4.5s.
				s := newScript("r", 10000, 2500).start()
				s.model(1, 0, 500)
				s.call("tool:search", 1, 1, "k1", 500, 3500, trace.OK, 200)
				s.call("tool:search", 1, 1, "k2", 500, 3500, trace.OK, 200)
				s.call("tool:search", 1, 1, "k3", 500, 3500, trace.OK, 200)
				s.model(2, 3500, 4000)
				s.call("tool:fetch", 2, 1, "k4", 4000, 8000, trace.GaveUp, 0)
				return s.end(8000, "budget", "partial")
			},
			want: trace.Exhaustion{RunID: "r", SpentMs: 8000, StepIndex: 2, Step: "tool:fetch", Ms: 4500, Share: 4500.0 / 8000, HeldBy: "tool:fetch", HeldByIndex: 2},
		},
		{
			name: "of calls started at once, the one that ended last held the budget, not the one started last",
			run: func() *script {
				s := newScript("r", 1200, 300).start()
				s.call("tool:fetch", 1, 1, "k1", 2, 848, trace.GaveUp, 0)
				s.call("tool:pay", 1, 1, "k2", 2, 500, trace.GaveUp, 0)
				s.call("tool:search", 1, 1, "k3", 3, 80, trace.OK, 200)
				return s.end(850, "budget", "partial")
			},
			want: trace.Exhaustion{RunID: "r", SpentMs: 850, StepIndex: 1, Step: "tool:fetch", Ms: 846, Share: 846.0 / 850, HeldBy: "tool:fetch", HeldByIndex: 1},
		},
		{
			name: "an attempt the trace never ended outlasted those that ended",
			run: func() *script {
				s := newScript("r", 1200, 300).start()
				s.at(0, trace.Record{Event: trace.AttemptStart, Step: "tool:pay", StepIndex: 1, Attempt: 1, Key: "k1", GrantedMs: 900})
				s.call("tool:search", 1, 1, "k2", 1, 840, trace.OK, 200)
				return s.end(850, "budget", "partial")
			},
			want: trace.Exhaustion{RunID: "r", SpentMs: 850, StepIndex: 1, Step: "tool:pay", Ms: 850, Share: 1, HeldBy: "tool:pay", HeldByIndex: 1},
		},
		{
			name: "a run that made no attempt names no step",
			run: func() *script {
				return newScript("r", 100, 25).start().end(100, "budget", "partial")
			},
			want: trace.Exhaustion{RunID: "r", SpentMs: 100, StepIndex: -1},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep := trace.Summarize(tc.run().recs)
			if len(rep.Exhausted) != 1 {
				t.Fatalf("%d exhausted runs, want 1", len(rep.Exhausted))
			}
			if got := rep.Exhausted[0]; got != tc.want {
				t.Errorf("got\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

// A parent whose step 1 ran two sub-agents: their time is the parent's
// agent step, not the parent's steps again, and their own runs are summed
// up apart, by the agent step that ran them; their attempts count with
// every other.
func TestASubAgentsTimeIsItsParentsAgentStep(t *testing.T) {
	p := newScript("p", 10000, 2500).start()
	p.model(1, 0, 100)
	p.call("agent:alpha", 1, 1, "gp_a", 100, 5100, trace.OK, 0)
	p.call("agent:alpha", 1, 1, "gp_b", 100, 6100, trace.OK, 0)
	p.model(2, 6100, 6200).end(6200, "", "complete")
	child := func(id, key string, totalMs, endMs int64, cause, result string) []trace.Record {
		c := newScript(id, totalMs, totalMs/4)
		c.at(0, trace.Record{Event: trace.RunStart, TotalMs: totalMs, Key: key})
		c.model(1, 0, 10)
		c.call("tool:crawl", 1, 1, "gp_c"+id, 10, endMs-100, trace.GaveUp, 0)
		c.end(endMs, cause, result)
		for i := range c.recs {
			c.recs[i].ParentRunID = "p"
		}
		return c.recs
	}
	recs := append(p.recs, child("c1", "gp_a", 7400, 5000, "budget", "partial")...)
	recs = append(recs, child("c2", "gp_b", 7300, 6000, "", "complete")...)

	rep := trace.Summarize(recs)

	if rep.Runs != 1 || rep.Results["complete"] != 1 || rep.Utilization.Runs != 1 {
		t.Errorf("runs %d, results %v, utilization over %d; want the parent alone", rep.Runs, rep.Results, rep.Utilization.Runs)
	}
	for _, st := range rep.Steps {
		if st.Step == "tool:crawl" {
			t.Errorf("the children's tool is among the parent's steps: %+v", rep.Steps)
		}
		if st.Step == "agent:alpha" && st.Ms != 11000 {
			t.Errorf("agent:alpha spent %dms, want 11000: both calls, in full", st.Ms)
		}
	}
	want := []trace.SubAgent{{Step: "agent:alpha", Runs: 2,
		Results:    map[string]int{"complete": 1, "partial": 1},
		Causes:     map[string]int{"budget": 1, "quiet": 0, "cancelled": 0, "max_steps": 0, "upstream": 0, "unsettled": 0, "tools_failed": 0},
		SliceP50Ms: 7300, SliceMaxMs: 7400, SpentMs: 11000,
		Steps: []trace.StepTime{{Step: "tool:crawl", Attempts: 2, Ms: 10780, Share: 10780.0 / 10800}, {Step: "model", Attempts: 2, Ms: 20, Share: 20.0 / 10800}}}}
	if !reflect.DeepEqual(rep.SubAgents, want) {
		t.Errorf("sub-agents\n%+v\nwant\n%+v", rep.SubAgents, want)
	}
	if rep.Outcomes.OK != 6 || rep.Outcomes.Ours.By[trace.GaveUp] != 2 {
		t.Errorf("outcomes %+v; want the children's attempts counted too", rep.Outcomes)
	}
}

// A child served by harness serve, in a process of its own, has no
// parent_run_id: its run_start's key is the parent's call, which is how
// the report finds its parent's step.
func TestAChildServedElsewhereIsFoundByItsCallsKey(t *testing.T) {
	p := newScript("p", 8000, 2000).start()
	p.model(1, 0, 10)
	p.call("tool:researcher", 1, 1, "gp_r", 10, 4400, trace.OK, 0)
	p.model(2, 4400, 4410).end(4410, "", "complete")
	c := newScript("served", 5940, 1485)
	c.at(0, trace.Record{Event: trace.RunStart, TotalMs: 5940, Key: "gp_r"})
	c.call("tool:crawl", 1, 1, "gp_c", 0, 4380, trace.GaveUp, 0).end(4385, "budget", "partial")

	rep := trace.Summarize(append(p.recs, c.recs...))

	if rep.Runs != 1 || len(rep.SubAgents) != 1 || rep.SubAgents[0].Step != "tool:researcher" || rep.SubAgents[0].SliceMaxMs != 5940 {
		t.Errorf("runs %d, sub-agents %+v; want the served child under the parent's tool:researcher", rep.Runs, rep.SubAgents)
	}
	if len(rep.Exhausted) != 0 {
		t.Errorf("exhausted %+v: a child is not a run of its own", rep.Exhausted)
	}
}

func TestUtilizationPercentilesAreNearestRank(t *testing.T) {
	cases := []struct {
		spent         []int64 // of 100ms each
		p50, p90, p99 float64
	}{
		{nil, 0, 0, 0},
		{[]int64{70}, 0.7, 0.7, 0.7},
		{[]int64{100, 20}, 0.2, 1, 1},
		{[]int64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}, 0.5, 0.9, 1},
		{seq(1, 100), 0.5, 0.9, 0.99},
		{seq(0, 100), 0.5, 0.9, 0.99},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(len(tc.spent), " runs"), func(t *testing.T) {
			var recs []trace.Record
			for i, ms := range shuffledInts(tc.spent) {
				recs = append(recs, newScript(fmt.Sprint("r", i), 100, 25).start().end(ms, "", "complete").recs...)
			}
			u := trace.Summarize(recs).Utilization
			want := trace.Utilization{Runs: len(tc.spent), P50: tc.p50, P90: tc.p90, P99: tc.p99}
			if u != want {
				t.Errorf("got %+v, want %+v", u, want)
			}
		})
	}
}

func TestTheBudgetOfARunIsReadWhereTheTraceGivesIt(t *testing.T) {
	cases := []struct {
		name string
		recs []trace.Record
		want float64
	}{
		{"run_start's total_ms", newScript("r", 1000, 250).start().end(500, "", "complete").recs, 0.5},
		{"run_end's total_ms", newScript("r", 1000, 250).at(0, trace.Record{Event: trace.RunStart}).end(250, "", "complete").recs, 0.25},
		{
			"run_start's elapsed and remaining",
			func() []trace.Record {
				s := newScript("r", 2000, 250).at(0, trace.Record{Event: trace.RunStart})
				s.at(1000, trace.Record{Event: trace.RunEnd, Result: "complete"})
				return s.recs
			}(),
			0.5,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := trace.Summarize(tc.recs).Utilization
			if u.Runs != 1 || u.P50 != tc.want {
				t.Errorf("got %+v, want one run at %v", u, tc.want)
			}
		})
	}
}

func TestOutcomesOutsideTheVocabularyAreCountedApart(t *testing.T) {
	s := newScript("r", 10000, 2500).start()
	s.call("model", 1, 1, "", 0, 10, "exploded", 0)
	s.call("model", 1, 2, "", 10, 20, "", 0)
	s.call("model", 1, 3, "", 20, 30, trace.Invalid, 400)
	o := trace.Summarize(s.end(30, "upstream", "partial").recs).Outcomes
	if want := map[string]int{"exploded": 1, "": 1}; !reflect.DeepEqual(o.Other, want) {
		t.Errorf("other %v, want %v", o.Other, want)
	}
	if o.Theirs.Total != 1 || o.Theirs.By[trace.Invalid] != 1 || o.Ours.Total != 0 || o.OK != 0 {
		t.Errorf("got %+v", o)
	}
}

func TestNoRecordsMakeAnEmptyReport(t *testing.T) {
	rep := trace.Summarize(nil)
	if rep.Runs != 0 || rep.Steps == nil || rep.Exhausted == nil || rep.Results == nil || rep.Outcomes.Other == nil {
		t.Errorf("got %+v; want no runs and empty, not nil, lists and maps", rep)
	}
}

func seq(from, to int64) []int64 {
	var s []int64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

func shuffledInts(s []int64) []int64 {
	s = slices.Clone(s)
	r := rand.New(rand.NewPCG(3, 4))
	r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	return s
}
