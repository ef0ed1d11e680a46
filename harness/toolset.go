package harness

import (
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

	// mcp holds the MCP servers Resolve connected to, by the config that
	// names them, for Register to offer their tools.
	mcp map[*tools.Config][]*mcp.Server

	// down holds the tool servers Resolve could not reach, by the config
	// that names them and their base URL, and why: Register does not
	// offer their tools (SPEC §4).
	down map[serverOf]string

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
// budget; without one, each is bounded by its own timeout and ctx. A
// manifest that cannot be had is a warning: such a tool still works if its
// entry said enough. A tool server that cannot be reached for its
// manifest at all (refused, not resolved, or silent until the manifest's
// lease ends) is down, and so is an MCP server that does not come up
// within its lease: their tools are not offered, and each is marked
// unavailable on s ([Session.MarkUnavailable]) and warned about as an
// [*UnavailableError] (SPEC §4); the run goes on with the rest. Close the
// Toolset when the runs that use it are done.
func (ts *Toolset) Resolve(ctx context.Context, s *Session) {
	type step struct {
		what    string
		ceiling time.Duration
		do      func(ctx context.Context) error
	}
	var steps []step
	var mu sync.Mutex
	ts.mcp = map[*tools.Config][]*mcp.Server{}
	ts.down = map[serverOf]string{}
	// unavailable says that tool of c cannot be used, on the run and to
	// its user; a sub-agent's tools file is named, as its tools are not
	// the run's own.
	unavailable := func(c *tools.Config, tool, why string) {
		if c != ts.Config {
			why += " (tools file " + c.File + ")"
		}
		s.MarkUnavailable(tool, why)
		ts.warn(&UnavailableError{Tool: tool, Why: why})
	}
	// The run's work time, B − R: a quarter of it bounds an MCP server's
	// connect when its entry gives no connect_timeout (SPEC §5b). 0: no run.
	var work time.Duration
	if b := s.Budget(); b != nil { // nil for no Session, or one never started
		work = b.Total() - b.Reserve()
	}
	for _, c := range ts.Config.Configs() {
		for _, base := range c.Servers() {
			steps = append(steps, step{"manifest of " + redact.URL(base), tools.DefaultResolveTimeout,
				func(ctx context.Context) error {
					err := c.ResolveServer(ctx, ts.Client, base)
					if err == nil || !serverDown(err) {
						return err // a manifest that is wrong is a warning: the entry may say enough
					}
					why := "its tool server " + redact.URL(base) + " is down: " + downReason(err)
					mu.Lock()
					ts.down[serverOf{c, base}] = why
					mu.Unlock()
					for _, e := range c.Entries {
						if e.URL == base {
							unavailable(c, e.Name, why)
						}
					}
					return warned{err}
				}})
		}
		for _, cfg := range c.MCPServers {
			steps = append(steps, step{"mcp server " + cfg.Name + ": connect and tools/list", mcp.ConnectTimeout(cfg, work),
				func(ctx context.Context) error {
					srv, err := mcp.Connect(ctx, cfg, mcp.Options{HTTPClient: ts.Client, Stderr: ts.Stderr})
					if err != nil {
						// Its tools are known only once listed: those the
						// config allows are named, else the server is.
						why := "its mcp server " + cfg.Name + " did not come up: " + err.Error()
						if len(cfg.AllowedTools) == 0 {
							unavailable(c, "mcp server "+cfg.Name, why)
						}
						for _, name := range cfg.AllowedTools {
							unavailable(c, mcp.ToolName(cfg.Name, name), why)
						}
						return warned{err}
					}
					mu.Lock()
					ts.mcp[c] = append(ts.mcp[c], srv)
					mu.Unlock()
					for _, name := range srv.Missing() {
						ts.warn(fmt.Errorf("mcp server %s: allowed tool %q is not among its tools", cfg.Name, name))
					}
					for _, err := range srv.Warnings() {
						ts.warn(err)
					}
					return nil
				}})
		}
	}
	errs := make([]error, len(steps))
	var wg sync.WaitGroup
	for i, st := range steps {
		wg.Go(func() {
			if s != nil {
				errs[i] = s.Setup(ctx, st.what, st.ceiling, st.do)
				return
			}
			rctx, cancel := context.WithTimeout(ctx, st.ceiling)
			defer cancel()
			errs[i] = st.do(rctx)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if _, ok := errors.AsType[warned](err); err != nil && !ok {
			ts.warn(err)
		}
	}
	// Offered in the config's order of servers, whichever answered first.
	for c, servers := range ts.mcp {
		slices.SortFunc(servers, func(a, b *mcp.Server) int {
			return slices.IndexFunc(c.MCPServers, func(m tools.MCPServer) bool { return m.Name == a.Name() }) -
				slices.IndexFunc(c.MCPServers, func(m tools.MCPServer) bool { return m.Name == b.Name() })
		})
	}
}

// warned is the failure of a setup step that has been warned about
// already, as an [*UnavailableError]: the step's record still says it
// failed, and the user is not told twice.
type warned struct{ err error }

func (w warned) Error() string { return w.err.Error() }
func (w warned) Unwrap() error { return w.err }

// Register registers the config's tools on reg, a sub-agent for each
// agent entry among them, and the tools of the MCP servers Resolve
// connected to, after the entries. A tool that cannot be registered is a warning,
// and so is a tool whose effect neither its entry nor its manifest states:
// it is treated as a write. Two MCP servers' tools offered under one name
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
			ts.warn(fmt.Errorf("not offered: %w", err))
			continue
		}
		all = append(all, a)
	}
	for _, t := range ts.Config.Tools(ts.Client) {
		if _, down := ts.down[serverOf{ts.Config, toolURL(ts.Config, t)}]; down {
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
			ts.warn(fmt.Errorf("not offered: %w", err))
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
		child.Config = e.Agent.Tools
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

// serverOf names a tool server as a config names it: its base URL.
type serverOf struct {
	c    *tools.Config
	base string
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

// downReason is the transport's own words for why a server is down
// ("dial tcp 127.0.0.1:1: connect: connection refused"), without the
// wrapping that names the manifest again.
func downReason(err error) string {
	if oe, ok := errors.AsType[*net.OpError](err); ok {
		return oe.Error()
	}
	if de, ok := errors.AsType[*net.DNSError](err); ok {
		return de.Error()
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, budget.ErrLeaseExpired) || errors.Is(err, budget.ErrDeadline) {
		return "no answer before the manifest's lease ended"
	}
	return err.Error()
}

func (ts *Toolset) warn(err error) {
	if ts.Warn != nil {
		ts.Warn(err)
	}
}
