package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/tools/demo"
	"github.com/glidepath/glidepath/tools/kit"
)

// The demo runs on real sockets and real time, which synctest cannot see:
// these tests bound generously and assert order and outcome, never that a
// timer fired on time: on a loaded machine two keepalives or two progress
// reports may fall into one.
const patience = 30 * time.Second

// testConfig keeps the demo's tick and commit delay but sends keepalives
// often enough to see them in a short call.
var testConfig = demo.ServerConfig{Keepalive: 50 * time.Millisecond}

type running struct {
	t   *testing.T
	url string
}

func startDemo(t *testing.T, cfg demo.ServerConfig) running {
	srv := demo.NewServer(cfg)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.Close()
		ts.Close()
	})
	return running{t: t, url: ts.URL}
}

type answer struct {
	status  int
	ctype   string
	body    string
	events  []sseEvent
	elapsed time.Duration
	err     error // transport error, e.g. the client's lease ended
}

type sseEvent struct {
	typ, data, comment string
}

// post calls a tool with a client-side lease equal to the
// Budget-Remaining-Ms it sends, as the harness does.
func (d running) post(tool, key, args string, lease time.Duration, stream bool) answer {
	start := time.Now()
	ctx, cancel := context.WithTimeout(d.t.Context(), lease)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", d.url+"/tools/"+tool, strings.NewReader(`{"arguments":`+args+`}`))
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set(budget.Header, budget.FormatRemaining(lease))
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{err: err, elapsed: time.Since(start)}
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type")}
	if a.ctype == "text/event-stream" {
		a.events, a.err = readEvents(resp.Body)
	} else {
		var b []byte
		b, a.err = io.ReadAll(resp.Body)
		a.body = string(b)
	}
	a.elapsed = time.Since(start)
	return a
}

// readEvents reads a stream line by line, keeping comments, which go-sse's
// reader skips.
func readEvents(r io.Reader) ([]sseEvent, error) {
	var evs []sseEvent
	var ev sseEvent
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev != (sseEvent{}) {
				evs = append(evs, ev)
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, ":"):
			ev.comment = strings.TrimSpace(line[1:])
		case strings.HasPrefix(line, "event: "):
			ev.typ = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			ev.data += line[len("data: "):]
		default:
			return evs, fmt.Errorf("unexpected line %q", line)
		}
	}
	return evs, sc.Err()
}

