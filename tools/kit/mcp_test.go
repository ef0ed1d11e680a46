package kit_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/tools/kit"
)

// A wire connects an sdk client to a kit server served by ServeMCP, as a
// command MCP server is: both ends in memory, so that tests run inside a
// synctest bubble. end closes the client's session and returns what
// ServeMCP returned.
type wire struct {
	name    string
	connect func(t *testing.T, srv *kit.Server, opts *mcp.ClientOptions) (cs *mcp.ClientSession, end func() error)
}

// wires are the two in-memory ways in: the sdk's in-memory transports,
// over which its client speaks the newest protocol, and io.Pipe as a
// command's stdin and stdout, with the client held to the last protocol
// that has an initialize handshake.
var wires = []wire{
	{"in-memory transports", func(t *testing.T, srv *kit.Server, opts *mcp.ClientOptions) (*mcp.ClientSession, func() error) {
		st, ct := mcp.NewInMemoryTransports()
		return connect(t, srv, st, ct, opts, nil)
	}},
	{"io.Pipe as stdio, protocol 2025-11-25", func(t *testing.T, srv *kit.Server, opts *mcp.ClientOptions) (*mcp.ClientSession, func() error) {
		toClient, fromServer := io.Pipe()
		toServer, fromClient := io.Pipe()
		st := &mcp.IOTransport{Reader: toServer, Writer: fromServer}
		ct := &mcp.IOTransport{Reader: toClient, Writer: fromClient}
		return connect(t, srv, st, ct, opts, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	}},
}

func connect(t *testing.T, srv *kit.Server, st, ct mcp.Transport, opts *mcp.ClientOptions, sopts *mcp.ClientSessionOptions) (*mcp.ClientSession, func() error) {
	t.Helper()
	served := make(chan error, 1)
	go func() { served <- srv.ServeMCP(t.Context(), st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "kit-test", Version: "1"}, opts).Connect(t.Context(), ct, sopts)
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	return cs, func() error {
		cs.Close()
		return <-served
	}
}

// callParams is a tools/call of tool with args (nil: none) and _meta
// fields given as pairs: key, value, key, value…
func callParams(tool string, args any, meta ...any) *mcp.CallToolParams {
	p := &mcp.CallToolParams{Name: tool, Arguments: args}
	if len(meta) > 0 {
		p.Meta = mcp.Meta{}
		for i := 0; i < len(meta); i += 2 {
			p.Meta[meta[i].(string)] = meta[i+1]
		}
	}
	return p
}

// text returns a result's only content, which the kit always sends as text.
func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("result has %d contents, want one", len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is a %T, want text", res.Content[0])
	}
	return tc.Text
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// rpcError returns err's JSON-RPC error, failing the test if it has none.
func rpcError(t *testing.T, err error) *jsonrpc.Error {
	t.Helper()
	e, ok := errors.AsType[*jsonrpc.Error](err)
	if !ok {
		t.Fatalf("error %v is not a JSON-RPC error", err)
	}
	return e
}

func TestToolsListOffersEachToolWithItsSchemaReadOnlyHintAndManifestFields(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var log syncBuffer
				srv := &kit.Server{Logger: slog.New(slog.NewTextHandler(&log, nil))}
				defer srv.Close()
				mustRegister(t, srv,
					kit.Tool{Name: "search", Description: "Finds pages.", Effect: kit.Read, P50: 5 * time.Millisecond, P95: 20 * time.Millisecond,
						Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","maxLength":200}},"required":["q"]}`),
						Handler:    echo("").Handler},
					kit.Tool{Name: "commit", Description: "Commits.", Effect: kit.Write, Cancellable: true, Handler: echo("").Handler},
					kit.Tool{Name: "untyped", Effect: kit.Read, Parameters: json.RawMessage(`{"properties":{"n":{"type":"integer"}}}`), Handler: echo("").Handler},
					kit.Tool{Name: "scalar", Effect: kit.Read, Parameters: json.RawMessage(`{"type":"string"}`), Handler: echo("").Handler},
					kit.Tool{Name: "nulltyped", Effect: kit.Read, Parameters: json.RawMessage(`{"type":null}`), Handler: echo("").Handler},
				)
				cs, end := w.connect(t, srv, nil)
				defer end()
				list := func() []string {
					res, err := cs.ListTools(t.Context(), nil)
					if err != nil {
						t.Fatal(err)
					}
					var got []string
					for _, tl := range res.Tools {
						got = append(got, tl.Name+" "+tl.Description+" readOnly="+jsonOf(t, tl.Annotations.ReadOnlyHint)+
							" schema="+jsonOf(t, tl.InputSchema)+" meta="+jsonOf(t, tl.Meta))
					}
					return got
				}
				// The sdk lists tools by name.
				want := []string{
					`commit Commits. readOnly=false schema={"properties":{},"type":"object"} meta={"io.github.glidepath/cancellable":true,"io.github.glidepath/effect":"write","io.github.glidepath/p50-ms":0,"io.github.glidepath/p95-ms":0}`,
					`search Finds pages. readOnly=true schema={"properties":{"q":{"maxLength":200,"type":"string"}},"required":["q"],"type":"object"} meta={"io.github.glidepath/cancellable":false,"io.github.glidepath/effect":"read","io.github.glidepath/p50-ms":5,"io.github.glidepath/p95-ms":20}`,
					`untyped  readOnly=true schema={"properties":{"n":{"type":"integer"}},"type":"object"} meta={"io.github.glidepath/cancellable":false,"io.github.glidepath/effect":"read","io.github.glidepath/p50-ms":0,"io.github.glidepath/p95-ms":0}`,
				}
				if got := list(); strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("tools/list:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
				for _, name := range []string{"scalar", "nulltyped"} {
					if l := log.String(); !strings.Contains(l, `msg="kit: tool not offered over MCP" tool=`+name) {
						t.Errorf("the log does not say why %s is missing:\n%s", name, l)
					}
				}
				mustRegister(t, srv, kit.Tool{Name: "late", Effect: kit.Read, Handler: echo("").Handler})
				if got := list(); len(got) != 4 || !strings.HasPrefix(got[1], "late ") {
					t.Errorf("after registering late:\n%s", strings.Join(got, "\n"))
				}
			})
		})
	}
}

