package main

import (
	"strings"
	"testing"

	"go.temporal.io/server/temporaltest"
)

// `run --progress always` writes the run's status line, read from its
// status query, while the run goes on (a line each, stderr being no
// terminal), and stops before the result; never, the default off a
// terminal, writes none.
func TestRunWithProgressShowsTheLiveLineWhileTheRunGoesOn(t *testing.T) {
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	startWorker(t, ts, "progress", "tools:\n  - name: slow\n    effect: read\n    command: [sh, -c, \"sleep 3; echo '{}'\"]\n")
	for _, tc := range []struct {
		mode  string
		lines bool
	}{{"always", true}, {"never", false}} {
		t.Run(tc.mode, func(t *testing.T) {
			var stdout, stderr syncBuffer
			err := run(t.Context(), []string{"run", "--address", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace(),
				"--task-queue", "progress", "--budget", "30s", "--progress", tc.mode, "look slowly"}, nil, &stdout, &stderr)
			if code := exitCode(err, &stderr); code != exitOK {
				t.Fatalf("exit %d: %v\n%s", code, err, stderr.String())
			}
			out := stderr.String()
			live := strings.Index(out, " · running · ")
			if (live >= 0) != tc.lines {
				t.Fatalf("a live line in stderr: %v, want %v\n%s", live >= 0, tc.lines, out)
			}
			if tc.lines && (!strings.Contains(out, "in flight: slow (tool:slow, key-sha256:") || live > strings.LastIndex(out, "complete")) {
				t.Errorf("the live lines do not show the call in flight before the result:\n%s", out)
			}
		})
	}
}

func TestRunWithAProgressModeItDoesNotKnowIsBadUsage(t *testing.T) {
	var stdout, stderr syncBuffer
	err := run(t.Context(), []string{"run", "--address", "127.0.0.1:1", "--progress", "sometimes", "task"}, nil, &stdout, &stderr)
	if code := exitCode(err, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "--progress") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}
