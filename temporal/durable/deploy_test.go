package durable_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/temporal/durable"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// nextRules are the rules of "the next build" in these tests: a build
// whose workflow records other rules, so that it cannot replay a run of
// this one (as a build with one SideEffect more cannot, issue 26).
const nextRules = durable.RulesVersion + 1

// nextAnswer is what a run of the next build answers.
const nextAnswer = "answered by the next build"

// nextBuild is the next build's workflow, registered under the same name.
func nextBuild(ctx workflow.Context, in durable.Input) (durable.Output, error) {
	workflow.GetVersion(ctx, durable.RulesChange, nextRules, nextRules)
	return durable.Output{Result: landing.Result{Status: landing.Complete, Answer: nextAnswer}}, nil
}

// startBuild starts a worker of rules v on the env's queue, pinned as
// harness-temporal worker's are, and makes it current as the command
// does; the worker stops at the test's end unless stopped before.
func (e *env) startBuild(t *testing.T, v workflow.Version, wf any) worker.Worker {
	t.Helper()
	o := durable.Deployment(durable.WorkerOptions(worker.Options{}), e.queue)
	o.DeploymentOptions.Version.BuildID = durable.BuildID(v)
	w := worker.New(e.c, e.queue, o)
	w.RegisterWorkflowWithOptions(wf, workflow.RegisterOptions{Name: durable.WorkflowName})
	e.acts.Register(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	// A build older than the current one serves its own runs only.
	if err := durable.Promote(t.Context(), e.c, o.DeploymentOptions.Version); err != nil && !errors.Is(err, durable.ErrNewerBuild) {
		t.Fatal(err)
	}
	return w
}

// A run started on one build stays on it: when its worker is gone and a
// worker of the next build serves the queue, the run is not handed to
// it (no workflow task fails, nothing spins), the server ends it at
// D + Overrun as timed out, and new runs go to the next build.
func TestARunKeepsItsBuildAndANewBuildTakesNewRunsOnly(t *testing.T) {
	hang := &sim.Scenario{Rules: []sim.Rule{{Delay: time.Minute}}}
	e := newEnvFiles(t, nil, nil, hang, noWorker)
	old := e.startBuild(t, durable.RulesVersion, durable.Workflow)

	in := durable.Input{Task: "pay the invoice", Budget: 3 * time.Second}
	start := time.Now()
	wr, err := e.c.ExecuteWorkflow(t.Context(), durable.StartOptions(client.StartWorkflowOptions{TaskQueue: e.queue}, in.Budget), durable.WorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	e.waitEvent(t, wr, enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED)
	old.Stop() // the old build's last worker dies with the model's call in flight

	e.startBuild(t, nextRules, nextBuild)
	next, err := e.c.ExecuteWorkflow(t.Context(), durable.StartOptions(client.StartWorkflowOptions{TaskQueue: e.queue}, in.Budget), durable.WorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	var out durable.Output
	if err := next.Get(t.Context(), &out); err != nil || out.Result.Answer != nextAnswer {
		t.Fatalf("a new run: %+v, %v; want the next build's answer", out.Result, err)
	}

	err = wr.Get(t.Context(), &out)
	took := time.Since(start)
	if _, timedOut := errors.AsType[*temporal.TimeoutError](err); !timedOut {
		t.Fatalf("the stranded run ended with %v, want the execution timeout's", err)
	}
	if bound := durable.ExecutionTimeout(in.Budget) + 2*time.Second; took > bound {
		t.Errorf("the stranded run ended after %v, past D + Overrun and the timer's resolution (%v)", took, bound)
	}
	e.checkOneBuild(t, wr)
}

// A run whose build's last worker came back after the next build became
// current lands by its deadline on its own build, labeled as any run.
func TestARunWhoseBuildComesBackLandsOnItByItsDeadline(t *testing.T) {
	hang := &sim.Scenario{Rules: []sim.Rule{{Delay: time.Minute}}}
	e := newEnvFiles(t, nil, nil, hang, noWorker)
	old := e.startBuild(t, durable.RulesVersion, durable.Workflow)

	in := durable.Input{Task: "pay the invoice", Budget: 6 * time.Second}
	start := time.Now()
	wr, err := e.c.ExecuteWorkflow(t.Context(), durable.StartOptions(client.StartWorkflowOptions{TaskQueue: e.queue}, in.Budget), durable.WorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	e.waitEvent(t, wr, enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED)
	old.Stop()
	e.startBuild(t, nextRules, nextBuild)
	e.startBuild(t, durable.RulesVersion, durable.Workflow)
	if err := durable.Promote(t.Context(), e.c, durable.Version(e.queue)); !errors.Is(err, durable.ErrNewerBuild) {
		t.Errorf("promoting the old build again: %v, want %v", err, durable.ErrNewerBuild)
	}

	var out durable.Output
	if err := wr.Get(t.Context(), &out); err != nil {
		t.Fatalf("the run did not land: %v", err)
	}
	if took := time.Since(start); took > in.Budget+time.Second {
		t.Errorf("landed after %v, past D + the timer's resolution", took)
	}
	if out.Result.Status != landing.Partial || out.Result.Cause != landing.CauseBudget {
		t.Errorf("landed %s, cause %q: want partial, cause budget (its model call hangs)", out.Result.Status, out.Result.Cause)
	}
	e.checkOneBuild(t, wr)
}

// checkOneBuild fails the test if a workflow task of the run failed, or
// was completed by a build other than this one.
func (e *env) checkOneBuild(t *testing.T, wr client.WorkflowRun) {
	t.Helper()
	want := durable.BuildID(durable.RulesVersion)
	for _, ev := range e.history(t, wr).Events {
		if a := ev.GetWorkflowTaskFailedEventAttributes(); a != nil {
			t.Errorf("a workflow task failed: %v (%v)", a.GetCause(), a.GetFailure().GetMessage())
		}
		if a := ev.GetWorkflowTaskCompletedEventAttributes(); a != nil {
			if got := a.GetDeploymentVersion().GetBuildId(); got != want {
				t.Errorf("a workflow task was completed by build %q, want only %q", got, want)
			}
		}
	}
}

// waitEvent waits until the run's history has an event of type typ.
func (e *env) waitEvent(t *testing.T, wr client.WorkflowRun, typ enumspb.EventType) *historypb.HistoryEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	it := e.c.GetWorkflowHistory(ctx, wr.GetID(), wr.GetRunID(), true, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.GetEventType() == typ {
			return ev
		}
	}
	t.Fatalf("the run ended without an event %v", typ)
	return nil
}
