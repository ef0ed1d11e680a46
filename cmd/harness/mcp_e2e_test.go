package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glidepath/glidepath/internal/everything"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools/demo"
	"github.com/glidepath/glidepath/trace"
)

// End-to-end with the MCP reference server (@modelcontextprotocol/
// server-everything, pinned by interop/mcp's lockfile): `harness run` as a
// process, its mcpServers pointing at the server over stdio and streamable
// HTTP, and a scripted model (sim) that calls the server's tools with the
// arguments each test needs. Real time: bounds are generous, assertions
// are about outcomes and order.

const longOp = "mcp__everything__trigger-long-running-operation"

// quoted is args as a YAML flow list.
func quoted(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = strconv.Quote(a)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// stdioServer is an mcpServers entry for the reference server over stdio,
// started through sh so that the test can see its wire and its pids: what
// the harness writes to it is appended to wire, and each start appends
// the server's pid to pids. extra lines are added to the entry.
func stdioServer(t *testing.T, dir string, extra ...string) (entry, wire, pids string) {
	t.Helper()
	command, args, _ := everything.Stdio(t)
	wire, pids = filepath.Join(dir, "wire.jsonl"), filepath.Join(dir, "pids")
	script := filepath.Join(dir, "server.sh")
	// A list run in the background reads /dev/null unless told otherwise:
	// fd 3 keeps the harness's pipe for it.
	body := fmt.Sprintf("#!/bin/sh\nexec 3<&0\ntee -a %q <&3 | %q %s &\nserver=$!\necho $server >> %q\nwait $server\n",
		wire, command, strings.Join(quotedShell(args), " "), pids)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	entry = "  everything:\n    command: " + strconv.Quote(script) + "\n"
	for _, e := range extra {
		entry += "    " + e + "\n"
	}
	return entry, wire, pids
}

func quotedShell(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return out
}

// scripted is a model that makes calls at its first turn, then answers
// (rather than call the server's other tools, as the sim's policy would).
func scripted(t *testing.T, calls ...sim.ToolCall) *sim.Server {
	t.Helper()
	srv := sim.NewServer(&sim.Scenario{Rules: []sim.Rule{{Request: 1, ToolCalls: calls}, {Answer: "[sim] done"}}})
	t.Cleanup(srv.Close)
	return srv
}

func longCall(duration, steps int) sim.ToolCall {
	return sim.ToolCall{Name: longOp, Arguments: fmt.Sprintf(`{"duration":%d,"steps":%d}`, duration, steps)}
}

// runWithTools runs `harness run` on the scripted model with tools, and
// returns its result and its trace.
func runWithTools(t *testing.T, model *sim.Server, tools string, args ...string) (landing.Result, []trace.Record, string) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "tools.yaml")
	if err := os.WriteFile(file, []byte(tools), 0o600); err != nil {
		t.Fatal(err)
	}
	trc := filepath.Join(dir, "trace.jsonl")
	all := append([]string{"run", "--model", "gpt-4.1", "--base-url", model.URL, "--tools", file, "--trace", trc,
		"--journal", filepath.Join(dir, "orphans.jsonl"), "--json"}, args...)
	stdout, stderr, _ := runHarness(t, []string{"OPENAI_API_KEY=x"}, append(all, "q")...)
	return jsonResult(t, stdout), readTrace(t, trc), stderr
}

// The long-running operation reports progress every half second for 4s;
// --quiet is 1s: its heartbeats keep the run alive, over stdio and HTTP.
func TestE2EAnMCPServersProgressKeepsTheRunAlivePastQuiet(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			var entry string
			if transport == "stdio" {
				entry, _, _ = stdioServer(t, t.TempDir(), "tools: {trigger-long-running-operation: {effect: read}}")
			} else {
				entry = "  everything:\n    url: " + everything.HTTP(t) + "\n    tools: {trigger-long-running-operation: {effect: read}}\n"
			}
			res, recs, stderr := runWithTools(t, scripted(t, longCall(4, 8)), "mcpServers:\n"+entry, "--quiet", "1s", "--budget", "30s")

			if res.Status != landing.Complete {
				t.Fatalf("result %+v\nstderr: %s", res, stderr)
			}
			if n := len(only(recs, trace.Progress, "tool:"+longOp)); n < 4 {
				t.Errorf("%d progress records, want the operation's heartbeats", n)
			}
		})
	}
}

