package harness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/internal/redact"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/mcp"
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

	// Model is the model of a sub-agent whose entry names none. Nil: the
	// parent's, at each call.
	Model Model

	// Models returns the model a sub-agent's entry names (its model
	// field). Nil: an entry that names one is not offered.
	Models func(name string) (Model, error)

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

	// mcp holds the MCP servers Resolve connected to, by the config that
	// names them, for Register to offer their tools.
	mcp map[*tools.Config][]*mcp.Server

	// down holds the tool servers whose manifest Resolve could not have,
	// and the tools their manifests do not serve, by the config that
	// names them, their base URL and the tool, and why: Register does not
	// offer those tools (SPEC §4).
	down map[serverOf]string

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
	type step struct {
		what    string
		ceiling time.Duration // what the step asks for; zero: the run's setup share
		do      func(ctx context.Context) error
		failed  func(err error, within time.Duration) // marks what err leaves unavailable
	}
	var steps []step
	var mu sync.Mutex
	ts.s = s
	ts.mcp = map[*tools.Config][]*mcp.Server{}
	ts.down = map[serverOf]string{}
	for _, c := range ts.Config.Configs() {
		for _, base := range c.Servers() {
			steps = append(steps, step{what: "manifest of " + redact.URL(base),
				do: func(ctx context.Context) error { return c.ResolveServer(ctx, ts.Client, base) },
				failed: func(err error, within time.Duration) {
					down, noManifest := ManifestUnavailable(c, base, err, within)
					if noManifest != nil {
						ts.warn(noManifest)
					}
					for _, u := range down {
						mu.Lock()
						ts.down[serverOf{c, base, u.Tool}] = u.Why
						mu.Unlock()
						ts.unavailable(c, u.Tool, u.Why)
					}
				}})
		}
		for _, cfg := range c.MCPServers {
			steps = append(steps, step{what: "mcp server " + cfg.Name + ": connect and tools/list", ceiling: cfg.ConnectTimeout,
				do: func(ctx context.Context) error {
					srv, err := mcp.Connect(ctx, cfg, mcp.Options{HTTPClient: ts.Client, Stderr: ts.Stderr})
					if err != nil {
						return err
					}
					mu.Lock()
					ts.mcp[c] = append(ts.mcp[c], srv)
					mu.Unlock()
					for _, name := range srv.Missing() {
						ts.unavailable(c, mcp.ToolName(cfg.Name, name), "its mcp server "+cfg.Name+" does not list it among its tools")
					}
					for _, err := range srv.Warnings() {
						ts.warn(err)
					}
					return nil
				},
				failed: func(err error, within time.Duration) {
					// Its tools are known only once listed: those the
					// config allows are named, else the server is.
					why := "its mcp server " + cfg.Name + " did not come up: " + err.Error()
					if _, ok := errors.AsType[*SetupError](err); ok {
						why = "its mcp server " + cfg.Name + " did not come up in " + landing.Human(within)
					}
					if len(cfg.AllowedTools) == 0 {
						ts.unavailable(c, "mcp server "+cfg.Name, why)
					}
					for _, name := range cfg.AllowedTools {
						ts.unavailable(c, mcp.ToolName(cfg.Name, name), why)
					}
				}})
		}
	}
	var wg sync.WaitGroup
	for _, st := range steps {
		wg.Go(func() {
			var err error
			within := budget.SetupCeiling(0, st.ceiling) // with no run, the step's own bound
			if s != nil {
				err = s.Setup(ctx, st.what, st.ceiling, st.do)
			} else {
				rctx, cancel := context.WithTimeout(ctx, within)
				err = st.do(rctx)
				cancel()
			}
			if se, ok := errors.AsType[*SetupError](err); ok {
				within = se.Granted
			}
			if err != nil {
				st.failed(err, within)
			}
		})
	}
	wg.Wait()
	// Offered in the config's order of servers, whichever answered first.
	for c, servers := range ts.mcp {
		slices.SortFunc(servers, func(a, b *mcp.Server) int {
			return slices.IndexFunc(c.MCPServers, func(m tools.MCPServer) bool { return m.Name == a.Name() }) -
				slices.IndexFunc(c.MCPServers, func(m tools.MCPServer) bool { return m.Name == b.Name() })
		})
	}
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