func (d running) get(method, path string) (int, string) {
	req, _ := http.NewRequestWithContext(d.t.Context(), method, d.url+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (d running) status(tool, key string) (code int, state string, output json.RawMessage) {
	code, body := d.get("GET", "/tools/"+tool+"/calls/"+key)
	var st struct {
		State  string
		Output json.RawMessage
	}
	json.Unmarshal([]byte(body), &st)
	return code, st.State, st.Output
}

func count(evs []sseEvent) (progress, keepalives int, last sseEvent) {
	for _, ev := range evs {
		switch {
		case ev.typ == "progress":
			progress++
		case ev.comment != "":
			keepalives++
		}
	}
	if len(evs) > 0 {
		last = evs[len(evs)-1]
	}
	return progress, keepalives, last
}

func TestTheManifestDeclaresEachToolsEffectCancellationAndLatency(t *testing.T) {
	d := startDemo(t, demo.ServerConfig{})
	code, body := d.get("GET", "/tools")
	var m struct {
		Tools []struct {
			Name        string
			Effect      string
			Cancellable bool
			P50         int64 `json:"p50_ms"`
			P95         int64 `json:"p95_ms"`
			Parameters  map[string]any
		}
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil || code != 200 {
		t.Fatalf("GET /tools: %d %s (%v)", code, body, err)
	}
	var got []string
	for _, tl := range m.Tools {
		got = append(got, fmt.Sprintf("%s %s cancellable=%v p50=%d p95=%d", tl.Name, tl.Effect, tl.Cancellable, tl.P50, tl.P95))
		if tl.Parameters["type"] != "object" {
			t.Errorf("%s: parameters %v, want an object schema", tl.Name, tl.Parameters)
		}
	}
	want := []string{
		"search read cancellable=false p50=5 p95=20",
		"fetch read cancellable=true p50=50 p95=300",
		"long_job read cancellable=true p50=2000 p95=3000",
		"commit write cancellable=false p50=1500 p95=2000",
		"stuck read cancellable=true p50=100 p95=1000",
		"stale read cancellable=true p50=100 p95=1000",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("manifest:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestEveryToolOverHTTP(t *testing.T) {
	d := startDemo(t, testConfig)
	// A job that cannot end on its own before it is cancelled, however
	// slow the machine.
	endless := startDemo(t, demo.ServerConfig{Keepalive: testConfig.Keepalive, Steps: 1000})

	t.Run("search answers the same results for the same query", func(t *testing.T) {
		t.Parallel()
		a := d.post("search", "s1", `{"query":"late commits","limit":2}`, patience, false)
		b := d.post("search", "s2", `{"query": "late commits", "limit": 2}`, patience, false)
		want := `{"output":{"query":"late commits","results":[{"title":"late commits (1)","url":"https://docs.example/late-commits/1",`
		if a.status != 200 || a.body != b.body || !strings.HasPrefix(a.body, want) {
			t.Errorf("answers %d %s / %s, want the same, starting %s", a.status, a.body, b.body, want)
		}
		var out struct {
			Output struct{ Results []struct{ Score float64 } }
		}
		json.Unmarshal([]byte(a.body), &out)
		if r := out.Output.Results; len(r) != 2 || r[0].Score <= r[1].Score {
			t.Errorf("results %+v, want 2 in falling score", r)
		}
		if e := d.post("search", "s3", `{"query":" "}`, patience, false); e.status != 422 || !strings.Contains(e.body, "query must not be empty") {
			t.Errorf("empty query: %d %s, want 422", e.status, e.body)
		}
	})

	t.Run("fetch hangs on the first attempt and answers the retry with the same key", func(t *testing.T) {
		t.Parallel()
		first := d.post("fetch", "f1", `{"url":"https://a.example"}`, 200*time.Millisecond, false)
		// The kit answers at the deadline the caller sent it, saying whose
		// deadline it was.
		if first.err == nil && (first.status != 504 || !strings.Contains(first.body, `"code":"deadline_exceeded"`)) {
			t.Errorf("first attempt: %d %s, want it to time out on the caller's deadline", first.status, first.body)
		}
		if first.elapsed < 200*time.Millisecond {
			t.Errorf("first attempt ended after %v, before its lease", first.elapsed)
		}
		retry := d.post("fetch", "f1", `{"url":"https://a.example"}`, patience, false)
		if retry.status != 200 || !strings.Contains(retry.body, `"attempt":2`) {
			t.Errorf("retry: %d %s %v, want the page from attempt 2", retry.status, retry.body, retry.err)
		}
		other := d.post("fetch", "f2", `{"url":"https://a.example"}`, 200*time.Millisecond, false)
		if other.err == nil && other.status != 504 {
			t.Errorf("a new call: %d %s, want its first attempt to hang too", other.status, other.body)
		}
	})

	t.Run("long_job sends a heartbeat with increasing units every tick", func(t *testing.T) {
		t.Parallel()
		a := d.post("long_job", "l1", `{}`, patience, true)
		if a.err != nil || a.ctype != "text/event-stream" {
			t.Fatalf("long_job: %v %q", a.err, a.ctype)
		}
		var units []int64
		for _, ev := range a.events {
			if ev.typ == "progress" {
				var p struct{ Units, Total int64 }
				json.Unmarshal([]byte(ev.data), &p)
				if len(units) > 0 && p.Units <= units[len(units)-1] || p.Total != 10 {
					t.Errorf("progress %s after units %v", ev.data, units)
				}
				units = append(units, p.Units)
			}
		}
		if _, _, last := count(a.events); len(units) < 2 || units[len(units)-1] != 10 || last.typ != "result" || last.data != `{"output":{"steps":10}}` {
			t.Errorf("progress units %v then %+v, want up to 10 then the result", units, last)
		}
		if a.elapsed < 2*time.Second {
			t.Errorf("finished after %v, want about 2s", a.elapsed)
		}
	})

	t.Run("long_job is cancelled by DELETE", func(t *testing.T) {
		t.Parallel()
		d := endless
		done := make(chan answer, 1)
		go func() { done <- d.post("long_job", "l2", `{}`, patience, true) }()
		deadline := time.Now().Add(patience)
		for {
			if code, state, _ := d.status("long_job", "l2"); code == 200 && state == "running" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("long_job never ran")
			}
			time.Sleep(5 * time.Millisecond)
		}
		if code, body := d.get("DELETE", "/tools/long_job/calls/l2"); code != 202 {
			t.Errorf("DELETE: %d %s, want 202", code, body)
		}
		a := <-done
		if _, _, last := count(a.events); last.typ != "error" || !strings.Contains(last.data, "kit: call cancelled") || !strings.Contains(last.data, `"retryable":true`) {
			t.Errorf("after DELETE: %+v, want a retryable error event naming the cancel", last)
		}
	})

	t.Run("commit commits late and reconciles by key", func(t *testing.T) {
		t.Parallel()
		args := `{"id":"inv-7","amount":12.5}`
		start := time.Now()
		first := d.post("commit", "c1", args, 300*time.Millisecond, false)
		if first.err == nil {
			t.Fatalf("the first attempt answered %d %s inside its 300ms lease, want a timeout", first.status, first.body)
		}
		if code, _ := d.get("DELETE", "/tools/commit/calls/c1"); code != 409 {
			t.Errorf("DELETE of the commit: %d, want 409: it is not cancellable", code)
		}
		// Reconciling by key: running, then done, after the lease ended.
		var out json.RawMessage
		deadline := time.Now().Add(patience)
		for {
			code, state, o := d.status("commit", "c1")
			if code == 200 && state == "done" {
				out = o
				break
			}
			if state != "running" || time.Now().After(deadline) {
				t.Fatalf("status %d %s, want running until done", code, state)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if got := time.Since(start); got < 1500*time.Millisecond {
			t.Errorf("done after %v, before the commit's 1.5s of work", got)
		}
		var c struct {
			ID     string
			Amount float64
			Commit int64
		}
		if json.Unmarshal(out, &c) != nil || c.ID != "inv-7" || c.Amount != 12.5 || c.Commit == 0 {
			t.Fatalf("done output %s", out)
		}
		again := d.post("commit", "c1", args, patience, false)
		if want := `{"output":` + string(out) + "}\n"; again.status != 200 || again.body != want || again.elapsed > time.Second {
			t.Errorf("the same key again: %d %q after %v, want the stored %q at once", again.status, again.body, again.elapsed, want)
		}
	})

	t.Run("stuck sends only keepalives until its deadline", func(t *testing.T) {
		t.Parallel()
		a := d.postWithServerDeadline("stuck", "k1", time.Second)
		progress, keepalives, last := count(a.events)
		if progress != 0 || keepalives == 0 || last.typ != "error" || !strings.Contains(last.data, `"retryable":true`) {
			t.Errorf("events %+v: want only keepalives, then a retryable error", a.events)
		}
	})

	t.Run("stale repeats its units, which are sent once", func(t *testing.T) {
		t.Parallel()
		a := d.postWithServerDeadline("stale", "st1", time.Second)
		progress, keepalives, last := count(a.events)
		if progress != 1 || keepalives == 0 || last.typ != "error" {
			t.Errorf("events %+v: want one progress event, keepalives, then an error", a.events)
		}
	})
}

// postWithServerDeadline streams a call whose Budget-Remaining-Ms ends it
// on the server, while the client waits longer, to read the whole stream.
func (d running) postWithServerDeadline(tool, key string, remaining time.Duration) answer {
	ctx, cancel := context.WithTimeout(d.t.Context(), patience)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", d.url+"/tools/"+tool, strings.NewReader(`{"arguments":{}}`))
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set(budget.Header, budget.FormatRemaining(remaining))
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	evs, err := readEvents(resp.Body)
	return answer{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), events: evs, err: err}
}

// syncBuffer collects run's output while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRunListensOnLoopbackAndStopsWhenItsContextEnds(t *testing.T) {
	var stdout, stderr syncBuffer
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"--addr", ":0"}, strings.NewReader(""), &stdout, &stderr) }()
	var url string
	for deadline := time.Now().Add(patience); url == ""; time.Sleep(time.Millisecond) {
		if line, ok := strings.CutPrefix(stdout.String(), "toolserver: listening on "); ok && strings.HasSuffix(line, "\n") {
			url = strings.TrimSpace(line)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no listening line: %q %q", stdout.String(), stderr.String())
		}
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Errorf("listening on %s, want loopback", url)
	}
	resp, err := http.Get(url + "/tools")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /tools: %v %v", resp, err)
	}
	resp.Body.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil || !strings.HasSuffix(stdout.String(), "toolserver: stopped\n") {
			t.Errorf("run: %v, output %q", err, stdout.String())
		}
	case <-time.After(patience):
		t.Fatal("run did not return after its context ended")
	}
}

