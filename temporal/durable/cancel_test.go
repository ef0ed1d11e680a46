package durable_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/temporal/durable"
	"github.com/glidepath/glidepath/tools/demo"
	"github.com/glidepath/glidepath/trace"
	"go.temporal.io/sdk/client"
)

// Cancelling the workflow (harness-temporal run's first Ctrl-C) lands the
// run now, with cause cancelled, within its reserve: the call in flight
// is stopped and named, and the run returns a labeled partial result.
func TestACancelledRunLandsWithinItsReserve(t *testing.T) {
	e, wr, ctx := longJobRun(t)
	if err := e.c.CancelWorkflow(ctx, wr.GetID(), wr.GetRunID()); err != nil {
		t.Fatal(err)
	}
	var out durable.Output
	if err := wr.Get(ctx, &out); err != nil {
		t.Fatal(err)
	}
	res := out.Result
	if res.Status != landing.Partial || res.Cause != landing.CauseCancelled {
		t.Fatalf("status %s cause %q, want partial cancelled: %s\n%s", res.Status, res.Cause, res.Boundary, dump(out))
	}
	if len(res.InFlight) != 1 || res.InFlight[0].Tool != "long_job" {
		t.Errorf("in_flight %+v, want long_job", res.InFlight)
	}
	cut := records(out, trace.AttemptEnd, "tool:long_job")
	if len(cut) != 1 || cut[0].Outcome != trace.Cancelled {
		t.Fatalf("long_job attempts %+v, want one cancelled", cut)
	}
	end := records(out, trace.RunEnd, "")[0]
	reserve := time.Duration(res.Budget.ReserveMs) * time.Millisecond
	if reserve != 15*time.Second {
		t.Errorf("reserve %v, want 15s for a 60s budget", reserve)
	}
	if end.ElapsedMs-cut[0].ElapsedMs > reserve.Milliseconds() || end.LateMs != 0 {
		t.Errorf("run ended %dms after the cancel, want within the reserve %v", end.ElapsedMs-cut[0].ElapsedMs, reserve)
	}
	if l := records(out, trace.Landing, ""); len(l) != 1 || l[0].Cause != "cancelled" {
		t.Errorf("landing records %+v", l)
	}
	for _, r := range records(out, trace.AttemptStart, "model") {
		if r.ElapsedMs > cut[0].ElapsedMs && r.GrantedMs > reserve.Milliseconds() {
			t.Errorf("landing call granted %dms after the cancel, more than the reserve", r.GrantedMs)
		}
	}
}

// longJobBudget is the budget of longJobRun's run.
const longJobBudget = 60 * time.Second

// longJobRun starts a run of longJobBudget whose model calls long_job, a
// tool server's job of 30s, and returns once the call has reached the
// server, with the run and a context that bounds the test's waits. Each
// of before is called with the env before the run starts.
func longJobRun(t *testing.T, before ...func(context.Context, *env)) (*env, client.WorkflowRun, context.Context) {
	t.Helper()
	p := &posts{byKey: map[string]int{}, arrived: map[string]chan struct{}{"long_job": make(chan struct{})}}
	toolServer := httptest.NewServer(p.wrap(demo.NewServer(demo.ServerConfig{Tick: time.Second, Steps: 30})))
	t.Cleanup(toolServer.Close)
	e := newEnv(t, "tools:\n  - name: long_job\n    url: "+toolServer.URL+"\n    ceiling: 40s\n")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	for _, f := range before {
		f(ctx, e)
	}
	wr, err := e.c.ExecuteWorkflow(ctx, durable.StartOptions(client.StartWorkflowOptions{TaskQueue: e.queue}, longJobBudget), durable.WorkflowName,
		durable.Input{Task: "a long job", Budget: longJobBudget})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.arrived["long_job"]:
	case <-ctx.Done():
		t.Fatal("long_job was never called")
	}
	return e, wr, ctx
}