// Over stdio: the operation's 1s ceiling cuts its call. The wire shows the
// call's _meta (its key and the lease sent) and then notifications/cancelled
// for it; the trace shows the cancel sent, with no answer to wait for.
func TestE2EACutMCPCallIsCancelledOnTheWireWithItsKeyAndBudgetInMeta(t *testing.T) {
	t.Parallel() // each waits on servers of its own
	dir := t.TempDir()
	entry, wire, _ := stdioServer(t, dir, "tools: {trigger-long-running-operation: {effect: read, ceiling: 1s, max_attempts: 1}}")

	res, recs, stderr := runWithTools(t, scripted(t, longCall(5, 5)), "mcpServers:\n"+entry, "--budget", "30s")

	// The model answers without the cut call's result: partial,
	// tools_failed (issue 24), not complete.
	if res.Status != landing.Partial || res.Cause != landing.CauseToolsFailed {
		t.Fatalf("result %+v\nstderr: %s", res, stderr)
	}
	var start trace.Record
	for _, r := range only(recs, trace.AttemptStart, "tool:"+longOp) {
		start = r
	}
	var call, cancelled map[string]any
	f, err := os.Open(wire)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		switch m["method"] {
		case "tools/call":
			call = m
		case "notifications/cancelled":
			cancelled = m
		}
	}
	if call == nil || cancelled == nil {
		t.Fatalf("the wire lacks the call (%v) or its cancel (%v)", call, cancelled)
	}
	meta, _ := call["params"].(map[string]any)["_meta"].(map[string]any)
	if meta["io.github.glidepath/idempotency-key"] != start.Key || int64(meta["io.github.glidepath/budget-remaining-ms"].(float64)) != start.GrantedMs {
		t.Errorf("_meta %v; want key %s and budget %d, as the trace says", meta, start.Key, start.GrantedMs)
	}
	if p := cancelled["params"].(map[string]any); p["requestId"] != call["id"] {
		t.Errorf("notifications/cancelled %v is not for the call %v", p, call["id"])
	}
	sent := only(recs, trace.CancelSent, "tool:"+longOp)
	if len(sent) != 1 || sent[0].State != "sent" {
		t.Errorf("cancel_sent records %+v, want one, state sent", sent)
	}
}

// A call cut at 1s whose server goes on sending progress for 9s more (the
// reference server ignores cancellation): that progress is no one's, so
// no progress of the call is recorded after its cancel_sent, and the quiet
// clock fires while the model says nothing.
func TestE2EProgressAfterACancelDoesNotResetTheQuietClock(t *testing.T) {
	t.Parallel() // each waits on servers of its own
	entry, _, _ := stdioServer(t, t.TempDir(), "tools: {trigger-long-running-operation: {effect: read, ceiling: 1s, max_attempts: 1}}")

	// After the cut, the model's next turn hangs: the only sound is the
	// cut call's late progress.
	model := sim.NewServer(&sim.Scenario{Rules: []sim.Rule{{Request: 1, ToolCalls: []sim.ToolCall{longCall(10, 20)}}, {Request: 2, Hang: true}}})
	t.Cleanup(model.Close)
	res, recs, stderr := runWithTools(t, model, "mcpServers:\n"+entry, "--quiet", "3s", "--budget", "30s")

	if res.Cause != landing.CauseQuiet {
		t.Fatalf("result %+v, want landed on the quiet clock\nstderr: %s", res, stderr)
	}
	sent := slices.IndexFunc(recs, func(r trace.Record) bool { return r.Event == trace.CancelSent && r.Step == "tool:"+longOp })
	if sent < 0 {
		t.Fatalf("no cancel_sent for the cut call in the trace")
	}
	if late := only(recs[sent+1:], trace.Progress, "tool:"+longOp); len(late) > 0 {
		t.Errorf("%d progress records after the call's cancel_sent, the first %+v", len(late), late[0])
	}
}

