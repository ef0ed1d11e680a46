package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets a test run this package's main in a child process: the
// real binary, with real signals.
func TestMain(m *testing.M) {
	if os.Getenv("GLIDEPATH_RUN_MAIN") == "1" {
		os.Args = append([]string{"harness"}, strings.Fields(os.Getenv("GLIDEPATH_ARGS"))...)
		main()
	}
	os.Exit(m.Run())
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
