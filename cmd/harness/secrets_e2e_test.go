package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 24, item 2: a run whose tools and MCP server repeat the API key
// on every stream they have, and whose model (the sim, which quotes its
// tools' results and errors in its answer) repeats it too, leaves no copy
// of it in anything it writes or prints: stdout, text or --json; stderr,
// text or --log-format json (one JSON object a line, the server's lines
// included), the warning that quotes the server's answer; the trace; the
// orphan journal. And a tool sees the key only
// when its entry's env names it.
func TestE2EAKeyEchoedByToolsServersAndTheModelIsInNoByteTheRunWrites(t *testing.T) {
	// One key has the shape the patterns know; the other has none, and is
	// kept out by its value alone, which the run holds (issue 24).
	const skKey, plainKey = "sk-test-e2e0123456789abcdefXYZ", "plainsecretvalue0123456789"
	tools := `tools:
  - name: plain
    description: says whether it sees the key
    effect: read
    command: [sh, -c, 'echo "plain sees [$OPENAI_API_KEY]"']
  - name: show
    description: repeats the key it was given in its output
    effect: read
    command: [sh, -c, 'echo "out $OPENAI_API_KEY"']
    env: {OPENAI_API_KEY: "${OPENAI_API_KEY}"}
  - name: leak
    description: repeats the key it was given on stderr, and fails
    effect: read
    command: [sh, -c, 'echo "err $OPENAI_API_KEY" >&2; exit 1']
    env: {OPENAI_API_KEY: "${OPENAI_API_KEY}"}
  - name: pay
    description: repeats the key and never answers, an orphan to journal
    effect: write
    ceiling: 1s
    command: [sh, -c, 'echo "pay $OPENAI_API_KEY" >&2; exec sleep 30']
    env: {OPENAI_API_KEY: "${OPENAI_API_KEY}"}
mcpServers:
  chatty:
    command: sh
    args: [-c, 'echo "server says $K" >&2; read line; id=$(echo "$line" | sed "s/.*\"id\":\([0-9]*\).*/\1/");
      printf "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-32000,\"message\":\"refused key %s\"}}\n" "$id" "$K";
      printf "last words $K" >&2; sleep 30']
    env: {K: "${OPENAI_API_KEY}"}
`
	cases := []struct {
		name string
		args []string
		json bool // reports whether stderr is JSON lines
		key  string
	}{
		{"printed as text", nil, false, skKey},
		{"printed as JSON on stdout", []string{"--json"}, false, skKey},
		{"logged as JSON on stderr", []string{"--json", "-v", "--log-format", "json"}, true, skKey},
		{"a key of no known shape, logged as JSON", []string{"--json", "-v", "--log-format", "json"}, true, plainKey},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			key := tc.key
			dir := t.TempDir()
			file := filepath.Join(dir, "tools.yaml")
			if err := os.WriteFile(file, []byte(tools), 0o600); err != nil {
				t.Fatal(err)
			}
			trc, journal := filepath.Join(dir, "trace.jsonl"), filepath.Join(dir, "orphans.jsonl")
			args := append([]string{"run", "--budget", "20s", "--tools", file, "--trace", trc, "--journal", journal}, tc.args...)
			stdout, stderr, code := runHarness(t, []string{"OPENAI_API_KEY=" + key}, append(args, "find-cats")...)

			if code != exitPartial {
				t.Fatalf("exit %d, want 3 (the payment is an orphan)\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			traceData, err := os.ReadFile(trc)
			if err != nil {
				t.Fatal(err)
			}
			journalData, err := os.ReadFile(journal)
			if err != nil {
				t.Fatal(err)
			}
			outputs := map[string]string{"stdout": stdout, "stderr": stderr, "trace": string(traceData), "journal": string(journalData)}
			for name, out := range outputs {
				if n := strings.Count(out, key); n > 0 {
					t.Errorf("%d copies of the key in %s:\n%s", n, name, out)
				}
			}
			// The key was there to leak: each stream carried it, redacted.
			for _, want := range []struct{ in, what string }{
				{stdout, "out [redacted]"},         // the tool's output, in the model's answer
				{stdout, "err [redacted]"},         // its error, in the model's answer
				{stdout, "plain sees []"},          // a tool whose entry does not ask sees no key
				{stderr, "server says [redacted]"}, // the server's stderr, passed through
				{stderr, "last words [redacted]"},  // its last line, without a newline
				{stderr, "refused key [redacted]"}, // what it answered, in the warning that it did not come up
			} {
				if !strings.Contains(want.in, want.what) {
					t.Errorf("no %q in\n%s", want.what, want.in)
				}
			}
			if !strings.Contains(string(journalData), `"pay"`) {
				t.Errorf("the journal holds no orphan: %s", journalData)
			}
			if tc.json {
				sc := bufio.NewScanner(strings.NewReader(stderr))
				for sc.Scan() {
					if !json.Valid(sc.Bytes()) {
						t.Errorf("a stderr line is not JSON: %q", sc.Text())
					}
				}
			}
		})
	}
}

