package main

import (
	"strings"
	"testing"
)

func TestRunRefusesANegativeTimerResolution(t *testing.T) {
	var stdout, stderr syncBuffer
	err := run(t.Context(), []string{"run", "--address", "127.0.0.1:1", "--timer-resolution", "-1s", "task"}, strings.NewReader(""), &stdout, &stderr)
	if code := exitCode(err, &stderr); code != exitUsage {
		t.Fatalf("exit %d (%v), want %d", code, err, exitUsage)
	}
	if !strings.Contains(stderr.String(), "--timer-resolution") {
		t.Errorf("stderr %q does not name --timer-resolution", stderr.String())
	}
}
