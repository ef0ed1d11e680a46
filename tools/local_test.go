package tools

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/glidepath/glidepath/watchdog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/trace"
)

func TestALocalToolRunsOnItsLeaseAndReportsProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var deadline time.Time
		var got json.RawMessage
		tool := Func(Spec{Name: "count", Effect: Read, Ceiling: 3 * time.Second}, func(ctx context.Context, args json.RawMessage, p Progress) (any, error) {
			deadline, _ = ctx.Deadline()
			got = args
			for _, u := range []int64{1, 2, 2, 1, 3} {
				time.Sleep(100 * time.Millisecond)
				p.Report(u, 3, "step")
			}
			return map[string]int{"n": 3}, nil
		})
		reg := mustRegister(t, tool)
		rec := newRecorder(t)
		res := reg.Call(t.Context(), &Run{Budget: newBudget(t, time.Minute), Observer: rec.observer()}, "count", json.RawMessage(` { "a" : 1 } `))

		if res.Err != "" || string(res.Output) != `{"n":3}` || res.Outcome != trace.OK || res.Attempts != 1 {
			t.Fatalf("result %+v", res)
		}
		if want := start.Add(3 * time.Second); !deadline.Equal(want) {
			t.Errorf("the tool's context ends at +%v, want +3s, its ceiling", deadline.Sub(start))
		}
		if string(got) != `{"a":1}` {
			t.Errorf("the tool got %s, want the compacted arguments", got)
		}
		want := []watchdog.Event{watchdog.ToolCall, watchdog.Begun, watchdog.Progress, watchdog.Progress, watchdog.StaleProgress, watchdog.StaleProgress, watchdog.Progress, watchdog.ToolResult}
		if k := rec.kinds(); !slices.Equal(k, want) {
			t.Errorf("events %v, want %v", k, want)
		}
		if a := rec.ends[0]; a.Lease.Granted != 3*time.Second || a.End.Sub(a.Start) != 500*time.Millisecond || a.Key != string(res.Key) {
			t.Errorf("attempt %+v", a)
		}
		if e := rec.signals[2]; e.Units != 1 || e.Total != 3 || e.Message != "step" || e.Key != string(res.Key) || e.Step != "tool:count" {
			t.Errorf("heartbeat %+v", e)
		}
	})
}

func TestALocalToolThatIgnoresItsContextIsLeftBehindAtItsLeaseEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var late Progress
		tool := Func(Spec{Name: "stuck", Effect: Read, Ceiling: 2 * time.Second, MaxAttempts: 1}, func(ctx context.Context, _ json.RawMessage, p Progress) (any, error) {
			late = p
			time.Sleep(time.Hour)
			p.Report(99, 0, "too late")
			return "done", nil
		})
		reg := NewRegistry(nil)
		if err := reg.Register(tool); err != nil {
			t.Fatal(err)
		}
		rec := newRecorder(t)

		res := reg.Call(t.Context(), &Run{Budget: newBudget(t, time.Minute), Observer: rec.observer()}, "stuck", nil)

		if got := time.Since(start); got != 2*time.Second {
			t.Errorf("the call returned after %v, want 2s, its lease", got)
		}
		if res.State != StateCancelled || res.Outcome != trace.GaveUp || !errors.Is(res.Cause, budget.ErrLeaseExpired) {
			t.Errorf("result %+v", res)
		}
		reg.Wait()
		if got := time.Since(start); got != time.Hour {
			t.Errorf("Wait returned after %v, want 1h, when the function did", got)
		}
		if late == nil || rec.count(watchdog.Progress) != 0 {
			t.Errorf("a report after the attempt ended was heard: %v", rec.kinds())
		}
	})
}

func TestALocalReadCutByItsLeaseIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		var starts []time.Duration
		tool := Func(Spec{Name: "flaky", Effect: Read, Ceiling: time.Second}, func(ctx context.Context, _ json.RawMessage, _ Progress) (any, error) {
			mu.Lock()
			starts = append(starts, time.Since(start))
			n := len(starts)
			mu.Unlock()
			if n == 1 {
				<-ctx.Done()
				return nil, context.Cause(ctx)
			}
			return "ok", nil
		})
		reg := mustRegister(t, tool)
		rec := newRecorder(t)
		bo := budget.Backoff{Base: 400 * time.Millisecond, Rand: func(n int64) int64 { return n - 1 }} // the ceiling of the jitter: 400ms
		res := reg.Call(t.Context(), &Run{Budget: newBudget(t, time.Minute), Backoff: bo, Observer: rec.observer()}, "flaky", nil)

		if res.Err != "" || res.Attempts != 2 || res.State != "" {
			t.Fatalf("result %+v", res)
		}
		reg.Wait()
		if want := []time.Duration{0, 1400 * time.Millisecond}; !slices.Equal(starts, want) {
			t.Errorf("attempts started at %v, want %v: a 1s lease, then a 400ms backoff", starts, want)
		}
		if len(rec.backoffs) != 1 || rec.backoffs[0].Sleep != 400*time.Millisecond {
			t.Errorf("backoffs %+v", rec.backoffs)
		}
		if rec.ends[0].Outcome != trace.GaveUp || rec.ends[1].Outcome != trace.OK {
			t.Errorf("outcomes %s, %s", rec.ends[0].Outcome, rec.ends[1].Outcome)
		}
	})
}

