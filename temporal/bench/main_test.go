package bench_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/temporal/durable"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
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

// workerMain is `harness-temporal worker --model sim --tools F --journal
// J` as a copy of the test binary: the embedded sim in memory, the tools
// of the tools file, the orphan journal, one worker on the task queue.
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
	acts := &durable.Activities{Model: model.Config{BaseURL: s.URL, Model: sim.ModelID, HTTPClient: s.Client()}, Tools: ts, Journal: j}
	// The options `harness-temporal worker` runs with (durable.WorkerOptions:
	// a dead worker's sticky workflows move on after a second).
	w := worker.New(c, os.Getenv("GLIDEPATH_TBENCH_QUEUE"), durable.WorkerOptions(worker.Options{Identity: os.Getenv("GLIDEPATH_TBENCH_IDENTITY")}))
	register(w, acts)
	if err := w.Run(worker.InterruptCh()); err != nil {
		return fail(err)
	}
	return 0
}
