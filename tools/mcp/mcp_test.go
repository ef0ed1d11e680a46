package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/mcp"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// inProcess is a go-sdk server in this process, reached over in-memory
// transports: a fresh pair, and a fresh server session, for every
// connection, so that a test can see a reconnect.
type inProcess struct {
	t      *testing.T
	srv    *sdk.Server
	mu     sync.Mutex
	conns  int
	last   *sdk.ServerSession
	sever  func()
	metas  []sdk.Meta
	closed sync.WaitGroup
}

func newInProcess(t *testing.T) *inProcess {
	p := &inProcess{t: t, srv: sdk.NewServer(&sdk.Implementation{Name: "test", Version: "1"}, nil)}
	t.Cleanup(func() {
		p.mu.Lock()
		last := p.last
		p.mu.Unlock()
		if last != nil {
			last.Close()
		}
		p.closed.Wait()
	})
	return p
}

var object = map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}

// add registers a tool whose handler records the _meta each call sent.
func (p *inProcess) add(name string, readOnly bool, h sdk.ToolHandler) {
	p.srv.AddTool(&sdk.Tool{Name: name, Description: name + " things", InputSchema: object,
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: readOnly}},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			p.mu.Lock()
			p.metas = append(p.metas, req.Params.Meta)
			p.mu.Unlock()
			return h(ctx, req)
		})
}

// transport connects over a pipe, whose server end sever cuts, as a
// server that dies does.
func (p *inProcess) transport(ctx context.Context) (sdk.Transport, error) {
	c, srv := net.Pipe()
	ss, err := p.srv.Connect(context.Background(), &sdk.IOTransport{Reader: srv, Writer: srv}, nil)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.conns++
	p.last, p.sever = ss, func() { srv.Close() }
	p.mu.Unlock()
	p.closed.Go(func() { ss.Wait() })
	return &sdk.IOTransport{Reader: c, Writer: c}, nil
}

func (p *inProcess) seen() ([]sdk.Meta, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.metas), p.conns
}

func connect(t *testing.T, p *inProcess, cfg tools.MCPServer) (*mcp.Server, *tools.Registry) {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "srv"
	}
	s, err := mcp.Connect(t.Context(), cfg, mcp.Options{Transport: p.transport})
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

func answer(text string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}
}

// heard is an observer that keeps what a call reported.
type heard struct {
	mu       sync.Mutex
	signals  []trace.Signal
	starts   []trace.Attempt
	ends     []trace.Attempt
	events   []string // "progress" and "cancel_sent", in the order heard
	sent     int
	settled  int
	returned bool
	late     int // signals after the call returned

	// onSignal, if set, runs as each signal is delivered, outside h.mu.
	onSignal func(trace.Signal)
}

func (h *heard) observer() *trace.Observer {
	return &trace.Observer{
		AttemptStart: func(a trace.Attempt) { h.mu.Lock(); h.starts = append(h.starts, a); h.mu.Unlock() },
		AttemptEnd:   func(a trace.Attempt) { h.mu.Lock(); h.ends = append(h.ends, a); h.mu.Unlock() },
		Signal: func(s trace.Signal) {
			h.mu.Lock()
			if h.returned {
				h.late++
			}
			h.signals = append(h.signals, s)
			if s.Event == watchdog.Progress {
				h.events = append(h.events, "progress")
			}
			h.mu.Unlock()
			if h.onSignal != nil {
				h.onSignal(s)
			}
		},
		CancelSent: func(string, string, budget.Lease) {
			h.mu.Lock()
			h.sent++
			h.events = append(h.events, "cancel_sent")
			h.mu.Unlock()
		},
		CancelSettled: func(string, string, trace.CancelState, error) { h.mu.Lock(); h.settled++; h.mu.Unlock() },
	}
}

// outcomes returns the outcome of each attempt that ended.
func (h *heard) outcomes() []trace.Outcome {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []trace.Outcome
	for _, a := range h.ends {
		out = append(out, a.Outcome)
	}
	return out
}

