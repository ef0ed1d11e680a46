package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glidepath/glidepath/trace"
)

// Setup on a lease of its own share, and tools really there by one rule
// (issue 24), as a user meets them: `harness run` as a process (see
// TestMain), real servers on loopback, real time. The bounds are
// generous; the assertions are about order and outcome.

// base is the address of a black hole as a tool server's base URL.
func (h *blackHole) base() string { return "http://" + h.l.Addr().String() }

// B = 6s, so R = 1.5s and the setup share is a quarter of 4.5s: three
// mute tool servers cost the run that share once, together, where one
// used to take all of its work time and land it at step 0.
func TestE2EMuteToolServersCostTheRunOneShareOfItsWorkTime(t *testing.T) {
	holes := []*blackHole{newBlackHole(t), newBlackHole(t), newBlackHole(t)}
	var cfg strings.Builder
	cfg.WriteString("tools:\n")
	for i, h := range holes {
		fmt.Fprintf(&cfg, "  - name: lookup%d\n    effect: read\n    description: look up\n    url: %s\n", i, h.base())
	}
	file := writeFile(t, "tools.yaml", cfg.String())
	trc := filepath.Join(t.TempDir(), "trace.jsonl")

	stdout, stderr, code := runHarness(t, nil, "run", "--json", "--budget", "6s", "--profile", "off", "--trace", trc, "--tools", file, "look-it-up")

	if code != exitOK {
		t.Fatalf("exit %d, want %d: the run goes on without them; stderr:\n%s", code, exitOK, stderr)
	}
	res := jsonResult(t, stdout)
	if res.Status != "complete" || res.Steps != 1 {
		t.Errorf("status %s after %d steps, boundary %q; want the run complete", res.Status, res.Steps, res.Boundary)
	}
	if len(res.Unavailable) != len(holes) {
		t.Fatalf("unavailable %+v, want the three mute servers' tools", res.Unavailable)
	}
	for i, u := range res.Unavailable {
		why := "its tool server " + holes[0].base() + " is down: its manifest did not arrive in 1.1s"
		for j, h := range holes {
			if u.Tool == fmt.Sprintf("lookup%d", j) {
				why = "its tool server " + h.base() + " is down: its manifest did not arrive in 1.1s"
			}
		}
		if u.Why != why {
			t.Errorf("unavailable[%d] = %+v, want why %q", i, u, why)
		}
		if n := strings.Count(stderr, "warning: tool "+u.Tool+" is unavailable: "+u.Why); n != 1 {
			t.Errorf("stderr warns about %s %d times, want once:\n%s", u.Tool, n, stderr)
		}
	}
	var starts, ends int
	for _, r := range readTrace(t, trc) {
		if r.Step != "setup" {
			continue
		}
		switch r.Event {
		case trace.AttemptStart:
			starts++
			if ends > 0 {
				t.Errorf("a manifest fetch started after another ended: they go at once")
			}
			if r.GrantedMs > 1125 {
				t.Errorf("a manifest fetch was granted %dms, want at most the share, 1125ms", r.GrantedMs)
			}
		case trace.AttemptEnd:
			ends++
			if r.Outcome != trace.GaveUp || r.ElapsedMs > 3000 {
				t.Errorf("setup ended %s at %dms, want gave_up at about 1.1s", r.Outcome, r.ElapsedMs)
			}
		}
	}
	if starts != len(holes) || ends != len(holes) {
		t.Errorf("%d setup starts and %d ends, want one each per server", starts, ends)
	}
	if res.Budget.SpentMs > 4000 {
		t.Errorf("spent %dms: more than one share of setup", res.Budget.SpentMs)
	}
}

