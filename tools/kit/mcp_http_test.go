package kit_test

import (
	"context"
	"errors"
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

func TestClosingACallsStreamOverHTTPCancelsIt(t *testing.T) {
	cases := []struct {
		name        string
		cancellable bool
		want        error
	}{
		{"with ErrCancelled for a cancellable tool", true, kit.ErrCancelled},
		{"with ErrCallerGone for another", false, kit.ErrCallerGone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := &kit.Server{}
			started := make(chan struct{}, 1)
			causes := make(chan error, 1)
			mustRegister(t, srv, kit.Tool{Name: "job", Effect: kit.Read, Cancellable: tc.cancellable, Max: patience, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
				started <- struct{}{}
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return nil, ctx.Err()
			}})
			ts := serveBoth(t, srv)
			c := &rawMCP{t: t, url: ts.URL + "/mcp", client: ts.Client()}
			c.initialize()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			go func() {
				<-started
				cancel() // closes the stream; no notification is sent
			}()
			if resp, err := c.post(ctx, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"job","arguments":{}}}`); err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
				if err == nil {
					t.Fatal("the call's stream was answered before it was closed")
				}
			}
			select {
			case got := <-causes:
				if got != tc.want {
					t.Errorf("the handler's cause %v, want %v", got, tc.want)
				}
			case <-time.After(patience):
				t.Fatal("the handler's context did not end")
			}
		})
	}
}