func (h *heard) progress() []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var units []int64
	for _, s := range h.signals {
		if s.Event == watchdog.Progress {
			units = append(units, s.Units)
		}
	}
	return units
}

func newRun(t *testing.T, total time.Duration, h *heard) *tools.Run {
	t.Helper()
	b, err := budget.New(budget.Config{Total: total})
	if err != nil {
		t.Fatal(err)
	}
	return &tools.Run{ID: "run-1", Budget: b, Observer: h.observer(), Cancels: &cancel.Group{}}
}

func TestAServersToolsAreOfferedUnderTheirMCPNamesWithTheirEffects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newInProcess(t)
		ok := func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return answer("ok"), nil }
		p.add("echo", true, ok)
		p.add("write.file", true, ok)
		p.add("lookup", false, ok)
		cases := []struct {
			name  string
			cfg   tools.MCPServer
			wants map[string]tools.Effect
		}{
			{"hints are not trusted by default", tools.MCPServer{Name: "fs"},
				map[string]tools.Effect{"mcp__fs__echo": tools.Write, "mcp__fs__write_file": tools.Write, "mcp__fs__lookup": tools.Write}},
			{"trusted hints make the read-only tools reads", tools.MCPServer{Name: "fs", TrustHints: true},
				map[string]tools.Effect{"mcp__fs__echo": tools.Read, "mcp__fs__write_file": tools.Read, "mcp__fs__lookup": tools.Write}},
			{"allowed_tools offers those alone", tools.MCPServer{Name: "fs", AllowedTools: []string{"echo", "nope"}},
				map[string]tools.Effect{"mcp__fs__echo": tools.Write}},
			{"the config wins over the hints", tools.MCPServer{Name: "fs", TrustHints: true,
				Tools: map[string]tools.MCPTool{"write.file": {Effect: tools.Write}, "lookup": {Effect: tools.Read, Ceiling: time.Second}}},
				map[string]tools.Effect{"mcp__fs__echo": tools.Read, "mcp__fs__write_file": tools.Write, "mcp__fs__lookup": tools.Read}},
		}
		for _, tc := range cases {
			s, err := mcp.Connect(t.Context(), tc.cfg, mcp.Options{Transport: p.transport})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]tools.Effect{}
			for _, tool := range s.Tools() {
				sp := tool.Spec()
				got[sp.Name] = sp.Effect
				if !sp.Cancellable || !strings.Contains(string(sp.Parameters), `"properties"`) {
					t.Errorf("%s: %s: spec %+v", tc.name, sp.Name, sp)
				}
			}
			if len(got) != len(tc.wants) {
				t.Errorf("%s: tools %v", tc.name, got)
			}
			for name, want := range tc.wants {
				if got[name] != want {
					t.Errorf("%s: %s is %q, want %q", tc.name, name, got[name], want)
				}
			}
			if len(tc.cfg.AllowedTools) > 0 && !slices.Equal(s.Missing(), []string{"nope"}) {
				t.Errorf("%s: missing %v, want the allowed tool the server lacks", tc.name, s.Missing())
			}
			s.Close(t.Context())
		}
	})
}

func TestToolNamesAreSanitizedAndCut(t *testing.T) {
	cases := []struct{ server, tool, want string }{
		{"everything", "echo", "mcp__everything__echo"},
		{"my server", "read.file", "mcp__my_server__read_file"},
		{"s", strings.Repeat("x", 80), "mcp__s__" + strings.Repeat("x", 56)},
		{"ü", "é", "mcp______"},
	}
	for _, tc := range cases {
		if got := mcp.ToolName(tc.server, tc.tool); got != tc.want || len(got) > 64 {
			t.Errorf("ToolName(%q, %q) = %q, want %q", tc.server, tc.tool, got, tc.want)
		}
	}
}