// serverToken is the secret of the server of [serveTokenAgent].
const serverToken = "servertoken0123456789abcdef"

// serveTokenAgent starts harness serve, with args, serving the agent
// helper, whose tool show is handed serverToken by ${NAME} and repeats it on
// its output and its stderr.
func serveTokenAgent(t *testing.T, args ...string) *served {
	t.Helper()
	child := writeFile(t, "child.yaml", `tools:
  - name: show
    description: repeats the token it was given
    effect: read
    command: [sh, -c, 'echo "tok $T"; echo "tok $T" >&2']
    env: {T: "${TEST_SERVICE_TOKEN}"}
`)
	file := writeFile(t, "served.yaml", "tools:\n  - name: helper\n    description: Helps.\n    effect: read\n    agent:\n"+
		"      instructions: You use your tool and say what it said.\n      tools: "+child+"\n")
	return serveProcessEnv(t, []string{"TEST_SERVICE_TOKEN=" + serverToken}, append([]string{"--tools", file}, args...)...)
}

// Issue 24, item 2, across processes: a sub-agent served by harness serve
// hands its tool a token by ${NAME}, and the tool repeats it. The token is
// the server's: the calling run never held it, so only the server can keep
// it from the result it sends, from its own stderr and from its trace.
func TestE2EAServedChildsToolTokenStaysWithTheServer(t *testing.T) {
	dir := t.TempDir()
	srvTrace := filepath.Join(dir, "serve.jsonl")
	s := serveTokenAgent(t, "--trace", srvTrace)
	parentTools := writeFile(t, "parent.yaml", "tools:\n  - name: helper\n    url: "+s.base+"\n")
	parentTrace := filepath.Join(dir, "parent.jsonl")

	stdout, stderr, code := runHarness(t, nil, "run", "--budget", "20s", "--tools", parentTools, "--trace", parentTrace, "--json", "q")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if code := s.stop(t); code != 0 {
		t.Errorf("harness serve exited %d after SIGTERM, want 0\n%s", code, s.log())
	}
	outputs := map[string]string{"the caller's stdout": stdout, "the caller's stderr": stderr, "the server's stderr": s.log()}
	for name, path := range map[string]string{"the caller's trace": parentTrace, "the server's trace": srvTrace} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		outputs[name] = string(data)
	}
	for name, out := range outputs {
		if n := strings.Count(out, serverToken); n > 0 {
			t.Errorf("%d copies of the token in %s:\n%s", n, name, out)
		}
	}
}

// The result harness serve sends its caller, asked for over the wire: the
// child's answer quotes what its tool said, the token scrubbed from it.
func TestE2EHarnessServeScrubsTheResultItSends(t *testing.T) {
	s := serveTokenAgent(t)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.base+"/tools/helper", strings.NewReader(`{"arguments":{"task":"q"}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "gp_scrubtest")
	req.Header.Set("Budget-Remaining-Ms", "10000")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(body), serverToken); n > 0 {
		t.Errorf("%d copies of the token in what harness serve sent:\n%s", n, body)
	}
	if !strings.Contains(string(body), "tok [redacted]") {
		t.Errorf("the child's answer does not quote its tool, scrubbed:\n%s", body)
	}
	if n := strings.Count(s.log(), serverToken); n > 0 {
		t.Errorf("%d copies of the token on the server's stderr:\n%s", n, s.log())
	}
}
