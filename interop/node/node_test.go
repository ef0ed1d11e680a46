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
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"
)

// patience bounds the whole: the build, npm ci, the sim's start and the
// Node tests. It takes seconds when the build cache is warm.
const patience = 2 * time.Minute

func TestTheOpenAINodeSDKAgainstSimServe(t *testing.T) {
	node := need(t, "node")
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	installed(ctx, t)
	base := startSim(ctx, t, buildHarness(ctx, t))

	cmd := exec.CommandContext(ctx, node, "--test", "sdk.test.mjs")
	cmd.Env = append(os.Environ(), "SIM_BASE_URL="+base, "NO_COLOR=1")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start).Round(time.Millisecond)
	if err != nil {
		t.Fatalf("node --test sdk.test.mjs against %s: %v after %v\n%s", base, err, took, out)
	}
	t.Logf("node --test sdk.test.mjs passed in %v\n%s", took, out)
}

// need finds a command on PATH. Missing, it skips the test, or fails it
// when CI is "true".
func need(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not on PATH, and CI=true: install Node.js and npm (.ci/run does)", name)
	}
	t.Skipf("%s is not on PATH: Node.js and npm are missing, so the OpenAI Node SDK interop test is skipped (with CI=true it fails)", name)
	return ""
}

// installed makes sure node_modules holds what package-lock.json pins,
// running npm ci when it does not.
func installed(ctx context.Context, t *testing.T) {
	t.Helper()
	stale, err := staleModules()
	if err != nil {
		t.Fatal(err)
	}
	if stale == "" {
		return
	}
	npm := need(t, "npm")
	t.Logf("running npm ci: %s", stale)
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci: %v\n%s", err, out)
	}
	if stale, err := staleModules(); err != nil || stale != "" {
		t.Fatalf("after npm ci: %s %v", stale, err)
	}
}

// staleModules compares each package that package-lock.json pins with the
// one installed: it names one missing or of another version, or returns
// "" when all are as pinned.
func staleModules() (string, error) {
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	b, err := os.ReadFile("package-lock.json")
	if err == nil {
		err = json.Unmarshal(b, &lock)
	}
	if err != nil {
		return "", fmt.Errorf("reading package-lock.json: %w", err)
	}
	for path, p := range lock.Packages {
		if !strings.HasPrefix(path, "node_modules/") {
			continue
		}
		var got struct {
			Version string `json:"version"`
		}
		b, err := os.ReadFile(filepath.Join(path, "package.json"))
		if err == nil {
			err = json.Unmarshal(b, &got)
		}
		if err != nil || got.Version != p.Version {
			return fmt.Sprintf("%s is not installed at %s", path, p.Version), nil
		}
	}
	return "", nil
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

// startSim runs `harness sim serve` on a free loopback port (port 0) and
// returns the base URL its log names. When the test ends the sim is
// interrupted and waited for, and its log is shown if the test failed.
func startSim(ctx context.Context, t *testing.T, harness string) string {
	t.Helper()
	cmd := exec.Command(harness, "sim", "serve", "--addr", "127.0.0.1:0")
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
