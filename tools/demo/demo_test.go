package demo_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/demo"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

func TestEachDemoToolAnswersInItsUsualTime(t *testing.T) {
	cases := []struct {
		name, args string
		took       time.Duration
		want       string
		heartbeats int
	}{
		{"search", `{"query":"deadline budget"}`, 80 * time.Millisecond, "https://index.example/deadline-budget/1", 0},
		{"fetch", `{"url":"https://index.example/x"}`, 300 * time.Millisecond, "leased from what remains", 0},
		{"deep_research", `{"topic":"deadlines"}`, 2 * time.Second, "Deadlines compose", 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				reg := tools.NewRegistry(nil)
				if err := reg.Register(demo.Builtins()[tc.name]); err != nil {
					t.Fatal(err)
				}
				b, err := budget.New(budget.Config{Total: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				var beats atomic.Int32
				run := &tools.Run{Budget: b, Observer: &trace.Observer{Signal: func(s trace.Signal) {
					if s.Event == watchdog.Progress {
						beats.Add(1)
					}
				}}}
				start := time.Now()
				res := reg.Call(t.Context(), run, tc.name, json.RawMessage(tc.args))
				if res.Err != "" || !strings.Contains(string(res.Output), tc.want) {
					t.Fatalf("result %+v", res)
				}
				if got := time.Since(start); got != tc.took {
					t.Errorf("took %v, want %v", got, tc.took)
				}
				if beats.Load() != int32(tc.heartbeats) {
					t.Errorf("%d heartbeats, want %d", beats.Load(), tc.heartbeats)
				}
			})
		})
	}
}

func TestADemoToolStopsWhenTheRunIsCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := tools.NewRegistry(nil)
		if err := reg.Register(demo.Builtins()["deep_research"]); err != nil {
			t.Fatal(err)
		}
		b, err := budget.New(budget.Config{Total: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		stopped := errors.New("stopped by the test")
		ctx, cancel := context.WithCancelCause(t.Context())
		time.AfterFunc(900*time.Millisecond, func() { cancel(stopped) })
		var beats atomic.Int32
		run := &tools.Run{Budget: b, Observer: &trace.Observer{Signal: func(s trace.Signal) {
			if s.Event == watchdog.Progress {
				beats.Add(1)
			}
		}}}
		start := time.Now()
		res := reg.Call(ctx, run, "deep_research", json.RawMessage(`{"topic":"x"}`))
		if got := time.Since(start); got != 900*time.Millisecond {
			t.Errorf("returned after %v, want 900ms", got)
		}
		if res.Err == "" || res.State != tools.StateCancelled || beats.Load() != 1 {
			t.Errorf("result %+v after %d heartbeats; want cancelled after one", res, beats.Load())
		}
		reg.Wait()
	})
}

// The remote builtins speak SPEC §5 over in-memory connections: a cut
// fetch is cancelled at its endpoint and retried with the same key; a
// late commit is reconciled by its key and committed once.
func TestTheRemoteBuiltinsCancelAndReconcileOverHTTP(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		builtins := demo.Builtins()
		cfg, err := tools.ParseConfig("demo.yaml", []byte(`tools:
  - name: fetch
    builtin: flaky_fetch
    ceiling: 1s
  - name: pay
    builtin: late_commit
    ceiling: 500ms
`), builtins)
		if err != nil {
			t.Fatal(err)
		}
		reg := tools.NewRegistry(nil)
		for _, tool := range cfg.Tools(nil) {
			if err := reg.Register(tool); err != nil {
				t.Fatal(err)
			}
		}
		b, err := budget.New(budget.Config{Total: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		var cancels []trace.CancelState
		var reconciled []string
		run := &tools.Run{Budget: b, Backoff: budget.Backoff{Base: 100 * time.Millisecond}, Observer: &trace.Observer{
			CancelSettled: func(_, _ string, st trace.CancelState, _ error) { cancels = append(cancels, st) },
			Reconcile:     func(_, _, state string, _ int, _ error) { reconciled = append(reconciled, state) },
		}}

		fetched := reg.Call(t.Context(), run, "fetch", json.RawMessage(`{"url":"https://a.example"}`))
		paid := reg.Call(t.Context(), run, "pay", json.RawMessage(`{"id":"inv-42","amount":5}`))
		if err := reg.Close(t.Context()); err != nil {
			t.Fatal(err)
		}

		if fetched.Err != "" || fetched.Attempts != 2 || !strings.Contains(string(fetched.Output), `"attempt":2`) {
			t.Errorf("fetch %+v, want the second attempt's answer", fetched)
		}
		if len(cancels) != 1 || cancels[0] != trace.CancelStateAccepted {
			t.Errorf("cancels %v, want the cut fetch's, accepted", cancels)
		}
		if paid.Err != "" || paid.Attempts != 1 || !strings.Contains(string(paid.Output), `"commit":1`) {
			t.Errorf("pay %+v, want one POST, its late commit found by its key", paid)
		}
		if len(reconciled) != 1 || reconciled[0] != "done" {
			t.Errorf("reconciled %v, want done", reconciled)
		}
	})
}
