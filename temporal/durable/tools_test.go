package durable_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glidepath/glidepath/temporal/durable"
)

// What a worker cannot run is refused when it loads its tools file, with
// the reason and what to do instead: MCP servers (a session lives in one
// process), and a sub-agent on a model or an API of its own (a worker
// runs one model, on one API).
func TestAWorkerRefusesWhatItCannotRunWithWhatToDoInstead(t *testing.T) {
	cases := []struct {
		name, file, body, want string
	}{
		{"mcp servers", "tools.json", `{"tools": [], "mcpServers": {"everything": {"command": "npx", "args": ["-y", "x"]}}}`, "name it by url"},
		{"an agent on its own model", "tools.yaml", "tools:\n  - name: r\n    agent:\n      model: gpt-9\n", "leave the agent's model out"},
		{"an agent on its own API", "tools.yaml", "tools:\n  - name: r\n    agent:\n      api: responses\n", "leave the agent's api out"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.file)
			if err := os.WriteFile(path, []byte(tc.body), 0o600); err != nil {
				t.Fatal(err)
			}
			ts, err := durable.LoadTools(t.Context(), path, nil)
			if !errors.Is(err, durable.ErrUnsupported) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("LoadTools: %v (toolset %v), want ErrUnsupported saying %q", err, ts, tc.want)
			}
		})
	}
}
