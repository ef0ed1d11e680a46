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

// A worker and a run that share --encrypt-key complete a run; a run with
// no key, against that worker, fails with an error that says the result
// is encrypted and under which key, not that an encoding is unknown.
func TestRunsOfWorkersWithAKeyCompleteWithTheKeyAndSayWhatIsMissingWithout(t *testing.T) {
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	key := keyFile(t, strings.Repeat("5a", 32)+"\n")
	conn := []string{"--address", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace(), "--task-queue", "sealed"}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var wout syncBuffer
	wg.Go(func() {
		args := append(append([]string{"worker"}, conn...), "--encrypt-key", key, "--journal", filepath.Join(t.TempDir(), "orphans.jsonl"))
		if err := run(ctx, args, nil, &wout, &wout); err != nil && ctx.Err() == nil {
			t.Errorf("worker: %v\n%s", err, wout.String())
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })

	var stdout, stderr syncBuffer
	err := run(t.Context(), append(append([]string{"run"}, conn...), "--encrypt-key", key, "--budget", "20s", "a sealed task"), nil, &stdout, &stderr)
	if code := exitCode(err, &stderr); code != exitOK {
		t.Fatalf("with the key: exit %d: %v\n%s", code, err, stderr.String())
	}
	stdout, stderr = syncBuffer{}, syncBuffer{}
	err = run(t.Context(), append(append([]string{"run"}, conn...), "--budget", "20s", "a task in clear"), nil, &stdout, &stderr)
	if code := exitCode(err, &stderr); code != exitFailed || !strings.Contains(stderr.String(), "encrypted under key") ||
		!strings.Contains(stderr.String(), "no key") {
		t.Errorf("without the key: exit %d, stderr %q", code, stderr.String())
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