func TestALocalWriteCutByItsLeaseIsAnOrphanNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		tool := Func(Spec{Name: "save", Effect: Write, Ceiling: time.Second}, func(ctx context.Context, _ json.RawMessage, _ Progress) (any, error) {
			calls.Add(1)
			<-ctx.Done()
			return nil, ctx.Err()
		})
		reg := mustRegister(t, tool)
		res := reg.Call(t.Context(), &Run{Budget: newBudget(t, time.Minute)}, "save", nil)
		reg.Wait()
		// Its context ended, but whether it saved is unknown, and a local
		// function has no status to ask.
		if calls.Load() != 1 || res.State != StateOrphaned || res.Outcome != trace.GaveUp || !errors.Is(res.Cause, ErrOrphaned) {
			t.Errorf("%d calls, result %+v", calls.Load(), res)
		}
	})
}

func TestTheRunContextNamesTheOutcomeOfACutCall(t *testing.T) {
	cases := []struct {
		name string
		end  func(context.Context) (context.Context, func())
		want trace.Outcome
	}{
		{"the quiet clock", cancelAfter(&watchdog.StallError{Quiet: time.Minute}), trace.Quiet},
		{"a cancellation", cancelAfter(errors.New("ctrl-c")), trace.Cancelled},
		{"the wall", func(ctx context.Context) (context.Context, func()) {
			return context.WithTimeoutCause(ctx, time.Second, errors.New("watchdog: wall reached"))
		}, trace.GaveUp},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				tool := Func(Spec{Name: "wait", Effect: Read}, func(ctx context.Context, _ json.RawMessage, _ Progress) (any, error) {
					<-ctx.Done()
					return nil, ctx.Err()
				})
				reg := mustRegister(t, tool)
				ctx, stop := tc.end(t.Context())
				defer stop()
				res := reg.Call(ctx, &Run{Budget: newBudget(t, time.Minute)}, "wait", nil)
				if res.Outcome != tc.want || res.State != StateCancelled || res.Attempts != 1 {
					t.Errorf("result %+v, want outcome %s", res, tc.want)
				}
				if got := time.Since(start); got != time.Second {
					t.Errorf("returned after %v, want 1s", got)
				}
				again := reg.Call(ctx, &Run{Budget: newBudget(t, time.Minute)}, "wait", nil)
				if again.Attempts != 0 || again.Outcome != tc.want || again.Err != "not started: the run has ended" {
					t.Errorf("a call after the run ended: %+v", again)
				}
			})
		})
	}
}

// cancelAfter ends the context after a second with cause.
func cancelAfter(cause error) func(context.Context) (context.Context, func()) {
	return func(ctx context.Context) (context.Context, func()) {
		ctx, stop := context.WithCancelCause(ctx)
		timer := time.AfterFunc(time.Second, func() { stop(cause) })
		return ctx, func() { timer.Stop(); stop(nil) }
	}
}

func TestALocalToolsFailureIsShownToTheModel(t *testing.T) {
	cases := []struct {
		name    string
		fn      Fn
		want    trace.Outcome
		wantErr string
		wantOut string
	}{
		{"an error", func(context.Context, json.RawMessage, Progress) (any, error) {
			return nil, errors.New("no such city")
		}, trace.UpstreamError, "weather failed: no such city", ""},
		{"a panic", func(context.Context, json.RawMessage, Progress) (any, error) {
			panic("boom")
		}, trace.UpstreamError, "weather failed: tools: panic: boom", ""},
		{"raw JSON is kept", func(context.Context, json.RawMessage, Progress) (any, error) {
			return json.RawMessage(`{"t": 21}`), nil
		}, trace.OK, "", `{"t": 21}`},
		{"raw bytes that are not JSON", func(context.Context, json.RawMessage, Progress) (any, error) {
			return json.RawMessage(`{`), nil
		}, trace.Invalid, "not JSON", ""},
		{"a value JSON cannot hold", func(context.Context, json.RawMessage, Progress) (any, error) {
			return make(chan int), nil
		}, trace.Invalid, "cannot be encoded", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := mustRegister(t, Func(Spec{Name: "weather", Effect: Read}, tc.fn))
			res := reg.Call(t.Context(), &Run{Budget: newBudget(t, time.Minute)}, "weather", nil)
			if res.Outcome != tc.want || res.Attempts != 1 {
				t.Errorf("result %+v, want outcome %s after one attempt", res, tc.want)
			}
			if !strings.Contains(res.Err, tc.wantErr) {
				t.Errorf("Err %q, want it to contain %q", res.Err, tc.wantErr)
			}
			if string(res.Output) != tc.wantOut {
				t.Errorf("output %s, want %s", res.Output, tc.wantOut)
			}
		})
	}
}

func TestAPanicKeepsItsStack(t *testing.T) {
	reg := mustRegister(t, Func(Spec{Name: "bad"}, func(context.Context, json.RawMessage, Progress) (any, error) {
		var m map[string]int
		m["x"] = 1 // panics
		return nil, nil
	}))
	res := reg.Call(t.Context(), &Run{Budget: newBudget(t, time.Minute)}, "bad", nil)
	pe, ok := errors.AsType[*PanicError](res.Cause)
	if !ok {
		t.Fatalf("cause %v is not a panic", res.Cause)
	}
	if !strings.Contains(string(pe.Stack), "TestAPanicKeepsItsStack") {
		t.Errorf("stack does not show where it panicked:\n%s", pe.Stack)
	}
}
