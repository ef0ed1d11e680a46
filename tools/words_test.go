package tools_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

// sink is a tool that never answers: each attempt ends when its context
// does. Cancel, when the sink can be cancelled, answers cancelErr, after
// release is closed if it is not nil.
type sink struct {
	spec      tools.Spec
	cancelErr error
	release   chan struct{}
}

func (s *sink) Spec() tools.Spec { return s.spec }

func (s *sink) Attempt(ctx context.Context, _ *tools.Call) tools.Answer {
	<-ctx.Done()
	return tools.Answer{Err: context.Cause(ctx)}
}

// cancellableSink is a sink whose calls can be cancelled.
type cancellableSink struct{ sink }

func (s *cancellableSink) Cancel(ctx context.Context, _ cancel.Key) error {
	if s.release != nil {
		select {
		case <-s.release:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return s.cancelErr
}

// heard is what a call's observer heard, as the trace records it.
type heard struct {
	mu      sync.Mutex
	ends    []trace.Attempt
	settled []trace.CancelState
}

func (h *heard) observer() *trace.Observer {
	return &trace.Observer{
		AttemptEnd: func(a trace.Attempt) { h.mu.Lock(); h.ends = append(h.ends, a); h.mu.Unlock() },
		CancelSettled: func(_, _ string, s trace.CancelState, _ error) {
			h.mu.Lock()
			h.settled = append(h.settled, s)
			h.mu.Unlock()
		},
	}
}

func (h *heard) states() []trace.CancelState {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]trace.CancelState(nil), h.settled...)
}

func call(t *testing.T, ctx context.Context, tool tools.Tool, total time.Duration, run *tools.Run) tools.Result {
	t.Helper()
	reg := tools.NewRegistry(nil)
	if err := reg.Register(tool); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Wait)
	b, err := budget.New(budget.Config{Total: total})
	if err != nil {
		t.Fatal(err)
	}
	run.Budget = b
	return reg.Call(ctx, run, tool.Spec().Name, nil)
}

func TestAGivenUpCallSaysWhatEndedItAsItsLeaseSays(t *testing.T) {
	cases := []struct {
		name    string
		ceiling time.Duration
		total   time.Duration
		end     error // the run's context ends with this cause after 100ms; nil: it does not end
		want    string
		cause   error // what the trace's attempt_end must say ended it
	}{
		// Issue 18: on a 1,000,000h budget the 800ms ceiling, not the
		// run's time, ended the call.
		{"its ceiling", 800 * time.Millisecond, 1_000_000 * time.Hour, nil,
			"search: no answer within its ceiling of 800ms", budget.ErrLeaseExpired},
		{"the run's time for work", time.Hour, 2 * time.Second, nil,
			"search: stopped: the run's time for work ran out", budget.ErrDeadline},
		{"the quiet clock", time.Hour, time.Hour, watchdog.ErrQuiet,
			"search: stopped: the run stalled (its quiet clock ran out)", watchdog.ErrQuiet},
		{"a cancel of the run", time.Hour, time.Hour, errors.New("interrupted"),
			"search: stopped: the run was cancelled", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, stop := context.WithCancelCause(t.Context())
				defer stop(nil)
				if tc.end != nil {
					time.AfterFunc(100*time.Millisecond, func() { stop(tc.end) })
				}
				var h heard
				tool := &sink{spec: tools.Spec{Name: "search", Effect: tools.Read, Ceiling: tc.ceiling, MaxAttempts: 1}}
				res := call(t, ctx, tool, tc.total, &tools.Run{Observer: h.observer()})
				if !strings.HasPrefix(res.Err, tc.want) {
					t.Errorf("the model reads %q, want it to begin %q", res.Err, tc.want)
				}
				if len(h.ends) != 1 {
					t.Fatalf("%d attempt_end records, want 1", len(h.ends))
				}
				if tc.cause != nil && !errors.Is(h.ends[0].Err, tc.cause) {
					t.Errorf("the trace says %v ended it; the words say %q", h.ends[0].Err, res.Err)
				}
			})
		})
	}
}