// A server that never answers initialize costs its connect_timeout, is a
// warning, and the run goes on with the server that came up.
func TestE2EAnMCPServerThatNeverAnswersCostsItsSetupLease(t *testing.T) {
	t.Parallel() // each waits on servers of its own
	entry, _, _ := stdioServer(t, t.TempDir(), "tools: {echo: {effect: read}}")
	tools := "mcpServers:\n" + entry + "  mute:\n    command: sleep\n    args: [\"1000\"]\n    connect_timeout: 1s\n"
	model := scripted(t, sim.ToolCall{Name: "mcp__everything__echo", Arguments: `{"message":"hello"}`})
	start := time.Now()

	res, recs, stderr := runWithTools(t, model, tools, "--budget", "30s")

	if echo := only(recs, trace.AttemptEnd, "tool:mcp__everything__echo"); res.Status != landing.Complete || len(echo) != 1 || echo[0].Outcome != trace.OK {
		t.Errorf("result %+v, echo attempts %+v; want complete, the echo answered", res, echo)
	}
	if !strings.Contains(stderr, "warning: tool mcp server mute is unavailable: its mcp server mute did not come up in 1s") {
		t.Errorf("stderr lacks the warning:\n%s", stderr)
	}
	if len(res.Unavailable) != 1 || res.Unavailable[0].Tool != "mcp server mute" {
		t.Errorf("unavailable %+v, want the mute server (SPEC §4)", res.Unavailable)
	}
	for _, r := range only(recs, trace.AttemptEnd, "setup") {
		if strings.HasPrefix(r.Message, "mcp server mute") && r.ElapsedMs > 3000 {
			t.Errorf("the mute server's setup ended at %dms, want about its 1s", r.ElapsedMs)
		}
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the run took %v", took)
	}
}

// The server is killed in the middle of a call, once the call is on its
// wire: that attempt is an upstream error, the read is tried again on a
// fresh server, and when the run ends no process of either is left.
func TestE2EAnMCPServerKilledMidCallIsAnUpstreamErrorAndLeavesNothing(t *testing.T) {
	t.Parallel() // each waits on servers of its own
	dir := t.TempDir()
	entry, wire, pids := stdioServer(t, dir, "tools: {trigger-long-running-operation: {effect: read}}")
	model := scripted(t, longCall(6, 6))
	done := make(chan struct{})
	var killed int // the process group killed
	go func() {
		defer close(done)
		// Polling another process's files: no event to wait on. The pid
		// is written as the server starts, long before it gets a call.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if started := strings.Fields(readFileString(pids)); len(started) > 0 && onWire(wire, "tools/call") {
				// The whole group, as the harness started it: the sh
				// that runs the server waits for its tee as well, and
				// keeps the server's stdout open while it lives.
				pid, _ := strconv.Atoi(started[0])
				killed, _ = syscall.Getpgid(pid)
				syscall.Kill(-killed, syscall.SIGKILL)
				return
			}
			if time.Now().After(deadline) {
				t.Error("no tools/call reached the server")
				return
			}
		}
	}()

	res, recs, stderr := runWithTools(t, model, "mcpServers:\n"+entry, "--budget", "30s")
	<-done

	if res.Status != landing.Complete {
		t.Fatalf("result %+v\nstderr: %s", res, stderr)
	}
	ends := only(recs, trace.AttemptEnd, "tool:"+longOp)
	if len(ends) != 2 || ends[0].Outcome != trace.UpstreamError || ends[1].Outcome != trace.OK {
		t.Errorf("attempts %+v, want upstream_error, then ok on a fresh server", ends)
	}
	started := strings.Fields(readFileString(pids))
	if len(started) != 2 {
		t.Errorf("the server started %d times, want twice", len(started))
	}
	for _, p := range started {
		pid, _ := strconv.Atoi(p)
		if err := gone(pid); err != syscall.ESRCH {
			t.Errorf("server %d is still there after the run (%v)", pid, err)
		}
	}
	if err := gone(-killed); killed == 0 || err != syscall.ESRCH {
		t.Errorf("the killed server's process group %d is still there after the run (%v)", killed, err)
	}
}

