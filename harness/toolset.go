package harness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/internal/toolset"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
)

// A Toolset is a tools config as runs use it (SPEC §5, §5b): the tools of
// its entries, and for each agent entry a sub-agent ([Agent]) whose own
// tools come from the entry's tools file, and so on down. `harness run`
// registers a Toolset on its run; `harness serve` serves its sub-agents.
type Toolset struct {
	// Config is the tools config, its agents' configs loaded with it
	// ([tools.LoadConfig]). Nil: a Toolset with nothing to resolve or
	// register.
	Config *tools.Config

	// Model is the model of a sub-agent whose entry names neither a model
	// nor an api. Nil: the parent's, at each call.
	Model Model

	// Models returns the model a sub-agent's entry names by its model
	// and api fields: name empty is the parent's model name, api empty
	// the parent's API. Nil: an entry that names either is not offered.
	Models func(name, api string) (Model, error)

	// Client is the HTTP client of url tools and of their manifests. Nil
	// uses one with no Timeout of its own: the leases bound every request.
	Client *http.Client

	// Stderr is where the MCP stdio servers' standard error goes
	// ([mcp.Options].Stderr). Nil: the process's own.
	Stderr io.Writer

	// Quiet is each sub-agent's quiet period. Zero: the parent's, or the
	// default where there is no parent.
	Quiet time.Duration

	// Sinks and Journal are each sub-agent's own, beside those of the run
	// that calls it: a server's trace and orphan journal, where there is
	// no parent run.
	Sinks   []trace.Sink
	Journal *cancel.Journal

	// Secrets are each sub-agent's [Config.Secrets], beside those of the
	// run that calls it.
	Secrets []string

	// set is the config as loaded: resolved by Resolve, registered by
	// Register ([toolset.Set]). Nil until one of them needs it.
	set *toolset.Set

	// root is the run's own tools config, for a sub-agent's Toolset: its
	// tools are named with their tools file. Nil: Config is the run's.
	root *tools.Config

	// s is the run Resolve resolved for, on which Register marks the
	// tools it cannot offer too. Nil: none (harness serve).
	s *Session

	// Warn hears what makes a tool unusable, or what its user should
	// know, without stopping the run: a manifest that could not be had, a
	// tool that could not be registered, a tool whose effect nobody
	// states. Nil: they go unheard.
	Warn func(error)
}

// Resolve fetches the manifest of every tool server of the config, and of
// every config of its sub-agents, and fills in what their url entries
// left out ([tools.Config.ResolveServer]); and it connects to every MCP
// server they name and lists its tools ([mcp.Connect]). It does all at
// once. With a session, each is a setup step of it, leased from its
// budget with the run's setup share ([budget.Budget.SetupCeiling]; an MCP
// server's connect_timeout where it gives one), so that one mute server,
// or several, cost the run one share of its work time, never all of it
// (issue 24); without one, each is bounded by its own timeout and ctx.
//
// A tool that cannot serve its calls is unavailable, by one rule (SPEC
// §4, issue 24): its tool server is down (refused, not resolved, or
// silent until the manifest's lease ended), its manifest is not one (an
// HTML page, garbage, the wrong shape), the manifest does
// not list it or says something of it that cannot be used, its MCP server
// does not come up within its lease or does not list it; and, at
// [Toolset.Register], a tool that cannot be registered (a ceiling below
// the p50 its builtin or its manifest declares) or a sub-agent that cannot
// be made. Such a tool is not offered, is listed by s's
// [Session.Unavailable] and is warned about as an
// [*UnavailableError]; the run goes on with the rest. A server that
// answers GET /tools with a 4xx or a 501 has no manifest
// ([tools.ErrNoManifest]): its entries must say enough, and that is a
// warning; another 5xx is a server down ([tools.ErrServerDown]). Close the Toolset when the runs that use it are done.
func (ts *Toolset) Resolve(ctx context.Context, s *Session) {
	ts.s = s
	ts.set = toolset.New(ts.Config, toolset.Options{Client: ts.Client, Stderr: ts.Stderr})
	ts.set.Resolve(ctx, ts.hooks())
}

// hooks are what ts does as its set is resolved and registered: a setup
// step leased from the run, a sub-agent made by [Toolset.Agent], a tool
// that cannot be used marked on the run and warned about.
func (ts *Toolset) hooks() toolset.Hooks {
	h := toolset.Hooks{
		Agent:       func(e tools.Entry) (tools.Tool, error) { return ts.Agent(e) },
		Unavailable: func(in *toolset.Set, u landing.Unavailable) { ts.unavailable(in.Config, u.Tool, u.Why) },
		Warn:        ts.warn,
	}
	if ts.s != nil {
		h.Setup = func(ctx context.Context, what string, ceiling time.Duration, do func(context.Context) error) (time.Duration, bool, error) {
			err := ts.s.Setup(ctx, what, ceiling, do)
			if se, ok := errors.AsType[*SetupError](err); ok {
				return se.Granted, true, err
			}
			return budget.SetupCeiling(0, ceiling), false, err
		}
	}
	return h
}

