package main

import (
	"bytes"
	"strings"
	"testing"
)

// invocation is one run of the command and what it must print.
type invocation struct {
	args       []string
	stdin      string
	wantCode   int
	wantStdout string   // exact; a usage text is compared by its first line
	wantStderr []string // substrings; nil: standard error must stay empty
}

func (inv invocation) check(t *testing.T) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), inv.args, strings.NewReader(inv.stdin), &stdout, &stderr)
	if code != inv.wantCode {
		t.Errorf("exit code %d, want %d\nstderr:\n%s", code, inv.wantCode, &stderr)
	}
	got := stdout.String()
	if strings.HasPrefix(inv.wantStdout, "usage:") {
		got, _, _ = strings.Cut(got, "\n")
		got += "\n"
	}
	if got != inv.wantStdout {
		t.Errorf("stdout:\n%s\nwant:\n%s", &stdout, inv.wantStdout)
	}
	for _, want := range inv.wantStderr {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not contain %q:\n%s", want, &stderr)
		}
	}
	if inv.wantStderr == nil && stderr.Len() > 0 {
		t.Errorf("unexpected stderr:\n%s", &stderr)
	}
}
