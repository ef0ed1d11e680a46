package durable

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"

	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/demo"
)

// ErrUnsupported is matched by the error of a tools file that asks for
// what a worker cannot run yet: sub-agents (agent entries) and MCP
// servers, which are issue 19's next steps.
var ErrUnsupported = errors.New("durable: not supported on Temporal yet")

// A Toolset is the tools a worker runs: a registry of them, and for each
// the value whose type says what it can do (a builtin a config entry
// renamed or tuned is registered under a spec of the entry's, and keeps
// its capabilities — cancel, status — in the builtin itself). The zero
// Toolset has no tools.
type Toolset struct {
	Registry *tools.Registry
	impl     map[string]tools.Tool
	urls     map[string]string // a url entry's base URL, by name, for the orphan journal
	file     string            // the tools file, absolute, for the orphan journal
}

// LoadTools reads a tools file as `harness run --tools` does (SPEC §5),
// with the demo's builtins, fills what url entries leave out from their
// servers' manifests within ctx, and returns its tools. client carries
// the remote tools' requests; nil uses one with no Timeout, since each
// attempt's lease bounds it.
func LoadTools(ctx context.Context, path string, client *http.Client) (*Toolset, error) {
	builtins := demo.Builtins()
	cfg, err := tools.LoadConfig(path, builtins)
	if err != nil {
		return nil, err
	}
	if client == nil {
		client = &http.Client{}
	}
	if len(cfg.MCPServers) > 0 {
		return nil, fmt.Errorf("%s: mcpServers: %w", cfg.File, ErrUnsupported)
	}
	for _, e := range cfg.Entries {
		if e.Agent != nil {
			return nil, fmt.Errorf("%s: %s: agent entries: %w", cfg.File, e.Name, ErrUnsupported)
		}
	}
	if err := cfg.Resolve(ctx, client, tools.DefaultResolveTimeout); err != nil {
		return nil, err
	}
	ts := &Toolset{Registry: tools.NewRegistry(nil), impl: map[string]tools.Tool{}, urls: map[string]string{}, file: path}
	if abs, err := filepath.Abs(path); err == nil {
		ts.file = abs
	}
	for _, t := range cfg.Tools(client) {
		if err := ts.Registry.Register(t); err != nil {
			return nil, err
		}
	}
	for _, e := range cfg.Entries {
		if b, ok := builtins[e.Builtin]; ok && e.Builtin != "" {
			ts.impl[e.Name] = b
		}
		if e.URL != "" {
			ts.urls[e.Name] = e.URL
		}
	}
	return ts, nil
}

// Close closes the tools, within ctx.
func (ts *Toolset) Close(ctx context.Context) error {
	if ts == nil || ts.Registry == nil {
		return nil
	}
	return ts.Registry.Close(ctx)
}

// lookup returns the tool registered under name, to attempt, and the value
// that has its capabilities.
func (ts *Toolset) lookup(name string) (tool, impl tools.Tool, ok bool) {
	if ts == nil || ts.Registry == nil {
		return nil, nil, false
	}
	tool, ok = ts.Registry.Lookup(name)
	if !ok {
		return nil, nil, false
	}
	impl = tool
	if b, found := ts.impl[name]; found {
		impl = b
	}
	return tool, impl, true
}

func (ts *Toolset) specs() []tools.Spec {
	if ts == nil || ts.Registry == nil {
		return nil
	}
	return ts.Registry.Specs()
}
