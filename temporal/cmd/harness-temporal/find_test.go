package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/temporal/durable"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/trace/spans"
	"go.temporal.io/server/temporaltest"
)

// started is the line `run` prints when the run is started, its workflow
// ID in it.
var started = regexp.MustCompile(`harness-temporal run: note: started (\S+); watch it: harness-temporal status --address \S+ (?:--namespace \S+ )?(\S+)`)

// runInBackground starts `harness-temporal run` with args and returns its
// stderr, a channel with its exit code once it ends, and its stdout.
func runInBackground(t *testing.T, args ...string) (stdout, stderr *syncBuffer, exited chan int) {
	t.Helper()
	stdout, stderr, exited = &syncBuffer{}, &syncBuffer{}, make(chan int, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		err := run(context.Background(), append([]string{"run"}, args...), nil, stdout, stderr)
		exited <- exitCode(err, stderr)
	})
	t.Cleanup(wg.Wait)
	return stdout, stderr, exited
}

// within calls f every tick until it reports true, and fails t past
// limit: a real-time wait on a real server and worker, with a generous
// bound.
func within(t *testing.T, limit time.Duration, what string, f func() bool) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(limit)
	for !f() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("no %s within %v", what, limit)
		}
	}
}

// status runs `harness-temporal status` with args and returns its stdout
// and exit code.
func status(t *testing.T, ts *temporaltest.TestServer, args ...string) (string, int) {
	t.Helper()
	var stdout, stderr syncBuffer
	err := run(t.Context(), append([]string{"status", "--address", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace()}, args...),
		nil, &stdout, &stderr)
	return stdout.String() + stderr.String(), exitCode(err, &stderr)
}

// A run's ID, printed when it starts, finds it: `status` shows the tool
// call in flight by its hashed key, never the key itself, and `land`
// lands it now with cause cancelled, its labeled result printed by the
// `run` that started it.
func TestStatusWatchesARunByItsIDAndLandLandsItWithCauseCancelled(t *testing.T) {
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	startWorker(t, ts, "find", "tools:\n  - name: slow\n    effect: read\n    command: [sh, -c, \"sleep 60\"]\n")
	tracePath := filepath.Join(t.TempDir(), "run.jsonl")
	stdout, stderr, exited := runInBackground(t, "--address", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace(),
		"--task-queue", "find", "--budget", "40s", "--json", "--trace", tracePath, "look slowly")
	var id string
	within(t, 30*time.Second, "workflow ID on stderr", func() bool {
		m := started.FindStringSubmatch(stderr.String())
		if m != nil {
			id = m[1]
		}
		return m != nil
	})
	var st durable.Status
	within(t, 30*time.Second, "call of slow in flight", func() bool {
		out, code := status(t, ts, "--json", id)
		if code != exitOK {
			return false
		}
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("status --json is not one Status: %v\n%s", err, out)
		}
		return len(st.InFlight) == 1 && st.InFlight[0].Tool == "slow"
	})
	if f := st.InFlight[0]; f.Kind != "tool:slow" || !strings.HasPrefix(f.Key, "key-sha256:") || f.Attempt != 1 {
		t.Errorf("in flight %+v, want slow's first attempt by its hashed key", f)
	}
	if st.RunID != id || st.Ended || st.Landing || st.Phase != "explore" || st.Step != 1 || st.Budget.TotalMs != 40_000 {
		t.Errorf("status %+v", st)
	}
	line, code := status(t, ts, id)
	if code != exitOK || !strings.Contains(line, id+" · running · ") || !strings.Contains(line, "slow (tool:slow, "+st.InFlight[0].Key+", attempt 1)") {
		t.Errorf("status line (exit %d) %q", code, line)
	}

	var landOut, landErr syncBuffer
	err := run(t.Context(), []string{"land", "--address", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace(), id}, nil, &landOut, &landErr)
	if code := exitCode(err, &landErr); code != exitOK || !strings.Contains(landOut.String(), "asked "+id+" to land now") {
		t.Fatalf("land: exit %d %v\n%s%s", code, err, landOut.String(), landErr.String())
	}
	if code := <-exited; code != exitPartial {
		t.Fatalf("run exited %d, want %d\n%s", code, exitPartial, stderr.String())
	}
	var res landing.Result
	if err := json.Unmarshal([]byte(stdout.String()), &res); err != nil {
		t.Fatalf("run --json: %v\n%s", err, stdout.String())
	}
	if res.RunID != id || res.Status != landing.Partial || res.Cause != landing.CauseCancelled || len(res.InFlight) != 1 {
		t.Errorf("result %+v, want partial cancelled with slow in flight", res)
	}
	if line, _ := status(t, ts, id); !strings.Contains(line, id+" · ended partial, cause cancelled · ") {
		t.Errorf("status of the landed run %q", line)
	}

	// The key on record is the one status hashed, and status never said it.
	data, err := os.ReadFile(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := trace.ReadRecords(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Event == trace.AttemptStart && r.Step == "tool:slow" {
			if spans.HashKey(r.Key) != st.InFlight[0].Key {
				t.Errorf("status key %s is not the hash of the call's key", st.InFlight[0].Key)
			}
			if strings.Contains(line, r.Key) {
				t.Errorf("status line says the raw key %s: %q", r.Key, line)
			}
		}
	}
}

// A queue with no worker: `run` does not wait past its deadline plus
// durable.Overrun and answerWait (not B + a minute), and ends with a
// result labeled partial, cause unknown, that names the workflow ID to
// look the run up by, exit 3.
func TestRunWithNoWorkerEndsByItsDeadlinePlusItsBoundLabeledUnknown(t *testing.T) {
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	const budget = time.Second
	began := time.Now()
	stdout, stderr, exited := runInBackground(t, "--address", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace(),
		"--task-queue", "nobody", "--budget", budget.String(), "--json", "a task no worker takes")
	code := <-exited
	took := time.Since(began)
	if code != exitPartial {
		t.Fatalf("exit %d, want %d\n%s", code, exitPartial, stderr.String())
	}
	// Generous for a loaded machine, yet well under B + a minute.
	if bound := budget + durable.Overrun + answerWait; took < budget || took > bound+10*time.Second {
		t.Errorf("run ended after %v, want after B %v and by B + %v", took, budget, bound)
	}
	var res landing.Result
	if err := json.Unmarshal([]byte(stdout.String()), &res); err != nil {
		t.Fatalf("run --json: %v\n%s", err, stdout.String())
	}
	m := started.FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no workflow ID on stderr:\n%s", stderr.String())
	}
	if res.RunID != m[1] || res.Status != landing.Partial || res.Cause != causeUnknown || !strings.Contains(res.Boundary, "status --address") ||
		!strings.Contains(res.Boundary, m[1]) {
		t.Errorf("result %+v, want partial, cause unknown, naming %s", res, m[1])
	}
	if !strings.Contains(stderr.String(), "result is unknown") {
		t.Errorf("stderr does not say the result is unknown:\n%s", stderr.String())
	}
}
