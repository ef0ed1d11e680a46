package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
)

// queue is a tool kind written outside package tools, as an embedder or a
// later package writes one: jobs on a queue that it can cancel by key and
// ask about by key. A job never answers within its attempt; it finishes
// in the background after work, unless it is cancelled first.
type queue struct {
	spec tools.Spec
	work time.Duration

	mu        sync.Mutex
	jobs      map[cancel.Key]*job
	cancelled []cancel.Key
	closed    bool
}

type job struct {
	done, cancelled bool
	timer           *time.Timer
}

func (q *queue) Spec() tools.Spec { return q.spec }

func (q *queue) Attempt(ctx context.Context, call *tools.Call) tools.Answer {
	q.mu.Lock()
	if _, ok := q.jobs[call.Key]; !ok {
		j := &job{}
		j.timer = time.AfterFunc(q.work, func() {
			q.mu.Lock()
			defer q.mu.Unlock()
			j.done = !j.cancelled
		})
		q.jobs[call.Key] = j
	}
	q.mu.Unlock()
	call.Progress(1, 2, "queued")
	<-ctx.Done()
	return tools.Answer{Err: context.Cause(ctx)}
}

func (q *queue) Cancel(ctx context.Context, key cancel.Key) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	j, ok := q.jobs[key]
	if !ok {
		return cancel.ErrUnknownCall
	}
	j.cancelled = true
	j.timer.Stop()
	q.cancelled = append(q.cancelled, key)
	return nil
}

func (q *queue) Status(ctx context.Context, key cancel.Key) (cancel.Status, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	j, ok := q.jobs[key]
	switch {
	case !ok:
		return cancel.Status{State: cancel.NeverReceived}, nil
	case j.done:
		return cancel.Status{State: cancel.Done, Output: json.RawMessage(`"job done"`)}, nil
	case j.cancelled:
		return cancel.Status{State: cancel.Failed}, nil
	}
	return cancel.Status{State: cancel.Running}, nil
}

func (q *queue) Close(ctx context.Context) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	for _, j := range q.jobs {
		j.timer.Stop()
	}
	return nil
}

// blind is a write kind with no way to be asked how a call went.
type blind struct{ spec tools.Spec }

func (b blind) Spec() tools.Spec { return b.spec }

func (b blind) Attempt(ctx context.Context, _ *tools.Call) tools.Answer {
	<-ctx.Done()
	return tools.Answer{Err: context.Cause(ctx)}
}

func TestAToolKindFromAnotherPackageRunsOnItsCapabilities(t *testing.T) {
	cases := []struct {
		name           string
		notCancellable bool
		work           time.Duration // how long the job takes in the background
		wantState      tools.State
		wantOutput     string
		wantCancels    int
	}{
		// Cut at 1s, the job done at 1.5s: reconciliation asks until it is.
		{"a cut write that finishes is reconciled, not sent again", true, 1500 * time.Millisecond, "", `"job done"`, 0},
		// Cut at 1s and cancelled then, though its spec never said
		// Cancellable: its type can cancel. Its status says failed.
		{"a cut write is cancelled by key, then its status read", false, time.Hour, "", "", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := &queue{spec: tools.Spec{Name: "enqueue", Kind: "queue:enqueue", Effect: tools.Write, Ceiling: time.Second,
					NotCancellable: tc.notCancellable}, work: tc.work, jobs: map[cancel.Key]*job{}}
				reg := tools.NewRegistry(nil)
				if err := reg.Register(q); err != nil {
					t.Fatal(err)
				}
				b, err := budget.New(budget.Config{Total: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				var steps []string
				// Signal runs on the tool's own goroutine too, for its
				// progress (trace.Observer), so the count is atomic.
				var signals atomic.Int64
				obs := &trace.Observer{
					AttemptStart: func(a trace.Attempt) { steps = append(steps, a.Step) },
					Signal:       func(s trace.Signal) { signals.Add(1) },
					Reconcile:    func(step, _, state string, _ int, _ error) { steps = append(steps, step+" "+state) },
				}

				res := reg.Call(t.Context(), &tools.Run{Budget: b, Observer: obs, Backoff: budget.Backoff{Base: 100 * time.Millisecond}}, "enqueue", nil)

				if res.State != tc.wantState || string(res.Output) != tc.wantOutput || res.Attempts != 1 {
					t.Errorf("result %+v, want state %q and output %s", res, tc.wantState, tc.wantOutput)
				}
				if len(q.cancelled) != tc.wantCancels {
					t.Errorf("%d cancels, want %d", len(q.cancelled), tc.wantCancels)
				}
				if len(steps) < 2 || steps[0] != "queue:enqueue" || !slices.ContainsFunc(steps, func(s string) bool { return s == "queue:enqueue done" || s == "queue:enqueue failed" }) {
					t.Errorf("steps %q: want the tool's own step kind, one attempt and its reconciliation", steps)
				}
				if n := signals.Load(); n < 3 {
					t.Errorf("%d signals, want the call, its progress and its result", n)
				}
				if err := reg.Close(t.Context()); err != nil || !q.closed {
					t.Errorf("Close = %v, closed %v", err, q.closed)
				}
			})
		})
	}
}

func TestACutWriteOfAToolThatCannotBeAskedIsAnOrphan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := tools.NewRegistry(nil)
		if err := reg.Register(blind{tools.Spec{Name: "fire", Effect: tools.Write, Ceiling: time.Second}}); err != nil {
			t.Fatal(err)
		}
		b, err := budget.New(budget.Config{Total: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		res := reg.Call(t.Context(), &tools.Run{Budget: b}, "fire", nil)
		if res.State != tools.StateOrphaned || !errors.Is(res.Cause, tools.ErrOrphaned) || res.Attempts != 1 {
			t.Errorf("result %+v, want an orphan, never cancelled", res)
		}
	})
}
