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

	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/mcp"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// muting is a server that answers its first connection, and whose later
// connections are read and never answered: a server that hangs as it is
// reconnected to. dies, a tool of it, cuts the first connection.
type muting struct {
	*inProcess
	mu    sync.Mutex
	mutes []net.Conn
	read  sync.WaitGroup
}

func newMuting(t *testing.T) *muting {
	m := &muting{inProcess: newInProcess(t)}
	m.add("dies", true, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		m.inProcess.mu.Lock()
		sever := m.sever
		m.inProcess.mu.Unlock()
		sever()
		return nil, errors.New("dead")
	})
	t.Cleanup(func() {
		m.mu.Lock()
		for _, c := range m.mutes {
			c.Close()
		}
		m.mu.Unlock()
		m.read.Wait()
	})
	return m
}

func (m *muting) transport(ctx context.Context) (sdk.Transport, error) {
	if _, conns := m.seen(); conns == 0 {
		return m.inProcess.transport(ctx)
	}
	c, srv := net.Pipe()
	m.mu.Lock()
	m.mutes = append(m.mutes, srv)
	m.mu.Unlock()
	m.read.Go(func() { io.Copy(io.Discard, srv) })
	return &sdk.IOTransport{Reader: c, Writer: c}, nil
}

// connectMuting connects to m and breaks its session, so that the next
// call reconnects, to a server that does not answer.
func connectMuting(t *testing.T, m *muting, cfg tools.MCPServer) (*mcp.Server, *tools.Registry) {
	t.Helper()
	s, err := mcp.Connect(t.Context(), cfg, mcp.Options{Transport: m.transport})
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
	if res := reg.Call(t.Context(), newRun(t, time.Minute, &heard{}), "mcp__srv__dies", json.RawMessage(`{}`)); res.Outcome != trace.UpstreamError {
		t.Fatalf("dies: %+v, want the session broken", res)
	}
	return s, reg
}

func TestACallWaitingForAnotherCallsConnectGivesUpWhenItsOwnContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMuting(t)
		ok := func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return answer("ok"), nil }
		m.add("patient", true, ok)
		m.add("hurried", true, ok)
		_, reg := connectMuting(t, m, tools.MCPServer{Name: "srv", TrustHints: true, Tools: map[string]tools.MCPTool{
			"dies":    {MaxAttempts: 1},
			"patient": {Ceiling: 10 * time.Second, MaxAttempts: 1},
			"hurried": {Ceiling: time.Second, MaxAttempts: 1},
		}})
		start := time.Now()
		var patient sync.WaitGroup
		var patientTook time.Duration
		patient.Go(func() {
			reg.Call(t.Context(), newRun(t, time.Minute, &heard{}), "mcp__srv__patient", json.RawMessage(`{}`))
			patientTook = time.Since(start)
		})
		synctest.Wait() // patient is connecting, to a server that does not answer

		res := reg.Call(t.Context(), newRun(t, time.Minute, &heard{}), "mcp__srv__hurried", json.RawMessage(`{}`))

		if took := time.Since(start); took != time.Second {
			t.Errorf("the call waiting for another's connect returned after %v, want its own 1s ceiling (%+v)", took, res)
		}
		patient.Wait()
		if patientTook != 10*time.Second {
			t.Errorf("the connecting call returned after %v, want its 10s ceiling", patientTook)
		}
	})
}

func TestCloseGivesUpAConnectUnderWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMuting(t)
		m.add("lookup", true, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return answer("ok"), nil })
		s, reg := connectMuting(t, m, tools.MCPServer{Name: "srv", TrustHints: true, Tools: map[string]tools.MCPTool{
			"dies":   {MaxAttempts: 1},
			"lookup": {Ceiling: 10 * time.Second, MaxAttempts: 1},
		}})
		start := time.Now()
		var call sync.WaitGroup
		var res tools.Result
		var took time.Duration
		call.Go(func() {
			res = reg.Call(t.Context(), newRun(t, time.Minute, &heard{}), "mcp__srv__lookup", json.RawMessage(`{}`))
			took = time.Since(start)
		})
		synctest.Wait() // the call is connecting, to a server that does not answer

		err := s.Close(t.Context())
		closed := time.Since(start)
		call.Wait()

		if err != nil || closed != 0 {
			t.Errorf("Close returned %v after %v, want nil at once", err, closed)
		}
		if took != 0 || !strings.Contains(res.Err, "closed") {
			t.Errorf("the connecting call returned after %v with %q, want at once, as the server closed", took, res.Err)
		}
	})
}

