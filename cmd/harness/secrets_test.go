package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/glidepath/glidepath/trace/logs"
)

// An MCP server's stderr comes through a pipe in pieces that need not end
// at a line, nor after a secret: each line is scrubbed whole (issue 24).
func TestAServersStderrIsShownLineByLineScrubbed(t *testing.T) {
	const key = "my-own-secret-value-1234"
	cases := []struct {
		name   string
		pieces []string
		want   string // what stderr shows once the servers are stopped
	}{
		{"a key cut between two writes", []string{"starting with my-own-sec", "ret-value-1234\nready\n"},
			"starting with [redacted]\nready\n"},
		{"an sk- key cut between three writes", []string{"token sk-te", "st-abcdef", "ghij\n"}, "token sk-[redacted]\n"},
		{"a last line without its newline, shown at Close", []string{"bye " + key}, "bye [redacted]\n"},
		{"blank lines and CRLF", []string{"\r\n\n a\r\n"}, " a\n"},
		{"a line without end, shown once it is too long to hold", []string{strings.Repeat("x", maxServerLine+10), "yy\n"},
			strings.Repeat("x", maxServerLine+10) + "\nyy\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			s := &serverLines{w: &out, secrets: []string{key}}
			for _, p := range tc.pieces {
				if n, err := s.Write([]byte(p)); n != len(p) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			s.Close()
			if got := out.String(); got != tc.want {
				t.Errorf("stderr shows %.200q (%d bytes), want %.200q (%d bytes)", got, len(got), tc.want, len(tc.want))
			}
		})
	}
}

// With --log-format json a server's lines reach stderr as the run's own
// do: one JSON object a line, scrubbed.
func TestAServersStderrIsOneJSONObjectALineInJSONMode(t *testing.T) {
	const key = "my-own-secret-value-1234"
	var out bytes.Buffer
	s := &serverLines{w: logs.NewLines(&out, key), secrets: []string{key}}
	s.Write([]byte("npm warn: using " + key + "\nplain {not json}\nhalf"))
	s.Close()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := []string{"npm warn: using [redacted]", "plain {not json}", "half"}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i, line := range lines {
		var m struct{ Message string }
		if err := json.Unmarshal([]byte(line), &m); err != nil || m.Message != want[i] {
			t.Errorf("line %d %q (%v), want a JSON object with message %q", i, line, err, want[i])
		}
	}
}

// In text mode every write to stderr is scrubbed, and the terminal under
// it is still found: the live line and colours depend on it.
func TestTextStderrIsScrubbedAndKeepsItsFile(t *testing.T) {
	var out bytes.Buffer
	r := &redacting{w: &out, secrets: []string{"my-own-secret-value-1234"}}
	p := "harness run: warning: tool x: my-own-secret-value-1234 and sk-abcdefgh12345\n"
	if n, err := r.Write([]byte(p)); n != len(p) || err != nil {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(p))
	}
	if got, want := out.String(), "harness run: warning: tool x: [redacted] and sk-[redacted]\n"; got != want {
		t.Errorf("stderr shows %q, want %q", got, want)
	}
	f := t.TempDir() + "/stderr"
	file, err := os.Create(f)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if got, ok := fileOf(&redacting{w: file}); !ok || got != file {
		t.Errorf("fileOf = %v, %v; want the file under the redacting writer", got, ok)
	}
	if _, ok := fileOf(r); ok {
		t.Error("fileOf found a file under a buffer")
	}
}