// loaded is ts's set: the one Resolve made, or one nothing was fetched for.
func (ts *Toolset) loaded() *toolset.Set {
	if ts.set == nil || ts.set.Config != ts.Config {
		ts.set = toolset.New(ts.Config, toolset.Options{Client: ts.Client, Stderr: ts.Stderr})
	}
	return ts.set
}

// unavailable says that tool of c cannot be used, on the run and to its
// user, once; a sub-agent's tools file is named, as its tools are not the
// run's own.
func (ts *Toolset) unavailable(c *tools.Config, tool, why string) {
	if c != cmp.Or(ts.root, ts.Config) {
		why += " (tools file " + c.File + ")"
	}
	ts.s.markUnavailable(tool, why)
	ts.warn(&UnavailableError{Tool: tool, Why: why})
}

// Register registers the config's tools on reg, a sub-agent for each
// agent entry among them, and the tools of the MCP servers Resolve
// connected to, after the entries. A tool that cannot be registered (a
// ceiling below the p50 its builtin or manifest declares), or a sub-agent
// that cannot be made, is unavailable, as Resolve marks a tool whose
// server is down: marked on the run Resolve resolved for and warned about
// as an [*UnavailableError] (issue 24). A tool whose effect neither its
// entry nor its manifest states is a warning: it is treated as a write. Two MCP servers' tools offered under one name
// are a warning that names both as their servers do; the first keeps it. A sub-agent's default is write, as SPEC §5b
// says, and needs no warning.
func (ts *Toolset) Register(reg *tools.Registry) {
	if ts.Config == nil {
		return // a zero Toolset: no config, nothing to offer
	}
	ts.loaded().Register(reg, ts.hooks())
}

// Agent returns the sub-agent of e, an agent entry of the config: its
// children run with the entry's instructions and max_steps, its model (the
// Toolset's Model when it names neither a model nor an api), and the tools
// of its tools file, registered on a registry of their own, which the
// Agent closes.
func (ts *Toolset) Agent(e tools.Entry) (*Agent, error) {
	if e.Agent == nil {
		return nil, fmt.Errorf("tool %s: %w", e.Name, errNotAgent)
	}
	m := ts.Model
	if name, api := e.Agent.Model, e.Agent.API; name != "" || api != "" {
		what := agentModel(name, api)
		if ts.Models == nil {
			return nil, fmt.Errorf("agent %s: %s: no models to choose from", e.Name, what)
		}
		var err error
		if m, err = ts.Models(name, api); err != nil {
			return nil, fmt.Errorf("agent %s: %s: %w", e.Name, what, err)
		}
	}
	reg := tools.NewRegistry(nil)
	if e.Agent.Tools != nil {
		child := *ts // the servers Resolve connected, the child's among them
		child.Config, child.root = e.Agent.Tools, cmp.Or(ts.root, ts.Config)
		// Its own sub-agents take its model and API where they name
		// none, not the root's: the parent's is the one nearest.
		child.Model = m
		if name, api := e.Agent.Model, e.Agent.API; ts.Models != nil && (name != "" || api != "") {
			child.Models = func(n, a string) (Model, error) { return ts.Models(cmp.Or(n, name), cmp.Or(a, api)) }
		}
		child.set = ts.loaded().Sub(e.Name)
		child.Sinks, child.Journal = nil, nil // the child's children are its own: they inherit through it
		child.Warn = func(err error) { ts.warn(fmt.Errorf("agent %s: %w", e.Name, err)) }
		child.Register(reg)
	}
	return NewAgent(e.Spec(tools.Spec{}), Config{
		Instructions: e.Agent.Instructions,
		Model:        m,
		Tools:        reg,
		MaxSteps:     e.Agent.MaxSteps,
		Quiet:        ts.Quiet,
		Sinks:        ts.Sinks,
		Journal:      ts.Journal,
		Secrets:      ts.Secrets,
	}), nil
}

var errNotAgent = errors.New("not an agent entry")

// agentModel names what an agent entry says of its model, for messages.
func agentModel(name, api string) string {
	switch {
	case api == "":
		return "model " + name
	case name == "":
		return "api " + api
	}
	return "model " + name + " on api " + api
}

// Close closes the MCP servers Resolve connected to, killing what stdio
// ones started, all at once, each until it is closed or ctx ends: a run
// that ends waits for its slowest server, not for their sum. A registry
// that offered their tools closes them too; Close also closes a server
// none of whose tools could be offered.
func (ts *Toolset) Close(ctx context.Context) error {
	return ts.set.Close(ctx)
}

func (ts *Toolset) warn(err error) {
	if ts.Warn != nil {
		ts.Warn(err)
	}
}
