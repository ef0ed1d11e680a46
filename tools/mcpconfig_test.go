package tools

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestMCPServersParseInTheShapeOtherClientsUse(t *testing.T) {
	src := `{"tools": [],
 "mcpServers": {
   "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"], "env": {"DEBUG": "1"},
                  "tools": {"echo": {"effect": "read", "ceiling": "5s"}}, "allowed_tools": ["echo"]},
   "remote": {"type": "http", "url": "http://127.0.0.1:3001/mcp", "headers": {"Authorization": "Bearer x"}, "trust_hints": true,
              "connect_timeout": "30s"}}}`
	c, err := ParseConfig("mcp.json", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.MCPServers) != 2 {
		t.Fatalf("servers %+v", c.MCPServers)
	}
	e, r := c.MCPServers[0], c.MCPServers[1]
	if e.Name != "everything" || !e.Stdio() || e.Command != "npx" || len(e.Args) != 2 || e.Env["DEBUG"] != "1" ||
		e.Tools["echo"].Effect != Read || e.Tools["echo"].Ceiling != 5*time.Second || e.TrustHints ||
		len(e.AllowedTools) != 1 || e.AllowedTools[0] != "echo" {
		t.Errorf("everything: %+v", e)
	}
	if r.Name != "remote" || r.Stdio() || r.URL != "http://127.0.0.1:3001/mcp" || r.Headers["Authorization"] != "Bearer x" || !r.TrustHints ||
		r.ConnectTimeout != 30*time.Second {
		t.Errorf("remote: %+v", r)
	}
	if e.File != "mcp.json" || r.File != "mcp.json" {
		t.Errorf("servers name files %q and %q, want mcp.json: their tools' orphans record it", e.File, r.File)
	}
}

func TestABadMCPServerNamesTheFieldAndTheLine(t *testing.T) {
	server := func(lines ...string) string {
		return "mcpServers:\n  s:\n    " + strings.Join(lines, "\n    ") + "\n"
	}
	cases := []struct {
		name, src, wantField, wantMsg string
	}{
		{"neither command nor url", server("args: [x]"), "mcpServers.s", "one of command"},
		{"both command and url", server("command: x", "url: http://h/mcp"), "mcpServers.s.url", "only one of command or url"},
		{"an unknown field", server("command: x", "autoApprove: []"), "mcpServers.s.autoApprove", "unknown field"},
		{"the SSE transport", server("type: sse", "url: http://h/sse"), "mcpServers.s.type", "SSE transport is not supported"},
		{"a type that does not match", server("type: stdio", "url: http://h/mcp"), "mcpServers.s.type", "does not match"},
		{"a URL that is not http", server("url: ftp://h/mcp"), "mcpServers.s.url", "http"},
		{"args for a url", server("url: http://h/mcp", "args: [x]"), "mcpServers.s", "for a stdio server"},
		{"headers for a command", server("command: x", "headers: {A: b}"), "mcpServers.s", "for a server at a url"},
		{"a tool override with a bad effect", server("command: x", "tools: {echo: {effect: sometimes}}"), "mcpServers.s.tools.echo.effect", "read or write"},
		{"a tool override with an unknown field", server("command: x", "tools: {echo: {readonly: true}}"), "mcpServers.s.tools.echo.readonly", "unknown field"},
		{"env not a mapping", server("command: x", "env: [A=b]"), "mcpServers.s.env", "not a mapping"},
		{"an env value holding NUL", server("command: x", `env: {A: "b\0c"}`), "mcpServers.s.env.A", "holds NUL"},
		{"servers not a mapping", "mcpServers: [x]\n", "mcpServers", "not a mapping"},
		{"no tool allowed", server("command: x", "allowed_tools: []"), "mcpServers.s.allowed_tools", "offer none"},
		{"a null server in JSON", `{"mcpServers": {"x": null}}`, "mcpServers.x", "one of command"},
		{"a server with nothing after its name", "mcpServers:\n  x:\n", "mcpServers.x", "one of command"},
		{"a server given as ~", "mcpServers:\n  s:\n    command: x\n  x: ~\n", "mcpServers.x", "one of command"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig("t.yaml", []byte(tc.src), nil)
			ce, ok := errors.AsType[*ConfigError](err)
			if !ok || ce.Field != tc.wantField || !strings.Contains(err.Error(), tc.wantMsg) || ce.Line <= 0 {
				t.Errorf("%v; want %s: %q, with a line", err, tc.wantField, tc.wantMsg)
			}
		})
	}
}
