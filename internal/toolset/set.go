package toolset

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/mcp"
	"github.com/glidepath/glidepath/trace"
)

// Options are what a Set's tools are made with.
type Options struct {
	// Client is the HTTP client of url tools and of their manifests. Nil
	// uses one with no Timeout of its own: the leases bound every request.
	Client *http.Client

	// Builtins are the builtins the config was loaded with: a builtin an
	// entry renamed has its capabilities in the builtin itself.
	Builtins map[string]tools.Tool

	// Stderr is where the MCP stdio servers' standard error goes. Nil:
	// the process's own.
	Stderr io.Writer
}

// Hooks are what a host does as a Set is resolved and registered. A nil
// hook does nothing, but for Setup.
type Hooks struct {
	// Setup runs do, one piece of setup (a manifest's fetch, an MCP
	// server's connect), within its lease: the in-process host leases it
	// from its run. It returns what was granted and whether the lease's end
	// cut do. Nil: each within its own bound ([Bounded]).
	Setup func(ctx context.Context, what string, ceiling time.Duration, do func(context.Context) error) (granted time.Duration, cut bool, err error)

	// Agent makes the tool of an agent entry. Nil: agent entries are not
	// registered (a worker runs each as a child workflow).
	Agent func(e tools.Entry) (tools.Tool, error)

	// Unavailable hears each tool of in that cannot be used, once found.
	Unavailable func(in *Set, u landing.Unavailable)

	// Warn hears what the user should know without stopping the run: a
	// server with no manifest, a tool whose effect nobody states.
	Warn func(error)
}

// A Fetch is a fetch of a tool server's manifest, which a run records as
// a setup attempt.
type Fetch struct {
	What    string        // "manifest of URL"
	Outcome trace.Outcome // ok; gave_up when its time ran out; else upstream_error
	Err     string        // redacted; empty when it was read
}

// A Set is a tools config as runs use it: its tools, the sets of its
// agent entries, and what its setup found. A nil Set has no tools.
type Set struct {
	Config   *tools.Config     // nil: a sub-agent with no tools file
	Agent    *tools.AgentEntry // the agent block that names the set; nil for the root
	Path     string            // the agent names from the root's, joined by "/"; "" for the root
	Registry *tools.Registry   // where [Load] registered the tools; nil when a host registers them on its own

	opts        *Options
	secrets     []string
	agents      map[string]*Set
	fingerprint Fingerprint // of the file as written ([Set.Fingerprint])

	mu          sync.Mutex
	mcp         []*mcp.Server
	down        map[string]bool // url tools whose manifest's fetch left them unavailable
	unavailable []landing.Unavailable
	fetches     []Fetch
}

// New returns the Set of cfg and its sub-agents', nothing fetched yet.
func New(cfg *tools.Config, opts Options) *Set {
	return newSet(cfg, nil, "", &opts)
}

func newSet(cfg *tools.Config, agent *tools.AgentEntry, path string, opts *Options) *Set {
	s := &Set{Config: cfg, Agent: agent, Path: path, opts: opts, agents: map[string]*Set{}, down: map[string]bool{},
		fingerprint: Of(cfg, opts.Builtins)}
	if cfg == nil {
		return s
	}
	s.secrets = cfg.Secrets()
	for _, e := range cfg.Entries {
		if e.Agent != nil {
			s.agents[e.Name] = newSet(e.Agent.Tools, e.Agent, strings.TrimPrefix(path+"/"+e.Name, "/"), opts)
		}
	}
	return s
}

// Load is the Set of cfg resolved and registered before any run, as a
// Temporal worker loads its tools file: each set's tools on a registry of
// its own; a tool its setup cannot serve is listed by [Set.Unavailable].
func Load(ctx context.Context, cfg *tools.Config, opts Options) *Set {
	s := New(cfg, opts)
	s.Resolve(ctx, Hooks{})
	for _, set := range s.all() {
		set.Registry = tools.NewRegistry(nil)
		set.Register(set.Registry, Hooks{})
	}
	return s
}

