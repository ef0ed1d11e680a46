package kit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/tools/kit"
)

// Streamable HTTP runs on real sockets, which synctest cannot see: these
// tests bound generously and assert order and outcome.

// serveBoth serves srv over its own protocol and, at /mcp, over MCP's
// streamable HTTP, on one address.
func serveBoth(t *testing.T, srv *kit.Server) *httptest.Server {
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.MCPHandler())
	mux.Handle("/", srv)
	ts := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.Close()
		ts.Close()
	})
	return ts
}

func connectHTTP(t *testing.T, ts *httptest.Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ct := &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", HTTPClient: ts.Client()}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "kit-test", Version: "1"}, opts).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// eventually waits for cond, failing the test after patience.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(patience); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after %v", what, patience)
		}
	}
}

func TestMCPOverStreamableHTTPBesideTheKitsOwnProtocol(t *testing.T) {
	srv := &kit.Server{}
	causes := make(chan error, 2)
	started := make(chan struct{}, 1)
	mustRegister(t, srv,
		kit.Tool{Name: "index", Effect: kit.Write, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
			for i := int64(1); i <= 3; i++ {
				call.Progress(i, 3, "step")
				time.Sleep(5 * time.Millisecond)
			}
			return map[string]int{"steps": 3}, nil
		}},
		kit.Tool{Name: "wait", Effect: kit.Read, Cancellable: true, Max: patience, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
			started <- struct{}{}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return nil, ctx.Err()
		}},
	)
	ts := serveBoth(t, srv)
	var mu sync.Mutex
	var progress []float64
	var tokens []any
	cs := connectHTTP(t, ts, &mcp.ClientOptions{ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		progress = append(progress, req.Params.Progress)
		tokens = append(tokens, req.Params.ProgressToken)
	}})
	// A stateful session: the sdk's client falls back from the newest
	// protocol, which its stateful handler does not serve.
	t.Logf("session %q, protocol %s", cs.ID(), cs.InitializeResult().ProtocolVersion)
	if cs.ID() == "" {
		t.Error("no session ID: notifications/cancelled could not find its request")
	}

	t.Run("tools/list offers the tools", func(t *testing.T) {
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil || len(res.Tools) != 2 || res.Tools[0].Name != "index" || res.Tools[0].Annotations.ReadOnlyHint || !res.Tools[1].Annotations.ReadOnlyHint {
			t.Errorf("tools/list: %v %v", res, err)
		}
	})

	t.Run("a call streams its progress with the token then answers, and its record is the kit's", func(t *testing.T) {
		res, err := cs.CallTool(t.Context(), callParams("index", nil, "progressToken", "p1", kit.MetaIdempotencyKey, "i1", kit.MetaBudgetRemaining, 10000))
		if err != nil || res.IsError || text(t, res) != `{"steps":3}` {
			t.Fatalf("CallTool: %v %v", res, err)
		}
		eventually(t, "the last progress notification", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(progress) > 0 && progress[len(progress)-1] == 3
		})
		mu.Lock()
		for i := range progress {
			if tokens[i] != "p1" || i > 0 && progress[i] <= progress[i-1] {
				t.Errorf("notifications %v with tokens %v, want strictly increasing with token p1", progress, tokens)
				break
			}
		}
		mu.Unlock()
		resp, err := ts.Client().Get(ts.URL + "/tools/index/calls/i1")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := `{"state":"done","output":{"steps":3},"units":3}` + "\n"; string(body) != want {
			t.Errorf("the status endpoint: %s, want %s", body, want)
		}
	})

	t.Run("a budget in meta ends the handler's context on the caller's deadline", func(t *testing.T) {
		res, err := cs.CallTool(t.Context(), callParams("wait", nil, kit.MetaBudgetRemaining, 50))
		<-started
		if err != nil || !res.IsError || !strings.Contains(text(t, res), kit.CodeDeadline) {
			t.Errorf("CallTool: %v %v, want an error result with the deadline code", res, err)
		}
		if got := <-causes; got != budget.ErrDeadline {
			t.Errorf("the handler's cause %v, want budget.ErrDeadline", got)
		}
	})

	t.Run("cancelling the client's call ends the handler's context with ErrCancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			<-started
			cancel()
		}()
		if _, err := cs.CallTool(ctx, callParams("wait", nil)); !errors.Is(err, context.Canceled) {
			t.Errorf("CallTool: %v, want context.Canceled", err)
		}
		select {
		case got := <-causes:
			if got != kit.ErrCancelled {
				t.Errorf("the handler's cause %v, want ErrCancelled", got)
			}
		case <-time.After(patience):
			t.Fatal("the handler's context did not end")
		}
	})
}

