package main

import (
	"testing"

	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/demo"
)

func TestEachKindIsPlacedWhereTheRunCallsIt(t *testing.T) {
	tc, err := tools.ParseConfig("tools.yaml", []byte(`
tools:
  - name: search
    builtin: search
  - name: lookup
    url: http://127.0.0.1:8700/
    effect: read
  - name: grep
    command: [grep, -rn, TODO]
  - name: researcher
    agent: {}
mcpServers:
  everything:
    command: npx
    args: [-y, "@modelcontextprotocol/server-everything"]
  remote:
    url: http://127.0.0.1:3001/mcp
`), demo.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		model, baseURL, kind, want string
	}{
		{"sim", "", "model", "sim (embedded)"},
		{"gpt-5", "", "model", "gpt-5 @ api.openai.com"},
		{"gpt-5", "http://127.0.0.1:9000/v1", "model", "gpt-5 @ 127.0.0.1:9000"},
		{"sim", "", "tool:search", "builtin search"},
		{"sim", "", "tool:lookup", "http://127.0.0.1:8700/tools/lookup"},
		{"sim", "", "tool:grep", "command grep -rn TODO"},
		{"sim", "", "agent:researcher", "agent researcher of tools.yaml"},
		{"sim", "", "tool:mcp__everything__echo", "mcp everything: npx -y @modelcontextprotocol/server-everything"},
		{"sim", "", "tool:mcp__remote__add", "mcp remote: http://127.0.0.1:3001/mcp"},
		{"sim", "", "tool:unknown", ""},
		{"sim", "", "setup", ""},
	}
	for _, c := range cases {
		t.Run(c.kind+" of "+c.model, func(t *testing.T) {
			if got := newPlacer(c.model, c.baseURL, tc).where(c.kind); got != c.want {
				t.Errorf("where(%q) = %q, want %q", c.kind, got, c.want)
			}
		})
	}
	if got := newPlacer("sim", "", nil).where("tool:search"); got != "" {
		t.Errorf("without a tools file, tool:search is placed at %q", got)
	}
}