// A read whose first attempt outlasts its 1s ceiling: the server saw the
// call's key on both attempts, each with the lease it was sent, and the
// progress token of each; the cut attempt's cancel is MCP's own, sent
// with no answer to wait for.
func TestEveryCallCarriesItsKeyAndLeaseAndIsCancelledTheMCPWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newInProcess(t)
		var cancelled []error
		var mu sync.Mutex
		attempt := 0
		p.add("slow", true, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			mu.Lock()
			attempt++
			n := attempt
			mu.Unlock()
			if n == 1 {
				<-ctx.Done() // notifications/cancelled ends it
				mu.Lock()
				cancelled = append(cancelled, context.Cause(ctx))
				mu.Unlock()
				return nil, ctx.Err()
			}
			return answer("done"), nil
		})
		_, reg := connect(t, p, tools.MCPServer{Name: "srv", TrustHints: true, Tools: map[string]tools.MCPTool{"slow": {Ceiling: time.Second}}})
		h := &heard{}
		run := newRun(t, time.Minute, h)

		res := reg.Call(t.Context(), run, "mcp__srv__slow", json.RawMessage(`{"q":"cats"}`))
		run.Cancels.Wait(t.Context())
		synctest.Wait()

		if res.Err != "" || string(res.Output) != `"done"` || res.Attempts != 2 {
			t.Fatalf("result %+v, want done on the second attempt", res)
		}
		metas, _ := p.seen()
		if len(metas) != 2 {
			t.Fatalf("the server saw %d calls, want 2", len(metas))
		}
		for i, m := range metas {
			if m[mcp.MetaIdempotencyKey] != string(res.Key) {
				t.Errorf("call %d: key %v, want %s on every attempt", i+1, m[mcp.MetaIdempotencyKey], res.Key)
			}
			if ms, ok := m[mcp.MetaBudgetRemainingMs].(float64); !ok || int64(ms) != h.starts[i].Lease.Granted.Milliseconds() {
				t.Errorf("call %d: budget %v, want the lease sent, %v", i+1, m[mcp.MetaBudgetRemainingMs], h.starts[i].Lease.Granted)
			}
			if m["progressToken"] == nil {
				t.Errorf("call %d carries no progress token: %v", i+1, m)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(cancelled) != 1 {
			t.Errorf("the server's first call ended %v, want once, by notifications/cancelled", cancelled)
		}
		if h.sent != 1 || h.settled != 0 {
			t.Errorf("cancels sent %d, settled %d; want one sent, with no answer to settle it", h.sent, h.settled)
		}
	})
}

// The server's progress for a call: 1, 2, 2, 1, 3. Progress that grew is
// a heartbeat whose units grow; one that repeats or falls is reported
// with the units it had, which the run's watchdog takes for stale; and
// what the server sends after the call returned, as the reference server
// does after a cancel, is no one's.
func TestProgressIsRoutedByTokenAndOnlyWhatGrewIsAHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newInProcess(t)
		after := make(chan struct{})
		var lateSent sync.WaitGroup
		p.add("work", true, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			token := req.Params.GetProgressToken()
			for _, v := range []float64{1, 2, 2, 1, 3} {
				req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: v, Total: 3})
				time.Sleep(100 * time.Millisecond)
			}
			lateSent.Go(func() {
				<-after
				req.Session.NotifyProgress(context.Background(), &sdk.ProgressNotificationParams{ProgressToken: token, Progress: 9})
			})
			return answer("worked"), nil
		})
		_, reg := connect(t, p, tools.MCPServer{Name: "srv", TrustHints: true})
		h := &heard{}

		res := reg.Call(t.Context(), newRun(t, time.Minute, h), "mcp__srv__work", json.RawMessage(`{}`))
		synctest.Wait()
		h.mu.Lock()
		h.returned = true
		h.mu.Unlock()
		close(after)
		lateSent.Wait()
		synctest.Wait()

		if res.Err != "" {
			t.Fatal(res.Err)
		}
		if got := h.progress(); !slices.Equal(got, []int64{1, 2, 2, 2, 3}) {
			t.Errorf("progress units %v, want 1 2 2 2 3", got)
		}
		if h.late != 0 {
			t.Errorf("%d signals after the call returned", h.late)
		}
	})
}

