package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools/kit"
	"github.com/glidepath/glidepath/trace"
)

// End-to-end: each test runs `harness run` as a process (this package's
// main, in a child: see TestMain) against real servers on loopback, and
// reads what a user would: the exit code, stdout, stderr, the trace. Real
// time: the bounds are generous and the assertions are about order and
// outcome.

// harnessCmd is `harness ARGS…` as a child process; no arg may hold a
// space (TestMain splits them on spaces).
func harnessCmd(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	for _, a := range args {
		if strings.ContainsAny(a, " \t\n") {
			t.Fatalf("argument %q holds a space", a)
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), "GLIDEPATH_RUN_MAIN=1", "GLIDEPATH_ARGS="+strings.Join(args, " "),
		"XDG_STATE_HOME="+t.TempDir()), env...)
	return cmd
}

// runHarness runs `harness ARGS…` to its end.
func runHarness(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := harnessCmd(t, env, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func jsonResult(t *testing.T, stdout string) landing.Result {
	t.Helper()
	var res landing.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("stdout is not the JSON result: %v\n%s", err, stdout)
	}
	return res
}

func TestE2EAPaymentWhoseOutcomeIsUnknownIsNotComplete(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tools/pay", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done() // it may have paid; it never says
	})
	mux.HandleFunc("GET /tools/pay/calls/{key}", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"status store down"}}`, http.StatusServiceUnavailable)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	cfg := writeFile(t, "tools.yaml", "tools:\n  - name: pay\n    url: "+srv.URL+"\n    effect: write\n    ceiling: 500ms\n")
	journal := filepath.Join(t.TempDir(), "orphans.jsonl")

	stdout, stderr, code := runHarness(t, nil, "run", "--budget", "20s", "--json", "--journal", journal, "--tools", cfg, "pay-5")

	res := jsonResult(t, stdout)
	if code != exitPartial || res.Status != landing.Partial || res.Cause != landing.CauseUnsettled || !strings.HasPrefix(res.Answer, "[sim] Answer") {
		t.Fatalf("exit %d, result %+v; want 3, partial, unsettled, with the model's answer\nstderr: %s", code, res, stderr)
	}
	if len(res.InFlight) != 1 || res.InFlight[0].State != landing.StateOrphaned || !strings.Contains(res.Boundary, res.InFlight[0].IdempotencyKey) ||
		!strings.Contains(res.Boundary, "harness reconcile") {
		t.Errorf("in flight %+v, boundary %q; want the payment orphaned, named with its key", res.InFlight, res.Boundary)
	}
	if data, err := os.ReadFile(journal); err != nil || !strings.Contains(string(data), res.InFlight[0].IdempotencyKey) {
		t.Errorf("journal %q (%v), want the orphan in it", data, err)
	}
}

func TestE2EAModelThatRefusesTheRunSaysWhyOnStderr(t *testing.T) {
	srv := sim.NewServer(&sim.Scenario{Rules: []sim.Rule{{Status: 401, Message: "Incorrect API key provided"}}})
	defer srv.Close()

	stdout, stderr, code := runHarness(t, []string{"OPENAI_API_KEY=sk-wrong"}, "run", "--model", "gpt-4.1", "--base-url", srv.URL, "q")

	want := "The model failed at step 1: 401 Incorrect API key provided."
	if code != exitPartial || !strings.Contains(stderr, want) || !strings.HasPrefix(stdout, "PARTIAL RESULT. "+want) {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s\nwant 3 and %q on both", code, stdout, stderr, want)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1: no retry of a 401, and no landing call to the endpoint that refused", n)
	}
	if strings.Contains(stdout+stderr, "sk-wrong") {
		t.Error("the API key was printed")
	}
}

func TestE2EABadBaseURLIsBadUsageWithNothingSent(t *testing.T) {
	_, stderr, code := runHarness(t, []string{"OPENAI_API_KEY=x"}, "run", "--model", "gpt-4.1", "--base-url", "127.0.0.1:8089/v1", "q")
	if code != exitUsage || !strings.Contains(stderr, "want an absolute http or https URL") {
		t.Errorf("exit %d, stderr %q; want 2 and what a base URL looks like", code, stderr)
	}
	_, stderr, code = runHarness(t, []string{"OPENAI_API_KEY=", "OPENAI_BASE_URL="}, "run", "--model", "gpt-4.1", "q")
	if code != exitUsage || !strings.Contains(stderr, "set OPENAI_API_KEY") {
		t.Errorf("no key: exit %d, stderr %q; want 2 and how to give one", code, stderr)
	}
}

// --quiet 1s and a Retry-After of 2s: the wait is the run's own choice,
// not silence, so the run completes.
func TestE2EARetryAfterLongerThanTheQuietPeriodCompletes(t *testing.T) {
	srv := sim.NewServer(&sim.Scenario{Rules: []sim.Rule{{Request: 1, Status: 429, RetryAfter: "2"}}})
	defer srv.Close()

	stdout, stderr, code := runHarness(t, nil, "run", "--model", "gpt-4.1", "--base-url", srv.URL, "--quiet", "1s",
		"--budget", "20s", "--json", "q")

	if res := jsonResult(t, stdout); code != exitOK || res.Status != landing.Complete {
		t.Errorf("exit %d, result %+v; want complete\nstderr: %s", code, res, stderr)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2: the 429, then after the wait the answer", n)
	}
}

// B = 8s, R = 2s; the model hangs, the landing call too. The first Ctrl-C
// lands the run now: its landing call gets R at most, so the process ends
// within R of the signal, not within the 7s the budget had left.
func TestE2EAFirstCtrlCLandsWithinTheReserve(t *testing.T) {
	srv := sim.NewServer(&sim.Scenario{Rules: []sim.Rule{{Hang: true}}})
	defer srv.Close()
	trc := filepath.Join(t.TempDir(), "trace.jsonl")
	cmd := harnessCmd(t, nil, "run", "--model", "gpt-4.1", "--base-url", srv.URL, "--budget", "8s", "--quiet", "1h", "--trace", trc, "q")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Signal once the first request is in: the model is being asked.
	deadline := time.Now().Add(30 * time.Second)
	for len(srv.Requests()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polling a real process from outside: no event to wait on
	}
	signalled := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	took := time.Since(signalled)

	// Issue 24: it said "no tool call had finished", of a run with no tools.
	if code := cmd.ProcessState.ExitCode(); code != exitPartial || !strings.Contains(stdout.String(), "PARTIAL RESULT. Cancelled at step 1: the model sent nothing for ") {
		t.Fatalf("exit %d, stdout %q; want a partial result, cancelled while the model sent nothing", code, stdout.String())
	}
	t.Logf("ended %v after the Ctrl-C", took)
	if took > 2*time.Second+time.Second {
		t.Errorf("ended %v after the Ctrl-C, want within R = 2s (and a margin for the process)", took)
	}
	for _, r := range readTrace(t, trc) {
		if r.Event == trace.AttemptStart && r.Step == "model" && r.StepIndex == 0 && r.GrantedMs > 2000 {
			t.Errorf("the landing call was leased %dms, more than R = 2000ms", r.GrantedMs)
		}
	}
}

// A kit tool enforces the lease we sent it and answers when it ends: the
// attempt is ours (gave_up), not theirs.
func TestE2EAKitToolCutByOurLeaseIsOurs(t *testing.T) {
	var k kit.Server
	if err := k.Register(kit.Tool{Name: "fetch", Effect: kit.Read, Handler: func(ctx context.Context, c *kit.Call) (any, error) {
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&k)
	defer func() { srv.Close(); k.Close() }()
	cfg := writeFile(t, "tools.yaml", "tools:\n  - name: fetch\n    url: "+srv.URL+"\n    ceiling: 300ms\n    max_attempts: 1\n")
	trc := filepath.Join(t.TempDir(), "trace.jsonl")

	_, stderr, code := runHarness(t, nil, "run", "--budget", "10s", "--trace", trc, "--tools", cfg, "q")

	// The model answers without fetch's result: partial, tools_failed
	// (issue 24), not complete.
	if code != exitPartial || !strings.Contains(stderr, "(cause tools_failed)") {
		t.Fatalf("exit %d, stderr %s; want 3, tools_failed", code, stderr)
	}
	recs := readTrace(t, trc)
	var outcomes []trace.Outcome
	for _, r := range recs {
		if r.Event == trace.AttemptEnd && r.Step == "tool:fetch" {
			outcomes = append(outcomes, r.Outcome)
		}
	}
	if len(outcomes) != 1 || outcomes[0] != trace.GaveUp {
		t.Errorf("fetch attempts ended %v, want gave_up: our lease ended it, whoever noticed first", outcomes)
	}
}

// --quiet 1s, and a build that takes 2s but says how far it has come on
// fd 3 every 400ms: it is not taken for a stalled one, and it knew its
// lease from its environment.
func TestE2EASubprocessThatReportsProgressOutlivesTheQuietPeriod(t *testing.T) {
	script := `for i in 1 2 3 4 5; do sleep 0.4; echo "{\"units\":$i,\"total\":5}" >&3; done; echo "lease=$GLIDEPATH_BUDGET_REMAINING_MS"`
	cfg := writeFile(t, "tools.yaml", "tools:\n  - name: build\n    effect: read\n    ceiling: 30s\n    command: [sh, -c, "+strconv.Quote(script)+"]\n")

	stdout, stderr, code := runHarness(t, nil, "run", "--budget", "60s", "--quiet", "1s", "--json", "--tools", cfg, "build-it")

	res := jsonResult(t, stdout)
	if code != exitOK || res.Status != landing.Complete || !strings.Contains(res.Answer, "lease=") {
		t.Fatalf("exit %d, result %+v; want complete with the build's output\nstderr: %s", code, res, stderr)
	}
	i := strings.Index(res.Answer, "lease=") + len("lease=")
	j := i
	for j < len(res.Answer) && res.Answer[j] >= '0' && res.Answer[j] <= '9' {
		j++
	}
	if ms, err := strconv.Atoi(res.Answer[i:j]); err != nil || ms <= 25000 || ms > 30000 {
		t.Errorf("the build saw a lease of %q ms, want its 30s ceiling, less what was spent", res.Answer[i:j])
	}
}
