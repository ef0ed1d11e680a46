package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/internal/pipenet"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/mcp"
	"github.com/glidepath/glidepath/trace"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// overHTTP is a go-sdk server behind its streamable HTTP handler, on an
// in-memory network (pipenet) so that it runs inside a synctest bubble.
// In front of it, gate sees each request first, with the method of its
// JSON-RPC message ("" for none), and answers it itself when it returns
// true: a gateway that fails, or a server that is slow to let go.
type overHTTP struct {
	srv  *sdk.Server
	l    *pipenet.Listener
	hs   *http.Server
	tr   *http.Transport
	wg   sync.WaitGroup
	mu   sync.Mutex
	seen []string // "POST initialize", "DELETE", …
}

func newOverHTTP(t *testing.T, srv *sdk.Server, gate func(w http.ResponseWriter, r *http.Request, method string) bool) *overHTTP {
	h := &overHTTP{srv: srv, l: pipenet.Listen("mcp.invalid")}
	mcpHandler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	h.hs = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var method string
		if r.Body != nil {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var m struct {
				Method string `json:"method"`
			}
			json.Unmarshal(body, &m)
			method = m.Method
		}
		h.mu.Lock()
		h.seen = append(h.seen, strings.TrimSpace(r.Method+" "+method))
		h.mu.Unlock()
		if gate != nil && gate(w, r, method) {
			return
		}
		mcpHandler.ServeHTTP(w, r)
	})}
	h.tr = h.l.Transport()
	h.wg.Go(func() { h.hs.Serve(h.l) })
	t.Cleanup(h.close)
	return h
}

func (h *overHTTP) client() *http.Client { return &http.Client{Transport: h.tr} }

// count returns how many requests were seen as what, such as
// "POST initialize".
func (h *overHTTP) count(what string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, s := range h.seen {
		if s == what {
			n++
		}
	}
	return n
}

// close ends every connection and session, and waits for the server's
// goroutines.
func (h *overHTTP) close() {
	h.hs.Close()
	h.wg.Wait()
	h.tr.CloseIdleConnections()
	for ss := range h.srv.Sessions() {
		ss.Close()
	}
}

func echoServer() *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "echo", InputSchema: object, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return answer("echoed"), nil })
	return srv
}

// connectHTTP connects to h under the url given, and registers its tools.
func connectHTTP(t *testing.T, h *overHTTP, url string) (*mcp.Server, *tools.Registry) {
	t.Helper()
	s, err := mcp.Connect(t.Context(), tools.MCPServer{Name: "web", URL: url, TrustHints: true}, mcp.Options{HTTPClient: h.client()})
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

// firstCall makes a gate that answers the first tools/call with fail.
func firstCall(fail func(w http.ResponseWriter, r *http.Request)) func(http.ResponseWriter, *http.Request, string) bool {
	var once sync.Once
	return func(w http.ResponseWriter, r *http.Request, method string) bool {
		failed := false
		if method == "tools/call" {
			once.Do(func() { fail(w, r); failed = true })
		}
		return failed
	}
}

// The go-sdk's HTTP transport returns a request that failed on the way,
// or that a gateway refused, as a JSON-RPC error of its own (-32005): not
// the server's answer, but a transport failure, after which a read is
// tried again on a fresh session. What the server itself answers with a
// JSON-RPC error stays invalid, and is not.
func TestOverHTTPATransportFailureIsAnUpstreamErrorAndTheNextAttemptReconnects(t *testing.T) {
	cases := []struct {
		name     string
		tool     string
		gate     func(http.ResponseWriter, *http.Request, string) bool
		outcomes []trace.Outcome
		connects int
	}{
		{"a gateway's 503", "mcp__web__echo",
			firstCall(func(w http.ResponseWriter, _ *http.Request) {
				http.Error(w, "try later", http.StatusServiceUnavailable)
			}),
			[]trace.Outcome{trace.UpstreamError, trace.OK}, 2},
		{"a connection cut before the answer", "mcp__web__echo",
			firstCall(func(w http.ResponseWriter, _ *http.Request) {
				c, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					c.Close()
				}
			}),
			[]trace.Outcome{trace.UpstreamError, trace.OK}, 2},
		{"the server's JSON-RPC error in a refused POST", "mcp__web__echo",
			firstCall(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad params"}}`)
			}),
			[]trace.Outcome{trace.Invalid}, 1},
		{"a tool the server does not have", "mcp__web__gone", nil, []trace.Outcome{trace.Invalid}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := echoServer()
				srv.AddTool(&sdk.Tool{Name: "gone", InputSchema: object, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
					func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return answer("never"), nil })
				h := newOverHTTP(t, srv, tc.gate)
				s, reg := connectHTTP(t, h, "http://mcp.invalid/mcp")
				srv.RemoveTools("gone") // listed, then no longer served
				hd := &heard{}

				res := reg.Call(t.Context(), newRun(t, time.Minute, hd), tc.tool, json.RawMessage(`{}`))
				s.Close(t.Context())

				if got := hd.outcomes(); !slices.Equal(got, tc.outcomes) {
					t.Errorf("attempts ended %v, want %v (%+v)", got, tc.outcomes, res)
				}
				if got := h.count("POST initialize"); got != tc.connects {
					t.Errorf("%d sessions, want %d", got, tc.connects)
				}
			})
		})
	}
}

