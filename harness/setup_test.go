package harness_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
)

// mute is a piece of setup whose server never answers: it waits for its
// lease to end.
func mute(ctx context.Context) error {
	<-ctx.Done()
	return context.Cause(ctx)
}

// B = 6s: R = 1.5s, so each piece of setup that asks for nothing of its
// own gets a quarter of the 4.5s of work time, and three mute ones at once
// cost the run that once (issue 24: a manifest had a fixed 5s).
func TestEachPieceOfSetupGetsTheRunsShareOfItsWorkTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(nil)
		defer srv.Close()
		var recs collect
		s, ctx := start(t, 6*time.Second, harness.Config{Task: "q", Model: newModel(t, srv), Tools: tools.NewRegistry(nil),
			Sinks: []trace.Sink{&recs}})
		defer s.Close()
		begin := time.Now()

		errs := make([]error, 3)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() { errs[i] = s.Setup(ctx, "manifest of http://mute.invalid", 0, mute) })
		}
		wg.Wait()

		if took := time.Since(begin); took != 1125*time.Millisecond {
			t.Errorf("the setup took %v, want one share, 1.125s", took)
		}
		for _, err := range errs {
			se, ok := errors.AsType[*harness.SetupError](err)
			if !ok || se.Granted != 1125*time.Millisecond || se.What != "manifest of http://mute.invalid" {
				t.Errorf("setup error %v, want a *SetupError of its 1.125s lease", err)
			}
			if got, want := err.Error(), "harness: setup: manifest of http://mute.invalid did not finish in 1.1s: budget: lease expired"; got != want {
				t.Errorf("error %q, want %q", got, want)
			}
		}
		res := s.Run(ctx)
		if res.Status != landing.Complete {
			t.Errorf("result %+v, want the run complete after its setup", res)
		}
		s.Close()
		for _, r := range only(recs.all(), trace.AttemptEnd, harness.SetupStep) {
			if r.GrantedMs != 1125 || r.Outcome != trace.GaveUp {
				t.Errorf("setup record %+v, want gave_up on a lease of 1125ms", r)
			}
		}
	})
}

// A run that lands before its first model turn names the setup that did
// not finish: it is what the run was doing (issue 24).
func TestARunThatLandsInSetupNamesItsSetupInTheBoundary(t *testing.T) {
	cases := []struct {
		name     string
		what     string
		ceiling  time.Duration
		cancelAt time.Duration // 0: the caller does not cancel
		cause    landing.Cause
		boundary string
	}{
		{
			// Its own ceiling, longer than the run: the lease is all the
			// work time, 6s − 1.5s − 50ms.
			name: "a connect_timeout longer than the run", what: "mcp server fs: connect and tools/list", ceiling: time.Minute,
			cause:    landing.CauseBudget,
			boundary: "Ran out of allotted time at step 0: in setup, mcp server fs: connect and tools/list did not finish in 4.4s.",
		},
		{
			name: "a Ctrl-C during setup", what: "manifest of http://mute.invalid", cancelAt: 500 * time.Millisecond,
			cause: landing.CauseCancelled, boundary: "Cancelled at step 0: in setup, manifest of http://mute.invalid was cancelled.",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := sim.NewPipeServer(nil)
				defer srv.Close()
				caller, cancel := context.WithCancel(t.Context())
				defer cancel()
				b, err := budget.New(budget.Config{Total: 6 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				s, ctx, err := harness.Start(caller, b, harness.Config{Task: "q", Model: newModel(t, srv), Tools: tools.NewRegistry(nil)})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				if tc.cancelAt > 0 {
					time.AfterFunc(tc.cancelAt, cancel)
				}

				s.Setup(ctx, tc.what, tc.ceiling, mute)
				res := s.Run(ctx)

				if res.Cause != tc.cause || res.Boundary != tc.boundary {
					t.Errorf("cause %s, boundary %q; want %s, %q", res.Cause, res.Boundary, tc.cause, tc.boundary)
				}
			})
		})
	}
}

