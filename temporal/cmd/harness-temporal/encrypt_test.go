package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.temporal.io/server/temporaltest"
)

// keyFile writes a key file of mode 0600 holding body.
func keyFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "glidepath.key")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A worker and a run that share --encrypt-key complete a run. A run with
// no key or another, or a worker with another, is refused before it
// starts, naming both keys: carried out, its task would be in clear and
// its writes made, and its result unreadable.
func TestAQueueSharesOneKeyAndAProcessWithAnotherIsRefusedBeforeItStarts(t *testing.T) {
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	key := keyFile(t, strings.Repeat("5a", 32)+"\n")
	other := keyFile(t, strings.Repeat("a5", 32)+"\n")
	conn := []string{"--address", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace(), "--task-queue", "sealed"}
	worker := func(ctx context.Context, key string, out *syncBuffer) error {
		args := append(append([]string{"worker"}, conn...), "--encrypt-key", key, "--journal", filepath.Join(t.TempDir(), "orphans.jsonl"))
		return run(ctx, args, nil, out, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var wout syncBuffer
	wg.Go(func() {
		if err := worker(ctx, key, &wout); err != nil && ctx.Err() == nil {
			t.Errorf("worker: %v\n%s", err, wout.String())
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })

	var stdout, stderr syncBuffer
	err := run(t.Context(), append(append([]string{"run"}, conn...), "--encrypt-key", key, "--budget", "20s", "a sealed task"), nil, &stdout, &stderr)
	if code := exitCode(err, &stderr); code != exitOK {
		t.Fatalf("with the key: exit %d: %v\n%s", code, err, stderr.String())
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"a run with no key", append(append([]string{"run"}, conn...), "--budget", "20s", "a task in clear"), []string{"is key ", "this process's is none"}},
		{"a run with another key", append(append([]string{"run"}, conn...), "--encrypt-key", other, "--budget", "20s", "a task"), []string{"is key ", "this process's is key "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr syncBuffer
			err := run(t.Context(), tc.args, nil, &stdout, &stderr)
			code := exitCode(err, &stderr)
			if code != exitUsage || strings.Contains(stderr.String(), "started") {
				t.Fatalf("exit %d, stderr %q: want %d before the run starts", code, stderr.String(), exitUsage)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr %q does not say %q", stderr.String(), w)
				}
			}
		})
	}
	var out2 syncBuffer
	if err := worker(t.Context(), other, &out2); exitCode(err, &out2) != exitUsage || !strings.Contains(out2.String(), "--encrypt-key") {
		t.Errorf("a worker with another key: %v\n%s", err, out2.String())
	}
}

func TestABadKeyFileIsBadUsageThatSaysWhatToDo(t *testing.T) {
	open := keyFile(t, strings.Repeat("5a", 32))
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		key  string
		want string
	}{
		{"a missing key file", filepath.Join(t.TempDir(), "none"), "no such file"},
		{"a key file others may read", open, "chmod 600"},
		{"a key file that is not hex", keyFile(t, "password123"), "openssl rand -hex 32"},
	} {
		for _, cmd := range []string{"run", "worker"} {
			t.Run(cmd+" with "+tc.name, func(t *testing.T) {
				args := []string{cmd, "--address", "127.0.0.1:1", "--encrypt-key", tc.key}
				if cmd == "run" {
					args = append(args, "task")
				} else {
					args = append(args, "--journal", filepath.Join(t.TempDir(), "orphans.jsonl"))
				}
				var stdout, stderr syncBuffer
				err := run(t.Context(), args, strings.NewReader(""), &stdout, &stderr)
				if code := exitCode(err, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "--encrypt-key") ||
					!strings.Contains(stderr.String(), tc.want) {
					t.Errorf("exit %d, stderr %q: want %d saying --encrypt-key and %q", code, stderr.String(), exitUsage, tc.want)
				}
			})
		}
	}
}