// gone waits up to 5s for the process (or, negative, the process group)
// pid to be gone, and returns what signal 0 last said of it: ESRCH once
// it is. A server the harness killed as its run ended is a grandchild of
// the test, reparented when its shell died: until init has reaped it, it
// is a zombie, still there to kill(2), however dead.
func gone(pid int) error {
	err := syscall.Kill(pid, 0)
	for deadline := time.Now().Add(5 * time.Second); err != syscall.ESRCH && time.Now().Before(deadline); err = syscall.Kill(pid, 0) {
		time.Sleep(10 * time.Millisecond) // another process's state: nothing to wait on
	}
	return err
}

// onWire reports whether a message of method is in the wire file.
func onWire(wire, method string) bool {
	for line := range strings.Lines(readFileString(wire)) {
		var m struct {
			Method string `json:"method"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.Method == method {
			return true
		}
	}
	return false
}

func only(recs []trace.Record, ev trace.Event, step string) []trace.Record {
	var out []trace.Record
	for _, r := range recs {
		if r.Event == ev && (step == "" || r.Step == step) {
			out = append(out, r)
		}
	}
	return out
}

// examples/mcp, as `make mcp` runs it, but with the reference server from
// interop/mcp rather than npx and the demo tool server in this process:
// every allowed tool of both servers answers.
func TestE2ETheMCPExampleRuns(t *testing.T) {
	t.Parallel() // each waits on servers of its own
	data, err := os.ReadFile("../../examples/mcp/tools.yaml")
	if err != nil {
		t.Fatal(err)
	}
	command, args, _ := everything.Stdio(t)
	kit := demo.NewServer(demo.ServerConfig{})
	mux := http.NewServeMux()
	mux.Handle("/mcp", kit.MCPHandler())
	mux.Handle("/", kit)
	demoServer := httptest.NewServer(mux)
	t.Cleanup(func() { demoServer.Close(); kit.Close() })
	src := string(data)
	for old, repl := range map[string]string{
		"command: npx": "command: " + strconv.Quote(command),
		`args: ["-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"]`: "args: " + quoted(args),
		"http://127.0.0.1:8090/mcp": demoServer.URL + "/mcp",
	} {
		if !strings.Contains(src, old) {
			t.Fatalf("examples/mcp/tools.yaml no longer holds %q", old)
		}
		src = strings.ReplaceAll(src, old, repl)
	}
	file := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	trc := filepath.Join(t.TempDir(), "trace.jsonl")

	stdout, stderr, code := runHarness(t, nil, "run", "--budget", "60s", "--tools", file, "--trace", trc, "--json", "q")

	if res := jsonResult(t, stdout); code != exitOK || res.Status != landing.Complete {
		t.Fatalf("exit %d, %+v\nstderr: %s", code, res, stderr)
	}
	oks := map[string]bool{}
	for _, r := range only(readTrace(t, trc), trace.AttemptEnd, "") {
		if strings.HasPrefix(r.Step, "tool:mcp__") && r.Outcome == trace.OK {
			oks[r.Step] = true
		}
	}
	if len(oks) != 6 {
		t.Errorf("tools answered: %v, want the six the example allows", oks)
	}
}
