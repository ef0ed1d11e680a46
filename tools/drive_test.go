package tools

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

// fakeEffects is a host that does no I/O: its attempts and status asks
// answer what the case gives them, in turn, and it keeps each effect
// DriveCall asks of it, in order.
type fakeEffects struct {
	figures  budget.Figures
	attempts []AttemptSaid
	asks     []fakeAsk
	asked    int
	did      []effect
}

// fakeAsk is what one status ask answers.
type fakeAsk struct {
	status cancel.Status
	err    error
}

// effect is one effect asked of a fakeEffects: what, its number (the
// attempt, the ask, or the asks made) and a note (a state, or why).
type effect struct {
	what string
	n    int
	note string
}

func (e effect) String() string {
	s := e.what
	if e.n > 0 {
		s += fmt.Sprint(" ", e.n)
	}
	if e.note != "" {
		s += ": " + e.note
	}
	return s
}

func (f *fakeEffects) do(what string, n int, note string) {
	f.did = append(f.did, effect{what, n, note})
}

func (f *fakeEffects) Figures(context.Context) budget.Figures { return f.figures }

func (f *fakeEffects) Attempt(_ context.Context, n int, _ budget.Lease) AttemptSaid {
	f.do("attempt", n, "")
	return f.attempts[n-1]
}

func (f *fakeEffects) Backoff(_ context.Context, cmd CallCommand) {
	what := "backoff"
	if cmd.Reconciling {
		what = "status backoff"
	}
	f.do(what, cmd.N, "")
}

func (f *fakeEffects) Ask(context.Context, budget.Lease) (cancel.Status, error) {
	f.asked++
	f.do("ask", f.asked, "")
	a := f.asks[f.asked-1]
	return a.status, a.err
}

func (f *fakeEffects) Cancel(context.Context, budget.Lease) { f.do("cancel", 0, "") }

func (f *fakeEffects) Cancelled() (bool, trace.CancelState) { return false, "" }

func (f *fakeEffects) Stopped(context.Context) (trace.Outcome, error) {
	return trace.Cancelled, context.Canceled
}

func (f *fakeEffects) Refused(_ context.Context, n int, _ *budget.RefusedError) {
	f.do("refused", n, "")
}

func (f *fakeEffects) Reconciled(_ context.Context, state string, asks int, why error) {
	if why != nil {
		state += ", " + why.Error()
	}
	f.do("reconciled", asks, state)
}

func (f *fakeEffects) Orphan(_ context.Context, why error) (*OrphanError, string) {
	f.do("orphan", 0, why.Error())
	return &OrphanError{}, "no orphan journal is configured"
}

func (f *fakeEffects) Succeeded() { f.do("succeeded", 0, "") }

func (f *fakeEffects) Begin(_ context.Context, call watchdog.Call) {
	note := ""
	if call.Allowance > 0 { // no formatting, so that driving allocates nothing
		note = call.Allowance.String() + " " + call.Source.String()
	}
	f.do("begin", 0, note)
}

func (f *fakeEffects) Heard(_ context.Context, e watchdog.Event) {
	heard := "tool result"
	if e == watchdog.ToolCall {
		heard = "tool call"
	}
	f.do("heard", 0, heard)
}

// The attempts and asks of the cases.
var (
	succeeds     = AttemptSaid{Attempted: Attempted{OK: true}, Output: []byte(`"ok"`)}
	unavailable  = AttemptSaid{Attempted: Attempted{Retry: true}, Last: &trace.AttemptError{Outcome: trace.UpstreamError}, Failure: "search failed: HTTP 503"}
	cut          = AttemptSaid{Attempted: Attempted{Cut: true}, Last: &trace.AttemptError{Outcome: trace.GaveUp}, Failure: "pay: no answer"}
	errNoStatus  = errors.New("status: connection refused")
	noBackoffRNG = budget.Backoff{Rand: func(int64) int64 { return 0 }}
)

