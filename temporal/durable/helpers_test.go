package durable_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/temporal/durable"
	"github.com/glidepath/glidepath/trace"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/temporal"
	"go.temporal.io/server/temporaltest"

	"github.com/glidepath/glidepath/model"
)

// env is one real Temporal server (temporaltest: in-process, SQLite in
// memory), one sim and one worker with the tools of a tools file.
type env struct {
	ts    *temporaltest.TestServer
	sim   *sim.Server
	c     client.Client
	queue string
	acts  *durable.Activities
}

// envOption changes what newEnvFiles starts.
type envOption int

// noWorker starts no worker: the test starts it (env.startWorker).
const noWorker envOption = 1

// suggestEarly has the server suggest that a run continue as new once
// its history passes 8 KiB (limit.historySize.suggestContinueAsNew; 4 MB
// by default).
const suggestEarly envOption = 2

// startWorker starts the env's worker.
func (e *env) startWorker(t *testing.T) {
	t.Helper()
	e.ts.NewWorker(e.queue, func(r worker.Registry) { register(r, e.acts) })
}

func register(r worker.Registry, acts *durable.Activities) {
	r.RegisterWorkflowWithOptions(durable.Workflow, workflow.RegisterOptions{Name: durable.WorkflowName})
	acts.Register(r)
}

// newEnv starts the server, the sim and a worker whose tools are the
// tools file toolsYAML (empty: no tools).
func newEnv(t *testing.T, toolsYAML string) *env { return newEnvWith(t, toolsYAML, nil, nil) }

// newEnvJournal is newEnv with the worker journaling orphans to j.
func newEnvJournal(t *testing.T, toolsYAML string, j *cancel.Journal) *env {
	return newEnvWith(t, toolsYAML, j, nil)
}

// newEnvWith is newEnv with a journal (nil: none) and a sim scenario
// (nil: the default policy).
func newEnvWith(t *testing.T, toolsYAML string, j *cancel.Journal, sc *sim.Scenario) *env {
	t.Helper()
	var files map[string]string
	if toolsYAML != "" {
		files = map[string]string{"tools.yaml": toolsYAML}
	}
	return newEnvFiles(t, files, j, sc)
}

// newEnvFiles is newEnvWith with the tools files files (by name, in one
// folder: a sub-agent's tools file is named relative to its parent's),
// the worker's being tools.yaml (none: no tools).
func newEnvFiles(t *testing.T, files map[string]string, j *cancel.Journal, sc *sim.Scenario, opts ...envOption) *env {
	t.Helper()
	sopts := []temporaltest.TestServerOption{temporaltest.WithT(t), temporaltest.WithBaseWorkerOptions(durable.WorkerOptions(worker.Options{}))}
	if slices.Contains(opts, suggestEarly) {
		sopts = append(sopts, temporaltest.WithBaseServerOptions(temporal.WithDynamicConfigClient(dynamicconfig.StaticClient{
			dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): []dynamicconfig.ConstrainedValue{{Value: true}},
			dynamicconfig.HistorySizeSuggestContinueAsNew.Key():         []dynamicconfig.ConstrainedValue{{Value: 8 << 10}},
		})))
	}
	ts := temporaltest.NewServer(sopts...)
	e := &env{ts: ts, sim: sim.NewServer(sc), queue: "glidepath-" + t.Name()}
	t.Cleanup(e.sim.Close)
	acts := &durable.Activities{Model: model.Config{BaseURL: e.sim.URL, Model: sim.ModelID}, Journal: j}
	if len(files) > 0 {
		dir := t.TempDir()
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		path := filepath.Join(dir, "tools.yaml")
		reg, err := durable.LoadTools(t.Context(), path, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { reg.Close(context.Background()) })
		acts.Tools = reg
	}
	e.acts = acts
	e.c = e.ts.GetDefaultClient()
	if !slices.Contains(opts, noWorker) {
		e.startWorker(t)
	}
	return e
}

// run starts a run and waits for its output.
func (e *env) run(t *testing.T, in durable.Input) (durable.Output, client.WorkflowRun) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), in.Budget+time.Minute)
	defer cancel()
	wr, err := e.c.ExecuteWorkflow(ctx, durable.StartOptions(client.StartWorkflowOptions{TaskQueue: e.queue}, in.Budget), durable.WorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	var out durable.Output
	if err := wr.Get(ctx, &out); err != nil {
		t.Fatal(err)
	}
	return out, wr
}

// history returns the run's events.
func (e *env) history(t *testing.T, wr client.WorkflowRun) *historypb.History {
	t.Helper()
	it := e.c.GetWorkflowHistory(t.Context(), wr.GetID(), wr.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, ev)
	}
	return h
}

// scheduled are the activities a history scheduled, in order.
type scheduled struct {
	name            string
	scheduleToClose time.Duration
	heartbeat       time.Duration
	maxAttempts     int32
}

func scheduledOf(h *historypb.History) []scheduled {
	var out []scheduled
	for _, ev := range h.Events {
		a := ev.GetActivityTaskScheduledEventAttributes()
		if a == nil {
			continue
		}
		out = append(out, scheduled{
			name:            a.GetActivityType().GetName(),
			scheduleToClose: a.GetScheduleToCloseTimeout().AsDuration(),
			heartbeat:       a.GetHeartbeatTimeout().AsDuration(),
			maxAttempts:     a.GetRetryPolicy().GetMaximumAttempts(),
		})
	}
	return out
}

// records returns the trace records of event ev (and step, if not empty).
func records(out durable.Output, ev trace.Event, step string) []trace.Record {
	var rs []trace.Record
	for _, r := range out.Trace {
		if r.Event == ev && (step == "" || r.Step == step) {
			rs = append(rs, r)
		}
	}
	return rs
}

// dump is the run's trace, one JSON line a record, for a failure message.
func dump(out durable.Output) string {
	var b []byte
	for _, r := range out.Trace {
		b = append(trace.AppendJSON(b, r), '\n')
	}
	return string(b)
}
