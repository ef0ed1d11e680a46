package codec_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/temporal/codec"
	"github.com/glidepath/glidepath/temporal/durable"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.temporal.io/server/temporaltest"
	"google.golang.org/protobuf/proto"
)

// What must not reach the server in clear: a key-shaped string in the
// task, the task itself, what the tools answered (the demo search's hits
// and the demo fetch's summary), and the calls' idempotency keys (whose
// prefix this is: each call mints one).
var secrets = []string{"sk-proj-Zx81kQ0vN4tR7yW2", "the-lighthouse-keeper", "index.example", "every timeout is leased", cancel.KeyPrefix}

// runAndReadHistory runs one durable run on a real Temporal server whose
// client and worker are made with opts, and returns the run's result and
// every byte of its history as the server holds it.
func runAndReadHistory(t *testing.T, opts client.Options) (landing.Result, []byte) {
	t.Helper()
	ts := temporaltest.NewServer(temporaltest.WithT(t), temporaltest.WithBaseClientOptions(opts),
		temporaltest.WithBaseWorkerOptions(durable.WorkerOptions(worker.Options{})))
	s := sim.NewServer(nil)
	t.Cleanup(s.Close)
	path := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(path, []byte("tools:\n  - name: search\n    builtin: search\n  - name: fetch\n    builtin: fetch\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reg, err := durable.LoadTools(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close(context.Background()) })
	acts := &durable.Activities{Model: model.Config{BaseURL: s.URL, Model: sim.ModelID}, Tools: reg}
	ts.NewWorker("codec", func(r worker.Registry) {
		r.RegisterWorkflowWithOptions(durable.Workflow, workflow.RegisterOptions{Name: durable.WorkflowName})
		acts.Register(r)
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	wr, err := ts.GetDefaultClient().ExecuteWorkflow(ctx, durable.StartOptions(client.StartWorkflowOptions{TaskQueue: "codec"}, 20*time.Second),
		durable.WorkflowName, durable.Input{Task: "find the-lighthouse-keeper with key " + secrets[0], Budget: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var out durable.Output
	if err := wr.Get(ctx, &out); err != nil {
		t.Fatal(err)
	}
	// Read as the server holds it: by a client with no codec.
	raw, err := client.Dial(client.Options{HostPort: ts.GetFrontendHostPort(), Namespace: ts.GetDefaultNamespace()})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var all []byte
	it := raw.GetWorkflowHistory(ctx, wr.GetID(), wr.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		b, err := proto.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return out.Result, all
}

// Without a codec the server holds all of it in clear (so the search
// below can find what it looks for); with one, none of it, and the run
// is the same.
func TestWithTheCodecOnNoPromptToolOutputOrKeyReachesTheServerInClear(t *testing.T) {
	c := mustCodec(t, key(7))
	for _, tc := range []struct {
		name    string
		opts    client.Options
		inClear bool
	}{
		{"without a codec the history holds the task, the key and the tools' output", client.Options{}, true},
		{"with the codec it holds none of them", codec.Options(client.Options{}, c), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, history := runAndReadHistory(t, tc.opts)
			if res.Status != landing.Complete {
				t.Fatalf("status %s cause %s: %s", res.Status, res.Cause, res.Boundary)
			}
			for _, s := range secrets {
				if got := bytes.Count(history, []byte(s)); (got > 0) != tc.inClear {
					t.Errorf("%q is in the history %d times", s, got)
				}
			}
		})
	}
}
