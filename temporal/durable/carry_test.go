package durable_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/temporal/durable"
	"github.com/glidepath/glidepath/tools/demo"
	"github.com/glidepath/glidepath/trace"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
)

// A run told to continue as new at every turn boundary (ContinueAt: one
// byte) ends as the same run that does not: the same result, steps,
// attempts and records in the same order, numbered on, on one deadline,
// each attempt of every run of its chain on the record. The chain's last
// run answers a status query by the workflow ID, and keeps the search
// attributes: its status, and the first run's deadline.
func TestARunThatContinuesAsNewEndsAsTheRunThatDoesNot(t *testing.T) {
	one := []sim.ToolCall{{Name: "note", Arguments: "{}"}}
	two := append(one, sim.ToolCall{Name: "note", Arguments: `{"again": true}`})
	e := newEnvWith(t, noteTool, nil, &sim.Scenario{Rules: []sim.Rule{{Turn: 1, ToolCalls: one}, {Turn: 2, ToolCalls: two}, {Turn: 3, ToolCalls: one},
		{Turn: 4, ToolCalls: one}}})
	if err := durable.RegisterSearchAttributes(t.Context(), e.c, e.ts.GetDefaultNamespace()); err != nil {
		t.Fatal(err)
	}
	const budget = 20 * time.Second
	// The same note over and over is how these runs grow: no run of
	// them is stuck (issue 27).
	in := durable.Input{Task: "find what a deadline budget is", Budget: budget, MaxRepeats: manyRepeats}
	plain, _ := e.run(t, in)
	asked := len(e.sim.Requests())
	in.ContinueAt = 1
	began := time.Now()
	out, wr := e.run(t, in)
	if took := time.Since(began); took > budget {
		t.Errorf("the run ended after %v, past its budget of %v", took, budget)
	}
	runs := e.chain(t, wr.GetID())
	if len(runs) < 3 {
		t.Fatalf("%d runs in the chain, want the run continued as new at least twice", len(runs))
	}

	got, want := out.Result, plain.Result
	if got.Status != landing.Complete || got.Status != want.Status || got.Cause != want.Cause || got.Answer != want.Answer ||
		got.Steps != want.Steps || got.Attempts != want.Attempts || len(got.Unavailable) != len(want.Unavailable) {
		t.Fatalf("continued: %s %q, %d steps, %d attempts, answer %q\nnot continued: %s %q, %d steps, %d attempts, answer %q",
			got.Status, got.Cause, got.Steps, got.Attempts, got.Answer, want.Status, want.Cause, want.Steps, want.Attempts, want.Answer)
	}
	if a, b := shapes(out), shapes(plain); !slices.Equal(a, b) {
		t.Errorf("the records differ:\ncontinued:\n%s\nnot continued:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	// The model was asked the same, the budget's note aside: the
	// conversation was carried whole.
	reqs := e.sim.Requests()
	if a, b := conversations(reqs[asked:]), conversations(reqs[:asked]); !slices.Equal(a, b) {
		t.Errorf("the model was asked:\ncontinued:\n%s\nnot continued:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	// One deadline: every record is stamped against the first run's
	// start and D, its seq one past the last.
	for i, rec := range out.Trace {
		if rec.Seq != int64(i+1) || rec.RunID != wr.GetID() {
			t.Errorf("record %d: seq %d, run_id %s", i, rec.Seq, rec.RunID)
		}
		if sum := rec.ElapsedMs + rec.RemainingMs; rec.RemainingMs > 0 && (sum < budget.Milliseconds()-1 || sum > budget.Milliseconds()+1) {
			t.Errorf("record %d (%s): elapsed %dms + remaining %dms, want the budget's %dms", i, rec.Event, rec.ElapsedMs, rec.RemainingMs, budget.Milliseconds())
		}
	}
	// Every attempt any run of the chain scheduled is on the record.
	var scheduled int
	for _, h := range runs {
		for _, s := range scheduledOf(h) {
			if s.name == durable.ModelActivity || s.name == durable.ToolActivity || s.name == durable.ToolsActivity {
				scheduled++
			}
		}
	}
	if starts := records(out, trace.AttemptStart, ""); len(starts) != scheduled {
		t.Errorf("%d attempt_start records, %d attempts scheduled by the chain's runs\n%s", len(starts), scheduled, dump(out))
	}

	v, err := e.c.QueryWorkflow(t.Context(), wr.GetID(), "", durable.QueryStatus)
	if err != nil {
		t.Fatal(err)
	}
	var st durable.Status
	if err := v.Get(&st); err != nil {
		t.Fatal(err)
	}
	if !st.Ended || st.Result != string(landing.Complete) || st.Attempts != got.Attempts {
		t.Errorf("status by the workflow ID: %+v", st)
	}
	d, err := e.c.DescribeWorkflow(t.Context(), wr.GetID(), "")
	if err != nil {
		t.Fatal(err)
	}
	status, _ := d.TypedSearchAttributes.GetKeyword(durable.StatusAttribute)
	deadline, _ := d.TypedSearchAttributes.GetTime(durable.DeadlineAttribute)
	first := out.Trace[0]
	if want := first.TS.Add(budget - time.Duration(first.ElapsedMs)*time.Millisecond); status != string(landing.Complete) ||
		deadline.Sub(want).Abs() > 2*time.Millisecond {
		t.Errorf("the last run's attributes: status %q deadline %v, want complete and %v", status, deadline, want)
	}
}

// noteTool answers at once with a short note.
const noteTool = `tools:
  - name: note
    effect: read
    command: [sh, -c, 'printf "\"noted\""']
`

// A run continues as new when the server suggests it, with no
// ContinueAt of its own, and ends as the run that does not.
func TestARunContinuesAsNewWhenTheServerSuggestsIt(t *testing.T) {
	note := []sim.ToolCall{{Name: "note", Arguments: "{}"}}
	e := newEnvFiles(t, map[string]string{"tools.yaml": noteTool}, nil, &sim.Scenario{Rules: []sim.Rule{{Turn: 1, ToolCalls: note},
		{Turn: 2, ToolCalls: note}, {Turn: 3, ToolCalls: note}, {Turn: 4, ToolCalls: note}}}, suggestEarly)
	out, wr := e.run(t, durable.Input{Task: "take notes", Budget: 20 * time.Second, MaxRepeats: manyRepeats})
	if res := out.Result; res.Status != landing.Complete || res.Steps != 5 || len(records(out, trace.AttemptEnd, "tool:note")) != 4 {
		t.Fatalf("status %s cause %q, %d steps, want complete in 5 with 4 notes: %s\n%s", res.Status, res.Cause, res.Steps, res.Boundary, dump(out))
	}
	if runs := e.chain(t, wr.GetID()); len(runs) < 2 {
		t.Errorf("%d runs in the chain: the run did not continue as new at the server's suggestion", len(runs))
	}
}

// A run pinned to a build continues as new on that build, even once the
// next build is current: the SDK's default for a pinned run.
func TestARunContinuesAsNewOnItsOwnBuild(t *testing.T) {
	note := []sim.ToolCall{{Name: "note", Arguments: "{}"}}
	e := newEnvFiles(t, map[string]string{"tools.yaml": noteTool}, nil, &sim.Scenario{Rules: []sim.Rule{
		{Turn: 1, ToolCalls: note, Delay: 5 * time.Second}, {Turn: 2, Answer: "Noted."}}}, noWorker)
	e.startBuild(t, durable.RulesVersion, durable.Workflow)
	in := durable.Input{Task: "take a note", Budget: 20 * time.Second, ContinueAt: 1}
	wr, err := e.c.ExecuteWorkflow(t.Context(), durable.StartOptions(client.StartWorkflowOptions{TaskQueue: e.queue}, in.Budget), durable.WorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	e.waitEvent(t, wr, enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED)
	e.startBuild(t, nextRules, nextBuild) // current while the run's first turn waits on the model
	if runs := e.chain(t, wr.GetID()); len(runs) != 1 {
		t.Fatal("the run continued as new before the next build was current")
	}
	var out durable.Output
	if err := wr.Get(t.Context(), &out); err != nil {
		t.Fatal(err)
	}
	if res := out.Result; res.Status != landing.Complete || res.Answer != "Noted." {
		t.Fatalf("status %s answer %q, want the run's own build to answer: %s", res.Status, res.Answer, res.Boundary)
	}
	if runs := e.chain(t, wr.GetID()); len(runs) < 2 {
		t.Errorf("%d runs in the chain, want the run continued as new", len(runs))
	}
}

// A sub-agent continues as new as its parent does, on its parent's
// ContinueAt: the parent waits on the child's chain, and both end as the
// runs that do not continue.
func TestASubAgentContinuesAsNewAsItsParentDoes(t *testing.T) {
	e := newEnvFiles(t, researcherFiles, nil, nil)
	in := durable.Input{Task: "research deadlines", Budget: 20 * time.Second}
	plain, _ := e.run(t, in)
	in.ContinueAt = 1
	out, wr := e.run(t, in)
	if res := out.Result; res.Status != landing.Complete || res.Steps != plain.Result.Steps || res.Attempts != plain.Result.Attempts {
		t.Fatalf("status %s cause %q, %d steps %d attempts, want complete as the run that did not continue (%d, %d): %s",
			res.Status, res.Cause, res.Steps, res.Attempts, plain.Result.Steps, plain.Result.Attempts, res.Boundary)
	}
	work := func(out durable.Output) []string { // progress records come when the child's signals do
		return slices.DeleteFunc(shapes(out), func(s string) bool { return strings.HasPrefix(s, string(trace.Progress)+" ") })
	}
	if a, b := work(out), work(plain); !slices.Equal(a, b) {
		t.Errorf("the records differ:\ncontinued:\n%s\nnot continued:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	child := ""
	for _, rec := range out.Trace {
		if rec.RunID != wr.GetID() {
			child = rec.RunID
		}
	}
	if n, m := len(e.chain(t, wr.GetID())), len(e.chain(t, child)); n < 2 || m < 2 {
		t.Errorf("the parent's chain has %d runs, the child's %d: want each continued as new", n, m)
	}
}

// A run whose state is past what a run carries into the next does not
// continue as new with it: once its history is past ContinueAt it lands,
// labeled, saying why, by its deadline, after the runs that could carry
// it.
func TestARunWhoseStateIsPastWhatItCarriesLandsSayingWhy(t *testing.T) {
	call := []sim.ToolCall{{Name: "dump", Arguments: "{}"}}
	var rules []sim.Rule
	for turn := 1; turn <= 12; turn++ {
		rules = append(rules, sim.Rule{Turn: turn, ToolCalls: call})
	}
	e := newEnvWith(t, bigTool, nil, &sim.Scenario{Rules: rules})
	const budget = 30 * time.Second
	began := time.Now()
	out, wr := e.run(t, durable.Input{Task: "read it all", Budget: budget, ContinueAt: 1, MaxRepeats: manyRepeats})
	res := out.Result
	if took := time.Since(began); res.Status != landing.Partial || took > budget {
		t.Fatalf("status %s cause %s after %v: %s", res.Status, res.Cause, took, res.Boundary)
	}
	if !strings.Contains(res.Boundary, "a run carries into the next") {
		t.Errorf("the boundary does not say why the run landed: %s", res.Boundary)
	}
	if runs := e.chain(t, wr.GetID()); len(runs) < 2 {
		t.Errorf("%d runs in the chain: the run did not continue as new while its state fitted", len(runs))
	}
	// Seven outputs of 256 KiB are past what a run carries: the run lands
	// before its eighth turn.
	if dumps := len(records(out, trace.AttemptEnd, "tool:dump")); dumps < 6 || dumps > 7 {
		t.Errorf("%d dump calls", dumps)
	}
}

// A run that continued as new is found by its workflow ID: a land signal
// sent to it (harness-temporal land ID, run's Ctrl-C) reaches the run of
// the chain that is open, which lands with cause cancelled.
func TestARunThatContinuedAsNewLandsWhenAskedByItsWorkflowID(t *testing.T) {
	p := &posts{byKey: map[string]int{}, arrived: map[string]chan struct{}{"long_job": make(chan struct{})}}
	toolServer := httptest.NewServer(p.wrap(demo.NewServer(demo.ServerConfig{Tick: time.Second, Steps: 30})))
	t.Cleanup(toolServer.Close)
	note := []sim.ToolCall{{Name: "note", Arguments: "{}"}}
	e := newEnvWith(t, noteTool+"  - name: long_job\n    url: "+toolServer.URL+"\n    ceiling: 40s\n", nil, &sim.Scenario{Rules: []sim.Rule{
		{Turn: 1, ToolCalls: note}, {Turn: 2, ToolCalls: note}, {Turn: 3, ToolCalls: []sim.ToolCall{{Name: "long_job", Arguments: "{}"}}}}})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const budget = 60 * time.Second
	wr, err := e.c.ExecuteWorkflow(ctx, durable.StartOptions(client.StartWorkflowOptions{TaskQueue: e.queue}, budget), durable.WorkflowName,
		durable.Input{Task: "a long job, later", Budget: budget, ContinueAt: 1})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.arrived["long_job"]:
	case <-ctx.Done():
		t.Fatal("long_job was never called")
	}
	if err := e.c.SignalWorkflow(ctx, wr.GetID(), "", durable.SignalLand, nil); err != nil {
		t.Fatal(err)
	}
	var out durable.Output
	if err := wr.Get(ctx, &out); err != nil {
		t.Fatal(err)
	}
	if res := out.Result; res.Status != landing.Partial || res.Cause != landing.CauseCancelled || len(res.InFlight) != 1 {
		t.Fatalf("status %s cause %q in flight %+v, want partial cancelled with long_job in flight: %s", res.Status, res.Cause, res.InFlight, res.Boundary)
	}
	if runs := e.chain(t, wr.GetID()); len(runs) < 3 {
		t.Errorf("%d runs in the chain, want the run continued as new before each of its later turns", len(runs))
	}
}

// A Carry is the run's own: a run started with one is bad input.
func TestARunStartedWithACarryIsBadInput(t *testing.T) {
	e := newEnv(t, "")
	wr, err := e.c.ExecuteWorkflow(t.Context(), durable.StartOptions(client.StartWorkflowOptions{TaskQueue: e.queue}, 10*time.Second), durable.WorkflowName,
		durable.Input{Task: "t", Budget: 10 * time.Second, Carry: &durable.Carry{Seq: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if err := wr.Get(t.Context(), nil); err == nil || !strings.Contains(err.Error(), "Carry") {
		t.Fatalf("error %v, want bad input naming the Carry", err)
	}
}

// shapes are the records of out as their event, step, step index,
// attempt, outcome and phase: what two runs of one scenario share, their
// times and keys aside.
func shapes(out durable.Output) []string {
	var s []string
	for _, r := range out.Trace {
		s = append(s, fmt.Sprintf("%s %s #%d a%d %s %s %s", r.Event, r.Step, r.StepIndex, r.Attempt, r.Outcome, r.Phase, r.Result))
	}
	return s
}

// conversations are the messages of each request, the budget's note
// (the last) left out.
func conversations(reqs []sim.Request) []string {
	var s []string
	for _, r := range reqs {
		var b strings.Builder
		for _, m := range r.Messages[:max(len(r.Messages)-1, 0)] {
			fmt.Fprintf(&b, "%s:%q:%d ", m.Role, m.Content, len(m.ToolCalls))
		}
		s = append(s, b.String())
	}
	return s
}

// chain returns the histories of the runs of workflow id, the first
// first: each run continued as new from the one before.
func (e *env) chain(t *testing.T, id string) []*historypb.History {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var runs []*historypb.History
	for runID := ""; ; {
		it := e.c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		h := &historypb.History{}
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			h.Events = append(h.Events, ev)
		}
		runs = append([]*historypb.History{h}, runs...)
		runID = h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
		if runID == "" {
			return runs
		}
	}
}
