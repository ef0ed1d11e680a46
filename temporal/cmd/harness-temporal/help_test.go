package main

import (
	"strings"
	"testing"
)

// Asking a command for its help is not bad usage: it prints the flags and
// exits 0, and a flag the command does not know still exits 2.
func TestHelpExitsZeroAndAnUnknownFlagTwo(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "--help"}, exitOK, "-budget"},
		{[]string{"worker", "-h"}, exitOK, "-tools"},
		{[]string{"status", "--help"}, exitOK, "-json"},
		{[]string{"land", "-h"}, exitOK, "-address"},
		{[]string{"status", "--address", "127.0.0.1:1"}, exitUsage, "workflow ID"},
		{[]string{"land", "--address", "127.0.0.1:1", "a", "b"}, exitUsage, "workflow ID"},
		{[]string{"run", "--bogus", "task"}, exitUsage, "-bogus"},
		{[]string{"run", "--address", "127.0.0.1:1", "--quiet", "0s", "task"}, exitUsage, "--quiet"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr syncBuffer
			err := run(t.Context(), tc.args, strings.NewReader(""), &stdout, &stderr)
			if code := exitCode(err, &stderr); code != tc.code {
				t.Fatalf("exit %d (%v), want %d", code, err, tc.code)
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q does not mention %q", stderr.String(), tc.want)
			}
		})
	}
}

// The help names every command, status and land among them.
func TestHelpListsEveryCommand(t *testing.T) {
	var stdout, stderr syncBuffer
	if err := run(t.Context(), []string{"help"}, strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"worker", "run", "status", "land", "dev"} {
		if !strings.Contains(stdout.String(), "harness-temporal "+cmd+" ") {
			t.Errorf("help does not list %s:\n%s", cmd, stdout.String())
		}
	}
}