// A read whose first attempt reports 1, 2, 3 and is cut by its ceiling,
// and whose second reports 1, 2 and answers: the server's progress starts
// over, the heartbeats' units do not.
func TestProgressUnitsGrowAcrossACallsAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newInProcess(t)
		var mu sync.Mutex
		attempt := 0
		p.add("work", true, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			mu.Lock()
			attempt++
			n := attempt
			mu.Unlock()
			steps := []float64{1, 2, 3}
			if n > 1 {
				steps = []float64{1, 2}
			}
			for _, v := range steps {
				req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: v})
				time.Sleep(100 * time.Millisecond)
			}
			if n == 1 {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return answer("worked"), nil
		})
		_, reg := connect(t, p, tools.MCPServer{Name: "srv", TrustHints: true, Tools: map[string]tools.MCPTool{"work": {Ceiling: time.Second}}})
		h := &heard{}

		res := reg.Call(t.Context(), newRun(t, time.Minute, h), "mcp__srv__work", json.RawMessage(`{}`))

		if res.Err != "" || res.Attempts != 2 {
			t.Fatalf("result %+v, want an answer on the second attempt", res)
		}
		if got := h.progress(); !slices.Equal(got, []int64{1, 2, 3, 4, 5}) {
			t.Errorf("progress units %v, want 1 2 3 4 5: growing across attempts", got)
		}
	})
}

// The call's answer comes while its progress is being delivered (the
// observer takes 1s): the call returns only once it has been, so that no
// progress of an attempt is delivered after the attempt is done.
func TestAnAttemptEndsOnlyOnceItsProgressUnderWayIsDelivered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newInProcess(t)
		delivering := make(chan struct{})
		p.add("work", true, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1})
			<-delivering
			return answer("worked"), nil
		})
		_, reg := connect(t, p, tools.MCPServer{Name: "srv", TrustHints: true})
		var mu sync.Mutex
		var order []string
		note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
		h := &heard{onSignal: func(s trace.Signal) {
			if s.Event != watchdog.Progress {
				return
			}
			note("progress begins")
			close(delivering)
			time.Sleep(time.Second)
			note("progress delivered")
		}}
		start := time.Now()

		res := reg.Call(t.Context(), newRun(t, time.Minute, h), "mcp__srv__work", json.RawMessage(`{}`))
		note("call returned")

		if res.Err != "" {
			t.Fatal(res.Err)
		}
		mu.Lock()
		defer mu.Unlock()
		if want := []string{"progress begins", "progress delivered", "call returned"}; !slices.Equal(order, want) {
			t.Errorf("order %q, want %q", order, want)
		}
		if took := time.Since(start); took != time.Second {
			t.Errorf("the call took %v, want the 1s its progress took to deliver", took)
		}
	})
}

// Tools whose inputSchema is not of type "object", and two whose names
// are one once sanitized: they are not offered, and each warning names
// the server and the tools as the server does.
func TestToolsThatCannotBeOfferedAreWarnedAboutByTheirOwnNames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newInProcess(t)
		ok := func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return answer("ok"), nil }
		for _, name := range []string{"fine", "list", "untyped", "read.file", "read_file"} {
			p.add(name, true, ok)
		}
		// The go-sdk's server refuses such schemas, other servers do not:
		// its tools/list answer is rewritten on the way out.
		schemas := map[string]any{
			"list":    map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"untyped": map[string]any{"properties": map[string]any{}},
		}
		p.srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
			return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
				res, err := next(ctx, method, req)
				if lr, ok := res.(*sdk.ListToolsResult); ok {
					for i, tool := range lr.Tools {
						if schema, ok := schemas[tool.Name]; ok {
							c := *tool
							c.InputSchema = schema
							lr.Tools[i] = &c
						}
					}
				}
				return res, err
			}
		})
		s, _ := connect(t, p, tools.MCPServer{Name: "fs"})

		var offered []string
		for _, tool := range s.Tools() {
			offered = append(offered, tool.Spec().Name)
		}
		if want := []string{"mcp__fs__fine", "mcp__fs__read_file"}; !slices.Equal(offered, want) {
			t.Errorf("offered %v, want %v", offered, want)
		}
		wants := map[string][]string{ // the tool not offered → what its warning says
			"list":      {"mcp server fs", `tool "list" is not offered`, `of type "array", not "object"`},
			"untyped":   {"mcp server fs", `tool "untyped" is not offered`, "has no type"},
			"read_file": {"mcp server fs", `tool "read_file" is not offered`, `tool "read.file"`, "mcp__fs__read_file"},
		}
		warnings := s.Warnings()
		if len(warnings) != len(wants) {
			t.Errorf("warnings %v, want %d", warnings, len(wants))
		}
		for _, w := range warnings {
			e, ok := errors.AsType[*mcp.NotOfferedError](w)
			if !ok || !errors.Is(w, mcp.ErrNotOffered) || e.Server != "fs" {
				t.Errorf("warning %v (%T) is not a NotOfferedError of server fs", w, w)
				continue
			}
			for _, part := range wants[e.Tool] {
				if !strings.Contains(w.Error(), part) {
					t.Errorf("warning %q lacks %q", w, part)
				}
			}
		}
		if server, tool, ok := mcp.Origin(s.Tools()[len(s.Tools())-1]); !ok || server != "fs" || tool != "read.file" {
			t.Errorf("Origin(mcp__fs__read_file) = %s, %s, %v; want fs, read.file", server, tool, ok)
		}
	})
}
