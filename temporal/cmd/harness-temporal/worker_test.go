package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/internal/toolset"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/temporaltest"
)

// A worker started without --tools on a task queue whose worker runs a
// tools file is refused at start, exit 2, naming both toolsets and what
// must match; and the other way round.
func TestAWorkerIsRefusedAtStartOnAQueueOfWorkersWithAnotherToolset(t *testing.T) {
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	cases := []struct {
		name, serving, joining string
		want                   []string
	}{
		{"one without tools joining workers with tools", "tools:\n  - name: search\n    builtin: search\n", "",
			[]string{"toolset=", "(no tools)", "same tools file", "--task-queue"}},
		{"one with tools joining workers without", "", "tools:\n  - name: search\n    builtin: search\n",
			[]string{"(toolset " + toolset.None.Short() + " (no tools))", "same tools file"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			queue := "fp" + string(rune('a'+i))
			startWorkerOf(t, ts, queue, tc.serving)
			waitPoller(t, ts, queue)
			stderr := &syncBuffer{}
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			err := run(ctx, append([]string{"worker", "--address", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace(),
				"--task-queue", queue, "--journal", t.TempDir() + "/orphans.jsonl"}, toolsFlag(t, tc.joining)...), nil, &syncBuffer{}, stderr)
			if code := exitCode(err, stderr); code != exitUsage {
				t.Fatalf("exit %d, want %d: %v\n%s", code, exitUsage, err, stderr)
			}
			for _, want := range tc.want {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr does not say %q:\n%s", want, stderr)
				}
			}
		})
	}
}

// startWorkerOf is startWorker, with no --tools when toolsYAML is empty.
func startWorkerOf(t *testing.T, ts *temporaltest.TestServer, queue, toolsYAML string) {
	t.Helper()
	if toolsYAML != "" {
		startWorker(t, ts, queue, toolsYAML)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(ctx, []string{"worker", "--address", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace(),
			"--task-queue", queue, "--journal", t.TempDir() + "/orphans.jsonl"}, nil, &syncBuffer{}, &syncBuffer{})
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// toolsFlag is --tools with a file of yaml; none when yaml is empty.
func toolsFlag(t *testing.T, yaml string) []string {
	t.Helper()
	if yaml == "" {
		return nil
	}
	path := t.TempDir() + "/tools.yaml"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--tools", path}
}

// waitPoller waits until a worker polls queue's activity tasks.
func waitPoller(t *testing.T, ts *temporaltest.TestServer, queue string) {
	t.Helper()
	c := ts.GetDefaultClient()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if resp, err := c.DescribeTaskQueue(t.Context(), queue, enumspb.TASK_QUEUE_TYPE_ACTIVITY); err == nil && len(resp.GetPollers()) > 0 {
			return
		}
		select {
		case <-t.Context().Done():
			t.Fatal("no worker polled")
		case <-tick.C:
		}
	}
}
