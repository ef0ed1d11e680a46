package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/glidepath/glidepath/sim"
)

// procBudget is B for the process runs: long enough that starting the
// process is a small part of it, short enough for ten runs of each
// scenario in a minute.
const procBudget = 2 * time.Second

// procScenario is one way a `harness run` process can be kept from
// ending: what the model does, and what its one tool does.
type procScenario struct {
	name  string
	model sim.Rule // every chat request of the run
	tool  string   // "", "hang-cancel-hangs" or "ignores-cancel"
}

var procScenarios = []procScenario{
	{name: "the model endpoint hangs on every request, the landing call too", model: sim.Rule{Hang: true}},
	{name: "the model streams only keepalives", model: sim.Rule{Keepalive: sim.Forever, KeepaliveEvery: 100 * time.Millisecond}},
	{name: "a tool hangs and its cancel endpoint hangs too", tool: "hang-cancel-hangs"},
	{name: "a tool ignores cancellation (its cancel is accepted, its call goes on)", tool: "ignores-cancel"},
}

// procEnd runs bin/harness n times per scenario and measures, from
// outside the process, how long after its budget B each process ended:
// from just before the process is started to when it has exited, so the
// process's own start-up counts against it. SPEC §7: within B + 50ms.
func procEnd(ctx context.Context, harness string, n int) ([]procResult, error) {
	if _, err := os.Stat(harness); err != nil {
		return nil, fmt.Errorf("%w (make build makes it)", err)
	}
	dir, err := os.MkdirTemp("", "benchmd-proc-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var out []procResult
	for _, sc := range procScenarios {
		r, err := procScenarioEnd(ctx, harness, dir, sc, n)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sc.name, err)
		}
		out = append(out, r)
	}
	return out, nil
}

type procResult struct {
	scenario string
	late     []time.Duration // end − start − B, per run
	exits    map[int]int     // exit code → runs
	partial  int             // runs whose output led with the partial boundary
}

func procScenarioEnd(ctx context.Context, harness, dir string, sc procScenario, n int) (procResult, error) {
	rules := []sim.Rule{sc.model}
	if sc.tool != "" {
		rules = nil // the default policy calls the tool, then answers
	}
	model := sim.NewServer(&sim.Scenario{Rules: rules})
	defer model.Close()
	done := make(chan struct{})
	tool := httptest.NewServer(stuckTool(sc.tool, done))
	defer tool.Close()
	defer close(done) // before tool.Close, which waits for the handlers

	args := procArgs(procBudget, model.URL, dir)
	if sc.tool != "" {
		cfg, err := writeToolsFile(dir, tool.URL)
		if err != nil {
			return procResult{}, err
		}
		args = append(args, "--tools", cfg)
	}
	args = append(args, "look up cats")
	res := procResult{scenario: sc.name, exits: map[int]int{}}
	for range n {
		p, err := procOnce(ctx, harness, dir, args)
		if err != nil {
			return res, err
		}
		res.late = append(res.late, p.took-procBudget)
		res.exits[p.exit]++
		if p.partial {
			res.partial++
		}
	}
	return res, nil
}

// procArgs are the flags of every measured `harness run`: budget b, the
// model at modelURL, the orphan journal in dir, no latency profile and no
// live line, as a script would run it.
func procArgs(b time.Duration, modelURL, dir string) []string {
	return []string{"run", "--budget", b.String(), "--model", "sim-over-http", "--base-url", modelURL,
		"--journal", filepath.Join(dir, "orphans.jsonl"), "--profile", "off", "--progress", "never"}
}

// writeToolsFile writes a tools file in dir with the one tool "stuck" of
// the tool server at url, and returns its path.
func writeToolsFile(dir, url string) (string, error) {
	cfg := filepath.Join(dir, "tools.yaml")
	return cfg, os.WriteFile(cfg, []byte("tools:\n  - name: stuck\n    url: "+url+"\n"), 0o600)
}

// procRun is one `harness run` process, timed from outside.
type procRun struct {
	started time.Time     // just before it started
	took    time.Duration // from started to when it had exited
	exit    int
	partial bool // its output led with the partial boundary
}

// procOnce runs harness with args once, its state under dir.
func procOnce(ctx context.Context, harness, dir string, args []string) (procRun, error) {
	var stdout strings.Builder
	cmd := exec.CommandContext(ctx, harness, args...)
	cmd.Stdout, cmd.Stderr = &stdout, io.Discard
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+dir, "OPENAI_API_KEY=")
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return procRun{}, err
	}
	err := cmd.Wait()
	took := time.Since(start)
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		return procRun{}, err
	}
	return procRun{started: start, took: took, exit: cmd.ProcessState.ExitCode(), partial: strings.HasPrefix(stdout.String(), "PARTIAL RESULT")}, nil
}

// stuckTool serves one read tool, "stuck", over SPEC §5's protocol, whose
// calls never answer: with "hang-cancel-hangs" its cancel endpoint hangs
// too; with "ignores-cancel" its cancel is accepted and the call goes on
// anyway, even after the caller hangs up. Every handler returns once done
// is closed.
func stuckTool(kind string, done <-chan struct{}) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /tools", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"tools":[{"name":"stuck","description":"Looks things up.","parameters":{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]},"effect":"read","cancellable":true,"p50_ms":20,"p95_ms":100}]}`)
	})
	mux.HandleFunc("POST /tools/stuck", func(w http.ResponseWriter, r *http.Request) {
		if kind == "ignores-cancel" {
			<-done // not r.Context(): it goes on after its caller left
			return
		}
		select {
		case <-done:
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("DELETE /tools/stuck/calls/{key}", func(w http.ResponseWriter, r *http.Request) {
		if kind == "hang-cancel-hangs" {
			select {
			case <-done:
			case <-r.Context().Done():
			}
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
	mux.HandleFunc("GET /tools/stuck/calls/{key}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"state":"running","units":0}`)
	})
	return mux
}
