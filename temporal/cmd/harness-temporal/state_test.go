package main

import (
	"fmt"
	"os"
	"testing"
)

// TestMain keeps what the tests' runs write by default (the latency
// profile `run` adds to without --profile, a worker's default journal)
// in a folder of their own, never in the user's state folder.
func TestMain(m *testing.M) {
	os.Exit(withStateHome(m))
}

func withStateHome(m *testing.M) int {
	dir, err := os.MkdirTemp("", "harness-temporal-test-state-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	os.Setenv("XDG_STATE_HOME", dir)
	return m.Run()
}
