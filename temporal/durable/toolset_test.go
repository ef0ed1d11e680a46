package durable_test

import (
	"context"
	"fmt"
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
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/worker"
)

// writeTools writes a tools file and returns its path.
func writeTools(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// loadTools loads the tools file at path as a worker does.
func loadTools(t *testing.T, path string) *durable.Toolset {
	t.Helper()
	ts, err := durable.LoadTools(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Close(context.Background()) })
	return ts
}

// startWorkerProcess starts the test binary as a worker of queue with the
// tools file at path (TestMain), killed when the test ends.
func startWorkerProcess(t *testing.T, e *env, path, queue string) *exec.Cmd {
	t.Helper()
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
	t.Cleanup(waited.Wait)
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd
}

// A worker SIGKILLed mid-payment, whose run a worker with another tools
// file takes over (commit a builtin there, a remote tool on the first):
// the second refuses every step of the run that touches its tools, so the
// payment is never sent again, and the run lands labeled, saying which
// toolsets differ (issue 26).
func TestAWorkerWithAnotherToolsetNeverSendsAWriteOfARunItTakesOver(t *testing.T) {
	p := &posts{byKey: map[string]int{}, arrived: map[string]chan struct{}{"commit": make(chan struct{}), "long_job": make(chan struct{})}}
	toolServer := httptest.NewServer(p.wrap(demo.NewServer(demo.ServerConfig{CommitAfter: 3 * time.Second})))
	defer toolServer.Close()
	remote := writeTools(t, fmt.Sprintf(`tools:
  - name: commit
    url: %[1]s
    ceiling: 15s
  - name: long_job
    url: %[1]s
    ceiling: 15s
`, toolServer.URL))
	// D's commit is a builtin: in process, its own server, its own keys.
	builtin := writeTools(t, fmt.Sprintf(`tools:
  - name: commit
    builtin: late_commit
    effect: write
  - name: long_job
    url: %s
    ceiling: 15s
`, toolServer.URL))
	e := newEnv(t, "")
	queue := "mismatch"
	a := startWorkerProcess(t, e, remote, queue)

	wr, ctx := payAndResearch(t, e, queue, p)
	if err := a.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	d := loadTools(t, builtin)
	e.ts.NewWorker(queue, func(r worker.Registry) {
		register(r, &durable.Activities{Model: model.Config{BaseURL: e.sim.URL, Model: sim.ModelID}, Tools: d, Identity: "worker-d"})
	})
	var out durable.Output
	if err := wr.Get(ctx, &out); err != nil {
		t.Fatal(err)
	}
	res := out.Result
	if total, keys := p.count("commit"); total != 1 || keys != 1 {
		t.Errorf("commit POSTed %d times under %d keys, want once, by the first worker", total, keys)
	}
	if res.Status == landing.Complete {
		t.Errorf("status complete, want the run labeled as not finished\n%s", dump(out))
	}
	ran := loadTools(t, remote).Fingerprint()
	for _, rec := range records(out, trace.AttemptEnd, "tool:commit") {
		if rec.Outcome == trace.OK {
			t.Errorf("an attempt of commit ended ok after the takeover: %+v", rec)
		}
	}
	if setup := records(out, trace.AttemptEnd, "setup"); len(setup) == 0 || setup[0].Message != "toolset "+ran.Label() {
		t.Errorf("setup attempt_end %+v, want it to name the run's toolset %s", setup, ran.Short())
	}
	said := fmt.Sprint(res.Boundary, " ", res.NotEstablished, " ", res.InFlight)
	for _, want := range []string{ran.Short(), d.Fingerprint().Short(), "worker-d", "same tools file"} {
		if !strings.Contains(said, want) {
			t.Errorf("the result does not say %q: %s: %s\n%s", want, res.Status, said, dump(out))
		}
	}
	t.Logf("%s (%s): %s", res.Status, res.Cause, said)
}

// A worker's fingerprint is its tools file's, the same at every start,
// and its identity carries it; another effect or URL is another.
func TestAWorkersFingerprintIsStableAcrossRestartsAndInItsIdentity(t *testing.T) {
	yaml := "tools:\n  - name: commit\n    url: http://127.0.0.1:9/\n    effect: write\n"
	path := writeTools(t, yaml)
	first, again := loadTools(t, path).Fingerprint(), loadTools(t, path).Fingerprint()
	if first != again {
		t.Errorf("restarted: %s, then %s", first.Short(), again.Short())
	}
	if id := durable.Identity(first); !strings.HasSuffix(id, "toolset="+first.Short()) {
		t.Errorf("identity %q does not carry %s", id, first.Short())
	}
	for _, other := range []string{strings.Replace(yaml, "write", "read", 1), strings.Replace(yaml, ":9/", ":10/", 1)} {
		if fp := loadTools(t, writeTools(t, other)).Fingerprint(); fp == first {
			t.Errorf("%q has the fingerprint of %q", other, yaml)
		}
	}
}

// CheckQueue lets a worker join a queue whose workers run its toolset,
// and refuses one without tools on a queue of workers with tools, naming
// both and what must match.
func TestCheckQueueRefusesAWorkerWithAnotherToolsetNamingBoth(t *testing.T) {
	e := newEnvFiles(t, nil, nil, nil, noWorker)
	tooled := loadTools(t, writeTools(t, "tools:\n  - name: search\n    builtin: search\n"))
	id := durable.Identity(tooled.Fingerprint())
	w := worker.New(e.c, e.queue, durable.WorkerOptions(worker.Options{Identity: id}))
	register(w, &durable.Activities{Tools: tooled})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	waitPolled(t, e, id)
	if err := durable.CheckQueue(t.Context(), e.c, e.queue, tooled.Fingerprint()); err != nil {
		t.Errorf("the same toolset: %v", err)
	}
	var none *durable.Toolset
	err := durable.CheckQueue(t.Context(), e.c, e.queue, none.Fingerprint())
	if err == nil {
		t.Fatal("a worker without tools joined a queue with tools")
	}
	for _, want := range []string{id, tooled.Fingerprint().Short(), "(no tools)", "same tools file"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v\ndoes not say %q", err, want)
		}
	}
}

// waitPolled waits until the worker of identity id polls e's queue.
func waitPolled(t *testing.T, e *env, id string) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := e.c.DescribeTaskQueue(t.Context(), e.queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range resp.GetPollers() {
			if p.GetIdentity() == id {
				return
			}
		}
		select {
		case <-t.Context().Done():
			t.Fatal("the worker never polled")
		case <-tick.C:
		}
	}
}
