package durable

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/internal/toolset"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/demo"
	"go.temporal.io/sdk/temporal"
)

// ErrUnsupported is matched by the error of a tools file that asks for what
// a worker cannot run: MCP servers, a sub-agent on a model of its own.
var ErrUnsupported = errors.New("not supported on Temporal")

// A Toolset is the tools a worker runs, loaded as `harness run --tools`
// loads them ([toolset.Load]); a run uses the set of its Input.Toolset.
// A nil Toolset has no tools.
type Toolset toolset.Set

// A Fetch is a fetch of a tool server's manifest made when the worker
// loaded its tools file, which a run records as a setup attempt.
type Fetch = toolset.Fetch

// LoadTools reads a tools file as `harness run --tools` does (SPEC §5), with the demo's builtins,
// and resolves its url entries within ctx. client nil: one with no Timeout, as leases bound each request.
func LoadTools(ctx context.Context, path string, client *http.Client) (*Toolset, error) {
	builtins := demo.Builtins() // one instance: a builtin's status is its own
	cfg, err := tools.LoadConfig(path, builtins)
	if err == nil {
		err = unsupported(cfg)
	}
	if err != nil {
		return nil, err
	}
	return (*Toolset)(toolset.Load(ctx, cfg, toolset.Options{Client: client, Builtins: builtins})), nil
}

// unsupported is what of cfg, or of its sub-agents' files, a worker cannot run.
func unsupported(cfg *tools.Config) error {
	switch {
	case cfg == nil:
		return nil
	case len(cfg.MCPServers) > 0:
		return fmt.Errorf("%s: mcpServers: %w: an MCP session lives in one process, and a run's calls go to whichever worker "+
			"takes them; serve those tools from a tool server (package kit, or harness serve) and name it by url", cfg.File, ErrUnsupported)
	}
	for _, e := range cfg.Entries {
		if e.Agent == nil {
			continue
		} else if e.Agent.Model != "" {
			return fmt.Errorf("%s: %s: model %s: %w: a worker runs one model, its own (--model); leave the agent's model out",
				cfg.File, e.Name, e.Agent.Model, ErrUnsupported)
		} else if err := unsupported(e.Agent.Tools); err != nil {
			return fmt.Errorf("agent %s: %w", e.Name, err)
		}
	}
	return nil
}

// Close closes the tools, its sub-agents' among them, within ctx.
func (ts *Toolset) Close(ctx context.Context) error { return ts.set().Close(ctx) }

func (ts *Toolset) set() *toolset.Set        { return (*toolset.Set)(ts) }
func (ts *Toolset) sub(path string) *Toolset { return (*Toolset)(ts.set().Sub(path)) }

// specs are what the model is offered, in the tools file's order.
func (ts *Toolset) specs() []tools.Spec {
	return ts.set().Specs(func(e tools.Entry) tools.Spec { return harness.NewAgent(e.Spec(tools.Spec{}), harness.Config{}).Spec() })
}

// ToolInfos lists the worker's tools with their capabilities: the run's
// setup step (SPEC §3).
func (a *Activities) ToolInfos(ctx context.Context, path string) (ToolList, error) {
	ts := a.Tools.sub(path)
	if path != "" && ts == nil {
		return ToolList{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the worker has no sub-agent %q in its tools file", path), "NoToolset", nil)
	}
	out := ToolList{Unavailable: ts.set().Unavailable(), Fetches: ts.set().Fetches()}
	for _, s := range ts.specs() {
		_, impl, _ := ts.set().Lookup(s.Name)
		_, canStatus := impl.(cancel.StatusReader)
		info := ToolInfo{Spec: s, CanCancel: s.Cancellable, CanStatus: canStatus}
		if sub := ts.set().Sub(s.Name); sub != nil && sub.Agent != nil {
			info = ToolInfo{Spec: s, Agent: &AgentInfo{Instructions: sub.Agent.Instructions, MaxSteps: sub.Agent.MaxSteps, Toolset: sub.Path}}
		}
		out.Tools = append(out.Tools, info)
	}
	return out, nil
}