func TestCloseAnswersStreamableCallsThenEndsTheirSessionsAndWaitsForTheHandlers(t *testing.T) {
	srv := &kit.Server{}
	started := make(chan struct{}, 1)
	var mu sync.Mutex
	var order []string
	mark := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, s)
	}
	mustRegister(t, srv, kit.Tool{Name: "job", Effect: kit.Read, Max: patience, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		time.Sleep(20 * time.Millisecond) // cleanup Close must wait for
		mark("handler returned: " + context.Cause(ctx).Error())
		return nil, ctx.Err()
	}})
	ts := serveBoth(t, srv)
	cs := connectHTTP(t, ts, nil)
	answered := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(t.Context(), callParams("job", nil))
		answered <- err
	}()
	<-started
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	mark("Close returned")
	if err := <-answered; err == nil || !strings.Contains(err.Error(), "kit: server closed") {
		t.Errorf("CallTool: %v, want an error saying the server closed", err)
	}
	if got := strings.Join(order, "; "); got != "handler returned: kit: server closed; Close returned" {
		t.Errorf("order: %s", got)
	}
	if _, err := cs.CallTool(t.Context(), callParams("job", nil)); err == nil {
		t.Error("a call after Close succeeded")
	}
	resp, err := ts.Client().Post(ts.URL+"/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("POST /mcp after Close: %d, want 503", resp.StatusCode)
	}
}

