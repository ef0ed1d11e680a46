package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// devLine is dev's ready line: its address, its database and what
// becomes of it on exit.
var devLine = regexp.MustCompile(`ready at (\S+) \(namespace default; data in (\S+), (removed|kept) on exit\)`)

// startDev runs `harness-temporal dev` in this process until stop, which
// stops it, waits for it and returns what it printed. It returns once
// dev printed its ready line, with the address and database it named.
func startDev(t *testing.T, args ...string) (addr, db string, stop func() string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var stdout, stderr syncBuffer
	exited := make(chan struct{})
	wg.Go(func() {
		defer close(exited)
		if err := run(ctx, append([]string{"dev"}, args...), nil, &stdout, &stderr); err != nil {
			t.Errorf("dev: %v\n%s", err, stderr.String())
		}
	})
	stop = func() string { cancel(); wg.Wait(); return stdout.String() }
	t.Cleanup(func() { stop() })
	// A real server on real sockets, out of synctest's sight: dev's output
	// is polled, with a bound generous enough for a cold start on a busy
	// machine.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if m := devLine.FindStringSubmatch(stdout.String()); m != nil {
			return m[1], m[2], stop
		}
		select {
		case <-exited:
			t.Fatalf("dev exited before it was ready: %q %q", stdout.String(), stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("dev printed no ready line: %q %q", stdout.String(), stderr.String())
		}
	}
}

// dev on a free port serves a run from start to end, keeps its data in
// the folder it names while it runs, and removes the folder when it stops.
func TestDevServesARunWithItsDataInAFolderItRemovesOnExit(t *testing.T) {
	addr, db, stop := startDev(t, "--address", "127.0.0.1:0")
	if host, port, err := net.SplitHostPort(addr); err != nil || host != "127.0.0.1" || port == "0" {
		t.Fatalf("dev is ready at %q, want 127.0.0.1 and the port it picked", addr)
	}
	dir := filepath.Dir(db)
	if fi, err := os.Stat(db); err != nil || fi.Size() == 0 || filepath.Base(db) != "temporal.db" {
		t.Fatalf("the data folder %s holds no database: %v", dir, err)
	}
	runOnDev(t, addr)
	checkTimersFireWhenDue(t, addr)
	out := stop()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the data folder %s is still there after dev stopped: %v", dir, err)
	}
	if !strings.Contains(out, "stopped; "+dir+" removed") {
		t.Errorf("dev did not say it removed its folder: %q", out)
	}
}

// dev --db keeps its runs in the file across a restart: a run that ended
// before dev stopped is found, by its search attributes, by the dev
// started again on the file, whose namespace is the one first made.
func TestDevWithADBFileFindsARunAfterARestart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "dev.db")
	addr, db, stop := startDev(t, "--address", "127.0.0.1:0", "--db", file)
	if db != file {
		t.Fatalf("dev keeps its data in %s, want %s", db, file)
	}
	id := runOnDev(t, addr)
	first := namespaceID(t, addr)
	const query = `GlidepathStatus = "complete" AND GlidepathPhase = "explore"`
	listed(t, addr, query, id) // visibility is written after the run ends: it is there before dev stops
	if out := stop(); !strings.Contains(out, "kept on exit") || !strings.Contains(out, "stopped; "+file+" kept") {
		t.Errorf("dev --db did not say it keeps its file: %q", out)
	}
	addr, _, _ = startDev(t, "--address", "127.0.0.1:0", "--db", file)
	if again := namespaceID(t, addr); again != first {
		t.Errorf("the namespace is %s after the restart, was %s: made again", again, first)
	}
	listed(t, addr, query, id)
}

