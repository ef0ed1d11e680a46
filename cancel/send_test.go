package cancel_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
)

func TestSendRunsOnItsOwnLeaseAfterTheCallersContextEnded(t *testing.T) {
	cases := []struct {
		name      string
		total     time.Duration
		spent     time.Duration // slept before Send
		answer    answer
		wantAfter time.Duration
		wantSent  bool
		wantIs    []error // nil: Send returns nil
	}{
		{
			name:     "an accepted cancel returns at once",
			total:    time.Minute,
			answer:   answer{code: 202},
			wantSent: true,
		},
		{
			name:      "a hung cancel endpoint costs CancelLease, no more",
			total:     time.Minute,
			answer:    hang,
			wantAfter: cancel.CancelLease,
			wantSent:  true,
			wantIs:    []error{cancel.ErrUnreachable, budget.ErrLeaseExpired},
		},
		{
			// 10s total, 9s spent: remaining 1s − floor 50ms.
			name:      "a cancel near the deadline may spend the reserve, up to the floor",
			total:     10 * time.Second,
			spent:     9 * time.Second,
			answer:    hang,
			wantAfter: 950 * time.Millisecond,
			wantSent:  true,
			wantIs:    []error{cancel.ErrUnreachable, budget.ErrDeadline},
		},
		{
			name:   "with no time left nothing is sent",
			total:  10 * time.Second,
			spent:  10 * time.Second,
			answer: answer{code: 202},
			wantIs: []error{budget.ErrRefused},
		},
		{
			name:     "a call the tool does not know is reported",
			total:    time.Minute,
			answer:   unknown,
			wantSent: true,
			wantIs:   []error{cancel.ErrUnknownCall},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBudget(t, tc.total)
				time.Sleep(tc.spent)
				tool := &toolServer{answers: []answer{tc.answer}}
				e := cancel.Endpoint{URL: "http://tool.test", Tool: "pay", Client: inMemoryClient(tool)}
				// The call's context has ended: that is why it is being cancelled.
				ctx, stop := context.WithCancel(t.Context())
				stop()

				start := time.Now()
				err := cancel.Send(ctx, b, e, key)
				if got := time.Since(start); got != tc.wantAfter {
					t.Errorf("Send returned after %v, want %v", got, tc.wantAfter)
				}
				var want []string
				if tc.wantSent {
					want = []string{"DELETE /tools/pay/calls/gp_testkey"}
				}
				if got := tool.seen(); !slices.Equal(got, want) {
					t.Errorf("tool saw %q, want %q", got, want)
				}
				if tc.wantIs == nil && err != nil {
					t.Errorf("Send = %v, want nil", err)
				}
				for _, target := range tc.wantIs {
					if !errors.Is(err, target) {
						t.Errorf("Send = %v, want it to match %v", err, target)
					}
				}
			})
		})
	}
}

func TestSendReachesARealServerWithACancelledContext(t *testing.T) {
	tool := &toolServer{answers: []answer{{code: 202}}}
	srv := httptest.NewServer(tool)
	defer srv.Close()
	ctx, stop := context.WithCancel(t.Context())
	stop()
	b := newBudget(t, time.Minute)
	if err := cancel.Send(ctx, b, cancel.Endpoint{URL: srv.URL, Tool: "pay"}, key); err != nil {
		t.Fatalf("Send = %v, want nil", err)
	}
	if want := []string{"DELETE /tools/pay/calls/gp_testkey"}; !slices.Equal(tool.seen(), want) {
		t.Errorf("server saw %q, want %q", tool.seen(), want)
	}
}

func TestAGroupSendsWithoutWaitingAndItsOwnerWaitsForTheAnswers(t *testing.T) {
	cases := []struct {
		name       string
		answers    []answer
		waitFor    time.Duration // Wait's bound, after Go
		wantWaited time.Duration
		wantDone   []bool // per cancel: done called with nil (accepted)
		wantErr    error  // from Wait
	}{
		{"accepted cancels are waited for until answered",
			[]answer{{code: 202}, {code: 202}}, time.Minute, 0, []bool{true, true}, nil},
		{"a hung endpoint is waited for until its lease ends",
			[]answer{hang}, time.Minute, cancel.CancelLease, []bool{false}, nil},
		{"a wait bounded before the lease ends returns at its bound",
			[]answer{hang}, 500 * time.Millisecond, 500 * time.Millisecond, nil, context.DeadlineExceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBudget(t, time.Minute)
				tool := &toolServer{answers: tc.answers}
				e := cancel.Endpoint{URL: "http://tool.test", Tool: "pay", Client: inMemoryClient(tool)}
				var g cancel.Group
				var mu sync.Mutex
				var done []bool

				start := time.Now()
				for range tc.answers {
					lease, err := g.Go(t.Context(), b, e, key, func(err error) {
						mu.Lock()
						done = append(done, err == nil)
						mu.Unlock()
					})
					if err != nil || lease.Granted != cancel.CancelLease {
						t.Fatalf("Go: lease %v, %v; want %v", lease.Granted, err, cancel.CancelLease)
					}
				}
				if got := time.Since(start); got != 0 {
					t.Errorf("Go took %v, want 0: sending is not waiting", got)
				}
				ctx, stop := context.WithTimeout(t.Context(), tc.waitFor)
				defer stop()
				err := g.Wait(ctx)
				if got := time.Since(start); got != tc.wantWaited || !errors.Is(err, tc.wantErr) {
					t.Errorf("Wait returned %v after %v, want %v after %v", err, got, tc.wantErr, tc.wantWaited)
				}
				mu.Lock()
				if !slices.Equal(done, tc.wantDone) {
					t.Errorf("done calls %v, want %v", done, tc.wantDone)
				}
				mu.Unlock()
				// The group's goroutines end with their leases, inside the bubble.
				if err := g.Wait(t.Context()); err != nil {
					t.Errorf("a second Wait: %v", err)
				}
			})
		})
	}
}

func TestAGroupSendsNothingWhenNoTimeIsLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBudget(t, time.Second)
		time.Sleep(time.Second)
		tool := &toolServer{answers: []answer{{code: 202}}}
		var g cancel.Group
		called := false
		_, err := g.Go(t.Context(), b, cancel.Endpoint{URL: "http://tool.test", Tool: "pay", Client: inMemoryClient(tool)}, key,
			func(error) { called = true })
		if !errors.Is(err, budget.ErrRefused) || called || len(tool.seen()) != 0 {
			t.Errorf("Go = %v, done called %v, tool saw %q; want refused, nothing sent", err, called, tool.seen())
		}
		if err := g.Wait(t.Context()); err != nil {
			t.Errorf("Wait with nothing out = %v", err)
		}
	})
}
