package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// The demo drives real processes on real sockets, out of synctest's
// sight: these tests build the binaries make temporal-demo builds, run the
// demo as make does, and assert what it says and what it leaves behind.

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binaries builds harness, toolserver and harness-temporal once for the
// package's tests, into a folder removed when they end (TestMain).
func binaries(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds three binaries and runs a Temporal server: not in -short")
	}
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "temporal-demo-test-")
		if buildErr != nil {
			return
		}
		for _, b := range []struct{ dir, pkg string }{
			{"../../..", "./cmd/harness"},
			{"../../..", "./examples/toolserver"},
			{"../..", "./cmd/harness-temporal"},
		} {
			cmd := exec.Command("go", "build", "-o", binDir+string(filepath.Separator), b.pkg)
			cmd.Dir = b.dir
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", b.pkg, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// toolsAt writes the demo's tools file with its tool server at addr.
func toolsAt(t *testing.T, addr string) string {
	t.Helper()
	data, err := os.ReadFile("../../../examples/temporal/tools.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(path, bytes.ReplaceAll(data, []byte("127.0.0.1:8094"), []byte(addr)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

var dataDir = regexp.MustCompile(`its data in (\S+)`)

// assertStopped checks that the demo left no dev data folder behind and
// that no process of bin is still running.
func assertStopped(t *testing.T, out, bin string) {
	t.Helper()
	m := dataDir.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the demo named no data folder:\n%s", out)
	}
	if _, err := os.Stat(m[1]); !os.IsNotExist(err) {
		t.Errorf("dev's data folder %s is still there: %v", m[1], err)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/exe")
	for _, exe := range procs {
		if target, err := os.Readlink(exe); err == nil && strings.HasPrefix(target, bin) {
			t.Errorf("%s is still running (%s)", target, exe)
		}
	}
}

// The demo's point, end to end: worker A dies with the payment in flight,
// worker B completes the run by its deadline, the payment is committed
// once, and everything the demo started is stopped.
func TestAWorkerKilledMidPaymentLeavesTheRunToAnotherThatPaysOnce(t *testing.T) {
	bin := binaries(t)
	var out bytes.Buffer
	err := run(t.Context(), []string{"--bin", bin, "--tools", toolsAt(t, freeAddr(t))}, &syncWriter{w: &out})
	if err != nil {
		t.Fatalf("the demo failed: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"the payment is in flight on worker A",
		"worker A killed with SIGKILL",
		"Temporal saw worker A die: the payment's activity on A (",
		") ended by its heartbeat timeout",
		"took the run over and completed it",
		"by its original deadline",
		"committed once (the tool server: key gp_",
		"its commit #1)",
		"1 run: 1 complete, 0 partial",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the demo did not say %q:\n%s", want, out.String())
		}
	}
	assertStopped(t, out.String(), bin)
}

// A tool server that cannot listen fails the demo with its reason, and
// the demo still stops what it had started.
func TestTheDemoFailsWithTheReasonAndStopsWhatItStartedWhenTheToolServerCannotListen(t *testing.T) {
	bin := binaries(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	var out bytes.Buffer
	err = run(context.Background(), []string{"--bin", bin, "--tools", toolsAt(t, taken.Addr().String())}, &syncWriter{w: &out})
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("the demo returned %v, want the tool server's address already in use\n%s", err, out.String())
	}
	assertStopped(t, out.String(), bin)
}

func TestBadUsageIsAUsageError(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"an argument", []string{"extra"}, `unexpected argument "extra"`},
		{"a zero budget", []string{"--budget", "0s"}, "--budget must be positive"},
		{"a tools file without commit", []string{"--tools", writeFile(t, "tools:\n  - name: search\n    builtin: search\n")}, "no commit tool with a url"},
		{"no binaries", []string{"--bin", t.TempDir(), "--tools", "../../../examples/temporal/tools.yaml"}, "build it first"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := run(t.Context(), tc.args, &bytes.Buffer{})
			if _, ok := err.(usageError); !ok || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run(%q) = %v, want a usage error saying %q", tc.args, err, tc.want)
			}
		})
	}
}

func writeFile(t *testing.T, content string) string {
	path := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// syncWriter is a writer the demo's output goroutines and the test share.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
