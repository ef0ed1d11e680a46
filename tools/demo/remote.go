package demo

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/internal/pipenet"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/kit"
)

// memServer serves the demo's remote tools ([NewServer]) over in-memory
// connections: remote tools with no port to pick, so that the demo shows a
// cancel endpoint called and a late write reconciled anywhere, CI
// included. It starts when a call first needs it and stops when the
// registry closes its tools.
type memServer struct {
	startOnce, closeOnce sync.Once

	kit    *kit.Server
	hs     *http.Server
	tr     *http.Transport
	client *http.Client
	wg     sync.WaitGroup // the http.Server's Serve
}

// memBase is the base URL the in-memory server answers at; the name never
// resolves, since every connection is a pipe.
const memBase = "http://demo-tools.invalid"

func (m *memServer) start() {
	m.startOnce.Do(func() {
		l := pipenet.Listen("demo-tools.invalid")
		m.kit = &kit.Server{}
		for _, t := range serverTools(ServerConfig{}) {
			if t.Name == "fetch" {
				t.Handler = unaware
			}
			if err := m.kit.Register(t); err != nil {
				panic(err) // the list is fixed: a failure is this package's bug
			}
		}
		m.hs = &http.Server{Handler: m.kit}
		m.tr = l.Transport()
		m.client = &http.Client{Transport: m.tr}
		m.wg.Go(func() { m.hs.Serve(l) })
	})
}

// close stops the server, if it started, and waits for its handlers
// until ctx ends. A commit in progress ignores every deadline, as a late
// write does: when it outlasts ctx, close returns ctx's cause and leaves
// it to the kit, which records it when it ends, or to the process's exit,
// rather than hold up the run that closes its tools past its own
// deadline.
func (m *memServer) close(ctx context.Context) error {
	var err error
	m.closeOnce.Do(func() {
		m.startOnce.Do(func() {}) // never started: nothing to stop, and now nothing will start
		if m.hs == nil {
			return
		}
		m.hs.Close() // its Serve returns at once; the handlers are the kit's
		m.wg.Wait()
		err = m.kit.Shutdown(ctx)
		m.tr.CloseIdleConnections()
	})
	return err
}

// unawareFor is how long flaky_fetch's first attempt goes on after its
// deadline: an upstream that does not notice its caller has gone, so that
// the caller's lease cuts it and its cancel endpoint is what stops it.
const unawareFor = 300 * time.Millisecond

// unaware is the server's fetch, but its first attempt of each call hangs
// past its deadline rather than to it.
func unaware(ctx context.Context, call *kit.Call) (any, error) {
	if call.Attempt == 1 {
		deadline, _ := ctx.Deadline()
		time.Sleep(time.Until(deadline) + unawareFor)
		return nil, &kit.Error{Message: "fetch: the upstream never answered", Retryable: true}
	}
	return remoteFetch(ctx, call)
}

// memRemote is a remote tool of the in-memory server: the tools package's
// own HTTP tool (its POST, its cancel DELETE, its status GET), reached
// through a pipe.
type memRemote struct {
	spec tools.Spec
	name string // the tool's name on the server, whatever the entry calls it
	m    *memServer

	once   sync.Once
	remote tools.Tool
}

func (r *memRemote) tool() tools.Tool {
	r.once.Do(func() {
		r.m.start()
		spec := r.spec
		spec.Name = r.name
		r.remote = tools.Remote(spec, memBase, r.m.client)
	})
	return r.remote
}

func (r *memRemote) Spec() tools.Spec { return r.spec }

func (r *memRemote) Attempt(ctx context.Context, call *tools.Call) tools.Answer {
	return r.tool().Attempt(ctx, call)
}

// Cancel is the remote tool's DELETE of the call.
func (r *memRemote) Cancel(ctx context.Context, key cancel.Key) error {
	return r.tool().(cancel.Canceller).Cancel(ctx, key)
}

// Status is the remote tool's GET of the call.
func (r *memRemote) Status(ctx context.Context, key cancel.Key) (cancel.Status, error) {
	return r.tool().(cancel.StatusReader).Status(ctx, key)
}

// Close stops the in-memory server, which the demo's remote tools share,
// waiting for its handlers until ctx ends.
func (r *memRemote) Close(ctx context.Context) error {
	if err := r.m.close(ctx); err != nil {
		return fmt.Errorf("demo: the in-memory tool server: %w", err)
	}
	return nil
}

// remoteBuiltins returns the in-memory remote tools of the demo, sharing
// one server: flaky_fetch, the server's fetch, whose first attempt of each
// call hangs past its deadline, so that it is cut, cancelled and retried;
// and late_commit, the server's commit, a write that commits 1.5s after it
// starts. late_commit declares a p50 of 300ms, what it usually takes, so
// that an entry may give it a ceiling below its late 1.5s: then its attempt
// is cut before it commits, and the run reconciles it by its key rather
// than send it again.
func remoteBuiltins() map[string]tools.Tool {
	m := &memServer{}
	specs := map[string]tools.Spec{}
	for _, t := range serverTools(ServerConfig{}) {
		specs[t.Name] = tools.Spec{Name: t.Name, Description: t.Description, Parameters: t.Parameters,
			Effect: tools.Effect(t.Effect), Cancellable: t.Cancellable, NotCancellable: !t.Cancellable, P50: t.P50, P95: t.P95}
	}
	commit := specs["commit"]
	commit.P50, commit.P95 = 300*time.Millisecond, 2*time.Second
	return map[string]tools.Tool{
		"flaky_fetch": &memRemote{spec: specs["fetch"], name: "fetch", m: m},
		"late_commit": &memRemote{spec: commit, name: "commit", m: m},
	}
}