// Close deletes an HTTP session, waiting as long as its context lets it:
// a server slow to answer the DELETE costs no more, and the DELETE is
// cancelled then, so that nothing of the server is left running.
func TestClosingAnHTTPServerWaitsForItsDeleteOnlyUntilItsContextEnds(t *testing.T) {
	cases := []struct {
		name          string
		deleteTakes   time.Duration // 0: it never answers
		bound         time.Duration
		wantAt        time.Duration
		wantErr       error
		wantCancelled bool
	}{
		{"a prompt DELETE is waited for", 300 * time.Millisecond, 2 * time.Second, 300 * time.Millisecond, nil, false},
		{"a DELETE that never answers costs the context", 0, time.Second, time.Second, context.DeadlineExceeded, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cancelled := make(chan struct{}, 1)
				h := newOverHTTP(t, echoServer(), func(w http.ResponseWriter, r *http.Request, _ string) bool {
					if r.Method != http.MethodDelete {
						return false
					}
					if tc.deleteTakes > 0 {
						time.Sleep(tc.deleteTakes)
						return false
					}
					<-r.Context().Done()
					cancelled <- struct{}{}
					return true
				})
				s, _ := connectHTTP(t, h, "http://mcp.invalid/mcp")
				ctx, stop := context.WithTimeout(t.Context(), tc.bound)
				defer stop()
				start := time.Now()

				err := s.Close(ctx)

				if took := time.Since(start); took != tc.wantAt {
					t.Errorf("Close returned after %v, want %v", took, tc.wantAt)
				}
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("Close: %v, want %v", err, tc.wantErr)
				}
				// What the first Close left, a later one waits for: by
				// now it has ended, as its DELETE was cancelled.
				again := time.Now()
				if err := s.Close(t.Context()); err != nil || time.Since(again) != 0 {
					t.Errorf("a second Close: %v after %v, want nil at once", err, time.Since(again))
				}
				synctest.Wait()
				var wasCancelled bool
				select {
				case <-cancelled:
					wasCancelled = true
				default:
				}
				if wasCancelled != tc.wantCancelled {
					t.Errorf("the DELETE was cancelled: %v, want %v", wasCancelled, tc.wantCancelled)
				}
			})
		})
	}
}

// A token in a server's URL is a secret: wherever the URL is shown, the
// values of its query are not.
func TestAServersURLIsShownWithItsQueryValuesRedacted(t *testing.T) {
	const url = "http://user:hunter2-password@mcp.invalid/mcp?token=s3cr3t-token-value&team=blue-team-name"
	const shown = "http://user:xxxxx@mcp.invalid/mcp?token=[redacted]&team=[redacted]"
	secrets := []string{"hunter2-password", "s3cr3t-token-value", "blue-team-name"}
	check := func(t *testing.T, what, text string) {
		t.Helper()
		for _, secret := range secrets {
			if strings.Contains(text, secret) {
				t.Errorf("%s shows %q: %s", what, secret, text)
			}
		}
	}
	synctest.Test(t, func(t *testing.T) {
		h := newOverHTTP(t, echoServer(), nil)
		s, reg := connectHTTP(t, h, url)
		if got := s.Where(); got != shown {
			t.Errorf("Where() = %q, want %q", got, shown)
		}
		h.hs.Close() // the server is gone: what fails now quotes its URL

		hd := &heard{}
		res := reg.Call(t.Context(), newRun(t, time.Minute, hd), "mcp__web__echo", json.RawMessage(`{}`))
		// The first attempt may fail on the session alone (its standalone
		// stream broke with the server, and the sdk does not reconnect it);
		// the next connects, and quotes the URL.
		if !slices.ContainsFunc(hd.ends, func(a trace.Attempt) bool {
			return a.Err != nil && strings.Contains(a.Err.Error(), "token=[redacted]")
		}) {
			t.Errorf("attempts %+v, want one failed quoting the URL redacted", hd.ends)
		}
		for _, a := range hd.ends {
			if a.Err != nil {
				check(t, "an attempt's error", a.Err.Error())
			}
		}
		if res.Outcome != trace.UpstreamError || res.Cause == nil || !strings.Contains(res.Cause.Error(), "token=[redacted]") {
			t.Fatalf("result %+v, want an upstream error whose cause quotes the URL redacted", res)
		}
		check(t, "a call's error", res.Err)
		check(t, "a call's cause", res.Cause.Error())
		s.Close(t.Context())

		_, err := mcp.Connect(t.Context(), tools.MCPServer{Name: "web", URL: url}, mcp.Options{HTTPClient: h.client()})
		if se, ok := errors.AsType[*mcp.ServerError](err); !ok || se.Where != shown || !strings.Contains(err.Error(), "token=[redacted]") {
			t.Errorf("Connect: %v, want a ServerError at %s", err, shown)
		}
		check(t, "a connect's error", err.Error())
	})
}
