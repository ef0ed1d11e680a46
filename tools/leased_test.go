package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

// An attempt made away from a Registry runs on its lease, hears the
// tool's progress through Heard, and is read as a Registry reads it.
func TestAnAttemptOnALeaseIsMadeAndReadAsTheRegistrysAre(t *testing.T) {
	cases := []struct {
		name    string
		lease   time.Duration
		capped  bool
		fn      tools.Fn
		wantAt  time.Duration
		want    trace.Outcome
		wantCut bool
		wantWhy error
	}{
		{
			name: "a tool that answers in time succeeds with its output", lease: time.Second,
			fn: func(_ context.Context, _ json.RawMessage, p tools.Progress) (any, error) {
				p.Report(1, 2, "half")
				return map[string]int{"n": 1}, nil
			},
			want: trace.OK,
		},
		{
			name: "a tool its capped lease cuts gives up when the lease ends, for the tool's ceiling", lease: 300 * time.Millisecond, capped: true,
			fn: func(ctx context.Context, _ json.RawMessage, _ tools.Progress) (any, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			},
			wantAt: 300 * time.Millisecond, want: trace.GaveUp, wantCut: true, wantWhy: budget.ErrLeaseExpired,
		},
		{
			name: "a tool the run's time cuts gives up when the lease ends, for the run's deadline", lease: 200 * time.Millisecond,
			fn: func(ctx context.Context, _ json.RawMessage, _ tools.Progress) (any, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			},
			wantAt: 200 * time.Millisecond, want: trace.GaveUp, wantCut: true, wantWhy: budget.ErrDeadline,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				lease := budget.Lease{Granted: tc.lease, Remaining: tc.lease, Deadline: start.Add(tc.lease), Capped: tc.capped}
				var heard []trace.Signal
				call := &tools.Call{Key: "k1", Args: json.RawMessage(`{}`), N: 1, Heard: func(s trace.Signal) { heard = append(heard, s) }}
				end := tools.AttemptOnLease(t.Context(), lease, tools.Func(tools.Spec{Name: "work", Effect: tools.Read}, tc.fn), call)

				if got := time.Since(start); got != tc.wantAt {
					t.Errorf("ended after %v, want %v", got, tc.wantAt)
				}
				if call.Lease != lease {
					t.Errorf("the call's lease is %+v, want the attempt's %+v", call.Lease, lease)
				}
				got := trace.OK
				if end.Err != nil {
					got = end.Err.Outcome
				}
				if got != tc.want {
					t.Errorf("outcome %q (err %v), want %q", got, end.Err, tc.want)
				}
				if end.Cut != tc.wantCut || !errors.Is(end.Why, tc.wantWhy) {
					t.Errorf("cut %v, why %v; want %v, %v", end.Cut, end.Why, tc.wantCut, tc.wantWhy)
				}
				if tc.want == trace.OK {
					if string(end.Answer.Output) != `{"n":1}` {
						t.Errorf("output %s, want {\"n\":1}", end.Answer.Output)
					}
					if len(heard) != 1 || heard[0].Event != watchdog.Progress || heard[0].Key != "k1" || heard[0].Units != 1 {
						t.Errorf("heard %+v, want one progress of 1 unit for k1", heard)
					}
				}
			})
		})
	}
}
