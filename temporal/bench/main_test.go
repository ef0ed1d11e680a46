package bench_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/temporal/durable"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// The fleet's workers are copies of the test binary: with
// GLIDEPATH_TBENCH_WORKER set, TestMain runs a worker instead of the
// tests, so that the fleet can SIGKILL one in the middle of its runs.
func TestMain(m *testing.M) {
	if os.Getenv("GLIDEPATH_TBENCH_WORKER") != "" {
		os.Exit(workerMain())
	}
	os.Exit(m.Run())
}

// nextRules are the rules of the fleet's next build, and name it
// (durable.BuildID): the build that replaces the killed worker.
const nextRules = durable.RulesVersion + 1

// nextBuild is the fleet's next build: durable.Workflow with one
// SideEffect before it, the change of issue 26's rebuilt worker. Its
// first command is another marker than this build's, so it cannot replay
// a run this build started (TestAFleet… replays one to show it), yet it
// does a new run's whole work.
func nextBuild(ctx workflow.Context, in durable.Input) (durable.Output, error) {
	var id string
	if err := workflow.SideEffect(ctx, func(workflow.Context) any { return durable.BuildID(nextRules) }).Get(&id); err != nil {
		return durable.Output{}, err
	}
	return durable.Workflow(ctx, in)
}

// workerMain is `harness-temporal worker --model sim --tools F --journal
// J` as a copy of the test binary: the embedded sim in memory, the tools
// of the tools file, the orphan journal, one worker on the task queue,
// versioned and promoted as the command's (durable.Deployment, then
// durable.Promote once it polls). With GLIDEPATH_TBENCH_BUILD=next it is
// a worker of the next build (nextBuild, build ID of nextRules) instead.
// It runs until SIGTERM.
func workerMain() int {
	ctx := context.Background()
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "bench worker:", err)
		return 1
	}
	ts, err := durable.LoadTools(ctx, os.Getenv("GLIDEPATH_TBENCH_TOOLS"), nil)
	if err != nil {
		return fail(err)
	}
	defer ts.Close(ctx)
	j, err := cancel.OpenJournal(os.Getenv("GLIDEPATH_TBENCH_JOURNAL"))
	if err != nil {
		return fail(err)
	}
	defer j.Close()
	s := sim.NewPipeServer(nil)
	defer s.Close()
	c, err := client.Dial(client.Options{HostPort: os.Getenv("GLIDEPATH_TBENCH_ADDRESS"),
		Namespace: os.Getenv("GLIDEPATH_TBENCH_NAMESPACE"), Logger: quietLogger{}})
	if err != nil {
		return fail(err)
	}
	defer c.Close()
	queue := os.Getenv("GLIDEPATH_TBENCH_QUEUE")
	fp := ts.Fingerprint()
	if err := durable.CheckQueue(ctx, c, queue, fp); err != nil {
		return fail(err)
	}
	acts := &durable.Activities{Model: model.Config{BaseURL: s.URL, Model: sim.ModelID, HTTPClient: s.Client()}, Tools: ts, Journal: j}
	// The identity harness-temporal's has (its toolset, which CheckQueue
	// reads), after the worker's name in the fleet (w0), which the
	// fleet reads off its runs' histories.
	id := os.Getenv("GLIDEPATH_TBENCH_NAME") + "@" + durable.Identity(fp)
	o := durable.Deployment(durable.WorkerOptions(worker.Options{Identity: id}), queue)
	wf := durable.Workflow
	if os.Getenv("GLIDEPATH_TBENCH_BUILD") == "next" {
		o.DeploymentOptions.Version.BuildID = durable.BuildID(nextRules)
		wf = nextBuild
	}
	w := worker.New(c, queue, o)
	w.RegisterWorkflowWithOptions(wf, workflow.RegisterOptions{Name: durable.WorkflowName})
	acts.Register(w)
	if err := w.Start(); err != nil {
		return fail(err)
	}
	defer w.Stop()
	// An old build started after a newer one serves its pinned runs only.
	if err := durable.Promote(ctx, c, o.DeploymentOptions.Version); err != nil && !errors.Is(err, durable.ErrNewerBuild) {
		return fail(err)
	}
	<-worker.InterruptCh()
	return 0
}
