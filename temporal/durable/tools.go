package durable

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/internal/redact"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/trace"

	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/demo"
)

// ErrUnsupported is matched by the error of a tools file that asks for
// what a worker cannot run: MCP servers (a session lives in one process,
// a run's calls go to any worker), a sub-agent on a model of its own.
var ErrUnsupported = errors.New("not supported on Temporal")

// A Toolset is the tools a worker runs: a registry of them, and for each
// the value whose type says what it can do (a builtin an entry renamed
// keeps its capabilities in the builtin itself). The zero Toolset has no
// tools.
type Toolset struct {
	Registry *tools.Registry
	impl     map[string]tools.Tool
	urls     map[string]string // a url entry's base URL, by name, for the orphan journal
	file     string            // the tools file, absolute, for the orphan journal
	agents   map[string]agentTools
	order    map[string]int // the tools file's order of its entries, which the model is offered
	secrets  []string       // the keys the tools file hands its tools (tools.Config.Secrets), kept from records as harness run keeps them

	// What the worker's fetches of its tool servers' manifests left
	// unavailable, and the fetches, which each run records as its setup's.
	unavailable []landing.Unavailable
	fetches     []Fetch
}

// A Fetch is a fetch of a tool server's manifest made when the worker
// loaded its tools file, which a run records as a setup attempt.
type Fetch struct {
	What    string        // "manifest of URL", as in process
	Outcome trace.Outcome // ok; gave_up when its time ran out; else upstream_error
	Err     string        // redacted; empty when it was read
}

// agentTools are a sub-agent entry: its spec (harness.NewAgent's), what
// its child workflow starts with, and its tools.
type agentTools struct {
	spec  tools.Spec
	info  AgentInfo
	tools *Toolset
}

// LoadTools reads a tools file as `harness run --tools` does (SPEC §5),
// with the demo's builtins, and resolves its url entries within ctx.
// client carries the remote tools' requests; nil: one with no Timeout,
// since each attempt's lease bounds it.
func LoadTools(ctx context.Context, path string, client *http.Client) (*Toolset, error) {
	builtins := demo.Builtins()
	cfg, err := tools.LoadConfig(path, builtins)
	if err != nil {
		return nil, err
	}
	if client == nil {
		client = &http.Client{}
	}
	ts, err := build(ctx, cfg, builtins, client, "")
	if err != nil {
		ts.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return ts, nil
}

// build makes the Toolset of cfg and its sub-agents', each named by its
// path of agent names (prefix is cfg's).
func build(ctx context.Context, cfg *tools.Config, builtins map[string]tools.Tool, client *http.Client, prefix string) (*Toolset, error) {
	ts := &Toolset{Registry: tools.NewRegistry(nil), impl: map[string]tools.Tool{}, urls: map[string]string{},
		file: cfg.File, agents: map[string]agentTools{}, order: map[string]int{}}
	if abs, err := filepath.Abs(cfg.File); err == nil {
		ts.file = abs
	}
	if len(cfg.MCPServers) > 0 {
		return ts, fmt.Errorf("%s: mcpServers: %w: an MCP session lives in one process, and a run's calls go to "+
			"whichever worker takes them; serve those tools from a tool server (package kit, or harness serve) and name it by url",
			cfg.File, ErrUnsupported)
	}
	ts.resolve(ctx, cfg, client)
	ts.secrets = cfg.Secrets()
	for i, e := range cfg.Entries {
		ts.order[e.Name] = i
		if e.Agent == nil {
			continue
		}
		if e.Agent.Model != "" {
			return ts, fmt.Errorf("%s: %s: model %s: %w: a worker runs one model, its own (--model); leave the agent's model out",
				cfg.File, e.Name, e.Agent.Model, ErrUnsupported)
		}
		at := agentTools{
			spec:  harness.NewAgent(e.Spec(tools.Spec{}), harness.Config{}).Spec(),
			info:  AgentInfo{Instructions: e.Agent.Instructions, MaxSteps: e.Agent.MaxSteps, Toolset: prefix + e.Name},
			tools: &Toolset{}, // no tools file: a child with no tools
		}
		if e.Agent.Tools != nil {
			child, err := build(ctx, e.Agent.Tools, builtins, client, prefix+e.Name+"/")
			at.tools = child
			ts.agents[e.Name] = at // so that closing ts closes what was built
			if err != nil {
				return ts, fmt.Errorf("agent %s: %w", e.Name, err)
			}
		}
		ts.agents[e.Name] = at
	}
	for _, t := range cfg.Tools(client) {
		if slices.ContainsFunc(ts.unavailable, func(u landing.Unavailable) bool { return u.Tool == t.Spec().Name }) {
			continue // not offered: the runs list it as unavailable
		}
		if err := ts.Registry.Register(t); err != nil {
			return ts, err
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

// resolve fills what cfg's url entries leave out from their servers'
// manifests, every server at once; a failed fetch leaves tools
// unavailable by [harness.ManifestUnavailable] (issue 25).
func (ts *Toolset) resolve(ctx context.Context, cfg *tools.Config, client *http.Client) {
	// No run has started: a fixed bound, as tools.Config.Resolve has.
	ctx, cancel := context.WithTimeout(ctx, tools.DefaultResolveTimeout)
	defer cancel()
	servers := cfg.Servers()
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, base := range servers {
		wg.Go(func() { errs[i] = cfg.ResolveServer(ctx, client, base) })
	}
	wg.Wait()
	for i, err := range errs {
		f := Fetch{What: "manifest of " + redact.URL(servers[i]), Outcome: trace.OK}
		if err != nil {
			down, _ := harness.ManifestUnavailable(cfg, servers[i], err, tools.DefaultResolveTimeout)
			ts.unavailable = append(ts.unavailable, down...)
			f.Outcome, f.Err = trace.UpstreamError, redact.Secrets(err.Error())
			if errors.Is(err, context.DeadlineExceeded) {
				f.Outcome = trace.GaveUp
			}
		}
		ts.fetches = append(ts.fetches, f)
	}
}

// Close closes the tools, its sub-agents' among them, within ctx.
func (ts *Toolset) Close(ctx context.Context) error {
	if ts == nil || ts.Registry == nil {
		return nil
	}
	errs := []error{ts.Registry.Close(ctx)}
	for _, a := range ts.agents {
		errs = append(errs, a.tools.Close(ctx))
	}
	return errors.Join(errs...)
}

// sub returns the tools of the sub-agent at path ("" is ts itself), nil
// when there is none.
func (ts *Toolset) sub(path string) *Toolset {
	for name := range strings.SplitSeq(path, "/") {
		if ts == nil || name == "" {
			return ts
		}
		ts = ts.agents[name].tools
	}
	return ts
}

// lookup returns the tool registered under name and the value that has
// its capabilities.
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

// specs are what the model is offered, in the tools file's order.
func (ts *Toolset) specs() []tools.Spec {
	if ts == nil || ts.Registry == nil {
		return nil
	}
	out := ts.Registry.Specs()
	for _, a := range ts.agents {
		out = append(out, a.spec)
	}
	slices.SortStableFunc(out, func(a, b tools.Spec) int { return ts.order[a.Name] - ts.order[b.Name] })
	return out
}