// How a call fails says whose failure it was, and whether to try again.
func TestACallsFailureIsClassifiedAsMCPSays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newInProcess(t)
		p.add("broken", true, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "disk full"}}}, nil
		})
		p.add("gone", true, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return answer("never"), nil
		})
		p.add("dies", true, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			p.mu.Lock()
			conns, sever := p.conns, p.sever
			p.mu.Unlock()
			if conns == 1 {
				sever() // the server dies mid-call
				return nil, errors.New("dead")
			}
			return answer("again"), nil
		})
		_, reg := connect(t, p, tools.MCPServer{Name: "srv", TrustHints: true})
		p.srv.RemoveTools("gone") // listed, then no longer served

		cases := []struct {
			tool     string
			outcome  trace.Outcome
			attempts int
			errHas   string
		}{
			{"mcp__srv__broken", trace.UpstreamError, 1, "disk full"},
			{"mcp__srv__gone", trace.Invalid, 1, "gone"},
			{"mcp__srv__dies", trace.OK, 2, ""},
		}
		for _, tc := range cases {
			res := reg.Call(t.Context(), newRun(t, time.Minute, &heard{}), tc.tool, json.RawMessage(`{}`))
			if res.Outcome != tc.outcome || res.Attempts != tc.attempts || !strings.Contains(res.Err, tc.errHas) {
				t.Errorf("%s: outcome %s after %d attempts, err %q; want %s after %d, err with %q",
					tc.tool, res.Outcome, res.Attempts, res.Err, tc.outcome, tc.attempts, tc.errHas)
			}
		}
		if _, conns := p.seen(); conns != 2 {
			t.Errorf("%d connections, want 2: a fresh one after the session died", conns)
		}
	})
}

// A server that never answers initialize costs what its context allows,
// and says so.
func TestAServerThatDoesNotAnswerInitializeCostsItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var read sync.WaitGroup
		var mute net.Conn
		silent := func(ctx context.Context) (sdk.Transport, error) {
			c, srv := net.Pipe()
			mute = srv
			read.Go(func() { io.Copy(io.Discard, srv) }) // it reads, and never answers
			return &sdk.IOTransport{Reader: c, Writer: c}, nil
		}
		defer read.Wait()
		defer func() { mute.Close() }()
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		start := time.Now()

		_, err := mcp.Connect(ctx, tools.MCPServer{Name: "mute", Command: "unused"}, mcp.Options{Transport: silent})

		if took := time.Since(start); took != 2*time.Second {
			t.Errorf("Connect took %v, want its context's 2s", took)
		}
		if !errors.Is(err, mcp.ErrServer) || !strings.Contains(err.Error(), "mcp server mute") || !strings.Contains(err.Error(), "no answer in time") {
			t.Errorf("err %v", err)
		}
	})
}

// A write cut by its ceiling: MCP has no status to ask, so it is an
// orphan, with its key, and never sent again.
func TestACutMCPWriteIsAnOrphan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newInProcess(t)
		p.add("pay", false, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
		_, reg := connect(t, p, tools.MCPServer{Name: "bank", Tools: map[string]tools.MCPTool{"pay": {Ceiling: time.Second}}})

		res := reg.Call(t.Context(), newRun(t, time.Minute, &heard{}), "mcp__bank__pay", json.RawMessage(`{}`))

		if res.State != tools.StateOrphaned || res.Attempts != 1 || res.Key == "" || !strings.Contains(res.Err, string(res.Key)) {
			t.Errorf("result %+v, want an orphan with its key, after one attempt", res)
		}
	})
}
