package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/mcp"
)

// harnessDir, in the environment, makes this test binary a harness that
// connects to a stdio server and waits to be killed.
const harnessDir = "GLIDEPATH_MCP_TEST_HARNESS_DIR"

// A harness killed with SIGKILL runs no Close: its stdio server, which
// never answers, must die with it all the same (Pdeathsig), not linger as
// an orphan. Real processes: bounded generously.
func TestAStdioServerDiesWithAHarnessThatIsKilled(t *testing.T) {
	if dir := os.Getenv(harnessDir); dir != "" {
		beHarness(dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestAStdioServerDiesWithAHarnessThatIsKilled$")
	cmd.Env = append(os.Environ(), harnessDir+"="+dir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()

	pidFile := filepath.Join(dir, "pid")
	var server int
	for deadline := time.Now().Add(patience); server == 0; time.Sleep(10 * time.Millisecond) { // polling another process: no event to wait on
		if data, err := os.ReadFile(pidFile); err == nil {
			server, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		}
		if time.Now().After(deadline) {
			t.Fatalf("the harness started no server within %v", patience)
		}
	}
	defer syscall.Kill(-server, syscall.SIGKILL) // whatever happens, nothing of it outlives the test

	cmd.Process.Kill()
	cmd.Wait()

	for deadline := time.Now().Add(10 * time.Second); alive(server); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the server %d outlived its harness by 10s", server)
		}
	}
}

// beHarness connects to a server that writes its pid and never answers,
// and waits in Connect until the process is killed.
func beHarness(dir string) {
	script := filepath.Join(dir, "server.sh")
	pid := filepath.Join(dir, "pid")
	src := fmt.Sprintf("#!/bin/sh\necho $$ > %q.tmp && mv %q.tmp %q\nexec sleep 1000\n", pid, pid, pid)
	if err := os.WriteFile(script, []byte(src), 0o755); err != nil {
		panic(err)
	}
	mcp.Connect(context.Background(), tools.MCPServer{Name: "mute", Command: script, ConnectTimeout: patience}, mcp.Options{})
	panic("Connect returned before the harness was killed")
}

// alive reports whether pid is a process that has not died: a zombie,
// which a container's init may never reap, is dead.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state …: comm may hold spaces, the state follows its ")".
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}
