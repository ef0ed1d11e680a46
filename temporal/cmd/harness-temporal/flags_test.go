package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget/profile"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/temporal/durable"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/server/temporaltest"
)

// runArgs are the flags that send `run` to ts's queue.
func runArgs(ts *temporaltest.TestServer, queue string, args ...string) []string {
	return append([]string{"run", "--address", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace(), "--task-queue", queue}, args...)
}

// inputOf is the Input run id was started with, read from its history.
func inputOf(t *testing.T, ts *temporaltest.TestServer, id string) durable.Input {
	t.Helper()
	iter := ts.GetDefaultClient().GetWorkflowHistory(t.Context(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	ev, err := iter.Next()
	if err != nil {
		t.Fatal(err)
	}
	var in durable.Input
	if err := converter.GetDefaultDataConverter().FromPayloads(ev.GetWorkflowExecutionStartedEventAttributes().GetInput(), &in); err != nil {
		t.Fatal(err)
	}
	return in
}

// startedID is the workflow ID `run` printed on stderr.
func startedID(t *testing.T, stderr string) string {
	t.Helper()
	m := started.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no workflow ID on stderr:\n%s", stderr)
	}
	return m[1]
}

// A run's flags that cannot be used are bad usage, exit 2, named, before
// any server is dialled (the address has none).
func TestRunRefusesABadLogFormatBeforeAnythingStarts(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"a log format that is not one", []string{"-v", "--log-format", "yaml"}, `--log-format "yaml": want auto, console or json`},
		{"a log format without -v", []string{"--log-format", "text"}, `--log-format "text"`},
		{"-v given a value", []string{"-v=maybe"}, "-v"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr syncBuffer
			args := append(append([]string{"run", "--address", "127.0.0.1:1"}, tc.args...), "task")
			err := run(t.Context(), args, strings.NewReader(""), &stdout, &stderr)
			if code := exitCode(err, &stderr); code != exitUsage {
				t.Fatalf("exit %d (%v), want %d", code, err, exitUsage)
			}
			if !strings.Contains(stderr.String(), tc.want) || strings.Contains(stderr.String(), "cannot reach") {
				t.Errorf("stderr %q does not say %q before dialling", stderr.String(), tc.want)
			}
		})
	}
}

