//go:build unix

// Package nodetest is what the tests that drive Node.js programs share:
// finding node and npm, and making sure a folder's node_modules holds
// exactly what its package-lock.json pins. A test that needs node skips
// without it, unless CI is "true": in CI a missing node is a failure, so
// that an interop check cannot silently stop running.
package nodetest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// InstallPatience bounds npm ci, which may download a hundred packages.
const InstallPatience = 5 * time.Minute

// Need finds the command name on PATH. Missing, it skips the test, saying
// that what is skipped — "the OpenAI Node SDK interop test" — needs
// Node.js, or fails it when CI is "true".
func Need(t testing.TB, name, what string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not on PATH, and CI=true: install Node.js and npm (.ci/run does)", name)
	}
	t.Skipf("%s is not on PATH: Node.js and npm are missing, so %s is skipped (with CI=true it fails)", name, what)
	return ""
}

// Install makes sure dir/node_modules holds what dir/package-lock.json
// pins, running npm ci in dir when it does not. It holds an exclusive
// flock on package-lock.json meanwhile, which other test binaries calling
// Install also take; npm ignores it (advisory), and npm ci never writes
// that file.
func Install(t testing.TB, dir, what string) {
	t.Helper()
	lockfile := filepath.Join(dir, "package-lock.json")
	f, err := os.Open(lockfile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() // drops the lock, also when t.Fatal ends the goroutine
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		t.Fatalf("locking %s: %v", lockfile, err)
	}
	stale, err := Stale(dir)
	if err != nil {
		t.Fatal(err)
	}
	if stale == "" {
		return
	}
	npm := Need(t, "npm", what)
	t.Logf("running npm ci in %s: %s", dir, stale)
	ctx, cancel := context.WithTimeout(context.Background(), InstallPatience)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
	if stale, err := Stale(dir); err != nil || stale != "" {
		t.Fatalf("after npm ci in %s: %s %v", dir, stale, err)
	}
}

// Stale compares each package that dir/package-lock.json pins with the
// one installed: it names one missing or of another version, or returns
// "" when all are as pinned.
func Stale(dir string) (string, error) {
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if err := readJSON(filepath.Join(dir, "package-lock.json"), &lock); err != nil {
		return "", err
	}
	for path, p := range lock.Packages {
		if !strings.HasPrefix(path, "node_modules/") {
			continue
		}
		var got struct {
			Version string `json:"version"`
		}
		if err := readJSON(filepath.Join(dir, path, "package.json"), &got); err != nil || got.Version != p.Version {
			return fmt.Sprintf("%s is not installed at %s", path, p.Version), nil
		}
	}
	return "", nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
