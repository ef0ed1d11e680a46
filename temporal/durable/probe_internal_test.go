package durable

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.temporal.io/server/temporaltest"
)

// probe runs fn, a workflow that drives a piece of the run in workflow
// time, registered as name on a server of its own, with args; it returns
// what fn returned, and the client and run to read its history by.
func probe[T any](t *testing.T, name string, fn any, args ...any) (T, client.Client, client.WorkflowRun) {
	t.Helper()
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	ts.NewWorker(name, func(r worker.Registry) {
		r.RegisterWorkflowWithOptions(fn, workflow.RegisterOptions{Name: name})
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c := ts.GetDefaultClient()
	var out T
	wr, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: name}, name, args...)
	if err != nil {
		t.Fatal(err)
	}
	if err := wr.Get(ctx, &out); err != nil {
		t.Fatal(err)
	}
	return out, c, wr
}