// -v logs the run's records once its result is back, with harness run's
// logger: JSON lines when stderr is not a terminal, every line on stderr
// one JSON object with --log-format json, console lines with --log-format
// console. A value the process knows as a secret (the model's key) is in
// no line, though a tool's error repeated it.
func TestRunLogsItsRecordsWithV(t *testing.T) {
	const secret = "plain-value-of-the-key-4242"
	t.Setenv("OPENAI_API_KEY", secret)
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	startWorker(t, ts, "logs", "tools:\n  - name: search\n    effect: read\n    command: [sh, -c, \"echo refused by "+secret+" >&2; exit 1\"]\n")
	cases := []struct {
		name  string
		args  []string
		check func(t *testing.T, stderr string)
	}{
		{"-v off a terminal writes JSON lines", []string{"-v"}, func(t *testing.T, stderr string) {
			if n := countJSON(t, stderr, `"event":"run_end"`); n != 1 {
				t.Errorf("%d run_end lines, want 1:\n%s", n, stderr)
			}
			if countJSON(t, stderr, `"step":"tool:search"`) == 0 {
				t.Errorf("no record of tool:search logged:\n%s", stderr)
			}
		}},
		{"--log-format json makes every line on stderr JSON", []string{"-v", "--log-format", "json"}, func(t *testing.T, stderr string) {
			for line := range strings.Lines(stderr) {
				if !json.Valid([]byte(line)) {
					t.Errorf("a line on stderr is not JSON: %q", line)
				}
			}
			if countJSON(t, stderr, "harness-temporal run: note: started") != 1 || countJSON(t, stderr, `"event":"run_start"`) != 1 {
				t.Errorf("the started line or the run's records are missing:\n%s", stderr)
			}
			for line := range strings.Lines(stderr) {
				if strings.Contains(line, "note: started") && !strings.Contains(line, `"level":"info"`) {
					t.Errorf("the started line is not info: %s", line)
				}
			}
		}},
		{"--log-format json without -v logs no record", []string{"--log-format", "json"}, func(t *testing.T, stderr string) {
			if strings.Contains(stderr, `"event":`) || countJSON(t, stderr, "cause ") == 0 {
				t.Errorf("want JSON lines without records:\n%s", stderr)
			}
		}},
		{"--log-format console writes console lines", []string{"-v", "--log-format", "console"}, func(t *testing.T, stderr string) {
			if !strings.Contains(stderr, "run_end") || strings.Contains(stderr, `"event":"run_end"`) {
				t.Errorf("want console lines:\n%s", stderr)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr syncBuffer
			err := run(t.Context(), runArgs(ts, "logs", append(tc.args, "--budget", "20s", "--profile", "off", "find cats")...), nil, &stdout, &stderr)
			if code := exitCode(err, &stderr); code != exitOK && code != exitPartial {
				t.Fatalf("exit %d: %v\n%s", code, err, stderr.String())
			}
			tc.check(t, stderr.String())
			if strings.Contains(stderr.String(), secret) {
				t.Errorf("stderr repeats the key:\n%s", stderr.String())
			}
		})
	}
}

// countJSON is how many lines of stderr are JSON objects holding s,
// failing t on a line that starts as one and is not.
func countJSON(t *testing.T, stderr, s string) int {
	t.Helper()
	n := 0
	for line := range strings.Lines(stderr) {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		if !json.Valid([]byte(line)) {
			t.Errorf("not one JSON object: %q", line)
		}
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

// --profile FILE: the run starts from the durations the profile holds of
// its task queue's kinds, and from the longest cut of each (issue 27), not
// those of another place (an in-process run's model), and adds its own
// attempts' there at its end.
func TestRunStartsFromTheProfileOfItsQueueAndAddsToIt(t *testing.T) {
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	startWorker(t, ts, "prof", "tools:\n  - name: search\n    builtin: search\n")
	path := filepath.Join(t.TempDir(), "profile.json")
	here := profilePlace(conn{address: ts.GetFrontendHostPort(), namespace: ts.GetDefaultNamespace(), queue: "prof"})(model.Kind)
	now := time.Now()
	if err := profile.Record(t.Context(), path, []profile.Observation{
		profile.Attempt(model.Kind, here, now.Add(-time.Hour), now.Add(-time.Hour+700*time.Millisecond)),
		profile.Attempt(model.Kind, "sim (embedded)", now.Add(-time.Hour), now.Add(-time.Hour+9*time.Second)),
		profile.CutAttempt(model.Kind, here, now.Add(-time.Hour), now.Add(-time.Hour+time.Second)),
		profile.CutAttempt(model.Kind, "sim (embedded)", now.Add(-time.Hour), now.Add(-time.Hour+7*time.Second)),
	}, now); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr syncBuffer
	err := run(t.Context(), runArgs(ts, "prof", "--budget", "20s", "--profile", path, "find cats"), nil, &stdout, &stderr)
	if code := exitCode(err, &stderr); code != exitOK {
		t.Fatalf("exit %d: %v\n%s", code, err, stderr.String())
	}
	in := inputOf(t, ts, startedID(t, stderr.String()))
	if got := in.Profile[model.Kind]; len(got) != 1 || got[0] != 700*time.Millisecond {
		t.Errorf("the run started from %v of the model, want only the 700ms of its queue", got)
	}
	if got := in.Learned; len(got) != 1 || got[model.Kind] != time.Second {
		t.Errorf("the run learned %v, want only the model's 1s cut at its queue", got)
	}
	p, err := profile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, k := range p.Summary(time.Now()).Kinds {
		if k.Where == here {
			kinds[k.Kind] = k.Count
		}
	}
	if kinds[model.Kind] < 2 || kinds["tool:search"] < 1 {
		t.Errorf("the profile holds %v at %q, want the run's model turns and its search added", kinds, here)
	}
}

// Without --profile the run reads and adds to the default profile under
// $XDG_STATE_HOME; --profile off neither reads nor writes one.
func TestRunProfileDefaultsToTheStateHomeAndOffIsNone(t *testing.T) {
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	startWorker(t, ts, "profdef", "tools:\n  - name: search\n    builtin: search\n")
	for _, tc := range []struct {
		name   string
		args   []string
		exists bool
	}{
		{"off writes none", []string{"--profile", "off"}, false},
		{"the default is written", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			t.Setenv("XDG_STATE_HOME", state)
			var stdout, stderr syncBuffer
			err := run(t.Context(), runArgs(ts, "profdef", append(tc.args, "--budget", "20s", "hello")...), nil, &stdout, &stderr)
			if code := exitCode(err, &stderr); code != exitOK {
				t.Fatalf("exit %d: %v\n%s", code, err, stderr.String())
			}
			_, err = os.Stat(filepath.Join(state, "glidepath", "profile.json"))
			if exists := err == nil; exists != tc.exists {
				t.Errorf("the default profile exists: %v, want %v (%v)", exists, tc.exists, err)
			}
		})
	}
}

// A run whose worker went away mid-call is pinned to the worker's build,
// which no other build takes over: `run` ends it labeled unknown, and
// says which build's workers to bring back.
func TestAStrandedRunNamesTheBuildItWasPinnedTo(t *testing.T) {
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	stopWorker := startStoppableWorker(t, ts, "strand", "tools:\n  - name: slow\n    effect: read\n    command: [sh, -c, \"sleep 60\"]\n")
	stdout, stderr, exited := runInBackground(t, "--address", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace(),
		"--task-queue", "strand", "--budget", "3s", "--json", "--progress", "never", "look slowly")
	within(t, 30*time.Second, "call of slow in flight", func() bool {
		m := started.FindStringSubmatch(stderr.String())
		if m == nil {
			return false
		}
		out, code := status(t, ts, m[1])
		return code == exitOK && strings.Contains(out, "slow (tool:slow")
	})
	stopWorker()
	if code := <-exited; code != exitPartial {
		t.Fatalf("exit %d, want %d\n%s", code, exitPartial, stderr.String())
	}
	var res landing.Result
	if err := json.Unmarshal([]byte(stdout.String()), &res); err != nil {
		t.Fatalf("run --json: %v\n%s", err, stdout.String())
	}
	build := "pinned to build " + durable.BuildID(durable.RulesVersion) + " of deployment " + durable.DeploymentName("strand")
	if res.Cause != causeUnknown || !strings.Contains(res.Boundary, build) {
		t.Errorf("result %+v, want cause unknown and a boundary that says %q", res, build)
	}
	if !strings.Contains(stderr.String(), build) {
		t.Errorf("stderr does not say %q:\n%s", build, stderr.String())
	}
}

// startStoppableWorker is startWorker with its stop: it returns once the
// worker serves, and stop returns once it has stopped. flags are the
// worker's own beyond its server, queue, tools and journal.
func startStoppableWorker(t *testing.T, ts *temporaltest.TestServer, queue, toolsYAML string, flags ...string) (stop func()) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(path, []byte(toolsYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	stderr := &syncBuffer{}
	wg.Go(func() {
		err := run(ctx, append([]string{"worker", "--address", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace(),
			"--task-queue", queue, "--tools", path, "--journal", filepath.Join(t.TempDir(), "orphans.jsonl")}, flags...), nil, &syncBuffer{}, stderr)
		if err != nil && ctx.Err() == nil {
			t.Errorf("worker: %v\n%s", err, stderr)
		}
	})
	stop = sync.OnceFunc(func() { cancel(); wg.Wait() })
	t.Cleanup(stop)
	within(t, 30*time.Second, "worker serving", func() bool { return strings.Contains(stderr.String(), "serving task queue") })
	return stop
}

// With --log-format json the error `run` ends with is one JSON line on
// its stderr, written once, and its exit code is the error's.
func TestRunInJSONModeEndsWithItsErrorAsOneJSONLine(t *testing.T) {
	var stdout, stderr syncBuffer
	err := run(t.Context(), []string{"run", "--address", "127.0.0.1:1", "--budget", "2s", "--timer-resolution", "10ms", "--log-format", "json", "--profile", "off", "task"},
		strings.NewReader(""), &stdout, &stderr)
	if code := exitCode(err, &stderr); code != exitFailed {
		t.Fatalf("exit %d (%v), want %d", code, err, exitFailed)
	}
	if n := countJSON(t, stderr.String(), "harness-temporal: cannot reach Temporal"); n != 1 || strings.Count(stderr.String(), "\n") != 1 {
		t.Errorf("want the error as one JSON line, alone:\n%s", stderr.String())
	}
}