// ManifestUnavailable is what a failed fetch of the manifest of base, a
// tool server of c, leaves unavailable, in c's order, and why: err is
// what [tools.Config.ResolveServer] returned, within the fetch's lease.
// A server that is down leaves all its tools so; one whose manifest does
// not list a tool, or says of it what cannot be used, that tool. A server
// with no manifest ([tools.ErrNoManifest]) leaves nothing: its entries
// must say enough, and noManifest is that warning. It is the one rule
// [Toolset.Resolve] and a Temporal worker that loads a tools file apply
// (issue 25).
func ManifestUnavailable(c *tools.Config, base string, err error, within time.Duration) (down []landing.Unavailable, noManifest error) {
	whole, each := manifestFailures(err)
	if errors.Is(whole, tools.ErrNoManifest) {
		noManifest, whole = whole, nil
	}
	for _, e := range c.Entries {
		if e.URL != base {
			continue
		}
		if whole != nil {
			down = append(down, landing.Unavailable{Tool: e.Name, Why: "its tool server " + redact.URL(base) + " " + manifestReason(whole, within)})
			continue
		}
		err, ok := each[e.Name]
		if !ok {
			continue
		}
		why := "its tool server " + redact.URL(base) + " does not list it in its manifest"
		if !errors.Is(err, tools.ErrNotListed) {
			why = "the manifest of its tool server " + redact.URL(base) + " cannot be used for it: " + errors.Unwrap(err).Error()
		}
		down = append(down, landing.Unavailable{Tool: e.Name, Why: why})
	}
	return down, noManifest
}

// manifestFailures splits err, what [tools.Config.ResolveServer]
// returned, into the failure of the whole manifest (nil: it was read) and
// those of the tools it could not fill in, by tool.
func manifestFailures(err error) (whole error, each map[string]error) {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	each = map[string]error{}
	for _, err := range errs {
		if me, ok := errors.AsType[*tools.ManifestError](err); ok && me.Tool != "" {
			each[me.Tool] = me
			continue
		}
		whole = err
	}
	return whole, each
}

// manifestReason is why a tool server's manifest could not be had, in
// words that follow "its tool server U": down, when it could not be
// reached at all (refused, not resolved, or silent through within, the
// manifest's lease), so that its tools would fail the same way at every
// call; else what it sent instead of a manifest.
func manifestReason(err error, within time.Duration) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "was not heard from: its manifest's fetch was cancelled"
	case !errors.Is(err, tools.ErrManifest):
		// Not asked at all: the budget refused the fetch, or the run ended.
		return "was not asked for its manifest: " + err.Error()
	}
	inner := err
	if me, ok := errors.AsType[*tools.ManifestError](err); ok {
		inner = me.Err
	}
	if errors.Is(err, tools.ErrServerDown) {
		return "is down: it answered GET /tools with " + inner.Error()
	}
	if !serverDown(err) {
		return "sent no usable manifest: " + inner.Error()
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, budget.ErrLeaseExpired) || errors.Is(err, budget.ErrDeadline) {
		return "is down: its manifest did not arrive in " + landing.Human(within)
	}
	if oe, ok := errors.AsType[*net.OpError](err); ok {
		return "is down: " + oe.Error()
	}
	if de, ok := errors.AsType[*net.DNSError](err); ok {
		return "is down: " + de.Error()
	}
	return "is down: " + err.Error()
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
	var all []tools.Tool
	for _, e := range ts.Config.Entries {
		if e.Agent == nil {
			continue
		}
		a, err := ts.Agent(e)
		if err != nil {
			ts.unavailable(ts.Config, e.Name, err.Error()) // "agent scribe: model missing: …"
			continue
		}
		all = append(all, a)
	}
	for _, t := range ts.Config.Tools(ts.Client) {
		base := toolURL(ts.Config, t)
		if _, down := ts.down[serverOf{ts.Config, base, t.Spec().Name}]; base != "" && down {
			continue // Resolve marked it unavailable
		}
		if t.Spec().Effect == "" {
			ts.warn(fmt.Errorf("tool %s: neither its entry nor its manifest says whether it only reads, "+
				"so it is treated as a write and never retried blindly; give it effect: read if it only reads", t.Spec().Name))
		}
		all = append(all, t)
	}
	// In the config's order, whatever the kind: the order tools are
	// offered in is the file's.
	order := make(map[string]int, len(ts.Config.Entries))
	for i, e := range ts.Config.Entries {
		order[e.Name] = i
	}
	slices.SortStableFunc(all, func(a, b tools.Tool) int { return order[a.Spec().Name] - order[b.Spec().Name] })
	for _, srv := range ts.mcp[ts.Config] {
		all = append(all, srv.Tools()...)
	}
	// Two servers' tools may share a name once sanitized (servers "a.b"
	// and "a_b"): the warning names both as the config and the servers do.
	offered := map[string]tools.Tool{}
	for _, t := range all {
		name := t.Spec().Name
		if first, ok := offered[name]; ok {
			server, tool, isMCP := mcp.Origin(t)
			firstServer, firstTool, firstMCP := mcp.Origin(first)
			if isMCP && firstMCP {
				ts.warn(fmt.Errorf("mcp server %s: tool %q is not offered: its name would be %s, as that of tool %q of mcp server %s is",
					server, tool, name, firstTool, firstServer))
				continue
			}
		}
		if err := reg.Register(t); err != nil {
			// It cannot serve a call: a ceiling below the p50 its builtin
			// or its manifest declares, parameters that are no schema.
			why := "it cannot be offered: " + err.Error()
			if se, ok := errors.AsType[*tools.SpecError](err); ok {
				why = fmt.Sprintf("its %s %v", se.Field, se.Err)
			}
			ts.unavailable(ts.Config, name, why)
			continue
		}
		offered[name] = t
	}
}

