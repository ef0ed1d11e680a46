package bench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/glidepath/glidepath/temporal/durable"
	"github.com/glidepath/glidepath/tools/kit"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.temporal.io/server/temporaltest"
)

// quietLogger is the SDK's logger in the benchmarks: warnings and errors
// on stderr, no chatter that would fall between go test's result lines.
type quietLogger struct{}

var sdkLog = log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))

func (quietLogger) Debug(string, ...any)        {}
func (quietLogger) Info(string, ...any)         {}
func (quietLogger) Warn(msg string, kv ...any)  { sdkLog.Warn(msg, kv...) }
func (quietLogger) Error(msg string, kv ...any) { sdkLog.Error(msg, kv...) }

// newServer starts temporaltest's in-process Temporal server (SQLite in
// memory) and stops it when tb ends. temporaltest.WithT takes a
// *testing.T only, so a benchmark stops it itself.
func newServer(tb testing.TB) *temporaltest.TestServer {
	tb.Helper()
	ts := temporaltest.NewServer(temporaltest.WithBaseClientOptions(client.Options{Logger: quietLogger{}}))
	tb.Cleanup(ts.Stop)
	return ts
}

// register registers the harness's workflow, the plain one and the
// harness's activities, which both workflows call.
func register(r worker.Registry, acts *durable.Activities) {
	r.RegisterWorkflowWithOptions(durable.Workflow, workflow.RegisterOptions{Name: durable.WorkflowName})
	r.RegisterWorkflowWithOptions(plainWorkflow, workflow.RegisterOptions{Name: plainName})
	acts.Register(r)
}

// posts counts what a tool server receives: POSTs by tool and key,
// handler runs (executions of the tool's work) by tool and key, and the
// POSTs in flight by the worker that sent them, named by the URL's query
// (?worker=w0): a query is not part of a toolset's fingerprint, so the
// workers of one queue still run one toolset.
type posts struct {
	mu       sync.Mutex
	sent     map[string]int // "tool key" → POSTs received
	ran      map[string]int // "tool key" → handler runs
	n        map[string]int // tool → POSTs received
	inFlight map[string]int // "worker tool" → POSTs not yet answered
}

func newPosts() *posts {
	return &posts{sent: map[string]int{}, ran: map[string]int{}, n: map[string]int{}, inFlight: map[string]int{}}
}

// wrap counts the POSTs h serves.
func (p *posts) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		worker := r.URL.Query().Get("worker")
		if tool, ok := strings.CutPrefix(r.URL.Path, "/tools/"); ok && r.Method == http.MethodPost && !strings.Contains(tool, "/") {
			p.mu.Lock()
			p.sent[tool+" "+r.Header.Get("Idempotency-Key")]++
			p.n[tool]++
			p.inFlight[worker+" "+tool]++
			p.mu.Unlock()
			defer func() {
				p.mu.Lock()
				p.inFlight[worker+" "+tool]--
				p.mu.Unlock()
			}()
		}
		h.ServeHTTP(w, r)
	})
}

// busy reports how many POSTs of tool that worker sent are not yet
// answered.
func (p *posts) busy(worker, tool string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inFlight[worker+" "+tool]
}

func (p *posts) didRun(tool, key string) {
	p.mu.Lock()
	p.ran[tool+" "+key]++
	p.mu.Unlock()
}

// received is how many POSTs tool has received.
func (p *posts) received(tool string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n[tool]
}

// twice counts tool's keys that were POSTed more than once, and those
// whose work ran more than once, over keys keys.
func (p *posts) twice(tool string) (keys, sentTwice, ranTwice int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, n := range p.sent {
		if strings.HasPrefix(k, tool+" ") {
			keys++
			if n > 1 {
				sentTwice++
			}
		}
	}
	for k, n := range p.ran {
		if strings.HasPrefix(k, tool+" ") && n > 1 {
			ranTwice++
		}
	}
	return keys, sentTwice, ranTwice
}

// lookupOutput is what the lookup tool answers.
var lookupOutput = map[string]int{"cats": 3}

// toolServer serves, on loopback, a read that answers at once (lookup)
// and a write that works for commitAfter and then commits (commit), both
// counted by p, and returns its URL. URL/tools/lookup?worker=w0 is
// lookup, counted for w0.
func toolServer(tb testing.TB, p *posts, commitAfter time.Duration) string {
	tb.Helper()
	srv := &kit.Server{}
	must := func(err error) {
		if err != nil {
			tb.Fatal(err)
		}
	}
	must(srv.Register(kit.Tool{
		Name:        "lookup",
		Description: "Looks things up.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
		Effect:      kit.Read,
		P50:         time.Millisecond,
		P95:         5 * time.Millisecond,
		Max:         30 * time.Second,
		Handler: func(ctx context.Context, call *kit.Call) (any, error) {
			p.didRun(call.Tool, call.Key)
			return lookupOutput, nil
		},
	}))
	must(srv.Register(kit.Tool{
		Name:        "commit",
		Description: "Commits a payment, once per Idempotency-Key.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"},"amount":{"type":"number"}},"required":["id","amount"]}`),
		Effect:      kit.Write,
		P50:         commitAfter,
		P95:         commitAfter + 500*time.Millisecond,
		Max:         time.Minute,
		Handler: func(ctx context.Context, call *kit.Call) (any, error) {
			p.didRun(call.Tool, call.Key)
			// A commit that has begun runs to its end, whatever its
			// caller's deadline: a worker killed while it works leaves
			// a write whose outcome only its key can tell.
			time.Sleep(commitAfter)
			return map[string]string{"committed": call.Key}, nil
		},
	}))
	hs := httptest.NewServer(p.wrap(srv))
	tb.Cleanup(hs.Close)
	return hs.URL
}

// toolsFile writes, in dir, a tools file named name whose tools are names
// on the tool server at url, and returns its path.
func toolsFile(tb testing.TB, dir, name, url string, names ...string) string {
	tb.Helper()
	var b strings.Builder
	b.WriteString("tools:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  - name: %s\n    url: %s\n", n, url)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err) // RUSAGE_SELF cannot fail on Linux
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
