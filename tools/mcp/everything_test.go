//go:build unix

package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/glidepath/glidepath/internal/everything"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/mcp"
	"github.com/glidepath/glidepath/trace"
)

// The MCP reference server (@modelcontextprotocol/server-everything, as
// internal/everything runs it) over stdio, started through sh so that a
// test sees its wire as it happens: real processes, which synctest cannot
// see, so bounds are generous and assertions are about order and outcome.

// patience bounds each step of these tests in real time.
const patience = 60 * time.Second

const longOp = "mcp__everything__trigger-long-running-operation"

// A wireTap is a FIFO that a server's script copies one side of its wire
// into (tee), read line by line as it is written.
type wireTap struct {
	path string
	f    *os.File
	done chan struct{} // closed when the reader has returned

	mu      sync.Mutex // guards msgs and changed
	msgs    []map[string]any
	changed chan struct{} // closed, and replaced, at every message
}

func newWireTap(t *testing.T) *wireTap {
	t.Helper()
	w := &wireTap{path: filepath.Join(t.TempDir(), "wire"), done: make(chan struct{}), changed: make(chan struct{})}
	if err := syscall.Mkfifo(w.path, 0o600); err != nil {
		t.Fatal(err)
	}
	// Read and write: opening does not wait for a writer, and the reader
	// sees no end between one server and the next.
	f, err := os.OpenFile(w.path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.f = f
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			w.mu.Lock()
			w.msgs = append(w.msgs, m)
			close(w.changed)
			w.changed = make(chan struct{})
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		f.Close() // ends the reader's Read
		<-w.done
	})
	return w
}

// wait returns the first message for which match is true, once it has
// been written, or ctx's cause.
func (w *wireTap) wait(ctx context.Context, match func(map[string]any) bool) (map[string]any, error) {
	for {
		w.mu.Lock()
		i := slices.IndexFunc(w.msgs, match)
		var m map[string]any
		if i >= 0 {
			m = w.msgs[i]
		}
		changed := w.changed
		w.mu.Unlock()
		if m != nil {
			return m, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

func (w *wireTap) all(match func(map[string]any) bool) []map[string]any {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []map[string]any
	for _, m := range w.msgs {
		if match(m) {
			out = append(out, m)
		}
	}
	return out
}

func method(name string) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["method"] == name }
}

// referenceServer writes a script that runs the reference server, and
// appends the pid of each start to pgids first: the leader of its process
// group. body is what runs it, with NODE standing for its command line.
func referenceServer(t *testing.T, body string) (script, pgids string) {
	t.Helper()
	command, args, _ := everything.Stdio(t)
	dir := t.TempDir()
	pgids = filepath.Join(dir, "pgids")
	var line strings.Builder
	line.WriteString(strconv.Quote(command))
	for _, a := range args {
		line.WriteString(" '" + strings.ReplaceAll(a, "'", `'\''`) + "'")
	}
	script = filepath.Join(dir, "server.sh")
	src := fmt.Sprintf("#!/bin/sh\necho $$ >> %q\n%s\n", pgids, strings.ReplaceAll(body, "NODE", line.String()))
	if err := os.WriteFile(script, []byte(src), 0o755); err != nil {
		t.Fatal(err)
	}
	return script, pgids
}

func startedGroups(t *testing.T, pgids string) []int {
	t.Helper()
	data, _ := os.ReadFile(pgids)
	var out []int
	for f := range strings.FieldsSeq(string(data)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pid)
	}
	return out
}