func TestDriveCallAsksItsHostInOrder(t *testing.T) {
	read := CallRules{Kind: "tool:search", Effect: Read, Backoff: noBackoffRNG}
	write := CallRules{Kind: "tool:pay", Effect: Write, CanCancel: true, CanStatus: true, Backoff: noBackoffRNG}
	cases := []struct {
		name     string
		rules    CallRules
		figures  budget.Figures
		attempts []AttemptSaid
		asks     []fakeAsk
		want     []string
		outcome  trace.Outcome
		state    State
		output   string
	}{
		{
			name: "a plain success is one attempt between the tool call and its result", rules: read, figures: plenty(false),
			attempts: []AttemptSaid{succeeds},
			want:     []string{"heard: tool call", "begin", "attempt 1", "succeeded", "heard: tool result"},
			outcome:  trace.OK, output: `"ok"`,
		},
		{
			name: "a retryable failure sleeps its backoff and tries again", rules: read, figures: plenty(false),
			attempts: []AttemptSaid{unavailable, succeeds},
			want:     []string{"heard: tool call", "begin", "attempt 1", "backoff 1", "attempt 2", "succeeded", "heard: tool result"},
			outcome:  trace.OK, output: `"ok"`,
		},
		{
			name: "a cut write is cancelled, then reconciled by its key until its status says done", rules: write, figures: plenty(false),
			attempts: []AttemptSaid{cut},
			asks:     []fakeAsk{{status: cancel.Status{State: cancel.Running}}, {status: cancel.Status{State: cancel.Done, Output: []byte(`"paid"`)}}},
			want: []string{"heard: tool call", "begin", "attempt 1", "cancel", "ask 1", "status backoff 1", "ask 2",
				"reconciled 2: done", "succeeded", "heard: tool result"},
			outcome: trace.OK, output: `"paid"`,
		},
		{
			name: "a cut write whose status cannot be read is journaled as an orphan", rules: write, figures: plenty(false),
			attempts: []AttemptSaid{cut},
			asks:     []fakeAsk{{err: errNoStatus}},
			want: []string{"heard: tool call", "begin", "attempt 1", "cancel", "ask 1", "reconciled 1: unreachable, " + errNoStatus.Error(),
				"orphan: " + errNoStatus.Error(), "heard: tool result"},
			outcome: trace.GaveUp, state: StateOrphaned,
		},
		{
			name: "a call begins with its allowance of silence: twice its p95, at most its ceiling",
			rules: CallRules{Kind: "tool:slow", Effect: Read, Ceiling: 5 * time.Second,
				Silence: watchdog.Expected{P95: 3 * time.Second, From: watchdog.SourceDeclared}},
			figures: plenty(false), attempts: []AttemptSaid{succeeds},
			want:    []string{"heard: tool call", "begin: 5s declared", "attempt 1", "succeeded", "heard: tool result"},
			outcome: trace.OK, output: `"ok"`,
		},
		{
			name: "a call the budget refuses makes no attempt and is not heard", rules: read,
			figures: budget.Figures{Remaining: time.Second, Reserve: time.Second, Floor: 100 * time.Millisecond},
			want:    []string{"refused 1"},
			outcome: trace.GaveUp,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fx := &fakeEffects{figures: tc.figures, attempts: tc.attempts, asks: tc.asks}
			res := DriveCall(t.Context(), fx, tc.rules, "name", "key-1")
			var got []string
			for _, e := range fx.did {
				got = append(got, e.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("effects:\n got %q\nwant %q", got, tc.want)
			}
			if res.Outcome != tc.outcome || res.State != tc.state || string(res.Output) != tc.output {
				t.Errorf("ended %s, state %q, output %s; want %s, state %q, output %s",
					res.Outcome, res.State, res.Output, tc.outcome, tc.state, tc.output)
			}
		})
	}
}

func TestDrivingACallThatSucceedsDoesNotAllocate(t *testing.T) {
	fx := &fakeEffects{figures: plenty(false), attempts: []AttemptSaid{succeeds}, did: make([]effect, 0, 8)}
	rules := CallRules{Kind: "tool:search", Effect: Read}
	ctx := t.Context()
	allocs := testing.AllocsPerRun(100, func() {
		fx.did = fx.did[:0]
		DriveCall(ctx, fx, rules, "search", "key-1")
	})
	if allocs != 0 {
		t.Errorf("%v allocations per call, want 0", allocs)
	}
}