// Agent returns the sub-agent of e, an agent entry of the config: its
// children run with the entry's instructions and max_steps, its model (the
// Toolset's Model when it names none), and the tools of its tools file,
// registered on a registry of their own, which the Agent closes.
func (ts *Toolset) Agent(e tools.Entry) (*Agent, error) {
	if e.Agent == nil {
		return nil, fmt.Errorf("tool %s: %w", e.Name, errNotAgent)
	}
	m := ts.Model
	if name := e.Agent.Model; name != "" {
		if ts.Models == nil {
			return nil, fmt.Errorf("agent %s: model %s: no models to choose from", e.Name, name)
		}
		var err error
		if m, err = ts.Models(name); err != nil {
			return nil, fmt.Errorf("agent %s: model %s: %w", e.Name, name, err)
		}
	}
	reg := tools.NewRegistry(nil)
	if e.Agent.Tools != nil {
		child := *ts // the servers Resolve connected, the child's among them
		child.Config, child.root = e.Agent.Tools, cmp.Or(ts.root, ts.Config)
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

// Close closes the MCP servers Resolve connected to, killing what stdio
// ones started, all at once, each until it is closed or ctx ends: a run
// that ends waits for its slowest server, not for their sum. A registry
// that offered their tools closes them too; Close also closes a server
// none of whose tools could be offered.
func (ts *Toolset) Close(ctx context.Context) error {
	var servers []*mcp.Server
	for _, ss := range ts.mcp {
		servers = append(servers, ss...)
	}
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, srv := range servers {
		wg.Go(func() { errs[i] = srv.Close(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// serverOf names one tool of a tool server as a config names it, by its
// base URL: one its manifest's fetch left unavailable (ManifestUnavailable).
type serverOf struct {
	c    *tools.Config
	base string
	tool string
}

// toolURL is the base URL of t, one of c's Tools, when it is a url
// entry's; "" otherwise. Tools skips agent entries, so the entry is found
// by name.
func toolURL(c *tools.Config, t tools.Tool) string {
	name := t.Spec().Name
	for _, e := range c.Entries {
		if e.Name == name {
			return e.URL
		}
	}
	return ""
}

// serverDown reports whether err, a manifest's failure, says the server
// could not be reached at all — refused, reset, not resolved, or silent
// until the fetch's lease ended — rather than that it answered something
// that is not a manifest: its tools would fail the same way at every call.
func serverDown(err error) bool {
	if _, ok := errors.AsType[net.Error](err); ok {
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, budget.ErrLeaseExpired) ||
		errors.Is(err, budget.ErrDeadline)
}

func (ts *Toolset) warn(err error) {
	if ts.Warn != nil {
		ts.Warn(err)
	}
}
