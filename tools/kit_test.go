package tools

import (
	"context"
	"encoding/json"
	"github.com/glidepath/glidepath/watchdog"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/glidepath/glidepath/tools/kit"
	"github.com/glidepath/glidepath/trace"
)

// End to end against the server kit, on loopback: the client here and the
// kit must agree on the protocol, not only each with its own reading of
// SPEC §5. Real sockets: order and outcome, generous bounds.

// kitServer serves tools built with the kit and counts each key's handler
// runs.
type kitServer struct {
	mu   sync.Mutex
	runs map[string]int // by Idempotency-Key
	srv  *kit.Server
	url  string
}

func startKit(t *testing.T, keepalive time.Duration) *kitServer {
	t.Helper()
	k := &kitServer{runs: make(map[string]int), srv: &kit.Server{KeepaliveEvery: keepalive}}
	hs := httptest.NewServer(k.srv)
	t.Cleanup(func() {
		hs.Close()
		k.srv.Close()
	})
	k.url = hs.URL
	return k
}

func (k *kitServer) register(t *testing.T, tool kit.Tool) {
	t.Helper()
	h := tool.Handler
	tool.Handler = func(ctx context.Context, c *kit.Call) (any, error) {
		k.mu.Lock()
		k.runs[c.Key]++
		k.mu.Unlock()
		return h(ctx, c)
	}
	if err := k.srv.Register(tool); err != nil {
		t.Fatal(err)
	}
}

func (k *kitServer) handlerRuns(key string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.runs[key]
}

func TestAgainstTheKit(t *testing.T) {
	k := startKit(t, 50*time.Millisecond)
	k.register(t, kit.Tool{Name: "fetch", Effect: kit.Read, Cancellable: true, P50: 10 * time.Millisecond, P95: 50 * time.Millisecond,
		Handler: func(ctx context.Context, c *kit.Call) (any, error) {
			if c.Attempt == 1 {
				<-ctx.Done() // hangs on the first attempt of each key
				return nil, context.Cause(ctx)
			}
			return "page", nil
		}})
	k.register(t, kit.Tool{Name: "commit", Effect: kit.Write,
		Handler: func(ctx context.Context, c *kit.Call) (any, error) {
			time.Sleep(600 * time.Millisecond) // commits late, ignoring its deadline
			return map[string]bool{"committed": true}, nil
		}})
	k.register(t, kit.Tool{Name: "long_job", Effect: kit.Read,
		Handler: func(ctx context.Context, c *kit.Call) (any, error) {
			for i := range int64(4) {
				c.Progress(i+1, 4, "working")
				time.Sleep(30 * time.Millisecond)
			}
			return "finished", nil
		}})
	// stuck ignores its deadline, so that the kit keeps the stream open
	// with keepalives until our lease ends; it returns when the test does.
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // before the kit's Close, which waits for it
	k.register(t, kit.Tool{Name: "stuck", Effect: kit.Read, Cancellable: true,
		Handler: func(ctx context.Context, c *kit.Call) (any, error) {
			<-release
			return nil, context.Cause(ctx)
		}})

	src := "tools:\n" +
		"  - {name: fetch, url: '" + k.url + "', ceiling: 300ms}\n" +
		"  - {name: commit, url: '" + k.url + "', ceiling: 200ms}\n" +
		"  - {name: long_job, url: '" + k.url + "'}\n" +
		"  - {name: stuck, url: '" + k.url + "', ceiling: 400ms, max_attempts: 1}\n"
	cfg, err := ParseConfig("kit.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Resolve(t.Context(), nil, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	reg := NewRegistry(nil)
	for _, tool := range cfg.Tools(nil) {
		if err := reg.Register(tool); err != nil {
			t.Fatal(err)
		}
	}
	specs := reg.Specs()
	if specs[0].Effect != Read || !specs[0].Cancellable || specs[0].P50 != 10*time.Millisecond || specs[1].Effect != Write {
		t.Fatalf("the manifest did not fill the specs: %+v", specs)
	}
	run := func(rec *recorder) *Run {
		return &Run{Budget: newBudget(t, time.Minute), Backoff: fastBackoff, Observer: rec.observer()}
	}

	t.Run("a read that hangs once is retried with the same key", func(t *testing.T) {
		// Our lease and the kit's deadline for the first attempt end at
		// nearly the same instant. When ours wins, the call is cancelled
		// and retried, and a retry that arrives while the kit's handler is
		// still ending follows it and gets its retryable failure: three
		// attempts. When the kit's wins, its retryable error is the answer:
		// two. Either way the handler runs twice for the one key.
		rec := newRecorder(t)
		res := reg.Call(t.Context(), run(rec), "fetch", nil)
		if res.Err != "" || string(res.Output) != `"page"` || res.Attempts < 2 {
			t.Fatalf("result %+v", res)
		}
		if n := k.handlerRuns(string(res.Key)); n != 2 {
			t.Errorf("the kit ran the handler %d times for the key, want 2", n)
		}
		for _, err := range rec.cancels {
			if err != nil {
				t.Errorf("cancel refused: %v", err)
			}
		}
		// Whichever deadline was seen first, ours or the kit's, it was our
		// lease that ended the first attempt: never "they failed".
		for _, a := range rec.ends[:len(rec.ends)-1] {
			if a.Outcome != trace.GaveUp {
				t.Errorf("attempt %d ended %s, want gave_up: our lease ended it", a.N, a.Outcome)
			}
		}
	})

	t.Run("a write that commits late is reconciled, not sent again", func(t *testing.T) {
		rec := newRecorder(t)
		res := reg.Call(t.Context(), run(rec), "commit", json.RawMessage(`{"amount":1}`))
		if res.Err != "" || !jsonEqual(res.Output, []byte(`{"committed":true}`)) || res.Attempts != 1 {
			t.Fatalf("result %+v", res)
		}
		if n := k.handlerRuns(string(res.Key)); n != 1 {
			t.Errorf("the kit ran the write %d times, want once", n)
		}
		if len(rec.reconciles) != 1 || rec.reconciles[0].asks < 2 || rec.reconciles[0].state != "done" {
			t.Errorf("reconciles %+v; want asks while it was running, then done", rec.reconciles)
		}
	})

	t.Run("a long job's heartbeats are progress", func(t *testing.T) {
		rec := newRecorder(t)
		res := reg.Call(t.Context(), run(rec), "long_job", nil)
		if res.Err != "" || string(res.Output) != `"finished"` {
			t.Fatalf("result %+v", res)
		}
		if n := rec.count(watchdog.Progress); n < 1 || rec.count(watchdog.StaleProgress) != 0 {
			t.Errorf("events %v; want heartbeats, none stale", rec.kinds())
		}
	})

	t.Run("keepalives alone are not progress, and the cut call is cancelled", func(t *testing.T) {
		rec := newRecorder(t)
		res := reg.Call(t.Context(), run(rec), "stuck", nil)
		if res.State != StateCancelled || res.Outcome != trace.GaveUp {
			t.Fatalf("result %+v", res)
		}
		if rec.count(watchdog.Keepalive) < 2 || rec.count(watchdog.Progress) != 0 || rec.ends[0].Keepalives < 2 {
			t.Errorf("events %v, attempt %+v; want keepalives only", rec.kinds(), rec.ends[0])
		}
	})
}

func TestTheDeadlineCodeIsTheKitsOwn(t *testing.T) {
	if CodeDeadline != kit.CodeDeadline {
		t.Errorf("tools says %q, the kit %q: one protocol, one word", CodeDeadline, kit.CodeDeadline)
	}
}
