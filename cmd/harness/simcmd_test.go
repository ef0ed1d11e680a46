package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSimServeAnswersAStreamingCompletionAndStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	code := make(chan int, 1)
	go func() {
		defer pw.Close()
		code <- run(ctx, []string{"sim", "serve", "--addr", "127.0.0.1:0"}, strings.NewReader(""), io.Discard, pw)
	}()
	lines := bufio.NewScanner(pr)
	if !lines.Scan() {
		t.Fatalf("no first line from sim serve: %v", lines.Err())
	}
	first := lines.Text()
	base, ok := strings.CutPrefix(first, "sim: listening on ")
	if !ok {
		t.Fatalf("first line %q does not name the URL", first)
	}
	go io.Copy(io.Discard, pr) // the request log

	body := `{"model":"sim","stream":true,"messages":[{"role":"user","content":"What is the capital of France?"}]}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("content type %q", ct)
	}
	for _, want := range []string{`"object":"chat.completion.chunk"`, `"model":"sim"`, `"finish_reason":"stop"`, "data: [DONE]"} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("stream lacks %s:\n%s", want, data)
		}
	}

	cancel()
	select {
	case c := <-code:
		if c != exitOK {
			t.Errorf("exit code %d after cancel, want 0", c)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("sim serve did not stop within 30s of its context ending")
	}
}

func TestSimServeRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("rules:\n  - request: 1\n    delay: 5x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"a bad scenario names the field and line", []string{"sim", "serve", "--scenario", bad}, exitUsage, "bad.yaml:3: rules[0].delay"},
		{"a missing scenario file", []string{"sim", "serve", "--scenario", filepath.Join(dir, "none.yaml")}, exitUsage, "none.yaml"},
		{"no subcommand", []string{"sim"}, exitUsage, `the only sim command is "serve"`},
		{"an unknown subcommand", []string{"sim", "run"}, exitUsage, "try: harness sim --help"},
		{"an extra argument", []string{"sim", "serve", "x"}, exitUsage, `unexpected argument "x"`},
		{"help", []string{"sim", "--help"}, exitOK, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			got := run(t.Context(), tc.args, strings.NewReader(""), &stdout, &stderr)
			if got != tc.code || !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("exit %d stderr %q; want %d and %q", got, stderr.String(), tc.code, tc.stderr)
			}
			if tc.code == exitOK && !strings.Contains(stdout.String(), "usage: harness sim serve") {
				t.Errorf("help printed %q", stdout.String())
			}
		})
	}
}