func TestNoGoroutineIsLeftAfterServingMCPOverHTTP(t *testing.T) {
	before := runtime.NumGoroutine()
	srv := &kit.Server{}
	mustRegister(t, srv, echo("echo"), kit.Tool{Name: "stuck", Effect: kit.Read, Cancellable: true, Max: time.Minute, Handler: waitCause})
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.MCPHandler())
	ts := httptest.NewServer(mux)
	client := ts.Client()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "kit-test", Version: "1"}, nil).
		Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", HTTPClient: client}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(t.Context(), callParams("echo", map[string]int{"a": 1})); err != nil {
		t.Error(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	cs.CallTool(ctx, callParams("stuck", nil))
	cancel()
	cs.Close()
	srv.Close()
	ts.Close()
	client.CloseIdleConnections()
	deadline := time.Now().Add(patience)
	for {
		n := runtime.NumGoroutine()
		if n <= before {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// rawMCP speaks MCP's streamable HTTP by hand, to do what the sdk's client
// never does alone: close a request's stream without notifications/cancelled.
type rawMCP struct {
	t       *testing.T
	url     string
	client  *http.Client
	session string
}

func (c *rawMCP) post(ctx context.Context, body string) (*http.Response, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	return c.client.Do(req)
}

func (c *rawMCP) initialize() {
	resp, err := c.post(c.t.Context(), `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if err != nil {
		c.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if c.session = resp.Header.Get("Mcp-Session-Id"); resp.StatusCode != http.StatusOK || c.session == "" {
		c.t.Fatalf("initialize: %d, session %q", resp.StatusCode, c.session)
	}
	resp, err = c.post(c.t.Context(), `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
}

// A request's stream that closes is not a cancel (SPEC §5b): a network
// blip must not kill a handler. Its handler runs on, and its outcome is
// found by its key.
func TestClosingACallsStreamOverHTTPIsNotACancel(t *testing.T) {
	for _, cancellable := range []bool{true, false} {
		t.Run(fmt.Sprintf("cancellable %v", cancellable), func(t *testing.T) {
			srv := &kit.Server{}
			started := make(chan struct{}, 1)
			release := make(chan struct{})
			causes := make(chan error, 1)
			mustRegister(t, srv, kit.Tool{Name: "job", Effect: kit.Write, Cancellable: cancellable, Max: patience, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
				started <- struct{}{}
				select {
				case <-ctx.Done():
					causes <- context.Cause(ctx)
					return nil, ctx.Err()
				case <-release:
					causes <- nil
					return "finished", nil
				}
			}})
			// Tells when the sdk has let go of a tools/call's POST: it has
			// seen the stream close.
			posted := make(chan struct{}, 1)
			mcpHandler := srv.MCPHandler()
			mux := http.NewServeMux()
			mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				mcpHandler.ServeHTTP(w, r)
				if bytes.Contains(body, []byte(`"tools/call"`)) {
					posted <- struct{}{}
				}
			}))
			mux.Handle("/", srv)
			ts := httptest.NewServer(mux)
			defer ts.Close()
			defer srv.Close()
			c := &rawMCP{t: t, url: ts.URL + "/mcp", client: ts.Client()}
			c.initialize()
			ctx, cancel := context.WithCancel(t.Context())
			go func() {
				<-started
				cancel() // closes the stream; no notification is sent
			}()
			if resp, err := c.post(ctx, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"job","arguments":{},"_meta":{"io.github.glidepath/idempotency-key":"blip-1"}}}`); err == nil {
				io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			select {
			case <-posted:
			case <-time.After(patience):
				t.Fatal("the sdk never let go of the closed stream")
			}
			select {
			case err := <-causes:
				t.Fatalf("the handler ended with cause %v when its stream closed, want it running", err)
			default:
			}
			close(release)
			if err := <-causes; err != nil {
				t.Fatalf("the handler's cause %v, want none", err)
			}
			var rec struct {
				State  string          `json:"state"`
				Output json.RawMessage `json:"output"`
			}
			eventually(t, "the call's record to say done", func() bool {
				resp, err := ts.Client().Get(ts.URL + "/tools/job/calls/blip-1")
				if err != nil {
					return false
				}
				defer resp.Body.Close()
				return json.NewDecoder(resp.Body).Decode(&rec) == nil && rec.State == "done"
			})
			if string(rec.Output) != `"finished"` {
				t.Errorf("the record's output %s, want \"finished\"", rec.Output)
			}
		})
	}
}

// A request that the client cancels with notifications/cancelled gets no
// response on its stream (SPEC §5b): a client that has forgotten it would
// report the response as "unknown message ID". Its handler's context ends.
func TestACancelledRequestOverHTTPGetsNoResponse(t *testing.T) {
	srv := &kit.Server{}
	started := make(chan struct{}, 1)
	causes := make(chan error, 1)
	mustRegister(t, srv, kit.Tool{Name: "job", Effect: kit.Read, Cancellable: true, Max: patience, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
		call.Progress(1, 0, "begun")
		started <- struct{}{}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, ctx.Err()
	}})
	ts := serveBoth(t, srv)
	c := &rawMCP{t: t, url: ts.URL + "/mcp", client: ts.Client()}
	c.initialize()
	resp, err := c.post(t.Context(), `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"job","arguments":{},"_meta":{"progressToken":"p7"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-started
	note, err := c.post(t.Context(), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"the user aborted"}}`)
	if err != nil {
		t.Fatal(err)
	}
	note.Body.Close()
	if note.StatusCode != http.StatusAccepted {
		t.Errorf("notifications/cancelled: %s, want 202", note.Status)
	}

	stream, err := io.ReadAll(resp.Body) // it ends once the handler has
	if err != nil {
		t.Fatalf("reading the call's stream: %v", err)
	}
	if got := <-causes; got != kit.ErrCancelled {
		t.Errorf("the handler's cause %v, want ErrCancelled", got)
	}
	if bytes.Contains(stream, []byte(`"id":7`)) {
		t.Errorf("the cancelled request was answered:\n%s", stream)
	}
	if !bytes.Contains(stream, []byte(`"notifications/progress"`)) {
		t.Errorf("the stream %q lacks the progress sent before the cancel", stream)
	}
}

// The Origin header is validated (SPEC §5b; MCP's transport rules, against
// DNS rebinding): absent, one of AllowedOrigins, or the server's own
// origin on loopback is served; anything else is 403, whatever the method.
func TestTheOriginOfAnMCPRequestIsValidated(t *testing.T) {
	srv := &kit.Server{AllowedOrigins: []string{"https://app.example.com", "HTTP://Tools.Example:8443/"}}
	mustRegister(t, srv, kit.Tool{Name: "echo", Effect: kit.Read, Handler: func(context.Context, *kit.Call) (any, error) { return "ok", nil }})
	ts := serveBoth(t, srv)
	cases := []struct {
		name   string
		method string
		origin []string // nil: no Origin header
		want   int
	}{
		{"no Origin", http.MethodPost, nil, http.StatusOK},
		{"an allowed origin", http.MethodPost, []string{"https://app.example.com"}, http.StatusOK},
		{"an allowed origin as written in another case", http.MethodPost, []string{"http://tools.example:8443"}, http.StatusOK},
		{"the server's own origin on loopback", http.MethodPost, []string{ts.URL}, http.StatusOK},
		{"another site", http.MethodPost, []string{"http://evil.example"}, http.StatusForbidden},
		{"another port of loopback", http.MethodPost, []string{"http://127.0.0.1:1"}, http.StatusForbidden},
		{"an opaque origin", http.MethodPost, []string{"null"}, http.StatusForbidden},
		{"an empty Origin", http.MethodPost, []string{""}, http.StatusForbidden},
		{"two Origins", http.MethodPost, []string{"https://app.example.com", "http://evil.example"}, http.StatusForbidden},
		{"another site's GET", http.MethodGet, []string{"http://evil.example"}, http.StatusForbidden},
		{"another site's DELETE", http.MethodDelete, []string{"http://evil.example"}, http.StatusForbidden},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader
			if tc.method == http.MethodPost {
				body = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
			}
			req, _ := http.NewRequestWithContext(t.Context(), tc.method, ts.URL+"/mcp", body)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", "none")
			if tc.method == http.MethodPost {
				req.Header.Del("Mcp-Session-Id")
			}
			for _, o := range tc.origin {
				req.Header.Add("Origin", o)
			}
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			msg, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if tc.want == http.StatusForbidden {
				if resp.StatusCode != tc.want || !strings.Contains(string(msg), "origin") {
					t.Errorf("%s with Origin %q: %s %s, want 403 naming the origin", tc.method, tc.origin, resp.Status, msg)
				}
				return
			}
			if resp.StatusCode != tc.want {
				t.Errorf("%s with Origin %q: %s %s, want %d", tc.method, tc.origin, resp.Status, msg, tc.want)
			}
		})
	}
}