// An MCP server that does not list a tool its allowed_tools names: that
// tool is unavailable, by its offered name, and the run is told so
// (issue 24: it was a warning only).
func TestAnAllowedToolItsMCPServerDoesNotListIsUnavailable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hs := mcpServers(t, 0, nil, map[string][]string{"fs": {"read"}})
		tc, err := tools.ParseConfig("t.yaml", []byte("mcpServers:\n  fs:\n    url: http://tools.invalid/fs/mcp\n    trust_hints: true\n"+
			"    allowed_tools: [read, write]\n"), nil)
		if err != nil {
			t.Fatal(err)
		}
		var warnings []string
		var mu sync.Mutex
		ts := &harness.Toolset{Config: tc, Client: hs.client(),
			Warn: func(err error) { mu.Lock(); warnings = append(warnings, err.Error()); mu.Unlock() }}
		s, ctx := start(t, time.Minute, harness.Config{Task: "q"})
		defer s.Close()
		reg := tools.NewRegistry(nil)

		ts.Resolve(ctx, s)
		ts.Register(reg)
		defer ts.Close(t.Context())

		if specs := reg.Specs(); len(specs) != 1 || specs[0].Name != "mcp__fs__read" {
			t.Errorf("offered %+v, want mcp__fs__read alone", specs)
		}
		why := "its mcp server fs does not list it among its tools"
		if u := s.Unavailable(); len(u) != 1 || u[0] != (landing.Unavailable{Tool: "mcp__fs__write", Why: why}) {
			t.Errorf("unavailable %+v, want mcp__fs__write: %s", u, why)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(warnings) != 1 || warnings[0] != "tool mcp__fs__write is unavailable: "+why {
			t.Errorf("warnings %q, want the one tool named once", warnings)
		}
	})
}

// With no run (harness serve), a url tool whose server lists it not is
// still left out, and warned about.
func TestWithNoRunAToolItsServerDoesNotListIsNotOffered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := startKit(t)
		defer k.close()
		tc := writeConfigs(t, [2]string{"t.yaml", "tools:\n  - name: lookup\n    effect: read\n    description: Looks up.\n    url: http://tools.invalid\n"})
		var warnings []string
		ts := &harness.Toolset{Config: tc, Client: k.client(), Warn: func(err error) { warnings = append(warnings, err.Error()) }}
		reg := tools.NewRegistry(nil)

		ts.Resolve(t.Context(), nil)
		ts.Register(reg)

		if specs := reg.Specs(); len(specs) != 0 {
			t.Errorf("offered %+v, want nothing", specs)
		}
		if len(warnings) != 1 || !strings.HasPrefix(warnings[0], "tool lookup is unavailable: its tool server http://tools.invalid does not list it") {
			t.Errorf("warnings %q", warnings)
		}
	})
}

// A server that answers GET /tools with an HTTP error has no manifest:
// its entry must say enough, its tool is still offered, and that is a
// warning; a 200 that is not a manifest makes the tool unavailable.
func TestAServerWithNoManifestIsAWarningAndOneWithABadOneIsUnavailable(t *testing.T) {
	cases := []struct {
		name    string
		status  int
		body    string
		offered bool
		warning string
	}{
		{"404: no manifest", http.StatusNotFound, "not found", true, "tools: manifest of http://tools.invalid: HTTP 404"},
		{"503: the server is down", http.StatusServiceUnavailable, "upstream down", false,
			"tool lookup is unavailable: its tool server http://tools.invalid is down: it answered GET /tools with HTTP 503"},
		{"200 with a page", http.StatusOK, "<html>hello</html>", false,
			"tool lookup is unavailable: its tool server http://tools.invalid sent no usable manifest: not a manifest (text/html): invalid character '<' looking for beginning of value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mux := http.NewServeMux()
				mux.HandleFunc("GET /tools", func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "text/html")
					w.WriteHeader(tc.status)
					fmt.Fprint(w, tc.body)
				})
				hs := serveHandler(mux)
				defer hs.close()
				cfg := writeConfigs(t, [2]string{"t.yaml", "tools:\n  - name: lookup\n    effect: read\n    description: Looks up.\n    url: http://tools.invalid\n"})
				var warnings []string
				ts := &harness.Toolset{Config: cfg, Client: hs.client(), Warn: func(err error) { warnings = append(warnings, err.Error()) }}
				s, ctx := start(t, time.Minute, harness.Config{Task: "q"})
				defer s.Close()
				reg := tools.NewRegistry(nil)

				ts.Resolve(ctx, s)
				ts.Register(reg)

				if _, ok := reg.Lookup("lookup"); ok != tc.offered {
					t.Errorf("offered: %v, want %v", ok, tc.offered)
				}
				if u := s.Unavailable(); (len(u) == 0) != tc.offered {
					t.Errorf("unavailable %+v", u)
				}
				if len(warnings) != 1 || warnings[0] != tc.warning {
					t.Errorf("warnings %q, want %q", warnings, tc.warning)
				}
			})
		})
	}
}