// all is s and every set under it, depth first: the order of
// [tools.Config.Configs].
func (s *Set) all() []*Set {
	out := []*Set{s}
	if s.Config == nil {
		return out
	}
	for _, e := range s.Config.Entries {
		if sub := s.agents[e.Name]; sub != nil {
			out = append(out, sub.all()...)
		}
	}
	return out
}

// Sub returns the set of the sub-agent at path, the agent names from s's
// joined by "/" ("" is s itself); nil when there is none.
func (s *Set) Sub(path string) *Set {
	for name := range strings.SplitSeq(path, "/") {
		if s == nil || name == "" {
			return s
		}
		s = s.agents[name]
	}
	return s
}

// Lookup returns the tool registered on s's Registry under name, and the
// one that has its capabilities: itself, or the builtin its entry renamed.
func (s *Set) Lookup(name string) (tool, impl tools.Tool, ok bool) {
	if s == nil || s.Registry == nil {
		return nil, nil, false
	}
	if tool, ok = s.Registry.Lookup(name); !ok {
		return nil, nil, false
	}
	if e, found := s.Entry(name); found && e.Builtin != "" && s.opts.Builtins[e.Builtin] != nil {
		return tool, s.opts.Builtins[e.Builtin], true
	}
	return tool, tool, true
}

// Entry returns the entry of s's config named name.
func (s *Set) Entry(name string) (tools.Entry, bool) {
	if s == nil || s.Config == nil {
		return tools.Entry{}, false
	}
	i := slices.IndexFunc(s.Config.Entries, func(e tools.Entry) bool { return e.Name == name })
	if i < 0 {
		return tools.Entry{}, false
	}
	return s.Config.Entries[i], true
}

// Specs are what s offers the model, in its file's order: its registered
// tools' specs, agent(e) for each agent entry, then its MCP servers' tools.
func (s *Set) Specs(agent func(tools.Entry) tools.Spec) []tools.Spec {
	if s == nil || s.Registry == nil || s.Config == nil {
		return nil
	}
	registered := s.Registry.Specs()
	var out []tools.Spec
	for _, e := range s.Config.Entries {
		if e.Agent != nil {
			out = append(out, agent(e))
		} else if i := slices.IndexFunc(registered, func(sp tools.Spec) bool { return sp.Name == e.Name }); i >= 0 {
			out = append(out, registered[i])
		}
	}
	for _, sp := range registered {
		if _, named := s.Entry(sp.Name); !named {
			out = append(out, sp)
		}
	}
	return out
}

// Secrets are the keys s's tools files hand their tools
// ([tools.Config.Secrets]), read when s was made, to be kept from records.
func (s *Set) Secrets() []string {
	if s == nil {
		return nil
	}
	return s.secrets
}

// Unavailable is what s's tools file names that cannot be used, and why,
// in the order found.
func (s *Set) Unavailable() []landing.Unavailable {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.unavailable)
}

// Fetches are the fetches of s's tool servers' manifests, in its file's
// order of servers.
func (s *Set) Fetches() []Fetch {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.fetches)
}

// mark says that tool of s cannot be used, once, and tells h.
func (s *Set) mark(h Hooks, tool, why string) {
	s.mu.Lock()
	if slices.ContainsFunc(s.unavailable, func(u landing.Unavailable) bool { return u.Tool == tool }) {
		s.mu.Unlock()
		return
	}
	u := landing.Unavailable{Tool: tool, Why: why}
	s.unavailable = append(s.unavailable, u)
	s.mu.Unlock()
	if h.Unavailable != nil {
		h.Unavailable(s, u)
	}
}