func TestRunRejectsBadUsage(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--nope"}, "flag provided but not defined"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--keepalive", "0s"}, "--keepalive must be positive"},
		{[]string{"--addr", "no-port"}, "kit: listen"},
		{[]string{"--mcp-stdio", "--mcp"}, "--mcp-stdio serves no HTTP: it takes neither --addr, --mcp nor --allow-origin"},
		{[]string{"--mcp-stdio", "--addr", ":0"}, "--mcp-stdio serves no HTTP"},
		{[]string{"--mcp-stdio", "--allow-origin", "https://app.example.com"}, "--mcp-stdio serves no HTTP"},
		{[]string{"--allow-origin", "https://app.example.com"}, "--allow-origin is for MCP over HTTP: give --mcp too"},
		{[]string{"--mcp", "--allow-origin", "app.example.com"}, `"app.example.com" is not an origin`},
		{[]string{"--mcp", "--allow-origin", "https://app.example.com/page"}, "is not an origin"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out bytes.Buffer
			err := run(t.Context(), tc.args, strings.NewReader(""), &out, &out)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if err := run(t.Context(), []string{"--help"}, strings.NewReader(""), io.Discard, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help: %v, want flag.ErrHelp", err)
	}
}

// listening starts run with args and returns the URL it listens on, and a
// func that stops it and returns what it returned.
func listening(t *testing.T, args ...string) (url string, stop func() (string, error)) {
	var stdout, stderr syncBuffer
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, strings.NewReader(""), &stdout, &stderr) }()
	for deadline := time.Now().Add(patience); url == ""; time.Sleep(time.Millisecond) {
		if first, _, ok := strings.Cut(stdout.String(), "\n"); ok {
			url, _ = strings.CutPrefix(first, "toolserver: listening on ")
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no listening line: %q %q", stdout.String(), stderr.String())
		}
	}
	return url, func() (string, error) {
		cancel()
		select {
		case err := <-done:
			return stdout.String(), err
		case <-time.After(patience):
			t.Fatal("run did not return after its context ended")
			return "", nil
		}
	}
}

