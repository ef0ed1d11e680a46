package model_test

import (
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

// figures are a run of 10s with a reserve of 1s and a floor of 50ms,
// left seconds before its deadline.
func figures(left time.Duration) budget.Figures {
	return budget.Figures{Remaining: left, Reserve: time.Second, Floor: 50 * time.Millisecond}
}

// half draws the middle of every jitter range, so that the sleeps are
// known.
func half(n int64) int64 { return n / 2 }

var (
	answered = model.TurnAttempted{Outcome: trace.OK, Took: 2 * time.Second}
	overload = model.TurnAttempted{Outcome: trace.UpstreamError, Status: 503, Retry: true, Failure: "503 overloaded", Took: time.Second}
)

// modelCall is the model call a turn's first attempt begins on the quiet
// clock, with no latency known: no allowance.
var modelCall = watchdog.Call{Key: model.Kind, Step: model.Kind, AtHeaders: true}

func TestATurnMachineDecidesEachAttemptOfATurn(t *testing.T) {
	type step struct {
		e    model.TurnEvent
		want model.TurnCommand
	}
	started := func(f budget.Figures) model.TurnEvent {
		return model.TurnEvent{Kind: model.TurnStarted, Figures: f}
	}
	ended := func(f budget.Figures, a model.TurnAttempted) model.TurnEvent {
		return model.TurnEvent{Kind: model.TurnAttemptEnded, Figures: f, Attempt: a}
	}
	slept := func(f budget.Figures) model.TurnEvent {
		return model.TurnEvent{Kind: model.TurnSleepOver, Figures: f}
	}
	lease := func(granted, remaining time.Duration) budget.Lease {
		return budget.Lease{Granted: granted, Remaining: remaining}
	}
	slow := figures(5 * time.Second)
	slow.P50 = 10 * time.Second
	ended5 := figures(5 * time.Second)
	ended5.Ended = true
	cases := []struct {
		name  string
		rules model.TurnRules
		steps []step
	}{
		{
			name: "an answer at the first attempt ends the turn and is heard as a model message",
			steps: []step{
				{started(figures(5 * time.Second)), model.TurnCommand{Kind: model.TurnAttempt, N: 1,
					Lease: lease(3950*time.Millisecond, 5*time.Second), Heard: watchdog.ModelCall, Begin: modelCall}},
				{ended(figures(3*time.Second), answered), model.TurnCommand{Kind: model.TurnDone, N: 1, OK: true,
					Took: 2 * time.Second, Outcome: trace.OK, Heard: watchdog.ModelMessage}},
			},
		},
		{
			name: "a turn the budget refuses before anything is sent says there was no time for one",
			steps: []step{
				{started(slow), model.TurnCommand{Kind: model.TurnDone, Heard: watchdog.ModelCall, Cause: landing.CauseBudget,
					Refused: &budget.RefusedError{Step: model.Kind, Rule: budget.BelowP50, Remaining: 5 * time.Second,
						Left: 3950 * time.Millisecond, Need: 10 * time.Second},
					Doing: "there was no time for a model turn: its lease would have been 3.9s, below the model's p50 of 10s"}},
			},
		},
		{
			name: "a 503 is tried again after a backoff and then answered",
			steps: []step{
				{started(figures(5 * time.Second)), model.TurnCommand{Kind: model.TurnAttempt, N: 1,
					Lease: lease(3950*time.Millisecond, 5*time.Second), Heard: watchdog.ModelCall, Begin: modelCall}},
				{ended(figures(4*time.Second), overload), model.TurnCommand{Kind: model.TurnSleep, N: 1,
					Delay: budget.Delay{Sleep: 125 * time.Millisecond, Source: budget.FromJitter}}},
				{slept(figures(3875 * time.Millisecond)), model.TurnCommand{Kind: model.TurnAttempt, N: 2,
					Lease: lease(2825*time.Millisecond, 3875*time.Millisecond)}},
				{ended(figures(2*time.Second), answered), model.TurnCommand{Kind: model.TurnDone, N: 2, OK: true,
					Took: 2 * time.Second, Outcome: trace.OK, Heard: watchdog.ModelMessage}},
			},
		},
		{
			name:  "a failure after the last attempt lands on the model's words",
			rules: model.TurnRules{MaxAttempts: 1},
			steps: []step{
				{started(figures(5 * time.Second)), model.TurnCommand{Kind: model.TurnAttempt, N: 1,
					Lease: lease(3950*time.Millisecond, 5*time.Second), Heard: watchdog.ModelCall, Begin: modelCall}},
				{ended(figures(4*time.Second), overload), model.TurnCommand{Kind: model.TurnDone, N: 1,
					Outcome: trace.UpstreamError, Cause: landing.CauseUpstream, Failure: "503 overloaded"}},
			},
		},
		{
			name: "a failure SPEC §2 does not retry ends the turn at once, and a refusing server gets no landing call",
			steps: []step{
				{started(figures(5 * time.Second)), model.TurnCommand{Kind: model.TurnAttempt, N: 1,
					Lease: lease(3950*time.Millisecond, 5*time.Second), Heard: watchdog.ModelCall, Begin: modelCall}},
				{ended(figures(4*time.Second), model.TurnAttempted{Outcome: trace.Invalid, Status: 401, Refused: true, Failure: "401 bad key"}),
					model.TurnCommand{Kind: model.TurnDone, N: 1, Outcome: trace.Invalid, Cause: landing.CauseUpstream,
						Failure: "401 bad key", End: landing.ModelEnd{Refused: true}}},
			},
		},
		{
			name: "a Retry-After too large to mean anything gives up at once, and the landing call is not sent",
			steps: []step{
				{started(figures(3 * time.Second)), model.TurnCommand{Kind: model.TurnAttempt, N: 1,
					Lease: lease(1950*time.Millisecond, 3*time.Second), Heard: watchdog.ModelCall, Begin: modelCall}},
				{ended(figures(3*time.Second), model.TurnAttempted{Outcome: trace.RateLimited, Status: 429, Retry: true,
					RetryAfter: budget.RetryAfter{TooLarge: true}, Failure: "429 slow down"}),
					model.TurnCommand{Kind: model.TurnDone, N: 1, Outcome: trace.GaveUp, Cause: landing.CauseBudget,
						Delay:   budget.Delay{Source: budget.FromRetryAfter, GiveUp: true, Reason: budget.RetryAfterExceedsBudget},
						End:     landing.ModelEnd{RetryAfter: budget.MaxRetryAfter},
						Failure: "the model's server asked to wait longer than 7 days before a retry, and the run had only 2s left before its reserve"}},
			},
		},
		{
			name: "a backoff that would outlast the budget gives up on cause budget",
			steps: []step{
				{started(figures(1100 * time.Millisecond)), model.TurnCommand{Kind: model.TurnAttempt, N: 1,
					Lease: lease(50*time.Millisecond, 1100*time.Millisecond), Heard: watchdog.ModelCall, Begin: modelCall}},
				{ended(figures(1100*time.Millisecond), overload), model.TurnCommand{Kind: model.TurnDone, N: 1,
					Outcome: trace.GaveUp, Cause: landing.CauseBudget,
					Delay:   budget.Delay{Sleep: 125 * time.Millisecond, Source: budget.FromJitter, GiveUp: true, Reason: budget.BackoffExceedsBudget},
					Failure: "the model failed (503 overloaded), and the wait before a retry would have outlasted the 100ms left before the reserve"}},
			},
		},
		{
			name: "a retry the budget refuses lands on cause budget and says the model failed",
			steps: []step{
				{started(figures(5 * time.Second)), model.TurnCommand{Kind: model.TurnAttempt, N: 1,
					Lease: lease(3950*time.Millisecond, 5*time.Second), Heard: watchdog.ModelCall, Begin: modelCall}},
				{ended(figures(4*time.Second), overload), model.TurnCommand{Kind: model.TurnSleep, N: 1,
					Delay: budget.Delay{Sleep: 125 * time.Millisecond, Source: budget.FromJitter}}},
				{slept(figures(time.Second)), model.TurnCommand{Kind: model.TurnDone, N: 1, Outcome: trace.UpstreamError, Cause: landing.CauseBudget,
					Refused: &budget.RefusedError{Step: model.Kind, Rule: budget.BelowFloor, Remaining: time.Second, Need: 50 * time.Millisecond},
					Failure: "the model failed (503 overloaded), and there was no time for another attempt: only 0s was left before the reserve (the floor is 50ms)"}},
			},
		},
		{
			name: "an attempt the run's time cut is named by what it carried, and its mute server gets no landing call",
			steps: []step{
				{started(figures(5 * time.Second)), model.TurnCommand{Kind: model.TurnAttempt, N: 1,
					Lease: lease(3950*time.Millisecond, 5*time.Second), Heard: watchdog.ModelCall, Begin: modelCall}},
				{ended(figures(time.Second), model.TurnAttempted{Outcome: trace.GaveUp, Keepalives: 3, Took: 3950 * time.Millisecond, Failure: "budget: deadline"}),
					model.TurnCommand{Kind: model.TurnDone, N: 1, Outcome: trace.GaveUp, Cause: landing.CauseBudget,
						Unanswered: "the model sent only keepalives for 3.9s", End: landing.ModelEnd{Mute: true}}},
			},
		},
		{
			name: "the end of the turn's context during a backoff ends the turn for the run to name",
			steps: []step{
				{started(figures(5 * time.Second)), model.TurnCommand{Kind: model.TurnAttempt, N: 1,
					Lease: lease(3950*time.Millisecond, 5*time.Second), Heard: watchdog.ModelCall, Begin: modelCall}},
				{ended(figures(4*time.Second), overload), model.TurnCommand{Kind: model.TurnSleep, N: 1,
					Delay: budget.Delay{Sleep: 125 * time.Millisecond, Source: budget.FromJitter}}},
				{slept(ended5), model.TurnCommand{Kind: model.TurnDone, N: 1, Outcome: trace.UpstreamError, RunEnded: true}},
			},
		},
		{
			name:  "the landing call is one attempt on a landing lease that spends the reserve",
			rules: model.TurnRules{Landing: true},
			steps: []step{
				{started(figures(time.Second)), model.TurnCommand{Kind: model.TurnAttempt, N: 1,
					Lease: budget.Lease{Granted: 950 * time.Millisecond, Remaining: time.Second, Landing: true}}},
				{ended(figures(900*time.Millisecond), overload), model.TurnCommand{Kind: model.TurnDone, N: 1,
					Outcome: trace.UpstreamError, Cause: landing.CauseUpstream, Failure: "503 overloaded"}},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rules := tc.rules
			rules.Backoff.Rand = half
			m := model.NewTurnMachine(rules)
			for i, s := range tc.steps {
				got := m.Step(s.e)
				if !same(got, s.want) {
					t.Fatalf("step %d: got\n%+v\nwant\n%+v", i+1, got, s.want)
				}
			}
			if got := m.Step(slept(figures(time.Second))); got.Kind != model.TurnDone {
				t.Errorf("a step after the turn ended: got %v, want TurnDone", got.Kind)
			}
		})
	}
}

// same compares two commands, their refusals by value.
func same(a, b model.TurnCommand) bool {
	ra, rb := a.Refused, b.Refused
	a.Refused, b.Refused = nil, nil
	if (ra == nil) != (rb == nil) || ra != nil && *ra != *rb {
		return false
	}
	return a == b
}

func TestATurnMachineStepDoesNotAllocateOnTheWayToAnAnswer(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() {
		m := model.NewTurnMachine(model.TurnRules{Backoff: budget.Backoff{Rand: half}})
		m.Step(model.TurnEvent{Kind: model.TurnStarted, Figures: figures(5 * time.Second)})
		m.Step(model.TurnEvent{Kind: model.TurnAttemptEnded, Figures: figures(4 * time.Second), Attempt: overload})
		m.Step(model.TurnEvent{Kind: model.TurnSleepOver, Figures: figures(4 * time.Second)})
		m.Step(model.TurnEvent{Kind: model.TurnAttemptEnded, Figures: figures(3 * time.Second), Attempt: answered})
	})
	if allocs != 0 {
		t.Errorf("a turn with a retry and an answer allocated %v times, want 0", allocs)
	}
}
