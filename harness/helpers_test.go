package harness_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/internal/pipenet"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/kit"
	"github.com/glidepath/glidepath/trace"
)

// newModel returns the real model client, speaking to srv. Its backoff
// sleeps the middle of the jitter range, so that exact times are
// predictable.
func newModel(t *testing.T, srv *sim.Server) *model.Client {
	t.Helper()
	c, err := model.New(model.Config{
		BaseURL:    srv.URL,
		HTTPClient: srv.Client(),
		Model:      sim.ModelID,
		Backoff:    backoffMiddle,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func registry(t *testing.T, ts ...tools.Tool) *tools.Registry {
	t.Helper()
	reg := tools.NewRegistry(nil)
	for _, tool := range ts {
		if err := reg.Register(tool); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// calls keeps when each local tool started and ended, in fake time.
type calls struct {
	mu     sync.Mutex
	start  time.Time
	starts map[string]time.Duration
	ends   map[string]time.Duration
}

func newCalls() *calls {
	return &calls{start: time.Now(), starts: map[string]time.Duration{}, ends: map[string]time.Duration{}}
}

func (c *calls) mark(m map[string]time.Duration, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m[name] = time.Since(c.start)
}

func (c *calls) at(m map[string]time.Duration, name string) (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := m[name]
	return d, ok
}

// sleeper is a local tool that works for d, honoring its context, and
// answers out.
func (c *calls) sleeper(name string, d time.Duration, out string) tools.Tool {
	return c.sleeperSpec(tools.Spec{Name: name, Effect: tools.Read}, d, out)
}

func (c *calls) sleeperSpec(spec tools.Spec, d time.Duration, out string) tools.Tool {
	return tools.Func(spec, func(ctx context.Context, _ json.RawMessage, _ tools.Progress) (any, error) {
		c.mark(c.starts, spec.Name)
		defer c.mark(c.ends, spec.Name)
		select {
		case <-time.After(d):
			return out, nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	})
}

func records(t *testing.T, buf *bytes.Buffer) []trace.Record {
	t.Helper()
	recs, err := trace.ReadRecords(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return recs
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

// chatRequests drops the sim's other requests, such as GET /v1/models.
func chatRequests(srv *sim.Server) []sim.Request {
	var out []sim.Request
	for _, r := range srv.Requests() {
		if r.Completion > 0 {
			out = append(out, r)
		}
	}
	return out
}

var backoffMiddle = budget.Backoff{Rand: func(n int64) int64 { return n / 2 }}

// handlerServer serves h over in-memory connections: a real http.Server
// and a real http.Transport, joined by net.Pipe, so that remote calls run
// inside a synctest bubble with fake time.
type handlerServer struct {
	hs *http.Server
	tr *http.Transport
	wg sync.WaitGroup
}

func serveHandler(h http.Handler) *handlerServer {
	l := pipenet.Listen("tools.invalid")
	s := &handlerServer{hs: &http.Server{Handler: h}, tr: l.Transport()}
	s.wg.Go(func() { s.hs.Serve(l) })
	return s
}

func (s *handlerServer) client() *http.Client { return &http.Client{Transport: s.tr} }

// close ends every connection and waits for the server's goroutines.
func (s *handlerServer) close() {
	s.hs.Close()
	s.wg.Wait()
	s.tr.CloseIdleConnections()
}

// kitServer serves tools built with the kit over in-memory connections.
type kitServer struct {
	*handlerServer
	kit *kit.Server
}

func startKit(t *testing.T, ts ...kit.Tool) *kitServer {
	t.Helper()
	k := &kit.Server{}
	for _, tool := range ts {
		if err := k.Register(tool); err != nil {
			t.Fatal(err)
		}
	}
	return &kitServer{handlerServer: serveHandler(k), kit: k}
}

// close ends every connection and waits for every goroutine the server
// and its handlers started.
func (k *kitServer) close() {
	k.hs.Close()
	k.kit.Close()
	k.handlerServer.close()
}

// run runs cfg on a budget of total started now, its JSONL trace written
// to tr when tr is not nil.
func run(t *testing.T, ctx context.Context, total time.Duration, cfg harness.Config, tr io.Writer) (landing.Result, error) {
	t.Helper()
	b, err := budget.New(budget.Config{Total: total})
	if err != nil {
		t.Fatal(err)
	}
	if tr != nil {
		cfg.Sinks = append(cfg.Sinks, trace.NewJSONL(tr))
	}
	return harness.Run(ctx, b, cfg)
}

// collect is a sink that keeps every record it is handed.
type collect struct {
	mu   sync.Mutex
	recs []trace.Record
}

func (c *collect) Record(r trace.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recs = append(c.recs, r)
	return nil
}

func (c *collect) all() []trace.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.recs)
}