// mcpTools lists a session's tools as "name readOnly".
func mcpTools(t *testing.T, cs *mcp.ClientSession) string {
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tl := range res.Tools {
		got = append(got, fmt.Sprintf("%s readOnly=%v", tl.Name, tl.Annotations.ReadOnlyHint))
	}
	return strings.Join(got, ", ")
}

// The sdk lists tools by name.
const wantMCPTools = "commit readOnly=false, fetch readOnly=true, long_job readOnly=true, search readOnly=true, stale readOnly=true, stuck readOnly=true"

// mcpSearch calls search over MCP as a Glidepath caller does, with a key
// and a lease in _meta, and returns the result's text.
func mcpSearch(t *testing.T, cs *mcp.ClientSession, key string) string {
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{
		Name:      "search",
		Arguments: map[string]any{"query": "late commits", "limit": 1},
		Meta:      mcp.Meta{kit.MetaIdempotencyKey: key, kit.MetaBudgetRemaining: 5000},
	})
	if err != nil || res.IsError || len(res.Content) != 1 {
		t.Fatalf("search over MCP: %v %v", res, err)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

const wantSearch = `{"query":"late commits","results":[{"title":"late commits (1)","url":"https://docs.example/late-commits/1","score":0.98}]}`

func TestRunWithMCPAlsoServesTheSameToolsAtSlashMCP(t *testing.T) {
	url, stop := listening(t, "--addr", ":0", "--mcp")
	resp, err := http.Get(url + "/tools")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /tools beside MCP: %v %v", resp, err)
	}
	resp.Body.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "toolserver-test", Version: "1"}, nil).
		Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := mcpTools(t, cs); got != wantMCPTools {
		t.Errorf("tools/list: %s\nwant %s", got, wantMCPTools)
	}
	if got := mcpSearch(t, cs, "m1"); got != wantSearch {
		t.Errorf("search over MCP: %s\nwant %s", got, wantSearch)
	}
	// One server, one set of records, whichever protocol asked.
	resp, err = http.Get(url + "/tools/search/calls/m1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `{"state":"done","output":` + wantSearch + `,"units":0}` + "\n"; string(body) != want {
		t.Errorf("the status of the MCP call over HTTP: %s, want %s", body, want)
	}
	if out, err := stop(); err != nil || !strings.HasSuffix(out, "toolserver: stopped\n") || !strings.Contains(out, "toolserver: MCP at "+url+"/mcp\n") {
		t.Errorf("run: %v, output %q", err, out)
	}
}

