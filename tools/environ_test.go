package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A command tool runs with what a program needs of the harness's
// environment and none of its keys, unless its entry's env names one
// (issue 24). Real subprocesses: each prints its environment.
func TestACommandToolSeesNoKeyOfTheHarnessUnlessItsEntryAsks(t *testing.T) {
	const key = "sk-test-0123456789abcdefghij"
	t.Setenv("OPENAI_API_KEY", key)
	t.Setenv("GH_PAT", "ghp_notaname0123456789") // a credential no denylist would know by its name
	t.Setenv("LC_ALL", "C")
	statusEnv := filepath.Join(t.TempDir(), "status.env")
	src := `tools:
  - name: plain
    effect: read
    command: [env]
  - name: asks
    effect: read
    command: [env]
    env: {OPENAI_API_KEY: "${OPENAI_API_KEY}", MODE: "fast ${UNSET_IN_THIS_TEST} $HOME"}
  - name: reconciled
    effect: write
    command: [env]
    status: [sh, -c, 'env > "$0"; echo "{\"state\":\"done\"}"', ` + strconv.Quote(statusEnv) + `]
    env: {LEVEL: "3"}
`
	c, err := ParseConfig("tools.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	built := c.Tools(nil)
	reg := mustRegister(t, built...)
	envOf := func(name string) string {
		t.Helper()
		res := reg.Call(t.Context(), &Run{Budget: newBudget(t, time.Minute)}, name, json.RawMessage(`{}`))
		var out string
		if err := json.Unmarshal(res.Output, &out); err != nil {
			t.Fatalf("%s: output %s (%s): %v", name, res.Output, res.Err, err)
		}
		return out
	}
	cases := []struct {
		name    string
		env     func() string
		want    []string
		wantNot []string
	}{
		{"an entry without env gets PATH, HOME and LC_* but no key", func() string { return envOf("plain") },
			[]string{"\nPATH=", "\nHOME=", "\nLC_ALL=C\n", "\nGLIDEPATH_IDEMPOTENCY_KEY=", "\nGLIDEPATH_BUDGET_REMAINING_MS="},
			[]string{key, "GH_PAT", "OPENAI_API_KEY", "GLIDEPATH_RUN"}},
		{"an entry whose env names the key gets it, and its other values as written", func() string { return envOf("asks") },
			[]string{"\nOPENAI_API_KEY=" + key + "\n", "\nMODE=fast  $HOME\n"},
			[]string{"GH_PAT"}},
		{"a status command gets its entry's env and its key, and no key of the harness's", func() string {
			if _, err := built[2].(*statusCommandTool).Status(t.Context(), "k-1"); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(statusEnv)
			if err != nil {
				t.Fatal(err)
			}
			return string(data)
		}, []string{"\nLEVEL=3\n", "\nGLIDEPATH_IDEMPOTENCY_KEY=k-1\n", "\nPATH="}, []string{key, "GH_PAT"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := "\n" + tc.env()
			for _, w := range tc.want {
				if !strings.Contains(env, w) {
					t.Errorf("the environment has no %q:%s", w, env)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(env, w) {
					t.Errorf("the environment has %q:%s", w, env)
				}
			}
		})
	}
}

// The values a tools file hands its tools by ${NAME} — a command entry's
// env, an MCP server's, a sub-agent's file's — are the run's secrets too:
// a tool may echo them back (issue 24). A name the environment lacks, or a
// value written into the file, is none.
func TestTheValuesAToolsFileHandsItsToolsAreSecrets(t *testing.T) {
	t.Setenv("TEST_TOOL_TOKEN", "tooltoken0123456789")
	t.Setenv("TEST_SERVER_TOKEN", "servertoken0123456789")
	t.Setenv("TEST_CHILD_TOKEN", "childtoken0123456789")
	dir := t.TempDir()
	child := filepath.Join(dir, "child.yaml")
	if err := os.WriteFile(child, []byte("tools:\n  - name: c\n    effect: read\n    command: [env]\n    env: {K: \"${TEST_CHILD_TOKEN}\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := `tools:
  - name: a
    effect: read
    command: [env]
    env: {A: "Bearer ${TEST_TOOL_TOKEN}", B: "written here", C: "${TEST_UNSET_IN_THIS_TEST}", D: "${TEST_TOOL_TOKEN}"}
  - name: helper
    description: Helps.
    agent:
      tools: child.yaml
mcpServers:
  s:
    command: env
    env: {S: "${TEST_SERVER_TOKEN}"}
`
	file := filepath.Join(dir, "tools.yaml")
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := c.Secrets()
	want := []string{"tooltoken0123456789", "servertoken0123456789", "childtoken0123456789"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("Secrets() = %q, want %q", got, want)
	}
}