// A piece of setup that asks for more than the run has (an MCP server's
// connect_timeout of 1m on a 6s run) may spend the work time: it is
// leased from the budget, and the run that lands before its first turn
// says that setup is what it was doing.
func TestE2EASetupThatTookTheWorkTimeIsNamedInTheBoundary(t *testing.T) {
	hole := newBlackHole(t)
	file := writeFile(t, "tools.yaml", "mcpServers:\n  mute:\n    url: "+hole.base()+"/mcp\n    connect_timeout: 1m\n")

	stdout, stderr, code := runHarness(t, nil, "run", "--json", "--budget", "6s", "--profile", "off", "--tools", file, "q")

	if code != exitPartial {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitPartial, stderr)
	}
	res := jsonResult(t, stdout)
	// The lease is what the work time had left once the process was up:
	// about 4.4s on an idle machine, less, by as much as the start took,
	// on a loaded one.
	want := regexp.MustCompile(`^Ran out of allotted time at step 0: in setup, mcp server mute: connect and tools/list did not finish in (\d+(?:\.\d+)?(?:ms|s))\.$`)
	if m := want.FindStringSubmatch(res.Boundary); m == nil {
		t.Errorf("boundary %q, want %v", res.Boundary, want)
	} else {
		lease, err := time.ParseDuration(m[1])
		work := time.Duration(res.Budget.TotalMs-res.Budget.ReserveMs) * time.Millisecond
		if err != nil || lease <= 0 || lease > work {
			t.Errorf("boundary %q: a lease of %v (%v), want more than 0 and at most the work time, %v", res.Boundary, lease, err, work)
		}
	}
	if len(res.Unavailable) != 1 || !strings.HasPrefix(res.Unavailable[0].Why, "its mcp server mute did not come up in ") {
		t.Errorf("unavailable %+v, want the mute server, not up in its lease", res.Unavailable)
	}
}