func TestAToolThatAnswersItsDeadlinePassedIsToldItsOwnCeiling(t *testing.T) {
	// A kit tool answers "deadline_exceeded" when the Budget-Remaining-Ms
	// it was sent runs out, a moment before our lease does; the words
	// said "the run's time for work ran out" on a budget of 1,000,000h.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusGatewayTimeout)
		w.Write([]byte(`{"error":{"code":"` + tools.CodeDeadline + `","message":"kit: tool fetch ended: budget: run deadline reached"}}`))
	}))
	defer srv.Close()
	spec := tools.Spec{Name: "fetch", Effect: tools.Read, Ceiling: 800 * time.Millisecond, MaxAttempts: 1}
	var h heard
	res := call(t, t.Context(), tools.Remote(spec, srv.URL, srv.Client()), 1_000_000*time.Hour, &tools.Run{Observer: h.observer()})
	if want := "fetch: no answer within its ceiling of 800ms"; !strings.HasPrefix(res.Err, want) {
		t.Errorf("the model reads %q, want it to begin %q", res.Err, want)
	}
	if len(h.ends) != 1 || h.ends[0].Outcome != trace.GaveUp || !h.ends[0].Lease.Capped {
		t.Errorf("attempt_end %+v: want one gave_up attempt on a lease its ceiling capped", h.ends)
	}
	if len(h.ends) == 1 && (!errors.Is(h.ends[0].Err, budget.ErrLeaseExpired) || !strings.Contains(h.ends[0].Err.Error(), "the tool said: kit:")) {
		t.Errorf("attempt_end says %q: want our lease's cause first, then what the tool said", h.ends[0].Err)
	}
}

func TestTheCancelWordsFollowHowTheCancelSettled(t *testing.T) {
	cases := []struct {
		name        string
		tool        tools.Tool
		wantState   tools.State
		wantWords   string
		wantSettled []trace.CancelState
	}{
		{"accepted is cancelled", &cancellableSink{}, tools.StateCancelled,
			"; it was cancelled", []trace.CancelState{trace.CancelStateAccepted}},
		{"unknown is a call the tool did not know", &cancellableSink{sink{cancelErr: cancel.ErrUnknownCall}}, tools.StateAbandoned,
			"; a cancel was sent, and the tool did not know the call", []trace.CancelState{trace.CancelStateUnknown}},
		{"failed is a cancel that failed", &cancellableSink{sink{cancelErr: errors.New("boom")}}, tools.StateAbandoned,
			"; its cancel failed, so it may still be running", []trace.CancelState{trace.CancelStateFailed}},
		{"no cancel at all", &sink{}, tools.StateAbandoned,
			"; it could not be cancelled and may still be running", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				spec := tools.Spec{Name: "search", Effect: tools.Read, Ceiling: time.Second, MaxAttempts: 1}
				switch s := tc.tool.(type) {
				case *sink:
					s.spec = spec
				case *cancellableSink:
					s.spec = spec
				}
				var h heard
				res := call(t, t.Context(), tc.tool, time.Minute, &tools.Run{Observer: h.observer()})
				if res.State != tc.wantState || !strings.HasSuffix(res.Err, tc.wantWords) {
					t.Errorf("state %q, words %q; want state %q, words ending %q", res.State, res.Err, tc.wantState, tc.wantWords)
				}
				if got := h.states(); !slices.Equal(got, tc.wantSettled) {
					t.Errorf("the trace's cancel answers %q, want %q for words %q", got, tc.wantSettled, res.Err)
				}
			})
		})
	}
}

func TestACancelAnsweredAfterTheMessageLeavesWordsThatSaidWhatWasKnown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		tool := &cancellableSink{sink{spec: tools.Spec{Name: "search", Effect: tools.Read, Ceiling: time.Second, MaxAttempts: 1},
			release: release}}
		var h heard
		group := &cancel.Group{}
		res := call(t, t.Context(), tool, time.Minute, &tools.Run{Observer: h.observer(), Cancels: group})
		want := "; a cancel was sent, with no answer yet, so it may still be running"
		if res.State != tools.StateAbandoned || !res.Cancelling || !strings.HasSuffix(res.Err, want) {
			t.Errorf("state %q cancelling %v, words %q; want abandoned, cancelling, words ending %q", res.State, res.Cancelling, res.Err, want)
		}
		if got := h.states(); len(got) != 0 {
			t.Errorf("the trace has the cancel answered %q before the words were written", got)
		}
		close(release)
		if err := group.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := h.states(); !slices.Equal(got, []trace.CancelState{trace.CancelStateAccepted}) {
			t.Errorf("the trace's cancel answers %q, want it accepted once answered", got)
		}
	})
}