func TestRunWithMCPStdioServesOverStdinAndStdoutUntilTheClientLeaves(t *testing.T) {
	toServer, fromClient := io.Pipe()
	toClient, fromServer := io.Pipe()
	var stderr syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(t.Context(), []string{"--mcp-stdio"}, toServer, fromServer, &stderr) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "toolserver-test", Version: "1"}, nil).
		Connect(t.Context(), &mcp.IOTransport{Reader: toClient, Writer: fromClient}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := mcpTools(t, cs); got != wantMCPTools {
		t.Errorf("tools/list: %s\nwant %s", got, wantMCPTools)
	}
	if got := mcpSearch(t, cs, "s1"); got != wantSearch {
		t.Errorf("search over MCP: %s\nwant %s", got, wantSearch)
	}
	cs.Close() // the client closes its end: the server reads EOF
	select {
	case err := <-done:
		if err != nil || stderr.String() != "toolserver: serving MCP on stdin and stdout\ntoolserver: stopped\n" {
			t.Errorf("run: %v, stderr %q", err, stderr.String())
		}
	case <-time.After(patience):
		t.Fatal("run did not return after the client left")
	}
}

// --allow-origin (repeatable) names the origins whose browser pages may
// call /mcp; a request with no Origin, or from the server's own origin on
// loopback, is served too, and any other Origin is refused with 403.
func TestRunWithMCPServesOnlyTheAllowedOrigins(t *testing.T) {
	url, stop := listening(t, "--addr", ":0", "--mcp", "--allow-origin", "https://app.example.com", "--allow-origin", "http://localhost:5173")
	defer stop()
	cases := []struct {
		origin string // "": none
		want   int
	}{
		{"", http.StatusOK},
		{"https://app.example.com", http.StatusOK},
		{"http://localhost:5173", http.StatusOK},
		{url, http.StatusOK},
		{"http://evil.example", http.StatusForbidden},
	}
	for _, tc := range cases {
		t.Run("Origin "+tc.origin, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/mcp", strings.NewReader(
				`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("initialize with Origin %q: %s, want %d", tc.origin, resp.Status, tc.want)
			}
		})
	}
}
