package cancel_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
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