// listed waits until the runs on dev at addr that query finds are id
// alone.
func listed(t *testing.T, addr, query, id string) {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: addr, Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got []string
	within(t, 30*time.Second, "run "+id+" found by "+query, func() bool {
		resp, err := c.ListWorkflow(t.Context(), &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		if err != nil {
			t.Fatalf("list %s: %v", query, err)
		}
		got = got[:0]
		for _, ex := range resp.GetExecutions() {
			got = append(got, ex.GetExecution().GetWorkflowId())
		}
		return len(got) == 1 && got[0] == id
	})
}

// namespaceID is the ID of dev's namespace at addr.
func namespaceID(t *testing.T, addr string) string {
	t.Helper()
	nc, err := client.NewNamespaceClient(client.Options{HostPort: addr, Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	d, err := nc.Describe(t.Context(), "default")
	if err != nil {
		t.Fatal(err)
	}
	return d.GetNamespaceInfo().GetId()
}

// runOnDev runs `harness-temporal run` on dev at addr, served by a worker
// of this process, and returns its workflow ID once it ended complete.
func runOnDev(t *testing.T, addr string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(path, []byte("tools:\n  - name: search\n    builtin: search\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wctx, stopWorker := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var werr syncBuffer
	wg.Go(func() {
		err := run(wctx, []string{"worker", "--address", addr, "--task-queue", "dev", "--tools", path,
			"--journal", filepath.Join(t.TempDir(), "orphans.jsonl")}, nil, &syncBuffer{}, &werr)
		if err != nil && wctx.Err() == nil {
			t.Errorf("worker: %v\n%s", err, werr.String())
		}
	})
	var stdout, stderr syncBuffer
	err := run(t.Context(), []string{"run", "--address", addr, "--task-queue", "dev", "--budget", "20s", "find cats"}, nil, &stdout, &stderr)
	stopWorker()
	wg.Wait()
	if code := exitCode(err, &stderr); code != exitOK {
		t.Fatalf("run on dev: exit %d: %v\n%s", code, err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "find cats") || !strings.Contains(stderr.String(), "complete") {
		t.Errorf("run on dev printed %q, %q", stdout.String(), stderr.String())
	}
	m := started.FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("run on dev named no workflow: %q", stderr.String())
	}
	return m[1]
}

// A --address dev cannot serve is bad usage, exit 2, with a line that says
// why, and nothing started.
func TestDevWithAnAddressItCannotServeExitsTwo(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cases := []struct {
		name, addr, want string
	}{
		{"no port", "127.0.0.1", "missing port in address"},
		{"a host name", "example.com:7233", `"example.com" is not an IP address`},
		{"a port out of range", "127.0.0.1:70000", `"70000" is not a port`},
		{"a port in use", taken.Addr().String(), "address already in use (is a dev server running there already?"},
		{"an address not of this machine", "192.0.2.1:7233", "cannot assign requested address"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr syncBuffer
			err := run(t.Context(), []string{"dev", "--address", tc.addr}, nil, &stdout, &stderr)
			if code := exitCode(err, &stderr); code != exitUsage {
				t.Fatalf("exit %d (%v), want %d", code, err, exitUsage)
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q does not say %q", stderr.String(), tc.want)
			}
			if stdout.String() != "" {
				t.Errorf("dev printed %q", stdout.String())
			}
		})
	}
}

// checkTimersFireWhenDue runs a workflow that sleeps 50ms on the server at
// addr and checks, by the server's own stamps of the timer's start and
// fire, that it fired well under the second a default server holds it
// back (DevTimerShift).
func checkTimersFireWhenDue(t *testing.T, addr string) {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: addr, Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := worker.New(c, "dev-timers", worker.Options{})
	w.RegisterWorkflowWithOptions(func(ctx workflow.Context) error { return workflow.Sleep(ctx, 50*time.Millisecond) },
		workflow.RegisterOptions{Name: "sleep50ms"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	wr, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "dev-timers"}, "sleep50ms")
	if err != nil {
		t.Fatal(err)
	}
	if err := wr.Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var started, fired time.Time
	it := c.GetWorkflowHistory(ctx, wr.GetID(), wr.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_TIMER_STARTED:
			started = ev.GetEventTime().AsTime()
		case enumspb.EVENT_TYPE_TIMER_FIRED:
			fired = ev.GetEventTime().AsTime()
		}
	}
	// A busy machine delays the fire by scheduling, not by a second.
	if took := fired.Sub(started); started.IsZero() || took < 50*time.Millisecond || took > 600*time.Millisecond {
		t.Errorf("a 50ms timer on dev fired after %v (started %v, fired %v), want well under the 1s a default server holds it", took, started, fired)
	}
}