func connectReference(t *testing.T, ctx context.Context, script string, ops map[string]tools.MCPTool) (*mcp.Server, *tools.Registry) {
	t.Helper()
	s, err := mcp.Connect(ctx, tools.MCPServer{Name: "everything", Command: script, Tools: ops}, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry(nil)
	for _, tool := range s.Tools() {
		if err := reg.Register(tool); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { reg.Close(context.Background()) })
	return s, reg
}

// A call cut at 1s whose server goes on with the operation (the reference
// server ignores cancellation): nothing the server sends for it after the
// cut is heard as its progress. Every message the server wrote before an
// echo's answer has reached the client by the time the echo returns, and
// Close waits for the notifications it has read to be handled, so the
// record below is all there was to hear.
func TestNoProgressOfACutCallIsHeardAfterItsCancelIsSent(t *testing.T) {
	t.Parallel()
	out := newWireTap(t)
	script, _ := referenceServer(t, "NODE | tee "+strconv.Quote(out.path))
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	s, reg := connectReference(t, ctx, script, map[string]tools.MCPTool{
		"trigger-long-running-operation": {Effect: tools.Read, Ceiling: time.Second, MaxAttempts: 1},
		"echo":                           {Effect: tools.Read},
	})
	h := &heard{}
	run := newRun(t, patience, h)
	const steps = 6 // one every 0.5s: two before the cut, four after

	res := reg.Call(ctx, run, longOp, json.RawMessage(fmt.Sprintf(`{"duration":3,"steps":%d}`, steps)))
	run.Cancels.Wait(ctx)

	if res.Outcome != trace.GaveUp {
		t.Fatalf("result %+v, want cut by its ceiling", res)
	}
	last := func(m map[string]any) bool {
		p, _ := m["params"].(map[string]any)
		return m["method"] == "notifications/progress" && p["progress"] == float64(steps)
	}
	if _, err := out.wait(ctx, last); err != nil {
		t.Fatalf("the server never sent its last progress: %v", err)
	}
	if echo := reg.Call(ctx, newRun(t, patience, &heard{}), "mcp__everything__echo", json.RawMessage(`{"message":"after"}`)); echo.Err != "" {
		t.Fatalf("echo: %s", echo.Err)
	}
	if err := s.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}

	h.mu.Lock()
	events := slices.Clone(h.events)
	h.mu.Unlock()
	sent := slices.Index(events, "cancel_sent")
	if sent < 1 || slices.Contains(events[sent+1:], "progress") {
		t.Errorf("events %v, want progress, then cancel_sent, and no progress after it", events)
	}
	t.Logf("the server sent %d progress notifications; the call heard %d, all before its cancel_sent",
		len(out.all(method("notifications/progress"))), sent)
}

// The server is killed once the call is on its wire: the attempt is an
// upstream error, the read is tried again on a fresh server, and when the
// Server closes no process of either is left.
func TestAServerKilledMidCallIsAnUpstreamErrorAndTheReadGoesToAFreshOne(t *testing.T) {
	t.Parallel()
	in := newWireTap(t)
	// A list run in the background reads /dev/null unless told otherwise:
	// fd 3 keeps the harness's pipe for it.
	script, pgids := referenceServer(t, "exec 3<&0\ntee "+strconv.Quote(in.path)+" <&3 | NODE &\nwait $!")
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	s, reg := connectReference(t, ctx, script, map[string]tools.MCPTool{"trigger-long-running-operation": {Effect: tools.Read}})
	var killer sync.WaitGroup
	killer.Go(func() {
		if _, err := in.wait(ctx, method("tools/call")); err != nil {
			t.Errorf("no tools/call on the wire: %v", err)
			return
		}
		groups := startedGroups(t, pgids)
		syscall.Kill(-groups[0], syscall.SIGKILL)
	})
	h := &heard{}

	res := reg.Call(ctx, newRun(t, patience, h), longOp, json.RawMessage(`{"duration":2,"steps":2}`))
	killer.Wait()
	closeErr := s.Close(ctx)

	if got, want := h.outcomes(), []trace.Outcome{trace.UpstreamError, trace.OK}; !slices.Equal(got, want) || res.Err != "" {
		t.Errorf("attempts ended %v, result %+v; want %v", got, res, want)
	}
	if closeErr != nil {
		t.Errorf("Close: %v", closeErr)
	}
	groups := startedGroups(t, pgids)
	if len(groups) != 2 {
		t.Errorf("the server started %d times, want twice", len(groups))
	}
	if calls := in.all(method("tools/call")); len(calls) != 2 {
		t.Errorf("%d tools/call on the wire, want one for each server", len(calls))
	}
	for _, g := range groups {
		if err := syscall.Kill(-g, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("the process group %d is still there after Close (%v)", g, err)
		}
	}
}
