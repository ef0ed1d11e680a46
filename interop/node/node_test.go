// Package node_test drives `harness sim serve` with the official OpenAI
// Node SDK: it builds the harness command, starts the sim on a free
// loopback port, and runs sdk.test.mjs against it with node --test.
//
// It needs node (20 or later) on PATH, and npm when node_modules is
// missing or does not hold the versions package-lock.json pins (then it
// runs npm ci, which needs the npm registry; .ci/run runs npm ci first).
// Without node it skips, unless CI is "true": in CI a missing node is a
// failure, so the check cannot silently stop running.
package node_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glidepath/glidepath/internal/nodetest"
)

// patience bounds the whole: the build, npm ci, the sim's start and the
// Node tests. It takes seconds when the build cache is warm.
const patience = 2 * time.Minute

func TestTheOpenAINodeSDKAgainstSimServe(t *testing.T) {
	node := nodetest.Need(t, "node", "the OpenAI Node SDK interop test")
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	nodetest.Install(t, ".", "the OpenAI Node SDK interop test")
	harness := buildHarness(ctx, t)
	base := startSim(ctx, t, harness)
	// A second sim, whose scenario fails the Responses API's answers
	// by the turn of the conversation sent, for the SDK's errors.
	faults := startSim(ctx, t, harness, "--scenario", "faults.yaml")

	cmd := exec.CommandContext(ctx, node, "--test", "sdk.test.mjs")
	cmd.Env = append(os.Environ(), "SIM_BASE_URL="+base, "SIM_FAULTS_BASE_URL="+faults, "NO_COLOR=1")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start).Round(time.Millisecond)
	if err != nil {
		t.Fatalf("node --test sdk.test.mjs against %s: %v after %v\n%s", base, err, took, out)
	}
	t.Logf("node --test sdk.test.mjs passed in %v\n%s", took, out)
}

// buildHarness builds the harness command into the test's directory,
// with -race when this test was built with it: then the build reuses the
// packages `go test -race ./...` compiles anyway, and costs seconds.
func buildHarness(ctx context.Context, t *testing.T) string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is not on PATH, to build the harness command: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "harness")
	args := []string{"build", "-o", bin}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "-race" && s.Value == "true" {
				args = append(args, "-race")
			}
		}
	}
	cmd := exec.CommandContext(ctx, goCmd, append(args, "github.com/glidepath/glidepath/cmd/harness")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/harness: %v\n%s", err, out)
	}
	return bin
}

// startSim runs `harness sim serve` on a free loopback port (port 0), with
// args after, and returns the base URL its log names. When the test ends the sim is
// interrupted and waited for, and its log is shown if the test failed.
func startSim(ctx context.Context, t *testing.T, harness string, args ...string) string {
	t.Helper()
	cmd := exec.Command(harness, append([]string{"sim", "serve", "--addr", "127.0.0.1:0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var (
		mu  sync.Mutex // guards log
		log strings.Builder
	)
	listening := make(chan string, 1) // the base URL, once
	read := make(chan struct{})       // closed when stderr is read to its end
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			log.WriteString(line + "\n")
			mu.Unlock()
			if base, ok := strings.CutPrefix(line, "sim: listening on "); ok {
				select {
				case listening <- base:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		// Wait only once stderr is read to its end, as os/exec asks.
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-read:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-read
		}
		cmd.Wait()
		if t.Failed() {
			mu.Lock()
			defer mu.Unlock()
			t.Logf("harness sim serve said:\n%s", log.String())
		}
	})
	select {
	case base := <-listening:
		return base
	case <-read:
		t.Fatal("harness sim serve ended without saying where it listens")
	case <-ctx.Done():
		t.Fatalf("harness sim serve did not say where it listens: %v", context.Cause(ctx))
	}
	return ""
}
