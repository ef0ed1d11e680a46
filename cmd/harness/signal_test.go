package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/trace"
)

// TestMain lets a test run this package's main in a child process: the
// real binary, with real signals.
func TestMain(m *testing.M) {
	if os.Getenv("GLIDEPATH_RUN_MAIN") == "1" {
		os.Args = append([]string{"harness"}, strings.Fields(os.Getenv("GLIDEPATH_ARGS"))...)
		main()
	}
	// The runs made in this process keep their journal and latency profile
	// here, not in the user's state folder: the user's history must not
	// refuse a test's calls, nor a test's fill the user's.
	state, err := os.MkdirTemp("", "glidepath-test-state-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", state)
	code := m.Run()
	os.RemoveAll(state)
	os.Exit(code)
}

// TestCtrlCLandsARealRunWithCauseCancelled runs `harness run` as a process
// whose only tool sleeps for a minute, waits until the tool has started (it
// writes its pid into a FIFO the test reads), sends SIGINT, and expects a
// labeled partial result with cause cancelled, exit code 3, the tool shown
// in flight on the live status line, and no sleep left behind. Real process
// and clock: it asserts order and outcome, bounded generously.
func TestCtrlCLandsARealRunWithCauseCancelled(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tools.yaml")
	pidFile := filepath.Join(dir, "pid")
	if err := syscall.Mkfifo(pidFile, 0o600); err != nil {
		t.Fatal(err)
	}
	err := os.WriteFile(cfg, []byte(`tools:
  - name: crawl
    description: crawl slowly
    parameters: {"type":"object","properties":{"site":{"type":"string"}},"required":["site"]}
    effect: read
    ceiling: 60s
    command: ["sh", "-c", "echo $$ > `+pidFile+`; exec sleep 60"]
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GLIDEPATH_RUN_MAIN=1",
		"GLIDEPATH_ARGS=run --budget 60s --progress always --tools "+cfg+" crawl-it")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var stderrText bytes.Buffer
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		stderrText.ReadFrom(stderr)
	}()
	// Opening the FIFO blocks until the tool opens it to write its pid: the
	// tool is running when this returns.
	type read struct {
		data []byte
		err  error
	}
	started := make(chan read, 1)
	go func() {
		data, err := os.ReadFile(pidFile)
		started <- read{data, err}
	}()
	var data []byte
	select {
	case r := <-started:
		if r.err != nil {
			t.Fatal(r.err)
		}
		data = r.data
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		os.WriteFile(pidFile, nil, 0o600) // releases the reader
		t.Fatal("the tool did not start within 30s")
	}
	var pid int
	if _, err := fmt.Sscan(string(data), &pid); err != nil {
		t.Fatalf("pid %q: %v", data, err)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err = <-waited:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("harness run did not end within 30s of SIGINT")
	}
	<-copied
	rest := &stderrText
	if !strings.Contains(rest.String(), "tool:crawl") {
		t.Errorf("the status line never showed the tool in flight; stderr:\n%s", rest.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != exitPartial {
		t.Fatalf("exit code %d (%v), want %d\nstdout: %s\nstderr: %s", code, err, exitPartial, stdout.String(), rest.String())
	}
	if !strings.HasPrefix(stdout.String(), "PARTIAL RESULT. Cancelled at step 1: crawl was in flight") {
		t.Errorf("stdout does not lead with the boundary:\n%s", stdout.String())
	}
	if !strings.Contains(rest.String(), "cause cancelled") {
		t.Errorf("stderr lacks the cause:\n%s", rest.String())
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("the tool's process %d is still alive after the run ended", pid)
	}
}

// TestARunWhoseToolAndItsCancelHangEndsInsideItsBudget runs `harness run`
// as a process against a tool server whose POST and DELETE both hang, with
// B = 5s: the process must end within B + 50ms of the budget's start
// (SPEC §7), which the trace's first record locates, and the trace must
// show the landing call and the cancel as sent and as settled.
func TestARunWhoseToolAndItsCancelHangEndsInsideItsBudget(t *testing.T) {
	hung := func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tools/crawl", hung)
	mux.HandleFunc("DELETE /tools/crawl/calls/{key}", hung)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	dir := t.TempDir()
	cfg, tracePath := filepath.Join(dir, "tools.yaml"), filepath.Join(dir, "trace.jsonl")
	err := os.WriteFile(cfg, []byte("tools:\n  - name: crawl\n    url: "+srv.URL+
		"\n    effect: read\n    cancellable: true\n    max_attempts: 1\n"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// Under -race the runtime sleeps 1s at exit unless told not to: that
	// second is not the run's.
	cmd.Env = append(os.Environ(), "GLIDEPATH_RUN_MAIN=1", "GORACE=atexit_sleep_ms=0",
		"GLIDEPATH_ARGS=run --budget 5s --json --trace "+tracePath+" --tools "+cfg+" crawl-it")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	ended := time.Now()
	if code := cmd.ProcessState.ExitCode(); code != exitPartial {
		t.Fatalf("exit %d (%v), want %d\nstdout: %s\nstderr: %s", code, err, exitPartial, stdout.String(), stderr.String())
	}
	recs := readTrace(t, tracePath)
	began := recs[0].TS.Add(-time.Duration(recs[0].ElapsedMs) * time.Millisecond)
	took := ended.Sub(began)
	if took > 5*time.Second+50*time.Millisecond {
		t.Errorf("the process ended %v after its budget began, past B + 50ms", took)
	}
	t.Logf("the process ended %v after its budget began (B = 5s)", took)
	var events []string
	for _, r := range recs {
		switch {
		case r.Event == trace.CancelSent:
			events = append(events, "cancel "+r.State)
		case r.Event == trace.Landing:
			events = append(events, "landing by "+r.Result)
		}
	}
	// The cancel never answers: once the landing summary exists it gets
	// its grace (SPEC §3) and stays "sent", with no second record.
	if want := "cancel sent, landing by model"; strings.Join(events, ", ") != want {
		t.Errorf("trace shows %q, want %q", strings.Join(events, ", "), want)
	}
	// Its grace, then the process's exit: on a machine busy with other
	// tests (CI runs packages side by side under -race) that exit took up
	// to 85ms past the grace; a process that waited for the hung cancel
	// would end seconds later, at its budget.
	for _, r := range recs {
		if r.Event == trace.Landing && ended.Sub(r.TS) > harness.CancelGrace+400*time.Millisecond {
			t.Errorf("the process ended %v after its landing summary, past its grace", ended.Sub(r.TS))
		}
	}
	var res landing.Result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if res.Cause != landing.CauseBudget || res.Budget.TotalMs != 5000 || len(res.InFlight) != 1 {
		t.Errorf("result %+v", res)
	}
}

// The trace is written as the run goes (issue 24): a process that dies
// mid-run, by a second Ctrl-C or by SIGKILL, leaves every record up to
// that instant, and harness report reads it. The model and the landing
// call both hang; each signal is sent once the request it must interrupt
// has reached the model's server, so the attempt_start recorded before
// that request was sent must be in the file. Real process and clock:
// bounded generously, asserting order and outcome.
func TestE2EADeadRunLeavesItsTraceUpToItsDeath(t *testing.T) {
	cases := []struct {
		name     string
		signals  []syscall.Signal // each sent once the model's server has seen one more request
		wantCode int
		wantLast int    // the step_index of the last record, an attempt_start of the model: 1 its first turn, 0 the landing call
		wantEnd  string // an event the trace must hold before that last record
	}{
		{"Ctrl-C twice, the second in the landing call", []syscall.Signal{syscall.SIGINT, syscall.SIGINT}, exitInterrupted, 0, "attempt_end cancelled"},
		{"SIGKILL in the first model turn", []syscall.Signal{syscall.SIGKILL}, -1, 1, "run_start"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := sim.NewServer(&sim.Scenario{Rules: []sim.Rule{{Hang: true}}})
			defer srv.Close()
			trc := filepath.Join(t.TempDir(), "trace.jsonl")
			cmd := harnessCmd(t, nil, "run", "--model", "gpt-4.1", "--base-url", srv.URL, "--budget", "60s", "--quiet", "1h", "--trace", trc, "q")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill() // if the test fails before its signals
			for i, sig := range tc.signals {
				waitFor(t, func() bool { return len(srv.Requests()) > i })
				if err := cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
			}
			cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.wantCode, &stdout, &stderr)
			}

			recs := readTrace(t, trc)
			var events []string
			for i, r := range recs {
				if r.Seq != int64(i+1) {
					t.Fatalf("trace line %d has seq %d: records were lost", i+1, r.Seq)
				}
				ev := string(r.Event)
				if r.Event == trace.AttemptEnd {
					ev += " " + string(r.Outcome)
				}
				events = append(events, ev)
			}
			if len(recs) < 2 || recs[0].Event != trace.RunStart {
				t.Fatalf("trace %q, want run_start and what followed", events)
			}
			last := recs[len(recs)-1]
			if last.Event != trace.AttemptStart || last.Step != "model" || last.StepIndex != tc.wantLast {
				t.Errorf("trace %q ends in %+v, want the model's attempt_start of step %d, the request that hung", events, last, tc.wantLast)
			}
			if !slices.Contains(events, tc.wantEnd) {
				t.Errorf("trace %q, want %q in it", events, tc.wantEnd)
			}
			for _, r := range recs {
				if r.Event == trace.RunEnd {
					t.Errorf("trace %q has a run_end: the run was not killed mid-run", events)
				}
			}

			out, errOut, code := runHarness(t, nil, "report", trc)
			if code != exitOK || !strings.HasPrefix(out, "1 run: 0 complete, 0 partial, 1 unfinished (no run_end)") || errOut != "" {
				t.Errorf("harness report: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
		})
	}
}
