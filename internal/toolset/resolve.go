package toolset

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/internal/redact"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/mcp"
	"github.com/glidepath/glidepath/trace"
)

// A step is one piece of a Set's setup.
type step struct {
	what    string
	ceiling time.Duration // what the step asks for; zero: the run's setup share
	do      func(ctx context.Context) error
	ended   func(h Hooks, err error, within time.Duration, cut bool) // records it, marks what err leaves unavailable
}

// Resolve fetches the manifest of every tool server of s and of every set
// under it, and fills in what their url entries left out
// ([tools.Config.ResolveServer]); and it connects to every MCP server they
// name and lists its tools ([mcp.Connect]). It does all at once, each step
// by h.Setup, so that one mute server, or several, cost a run one share of
// its work time, never all of it (issue 24).
//
// A tool that cannot serve its calls is unavailable, by one rule (SPEC
// §4): its tool server is down (refused, not resolved, or silent until
// the manifest's lease ended), its manifest is not one, the manifest does
// not list it or says something of it that cannot be used, its MCP server
// does not come up within its lease or does not list it. Such a tool is
// not offered by [Set.Register], is listed by [Set.Unavailable] and told
// to h.Unavailable. A server that answers GET /tools with a 4xx or a 501
// has no manifest ([tools.ErrNoManifest]): its entries must say enough,
// and that is a warning; another 5xx is a server down
// ([tools.ErrServerDown]). What each step found is marked once all have
// ended, in the file's order, whichever answered first.
func (s *Set) Resolve(ctx context.Context, h Hooks) {
	var steps []step
	for _, set := range s.all() {
		steps = append(steps, set.steps()...)
	}
	type result struct {
		err    error
		within time.Duration
		cut    bool
	}
	results := make([]result, len(steps))
	var wg sync.WaitGroup
	for i, st := range steps {
		wg.Go(func() {
			r := &results[i]
			r.within, r.cut, r.err = setup(ctx, h, st)
		})
	}
	wg.Wait()
	for i, st := range steps {
		st.ended(h, results[i].err, results[i].within, results[i].cut)
	}
	for _, set := range s.all() {
		set.listed(h)
	}
}

func setup(ctx context.Context, h Hooks, st step) (time.Duration, bool, error) {
	if h.Setup != nil {
		return h.Setup(ctx, st.what, st.ceiling, st.do)
	}
	return Bounded(ctx, st.ceiling, st.do)
}

// Bounded runs do, a piece of setup with no run to lease from, within its
// own bound: ceiling, or the default share ([budget.SetupCeiling]).
func Bounded(ctx context.Context, ceiling time.Duration, do func(context.Context) error) (time.Duration, bool, error) {
	within := budget.SetupCeiling(0, ceiling)
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	return within, false, do(ctx)
}

// steps are the pieces of s's own setup: its servers' manifests, then its
// MCP servers.
func (s *Set) steps() []step {
	if s.Config == nil {
		return nil
	}
	var steps []step
	for _, base := range s.Config.Servers() {
		what := "manifest of " + redact.URL(base)
		steps = append(steps, step{what: what,
			do: func(ctx context.Context) error { return s.Config.ResolveServer(ctx, s.opts.Client, base) },
			ended: func(h Hooks, err error, within time.Duration, _ bool) {
				s.fetched(what, err)
				if err == nil {
					return
				}
				down, noManifest := manifestUnavailable(s.Config, base, err, within)
				if noManifest != nil {
					warn(h, noManifest)
				}
				for _, u := range down {
					s.mu.Lock()
					s.down[u.Tool] = true
					s.mu.Unlock()
					s.mark(h, u.Tool, u.Why)
				}
			}})
	}
	for _, cfg := range s.Config.MCPServers {
		steps = append(steps, step{what: "mcp server " + cfg.Name + ": connect and tools/list", ceiling: cfg.ConnectTimeout,
			do: func(ctx context.Context) error { return s.connect(ctx, cfg) },
			ended: func(h Hooks, err error, within time.Duration, cut bool) {
				if err != nil {
					s.notUp(h, cfg, err, within, cut)
				}
			}})
	}
	return steps
}

// fetched records a fetch of a manifest, as a run records it.
func (s *Set) fetched(what string, err error) {
	f := Fetch{What: what, Outcome: trace.OK}
	if err != nil {
		f.Outcome, f.Err = trace.UpstreamError, redact.Secrets(err.Error())
		if errors.Is(err, context.DeadlineExceeded) {
			f.Outcome = trace.GaveUp
		}
	}
	s.mu.Lock()
	s.fetches = append(s.fetches, f)
	s.mu.Unlock()
}

// connect connects to the MCP server of cfg and lists its tools.
func (s *Set) connect(ctx context.Context, cfg tools.MCPServer) error {
	srv, err := mcp.Connect(ctx, cfg, mcp.Options{HTTPClient: s.opts.Client, Stderr: s.opts.Stderr})
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.mcp = append(s.mcp, srv)
	s.mu.Unlock()
	return nil
}

// notUp marks the tools of an MCP server that did not come up: those the
// config allows are named, else the server is, as its tools are known only
// once listed.
func (s *Set) notUp(h Hooks, cfg tools.MCPServer, err error, within time.Duration, cut bool) {
	why := "its mcp server " + cfg.Name + " did not come up: " + err.Error()
	if cut {
		why = "its mcp server " + cfg.Name + " did not come up in " + landing.Human(within)
	}
	if len(cfg.AllowedTools) == 0 {
		s.mark(h, "mcp server "+cfg.Name, why)
	}
	for _, name := range cfg.AllowedTools {
		s.mark(h, mcp.ToolName(cfg.Name, name), why)
	}
}

// listed puts s's MCP servers in the config's order, whichever answered
// first, marks the tools each does not list and tells h what each warns of.
func (s *Set) listed(h Hooks) {
	if s.Config == nil {
		return
	}
	s.mu.Lock()
	at := func(srv *mcp.Server) int {
		return slices.IndexFunc(s.Config.MCPServers, func(m tools.MCPServer) bool { return m.Name == srv.Name() })
	}
	slices.SortFunc(s.mcp, func(a, b *mcp.Server) int { return at(a) - at(b) })
	servers := slices.Clone(s.mcp)
	s.mu.Unlock()
	for _, srv := range servers {
		for _, name := range srv.Missing() {
			s.mark(h, mcp.ToolName(srv.Name(), name), "its mcp server "+srv.Name()+" does not list it among its tools")
		}
		for _, err := range srv.Warnings() {
			warn(h, err)
		}
	}
}

// manifestUnavailable is what a failed fetch of the manifest of base, a
// tool server of c, leaves unavailable, in c's order, and why: err is
// what [tools.Config.ResolveServer] returned, within the fetch's lease.
// A server that is down leaves all its tools so; one whose manifest does
// not list a tool, or says of it what cannot be used, that tool. A server
// with no manifest ([tools.ErrNoManifest]) leaves nothing: its entries
// must say enough, and noManifest is that warning.
func manifestUnavailable(c *tools.Config, base string, err error, within time.Duration) (down []landing.Unavailable, noManifest error) {
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
