package main

import (
	"strings"
	"testing"

	"go.temporal.io/server/temporaltest"
)

// The result `run` prints is scrubbed of key-shaped strings as `harness
// run`'s is: the sim's answer repeats its task, and a key in the task was
// printed in clear, in text and in --json (issue 26's review).
func TestTheResultRunPrintsCarriesNoKey(t *testing.T) {
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	const queue = "secrets"
	startWorker(t, ts, queue, "tools:\n  - name: search\n    builtin: search\n")
	const key = "sk-proj-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	for _, format := range [][]string{nil, {"--json"}} {
		var stdout, stderr syncBuffer
		args := runArgs(ts, queue, append(format, "--budget", "20s", "--profile", "off", "use key "+key+" to find cats")...)
		err := run(t.Context(), args, strings.NewReader(""), &stdout, &stderr)
		if code := exitCode(err, &stderr); code != 0 {
			t.Fatalf("%v: exit %d (%v)\n%s", format, code, err, stderr.String())
		}
		if !strings.Contains(stdout.String(), "cats") {
			t.Fatalf("%v: the answer does not repeat the task, so this test shows nothing:\n%s", format, stdout.String())
		}
		if strings.Contains(stdout.String()+stderr.String(), key) {
			t.Errorf("%v: the key is printed in clear:\n%s\n%s", format, stdout.String(), stderr.String())
		}
	}
}
