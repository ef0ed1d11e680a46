package durable_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/temporal/durable"
	"github.com/glidepath/glidepath/tools/demo"
	"github.com/glidepath/glidepath/trace"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

// The test binary is its own worker process: with DURABLE_TEST_WORKER
// set, TestMain runs a worker instead of the tests, so that a test can
// SIGKILL a worker in the middle of a call.
func TestMain(m *testing.M) {
	if os.Getenv("DURABLE_TEST_WORKER") != "" {
		os.Exit(workerMain())
	}
	os.Exit(m.Run())
}

func workerMain() int {
	ctx := context.Background()
	ts, err := durable.LoadTools(ctx, os.Getenv("DURABLE_TEST_TOOLS"), nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	c, err := client.Dial(client.Options{HostPort: os.Getenv("DURABLE_TEST_ADDRESS"), Namespace: os.Getenv("DURABLE_TEST_NAMESPACE")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	acts := &durable.Activities{Model: model.Config{BaseURL: os.Getenv("DURABLE_TEST_MODEL"), Model: sim.ModelID}, Tools: ts}
	w := worker.New(c, os.Getenv("DURABLE_TEST_QUEUE"), durable.WorkerOptions(worker.Options{}))
	register(w, acts)
	if err := w.Run(worker.InterruptCh()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// posts counts the calls a tool server receives, by tool and key, and
// says when each tool's first one has arrived.
type posts struct {
	mu      sync.Mutex
	byKey   map[string]int // "tool key" → POSTs
	arrived map[string]chan struct{}
}

func (p *posts) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tool, ok := strings.CutPrefix(r.URL.Path, "/tools/"); ok && r.Method == http.MethodPost && !strings.Contains(tool, "/") {
			p.mu.Lock()
			p.byKey[tool+" "+r.Header.Get("Idempotency-Key")]++
			if ch, ok := p.arrived[tool]; ok {
				select {
				case <-ch:
				default:
					close(ch)
				}
			}
			p.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})
}

func (p *posts) count(tool string) (total, keys int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, n := range p.byKey {
		if strings.HasPrefix(k, tool+" ") {
			total += n
			keys++
		}
	}
	return total, keys
}

// A worker SIGKILLed while a payment and a slow read are in flight is a
// non-event: a second worker takes the run over, the read is made again
// with the same key, the payment is reconciled by its key and never sent
// again, and the run keeps its deadline.
func TestAWorkerKilledMidCallLeavesTheRunToAnotherWithItsKeysAndItsDeadline(t *testing.T) {
	p := &posts{byKey: map[string]int{}, arrived: map[string]chan struct{}{"commit": make(chan struct{}), "long_job": make(chan struct{})}}
	toolServer := httptest.NewServer(p.wrap(demo.NewServer(demo.ServerConfig{CommitAfter: 3 * time.Second})))
	defer toolServer.Close()
	toolsYAML := fmt.Sprintf(`tools:
  - name: commit
    url: %[1]s
    ceiling: 15s
  - name: long_job
    url: %[1]s
    ceiling: 15s
`, toolServer.URL)
	e := newEnv(t, "")
	path := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(path, []byte(toolsYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	queue := "crash"
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DURABLE_TEST_WORKER=1", "DURABLE_TEST_TOOLS="+path,
		"DURABLE_TEST_ADDRESS="+e.ts.GetFrontendHostPort(), "DURABLE_TEST_NAMESPACE="+e.ts.GetDefaultNamespace(),
		"DURABLE_TEST_QUEUE="+queue, "DURABLE_TEST_MODEL="+e.sim.URL)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waited sync.WaitGroup
	waited.Go(func() { cmd.Wait() })
	defer waited.Wait()
	defer cmd.Process.Kill()

	wr, ctx := payAndResearch(t, e, queue, p)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	// The second worker, in this process, with the same tools.
	ts, err := durable.LoadTools(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close(context.Background())
	e.ts.NewWorker(queue, func(r worker.Registry) {
		register(r, &durable.Activities{Model: model.Config{BaseURL: e.sim.URL, Model: sim.ModelID}, Tools: ts})
	})
	var out durable.Output
	if err := wr.Get(ctx, &out); err != nil {
		t.Fatal(err)
	}
	t.Logf("landed %v after the kill", time.Since(killedAt))
	res := out.Result
	if res.Status != landing.Complete {
		t.Fatalf("status %s: %s\n%s", res.Status, res.Boundary, dump(out))
	}
	if total, keys := p.count("commit"); total != 1 || keys != 1 {
		t.Errorf("commit POSTed %d times under %d keys, want once", total, keys)
	}
	if recs := records(out, trace.Reconcile, "tool:commit"); len(recs) == 0 || recs[len(recs)-1].State != "done" {
		t.Errorf("commit's reconcile records %+v, want the last done\n%s", recs, dump(out))
	}
	reads := records(out, trace.AttemptStart, "tool:long_job")
	if len(reads) != 2 || reads[0].Key != reads[1].Key {
		t.Errorf("long_job attempts %+v, want two with one key", reads)
	}
	if _, keys := p.count("long_job"); keys != 1 {
		t.Errorf("long_job was sent under %d keys, want 1", keys)
	}
	end := records(out, trace.RunEnd, "")[0]
	if end.LateMs != 0 || end.TotalMs != payAndResearchBudget.Milliseconds() || res.Budget.SpentMs > res.Budget.TotalMs {
		t.Errorf("run_end %+v, spent %dms: want the original deadline kept", end, res.Budget.SpentMs)
	}
}

// payAndResearchBudget is the budget of payAndResearch's run.
const payAndResearchBudget = 40 * time.Second

// payAndResearch starts a run on queue whose model calls commit and
// long_job, and returns once both calls have reached the tool server p
// watches, with the run and a context that bounds the test's waits.
func payAndResearch(t *testing.T, e *env, queue string, p *posts) (client.WorkflowRun, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), payAndResearchBudget+time.Minute)
	t.Cleanup(cancel)
	wr, err := e.c.ExecuteWorkflow(ctx, durable.StartOptions(client.StartWorkflowOptions{TaskQueue: queue}, payAndResearchBudget), durable.WorkflowName,
		durable.Input{Task: "pay and research", Budget: payAndResearchBudget})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"commit", "long_job"} {
		select {
		case <-p.arrived[tool]:
		case <-ctx.Done():
			t.Fatalf("%s was never called", tool)
		}
	}
	return wr, ctx
}