func TestACallsOutcomeIsAToolResultAndAFailureIsAnErrorResultNotAnRPCError(t *testing.T) {
	cases := []struct {
		name           string
		handler        kit.Handler
		wantText       string // a prefix
		wantStructured string // "" for none
		wantError      bool
		wantMeta       string // of an error result
	}{
		{name: "an object output is text and structured content",
			handler:  func(ctx context.Context, call *kit.Call) (any, error) { return map[string]int{"documents": 42}, nil },
			wantText: `{"documents":42}`, wantStructured: `{"documents":42}`},
		{name: "a string output is its JSON as text",
			handler:  func(ctx context.Context, call *kit.Call) (any, error) { return "hello, Ada", nil },
			wantText: `"hello, Ada"`},
		{name: "an array output is text only",
			handler:  func(ctx context.Context, call *kit.Call) (any, error) { return []int{1, 2}, nil },
			wantText: `[1,2]`},
		{name: "a kit error is an error result with its message",
			handler: func(ctx context.Context, call *kit.Call) (any, error) {
				return nil, &kit.Error{Message: "greet: no name"}
			},
			wantText: "greet: no name", wantError: true, wantMeta: `{"io.github.glidepath/retryable":false}`},
		{name: "a retryable kit error says so in the result's meta",
			handler: func(ctx context.Context, call *kit.Call) (any, error) {
				return nil, &kit.Error{Message: "busy", Retryable: true}
			},
			wantText: "busy", wantError: true, wantMeta: `{"io.github.glidepath/retryable":true}`},
		{name: "any other error is a failure with its message",
			handler:  func(ctx context.Context, call *kit.Call) (any, error) { return nil, errors.New("disk full") },
			wantText: "disk full", wantError: true, wantMeta: `{"io.github.glidepath/retryable":false}`},
		{name: "a panic is a failure naming it",
			handler:  func(ctx context.Context, call *kit.Call) (any, error) { panic("boom") },
			wantText: "kit: tool t panicked: boom", wantError: true, wantMeta: `{"io.github.glidepath/retryable":false}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &kit.Server{Logger: discardLogger()}
				defer srv.Close()
				mustRegister(t, srv, kit.Tool{Name: "t", Effect: kit.Read, Handler: tc.handler})
				cs, end := wires[0].connect(t, srv, nil)
				defer end()
				res, err := cs.CallTool(t.Context(), callParams("t", nil))
				if err != nil {
					t.Fatalf("CallTool: %v, want a result", err)
				}
				if got := text(t, res); !strings.HasPrefix(got, tc.wantText) || res.IsError != tc.wantError {
					t.Errorf("result %q isError=%v, want %q isError=%v", got, res.IsError, tc.wantText, tc.wantError)
				}
				if got := ""; res.StructuredContent != nil || tc.wantStructured != "" {
					if got = jsonOf(t, res.StructuredContent); got != tc.wantStructured {
						t.Errorf("structured content %s, want %q", got, tc.wantStructured)
					}
				}
				if tc.wantError {
					ours := map[string]any{}
					for k, v := range res.Meta {
						if strings.HasPrefix(k, "io.github.glidepath/") {
							ours[k] = v
						}
					}
					if got := jsonOf(t, ours); got != tc.wantMeta {
						t.Errorf("meta %s, want %s", got, tc.wantMeta)
					}
				}
			})
		})
	}
}

func TestACallSaysWhatArrivedOverEitherProtocol(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &kit.Server{}
		defer srv.Close()
		calls := make(chan kit.Call, 1)
		mustRegister(t, srv, kit.Tool{Name: "t", Effect: kit.Read, Max: time.Minute, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
			calls <- *call
			return nil, nil
		}})
		cs, end := wires[0].connect(t, srv, nil)
		defer end()
		describe := func(c kit.Call) string {
			key := c.Key
			if strings.HasPrefix(key, "mcp_") {
				key = "mcp_…"
			}
			return jsonOf(t, map[string]any{"key": key, "args": json.RawMessage(c.Args), "attempt": c.Attempt, "lease": c.Lease.String(), "mcp": c.MCP})
		}
		cases := []struct {
			name string
			call func()
			want string
		}{
			{"over HTTP, the lease of the header",
				func() {
					serve(t.Context(), srv, request{path: "/tools/t", body: `{"arguments":{"b": 2, "a": 1}}`, header: map[string]string{budget.Header: "800"}})
				},
				`{"args":{"b":2,"a":1},"attempt":1,"key":"k1","lease":"800ms","mcp":false}`},
			{"over HTTP without the header, no lease",
				func() {
					serve(t.Context(), srv, request{path: "/tools/t", header: map[string]string{"Idempotency-Key": "k2"}})
				},
				`{"args":{},"attempt":1,"key":"k2","lease":"0s","mcp":false}`},
			{"over MCP, the key and lease of the meta",
				func() {
					cs.CallTool(t.Context(), callParams("t", json.RawMessage(`{"b": 2, "a": 1}`), kit.MetaIdempotencyKey, "k3", kit.MetaBudgetRemaining, 800))
				},
				`{"args":{"b":2,"a":1},"attempt":1,"key":"k3","lease":"800ms","mcp":true}`},
			{"over MCP without them, a fresh key and no lease",
				func() { cs.CallTool(t.Context(), callParams("t", nil)) },
				`{"args":{},"attempt":1,"key":"mcp_…","lease":"0s","mcp":true}`},
		}
		for _, tc := range cases {
			tc.call()
			if got := describe(<-calls); got != tc.want {
				t.Errorf("%s: the handler saw %s, want %s", tc.name, got, tc.want)
			}
		}
	})
}

func TestTheBudgetInMetaIsTheHandlersDeadlineClampedToMax(t *testing.T) {
	cases := []struct {
		name      string
		meta      []any
		wantAt    time.Duration
		wantCause error  // nil: the handler never runs
		wantText  string // contained in the error result
		wantCode  bool   // reports whether the result carries CodeDeadline
	}{
		{"a budget below Max ends the context at the budget, the caller's doing",
			[]any{kit.MetaBudgetRemaining, 100}, 100 * time.Millisecond, budget.ErrDeadline,
			"kit: tool slow ended: " + budget.ErrDeadline.Error() + " (" + kit.CodeDeadline + ")", true},
		{"a budget above Max is clamped to Max",
			[]any{kit.MetaBudgetRemaining, 5000}, time.Second, budget.ErrLeaseExpired, "kit: tool slow ended: " + budget.ErrLeaseExpired.Error(), false},
		{"without a budget the call gets Max",
			nil, time.Second, budget.ErrLeaseExpired, "kit: tool slow ended: " + budget.ErrLeaseExpired.Error(), false},
		{"a budget of zero is answered at once and never runs the handler",
			[]any{kit.MetaBudgetRemaining, 0}, 0, nil,
			"kit: no time left for tool slow: the caller's " + kit.MetaBudgetRemaining + " was 0 (" + kit.CodeDeadline + ")", true},
	}
	for _, w := range wires {
		for _, tc := range cases {
			t.Run(w.name+"/"+tc.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					srv := &kit.Server{}
					defer srv.Close()
					causes := make(chan error, 1)
					mustRegister(t, srv, kit.Tool{Name: "slow", Effect: kit.Read, Max: time.Second, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
						<-ctx.Done()
						causes <- context.Cause(ctx)
						return nil, ctx.Err()
					}})
					cs, end := w.connect(t, srv, nil)
					defer end()
					start := time.Now()
					res, err := cs.CallTool(t.Context(), callParams("slow", nil, tc.meta...))
					if err != nil {
						t.Fatalf("CallTool: %v, want an error result", err)
					}
					if got := time.Since(start); got != tc.wantAt {
						t.Errorf("answered after %v, want %v", got, tc.wantAt)
					}
					if got := text(t, res); !res.IsError || got != tc.wantText {
						t.Errorf("result %q isError=%v, want the error %q", got, res.IsError, tc.wantText)
					}
					if _, got := res.Meta["io.github.glidepath/code"]; got != tc.wantCode {
						t.Errorf("meta %v: carries a code %v, want %v", res.Meta, got, tc.wantCode)
					}
					synctest.Wait()
					select {
					case got := <-causes:
						if got != tc.wantCause {
							t.Errorf("the handler's cause %v, want %v", got, tc.wantCause)
						}
					default:
						if tc.wantCause != nil {
							t.Error("the handler never ran")
						}
					}
				})
			})
		}
	}
}

func TestMalformedMetaOrArgumentsAreInvalidParamsNamingTheFieldAndNeverRunTheHandler(t *testing.T) {
	cases := []struct {
		name string
		args any
		meta []any
		want string
	}{
		{"a budget with a fraction", nil, []any{kit.MetaBudgetRemaining, 1.5}, "kit: bad _meta " + kit.MetaBudgetRemaining + " 1.5: not an integer"},
		{"a negative budget", nil, []any{kit.MetaBudgetRemaining, -1}, "kit: bad _meta " + kit.MetaBudgetRemaining + " -1: negative"},
		{"a budget beyond a year", nil, []any{kit.MetaBudgetRemaining, int64(366 * 24 * 3600 * 1000)}, "kit: bad _meta " + kit.MetaBudgetRemaining + " 31622400000: larger than a year"},
		{"a budget as a string", nil, []any{kit.MetaBudgetRemaining, "1500"}, "kit: bad _meta " + kit.MetaBudgetRemaining + ` "1500": not a JSON integer`},
		{"a null budget", nil, []any{kit.MetaBudgetRemaining, nil}, "kit: bad _meta " + kit.MetaBudgetRemaining + " null: not a JSON integer"},
		{"a key that is a number", nil, []any{kit.MetaIdempotencyKey, 42}, "kit: bad _meta " + kit.MetaIdempotencyKey + " 42: must be a string"},
		{"an empty key", nil, []any{kit.MetaIdempotencyKey, ""}, "kit: bad _meta " + kit.MetaIdempotencyKey + ": must be 1 to 255 characters"},
		{"a key of 256 characters", nil, []any{kit.MetaIdempotencyKey, strings.Repeat("k", 256)}, "kit: bad _meta " + kit.MetaIdempotencyKey + ": must be 1 to 255 characters"},
		{"a key with a space", nil, []any{kit.MetaIdempotencyKey, "a b"}, "kit: bad _meta " + kit.MetaIdempotencyKey + ": only visible ASCII characters are allowed"},
		{"arguments that are not an object", []int{1}, nil, "kit: arguments must be a JSON object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &kit.Server{}
				defer srv.Close()
				var runs counter
				mustRegister(t, srv, kit.Tool{Name: "t", Effect: kit.Read, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
					runs.add()
					return nil, nil
				}})
				cs, end := wires[0].connect(t, srv, nil)
				defer end()
				_, err := cs.CallTool(t.Context(), callParams("t", tc.args, tc.meta...))
				if e := rpcError(t, err); e.Code != jsonrpc.CodeInvalidParams || e.Message != tc.want {
					t.Errorf("error %d %q, want invalid params %q", e.Code, e.Message, tc.want)
				}
				if runs.get() != 0 {
					t.Error("the handler ran")
				}
			})
		})
	}
}

func TestTheSameKeyOverMCPRunsTheHandlerOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &kit.Server{}
		defer srv.Close()
		var runs counter
		release := make(chan struct{})
		mustRegister(t, srv, kit.Tool{Name: "commit", Effect: kit.Write, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
			n := runs.add()
			<-release
			return map[string]int{"commit": n}, nil
		}})
		cs, end := wires[0].connect(t, srv, nil)
		defer end()
		call := func(key string, args any) (string, error) {
			meta := []any{}
			if key != "" {
				meta = []any{kit.MetaIdempotencyKey, key}
			}
			res, err := cs.CallTool(t.Context(), callParams("commit", args, meta...))
			if err != nil {
				return "", err
			}
			return text(t, res), nil
		}

		// Two calls with one key while the first runs: the second follows it.
		answers := make(chan string, 2)
		for range 2 {
			go func() {
				out, err := call("k1", map[string]int{"amount": 5})
				if err != nil {
					t.Error(err)
				}
				answers <- out
			}()
		}
		synctest.Wait()
		if runs.get() != 1 {
			t.Fatalf("the handler runs %d times for one key", runs.get())
		}
		close(release)
		if a, b := <-answers, <-answers; a != `{"commit":1}` || b != a {
			t.Errorf("answers %s and %s, want the one commit twice", a, b)
		}
		// Once it is done, the key gets the stored outcome.
		if out, err := call("k1", map[string]int{"amount": 5}); err != nil || out != `{"commit":1}` {
			t.Errorf("the key again: %s %v, want the stored outcome", out, err)
		}
		// The records are the server's, whichever protocol asks.
		if m := serve(t.Context(), srv, request{method: http.MethodGet, path: "/tools/commit/calls/k1"}); m.body.String() != `{"state":"done","output":{"commit":1},"units":0}`+"\n" {
			t.Errorf("the status endpoint: %d %s", m.code, m.body.String())
		}
		_, err := call("k1", map[string]int{"amount": 6})
		if e := rpcError(t, err); e.Code != jsonrpc.CodeInvalidParams || e.Message != "kit: "+kit.MetaIdempotencyKey+" k1 was used with other arguments" {
			t.Errorf("the key with other arguments: %d %q, want invalid params", e.Code, e.Message)
		}
		// Without a key, every call is a call of its own.
		a, _ := call("", map[string]int{"amount": 5})
		b, _ := call("", map[string]int{"amount": 5})
		if a != `{"commit":2}` || b != `{"commit":3}` || runs.get() != 3 {
			t.Errorf("two calls without a key answered %s and %s after %d runs, want two more runs", a, b, runs.get())
		}
	})
}

func TestProgressIsSentWithTheRequestsTokenAndStrictlyIncreasingUnits(t *testing.T) {
	type note struct {
		Token    any
		Progress float64
		Total    float64
		Message  string
	}
	for _, w := range wires {
		for _, token := range []any{"tok-1", nil} {
			t.Run(w.name+"/token "+jsonOf(t, token), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					srv := &kit.Server{}
					defer srv.Close()
					mustRegister(t, srv, kit.Tool{Name: "index", Effect: kit.Read, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
						call.Progress(1, 3, "one")
						time.Sleep(time.Millisecond)
						call.Progress(1, 3, "one again") // dropped: units did not increase
						call.Progress(2, 3, "two")
						time.Sleep(time.Millisecond)
						call.Progress(0, 3, "lower") // dropped
						call.Progress(3, 3, "three")
						return "indexed", nil
					}})
					var mu sync.Mutex
					var notes []note
					cs, end := w.connect(t, srv, &mcp.ClientOptions{ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
						mu.Lock()
						defer mu.Unlock()
						p := req.Params
						notes = append(notes, note{p.ProgressToken, p.Progress, p.Total, p.Message})
					}})
					defer end()
					var meta []any
					if token != nil {
						meta = []any{"progressToken", token}
					}
					res, err := cs.CallTool(t.Context(), callParams("index", nil, meta...))
					if err != nil || text(t, res) != `"indexed"` {
						t.Fatalf("CallTool: %v %v", res, err)
					}
					synctest.Wait() // the client handles notifications on its own goroutine
					mu.Lock()
					got := jsonOf(t, notes)
					mu.Unlock()
					want := "null"
					if token != nil {
						want = `[{"Token":"tok-1","Progress":1,"Total":3,"Message":"one"},{"Token":"tok-1","Progress":2,"Total":3,"Message":"two"},{"Token":"tok-1","Progress":3,"Total":3,"Message":"three"}]`
					}
					if got != want {
						t.Errorf("notifications %s\nwant %s", got, want)
					}
				})
			})
		}
	}
}

func TestCancellingTheClientsCallEndsTheHandlersContext(t *testing.T) {
	cases := []struct {
		name        string
		cancellable bool
		want        error
	}{
		{"with ErrCancelled for a cancellable tool", true, kit.ErrCancelled},
		{"with ErrCallerGone for another, as when an HTTP caller hangs up", false, kit.ErrCallerGone},
	}
	for _, w := range wires {
		for _, tc := range cases {
			t.Run(w.name+"/"+tc.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					srv := &kit.Server{}
					defer srv.Close()
					started := make(chan struct{}, 1)
					causes := make(chan error, 1)
					mustRegister(t, srv, kit.Tool{Name: "job", Effect: kit.Read, Cancellable: tc.cancellable, Max: time.Minute, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
						if call.Attempt > 1 {
							return "attempt 2", nil
						}
						started <- struct{}{}
						<-ctx.Done()
						causes <- context.Cause(ctx)
						return nil, ctx.Err()
					}})
					cs, end := w.connect(t, srv, nil)
					defer end()
					ctx, cancel := context.WithCancel(t.Context())
					go func() {
						<-started
						cancel()
					}()
					start := time.Now()
					if _, err := cs.CallTool(ctx, callParams("job", nil, kit.MetaIdempotencyKey, "j1")); !errors.Is(err, context.Canceled) {
						t.Errorf("CallTool: %v, want context.Canceled", err)
					}
					if got := <-causes; got != tc.want {
						t.Errorf("the handler's cause %v, want %v", got, tc.want)
					}
					if got := time.Since(start); got != 0 {
						t.Errorf("the handler ended after %v, want at once", got)
					}
					// Cancelled is a retryable failure: the same key runs again.
					res, err := cs.CallTool(t.Context(), callParams("job", nil, kit.MetaIdempotencyKey, "j1"))
					if err != nil || text(t, res) != `"attempt 2"` {
						t.Errorf("the key again: %v %v, want attempt 2", res, err)
					}
				})
			})
		}
	}
}

func TestCloseEndsMCPSessionsAtOnceAndWaitsForTheirHandlers(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &kit.Server{}
				causes := make(chan error, 1)
				mustRegister(t, srv, kit.Tool{Name: "job", Effect: kit.Read, Max: time.Minute, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
					<-ctx.Done()
					causes <- context.Cause(ctx)
					time.Sleep(50 * time.Millisecond) // cleanup Close must wait for
					return nil, ctx.Err()
				}})
				cs, end := w.connect(t, srv, nil)
				answered := make(chan error, 1)
				go func() {
					_, err := cs.CallTool(t.Context(), callParams("job", nil))
					answered <- err
				}()
				synctest.Wait()
				start := time.Now()
				closed := make(chan error, 1)
				go func() { closed <- srv.Close() }()
				err := <-answered
				if e := rpcError(t, err); !strings.Contains(e.Message, "kit: server closed") || time.Since(start) != 0 {
					t.Errorf("the call was answered %q after %v, want at once that the server closed", e.Message, time.Since(start))
				}
				if err := cs.Wait(); err != nil && !errors.Is(err, io.EOF) {
					t.Logf("the session ended: %v", err)
				}
				if err := <-closed; err != nil || time.Since(start) != 50*time.Millisecond {
					t.Errorf("Close: %v after %v, want nil once the handler returned, after 50ms", err, time.Since(start))
				}
				if got := <-causes; got != kit.ErrClosed {
					t.Errorf("the handler's cause %v, want ErrClosed", got)
				}
				if err := end(); err != kit.ErrClosed {
					t.Errorf("ServeMCP returned %v, want ErrClosed", err)
				}
				st, _ := mcp.NewInMemoryTransports()
				if err := srv.ServeMCP(t.Context(), st); err != kit.ErrClosed {
					t.Errorf("ServeMCP after Close: %v, want ErrClosed", err)
				}
			})
		})
	}
}

func TestServeMCPReturnsWhenItsContextEndsEndingTheSessionsCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &kit.Server{}
		defer srv.Close()
		causes := make(chan error, 1)
		mustRegister(t, srv, echo("echo"), kit.Tool{Name: "job", Effect: kit.Read, Max: time.Minute, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return nil, ctx.Err()
		}})
		ctx, cancel := context.WithCancel(t.Context())
		st, ct := mcp.NewInMemoryTransports()
		served := make(chan error, 1)
		go func() { served <- srv.ServeMCP(ctx, st) }()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "kit-test", Version: "1"}, nil).Connect(t.Context(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		go cs.CallTool(t.Context(), callParams("job", nil))
		synctest.Wait()
		cancel()
		if err := <-served; err != nil {
			t.Errorf("ServeMCP: %v, want nil", err)
		}
		if got := <-causes; got != kit.ErrClosed {
			t.Errorf("the handler's cause %v, want ErrClosed", got)
		}
		// The server is not closed: it still serves.
		if got := output(t, serve(t.Context(), srv, request{path: "/tools/echo", body: `{"arguments":{"a":1}}`})); got != `{"a":1}` {
			t.Errorf("echo over HTTP after ServeMCP answered %s", got)
		}
	})
}

// Over ServeMCP too, a request that the client cancels gets no response
// (SPEC §5b). The client here speaks JSON-RPC by hand on a pipe, as a
// command server's stdio, to see what the sdk's client would drop.
func TestACancelledRequestOverStdioGetsNoResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &kit.Server{}
		defer srv.Close()
		started := make(chan struct{}, 1)
		causes := make(chan error, 1)
		mustRegister(t, srv, kit.Tool{Name: "job", Effect: kit.Read, Cancellable: true, Max: time.Minute, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
			started <- struct{}{}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return nil, ctx.Err()
		}})
		toClient, fromServer := io.Pipe()
		toServer, fromClient := io.Pipe()
		served := make(chan error, 1)
		go func() { served <- srv.ServeMCP(t.Context(), &mcp.IOTransport{Reader: toServer, Writer: fromServer}) }()
		var mu sync.Mutex
		var got []map[string]any
		read := make(chan struct{})
		go func() {
			defer close(read)
			dec := json.NewDecoder(toClient)
			for {
				var m map[string]any
				if dec.Decode(&m) != nil {
					return
				}
				mu.Lock()
				got = append(got, m)
				mu.Unlock()
			}
		}()
		send := func(msg string) {
			if _, err := io.WriteString(fromClient, msg+"\n"); err != nil {
				t.Fatal(err)
			}
		}
		send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
		send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"job","arguments":{}}}`)
		<-started
		send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
		if cause := <-causes; cause != kit.ErrCancelled {
			t.Errorf("the handler's cause %v, want ErrCancelled", cause)
		}
		send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
		synctest.Wait() // the handler has returned, and every answer is read
		fromClient.Close()
		<-served
		toClient.Close()
		<-read

		var ids []any
		for _, m := range got {
			if id, ok := m["id"]; ok {
				ids = append(ids, id)
			}
		}
		if want := []any{1.0, 3.0}; jsonOf(t, ids) != jsonOf(t, want) {
			t.Errorf("responses to %v, want to %v only: the cancelled request gets none", ids, want)
		}
	})
}