// Register registers s's tools on reg, the tool of h.Agent for each agent
// entry among them, in the file's order, then the tools of the MCP servers
// [Set.Resolve] connected to. A tool that cannot be registered (a ceiling
// below the p50 its builtin or manifest declares), or a sub-agent that
// cannot be made, is unavailable, as one whose server is down (issue 24).
// A tool whose effect neither its entry nor its manifest states is a
// warning: it is treated as a write. Two MCP servers' tools offered under
// one name are a warning that names both as their servers do; the first
// keeps it. A sub-agent's default is write, as SPEC §5b says, and needs no
// warning.
func (s *Set) Register(reg *tools.Registry, h Hooks) {
	if s.Config == nil {
		return // a sub-agent with no tools file: nothing to offer
	}
	var all []tools.Tool
	for _, e := range s.Config.Entries {
		if e.Agent == nil || h.Agent == nil {
			continue
		}
		a, err := h.Agent(e)
		if err != nil {
			s.mark(h, e.Name, err.Error()) // "agent scribe: model missing: …"
			continue
		}
		all = append(all, a)
	}
	for _, t := range s.Config.Tools(s.opts.Client) {
		if s.isDown(t.Spec().Name) {
			continue // Resolve marked it unavailable
		}
		if t.Spec().Effect == "" {
			warn(h, fmt.Errorf("tool %s: neither its entry nor its manifest says whether it only reads, "+
				"so it is treated as a write and never retried blindly; give it effect: read if it only reads", t.Spec().Name))
		}
		all = append(all, t)
	}
	// In the config's order, whatever the kind: the order tools are
	// offered in is the file's.
	slices.SortStableFunc(all, func(a, b tools.Tool) int { return s.order(a) - s.order(b) })
	s.mu.Lock()
	for _, srv := range s.mcp {
		all = append(all, srv.Tools()...)
	}
	s.mu.Unlock()
	offered := map[string]tools.Tool{}
	for _, t := range all {
		if s.shadowed(h, t, offered) {
			continue
		}
		if err := reg.Register(t); err != nil {
			// It cannot serve a call: a ceiling below the p50 its builtin
			// or its manifest declares, parameters that are no schema.
			why := "it cannot be offered: " + err.Error()
			if se, ok := errors.AsType[*tools.SpecError](err); ok {
				why = fmt.Sprintf("its %s %v", se.Field, se.Err)
			}
			s.mark(h, t.Spec().Name, why)
			continue
		}
		offered[t.Spec().Name] = t
	}
}

// shadowed reports whether t, an MCP server's tool, is offered under a
// name another server's tool has (servers "a.b" and "a_b", sanitized),
// and warns, naming both as the config and the servers do.
func (s *Set) shadowed(h Hooks, t tools.Tool, offered map[string]tools.Tool) bool {
	first, ok := offered[t.Spec().Name]
	if !ok {
		return false
	}
	server, tool, isMCP := mcp.Origin(t)
	firstServer, firstTool, firstMCP := mcp.Origin(first)
	if !isMCP || !firstMCP {
		return false
	}
	warn(h, fmt.Errorf("mcp server %s: tool %q is not offered: its name would be %s, as that of tool %q of mcp server %s is",
		server, tool, t.Spec().Name, firstTool, firstServer))
	return true
}

// order is where t's entry is in s's file.
func (s *Set) order(t tools.Tool) int {
	return slices.IndexFunc(s.Config.Entries, func(e tools.Entry) bool { return e.Name == t.Spec().Name })
}

func (s *Set) isDown(tool string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.down[tool]
}

// Close closes the registries [Load] made and the MCP servers Resolve
// connected to, killing what stdio ones started, all at once, each until
// it is closed or ctx ends: a run that ends waits for its slowest server,
// not for their sum. A registry that offered their tools closes them too;
// Close also closes a server none of whose tools could be offered.
func (s *Set) Close(ctx context.Context) error {
	if s == nil {
		return nil
	}
	var closers []func(context.Context) error
	for _, set := range s.all() {
		if set.Registry != nil {
			closers = append(closers, set.Registry.Close)
		}
		set.mu.Lock()
		for _, srv := range set.mcp {
			closers = append(closers, srv.Close)
		}
		set.mu.Unlock()
	}
	errs := make([]error, len(closers))
	var wg sync.WaitGroup
	for i, c := range closers {
		wg.Go(func() { errs[i] = c(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func warn(h Hooks, err error) {
	if h.Warn != nil {
		h.Warn(err)
	}
}
