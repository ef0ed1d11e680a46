package main

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glidepath/glidepath/temporal/durable"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/temporaltest"
)

// A worker makes its build the current version of its queue's
// deployment, so that new runs go to it, and says so; a second worker of
// the same build leaves it so.
func TestAWorkerMakesItsBuildCurrentAndSaysSo(t *testing.T) {
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	queue := "deploy.one"
	for i := range 2 {
		stderr := startWorkerUntilServing(t, ts, queue)
		want := "build " + durable.BuildID(durable.RulesVersion) + ": new runs come here"
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("worker %d does not say %q:\n%s", i+1, want, stderr)
		}
	}
	d, err := ts.GetDefaultClient().WorkerDeploymentClient().GetHandle(durable.DeploymentName(queue)).Describe(t.Context(), client.WorkerDeploymentDescribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cur := d.Info.RoutingConfig.CurrentVersion; cur == nil || cur.BuildID != durable.BuildID(durable.RulesVersion) {
		t.Errorf("the current version is %+v, want build %s", cur, durable.BuildID(durable.RulesVersion))
	}
}

// startWorkerUntilServing runs `harness-temporal worker` without tools
// on queue until the test ends, and returns its stderr once it says it
// serves.
func startWorkerUntilServing(t *testing.T, ts *temporaltest.TestServer, queue string) *syncBuffer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	stderr := &syncBuffer{}
	wg.Go(func() {
		err := run(ctx, []string{"worker", "--address", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace(),
			"--task-queue", queue, "--journal", t.TempDir() + "/orphans.jsonl"}, nil, &syncBuffer{}, stderr)
		if err != nil && ctx.Err() == nil {
			t.Errorf("worker: %v\n%s", err, stderr)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(stderr.String(), "serving task queue") {
		select {
		case <-t.Context().Done():
			t.Fatalf("the worker never said it serves:\n%s", stderr)
		case <-tick.C:
		}
	}
	return stderr
}