// manifestServer is a tool server on loopback whose GET /tools answers
// manifest with contentType, and which counts the calls made to it.
func manifestServer(t *testing.T, contentType, manifest string) (base string, posts *atomic.Int64) {
	t.Helper()
	posts = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"output":"found"}`)
			return
		}
		w.Header().Set("Content-Type", contentType)
		fmt.Fprint(w, manifest)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, posts
}

// Every kind of tool that cannot serve its calls is listed in
// "unavailable" with its reason, warned about once by name, not offered to
// the model (the sim calls every tool it is offered), and fails
// --require-tools before the first model turn (issue 24).
func TestE2EEveryToolThatCannotServeItsCallsIsUnavailable(t *testing.T) {
	const lookup = `{"tools":[{"name":"lookup","description":"Looks up.","effect":"read","parameters":{"type":"object"}%s}]}`
	cases := []struct {
		name        string
		contentType string // of the manifest; "" for a builtin
		manifest    string
		entry       string // the entry's fields beside name and url
		tool, why   string
	}{
		{name: "a builtin whose ceiling is below its own p50", entry: "builtin: deep_research\n    ceiling: 1s",
			tool: "lookup", why: "its ceiling 1s is below p50 2s, so every call would be refused"},
		{name: "a remote tool whose ceiling is below its manifest's p50", contentType: "application/json",
			manifest: fmt.Sprintf(lookup, `,"p50_ms":2000`), entry: "ceiling: 1s",
			tool: "lookup", why: "its ceiling 1s is below p50 2s, so every call would be refused"},
		{name: "an HTML page for a manifest", contentType: "text/html; charset=utf-8", manifest: "<!doctype html><h1>Welcome</h1>",
			tool: "lookup", why: "sent no usable manifest: not a manifest (text/html; charset=utf-8): invalid character '<'"},
		{name: "garbage for a manifest", contentType: "application/json", manifest: "\x00\x01garbage",
			tool: "lookup", why: "sent no usable manifest: not a manifest (application/json): invalid character"},
		{name: "a manifest of the wrong shape", contentType: "application/json", manifest: `{"tools":"lookup"}`,
			tool: "lookup", why: "sent no usable manifest: not a manifest (application/json): json: cannot unmarshal string"},
		{name: "a manifest that does not list the tool", contentType: "application/json",
			manifest: `{"tools":[{"name":"other","effect":"read"}]}`, tool: "lookup", why: "does not list it in its manifest"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			entry := "  - name: lookup\n    effect: read\n    description: look up\n    " + tc.entry + "\n"
			var posts *atomic.Int64
			if tc.contentType != "" {
				var base string
				base, posts = manifestServer(t, tc.contentType, tc.manifest)
				entry += "    url: " + base + "\n"
			}
			file := writeFile(t, "tools.yaml", "tools:\n"+strings.ReplaceAll(entry, "    \n", ""))
			dir := t.TempDir()
			trc := filepath.Join(dir, "trace.jsonl")

			stdout, stderr, code := runHarness(t, nil, "run", "--json", "--profile", "off", "--trace", trc, "--tools", file, "find")

			if code != exitOK {
				t.Fatalf("exit %d, want %d: the run goes on without it; stderr:\n%s", code, exitOK, stderr)
			}
			res := jsonResult(t, stdout)
			if len(res.Unavailable) != 1 || res.Unavailable[0].Tool != tc.tool || !strings.Contains(res.Unavailable[0].Why, tc.why) {
				t.Errorf("unavailable %+v, want %s: …%s…", res.Unavailable, tc.tool, tc.why)
			}
			if n := strings.Count(stderr, "warning: tool "+tc.tool+" is unavailable: "); n != 1 {
				t.Errorf("stderr warns about %s %d times, want once:\n%s", tc.tool, n, stderr)
			}
			if tries := only(readTrace(t, trc), trace.AttemptStart, "tool:"+tc.tool); len(tries) != 0 || posts != nil && posts.Load() != 0 {
				t.Errorf("the tool was offered and called: %d attempts", len(tries))
			}

			stdout, stderr, code = runHarness(t, nil, "run", "--json", "--require-tools", "--profile", "off",
				"--trace", filepath.Join(dir, "required.jsonl"), "--tools", file, "find")

			if code != exitUsage || stdout != "" || !strings.Contains(stderr, "--require-tools: 1 unavailable: "+tc.tool) {
				t.Errorf("with --require-tools: exit %d, stdout %q, stderr:\n%s\nwant exit %d naming %s", code, stdout, stderr, exitUsage, tc.tool)
			}
			if model := only(readTrace(t, filepath.Join(dir, "required.jsonl")), trace.AttemptStart, "model"); len(model) != 0 {
				t.Errorf("with --require-tools the model was asked %d times, want none", len(model))
			}
		})
	}
}

// A program that is not there is bad config, exit 2, before anything is
// started, for every kind that starts one and for every command that
// reads a tools file: harness run, serve and plan (issue 24).
func TestE2EAProgramThatIsNotThereIsBadConfigForEveryKind(t *testing.T) {
	kinds := []struct {
		name, file, says string
	}{
		{"a command tool", "tools:\n  - name: lister\n    effect: read\n    command: [no-such-lister-on-path]\n",
			`tool lister: command "no-such-lister-on-path": executable file not found in $PATH`},
		{"a command tool's status command", "tools:\n  - name: payer\n    effect: write\n    command: [cat]\n    status: [no-such-status-on-path]\n",
			`tool payer: command "no-such-status-on-path": executable file not found in $PATH`},
		{"an mcp server's command", "mcpServers:\n  fs:\n    command: no-such-mcp-server-on-path\n    args: [--root, /]\n",
			`mcp server fs: command "no-such-mcp-server-on-path": executable file not found in $PATH`},
		{"an mcp server's command by path", "mcpServers:\n  fs:\n    command: ./no-such-mcp-server\n",
			`mcp server fs: command "./no-such-mcp-server": stat ./no-such-mcp-server: no such file or directory`},
	}
	for _, k := range kinds {
		file := writeFile(t, "tools.yaml", k.file)
		for _, args := range [][]string{
			{"run", "--json", "--budget", "10s", "--tools", file, "q"},
			{"serve", "--addr", "127.0.0.1:0", "--tools", file},
			{"plan", "--tools", file},
		} {
			t.Run(k.name+"/"+args[0], func(t *testing.T) {
				stdout, stderr, code := runHarness(t, nil, args...)

				if code != exitUsage {
					t.Errorf("exit %d, want %d; stdout %q, stderr:\n%s", code, exitUsage, stdout, stderr)
				}
				if !strings.Contains(stderr, k.says) {
					t.Errorf("stderr does not say %q:\n%s", k.says, stderr)
				}
			})
		}
	}
}
