package model_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/trace"
)

// A Client's failed turn carries the TurnDone its machine ended it with,
// which a host takes as it is, and still matches what it matched before.
func TestAFailedTurnCarriesHowItsMachineEndedIt(t *testing.T) {
	cases := []struct {
		name     string
		scenario *sim.Scenario
		cfg      model.Config
		p50      time.Duration // declared for the model before the turn; 0: none
		wantErr  error         // what the error still matches
		check    func(t *testing.T, c model.TurnCommand, err error)
	}{
		{
			name:     "a server that sends only keepalives until the run's time is cut is unanswered and mute",
			scenario: &sim.Scenario{Rules: []sim.Rule{{Keepalive: sim.Forever, KeepaliveEvery: time.Second}}},
			cfg:      model.Config{MaxAttempts: 1},
			wantErr:  budget.ErrDeadline,
			check: func(t *testing.T, c model.TurnCommand, _ error) {
				if c.N != 1 || c.Cause != landing.CauseBudget || c.Failure != "" || !c.End.Mute ||
					!strings.HasPrefix(c.Unanswered, "the model sent only keepalives for ") {
					t.Errorf("turn %+v, want one attempt cut by the budget, mute, that sent only keepalives", c)
				}
			},
		},
		{
			name:     "a 401 is the model's failure, in its words, and refuses the run",
			scenario: &sim.Scenario{Rules: []sim.Rule{{Status: 401}}},
			wantErr:  trace.ErrFailed,
			check: func(t *testing.T, c model.TurnCommand, err error) {
				if c.N != 1 || c.Cause != landing.CauseUpstream || c.Failure != model.Describe(err) || !c.End.Refused {
					t.Errorf("turn %+v, want one attempt failed upstream as %q, refused", c, model.Describe(err))
				}
			},
		},
		{
			name:     "a Retry-After the budget cannot afford gives up, and says why",
			scenario: &sim.Scenario{Rules: []sim.Rule{{Status: 429, RetryAfter: "3600"}}},
			wantErr:  trace.ErrGaveUp,
			check: func(t *testing.T, c model.TurnCommand, _ error) {
				if c.Cause != landing.CauseBudget || c.End.RetryAfter != time.Hour ||
					!strings.HasPrefix(c.Failure, "the model's server asked to wait 1h0m0s before a retry") {
					t.Errorf("turn %+v, want a give-up on the server's hour", c)
				}
			},
		},
		{
			name:    "a turn the budget refused sent nothing, and says there was no time for one",
			p50:     time.Minute,
			wantErr: budget.ErrRefused,
			check: func(t *testing.T, c model.TurnCommand, err error) {
				re, _ := errors.AsType[*budget.RefusedError](err)
				if c.N != 0 || c.Cause != landing.CauseBudget || c.Doing != landing.NoModelTurn(re) {
					t.Errorf("turn %+v, want no attempt and %q", c, landing.NoModelTurn(re))
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := sim.NewPipeServer(tc.scenario)
				defer srv.Close()
				c := newClient(t, srv, tc.cfg)
				b := newBudget(t, 10*time.Second)
				if tc.p50 > 0 {
					b.Estimates().Kind(model.Kind).Declare(tc.p50, tc.p50)
				}
				_, err := c.Complete(t.Context(), b, ask("q"), nil)
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Complete = %v, want it to match %v", err, tc.wantErr)
				}
				done, ok := model.TurnOf(err)
				if !ok || done.Kind != model.TurnDone || done.OK {
					t.Fatalf("TurnOf = %+v, %v; want the machine's TurnDone of a failed turn", done, ok)
				}
				if got := model.Ended(err, budget.FiguresOf(b, nil, false)); got != done {
					t.Errorf("Ended = %+v, want the machine's own %+v", got, done)
				}
				tc.check(t, done, err)
			})
		})
	}
}

// A model of the caller's own says only its error: Ended makes of it the
// end a turn machine makes of that failure.
func TestEndedReadsAModelsErrorAsTheTurnMachineDoes(t *testing.T) {
	f := budget.Figures{Remaining: 10 * time.Second, Reserve: 2 * time.Second} // 8s before the reserve
	refused := &budget.RefusedError{Step: model.Kind, Rule: budget.BelowFloor, Remaining: 3 * time.Second, Left: time.Second, Need: 2 * time.Second}
	status := &trace.AttemptError{Step: model.Kind, Attempt: 1, Status: 503, Outcome: trace.UpstreamError, Err: errors.New("HTTP 503 Service Unavailable")}
	cutBy := func(cause error) error {
		return &trace.AttemptError{Step: model.Kind, Attempt: 1, Outcome: trace.GaveUp, Err: cause}
	}
	mine := model.TurnCommand{Kind: model.TurnDone, N: 2, Cause: landing.CauseUpstream, Failure: "the machine's words"}
	cases := []struct {
		name string
		err  error
		want model.TurnCommand
	}{
		{"a failure of its own is the model's, in its words", errors.New("boom"),
			model.TurnCommand{Kind: model.TurnDone, N: 1, Outcome: trace.UpstreamError, Cause: landing.CauseUpstream, Failure: "boom"}},
		{"a refusal with no attempt in it sent nothing", fmt.Errorf("model: %w", refused),
			model.TurnCommand{Kind: model.TurnDone, Refused: refused, Cause: landing.CauseBudget, Doing: landing.NoModelTurn(refused)}},
		{"a refusal after an attempt says the model failed and there was no time for another", errors.Join(refused, status),
			model.TurnCommand{Kind: model.TurnDone, N: 1, Outcome: trace.UpstreamError, Refused: refused, Cause: landing.CauseBudget,
				Failure: model.NoRetryWords("HTTP 503 Service Unavailable", refused)}},
		{"an attempt cut by the run's time is the budget's, with no words", cutBy(budget.ErrDeadline),
			model.TurnCommand{Kind: model.TurnDone, N: 1, Outcome: trace.GaveUp, Cause: landing.CauseBudget}},
		{"a plain error of the run's deadline is the budget's, as a cut attempt is", fmt.Errorf("Post /v1: %w", budget.ErrDeadline),
			model.TurnCommand{Kind: model.TurnDone, N: 1, Outcome: trace.GaveUp, Cause: landing.CauseBudget}},
		{"an attempt cut by its own ceiling is the model's", cutBy(budget.ErrLeaseExpired),
			model.TurnCommand{Kind: model.TurnDone, N: 1, Outcome: trace.GaveUp, Cause: landing.CauseUpstream, Failure: budget.ErrLeaseExpired.Error()}},
		{"a Retry-After the run could not afford says so, and keeps the landing call from it",
			&trace.GaveUpError{Step: model.Kind, Delay: budget.Delay{Sleep: time.Hour, Source: budget.FromRetryAfter, GiveUp: true}, Last: status},
			model.TurnCommand{Kind: model.TurnDone, N: 1, Outcome: trace.GaveUp, Cause: landing.CauseBudget,
				Delay:   budget.Delay{Sleep: time.Hour, Source: budget.FromRetryAfter, GiveUp: true},
				End:     landing.ModelEnd{RetryAfter: time.Hour},
				Failure: landing.RetryAfterWords(time.Hour, 8*time.Second)}},
		{"a turn machine's own end is taken as it is", fmt.Errorf("loop: %w", &model.TurnError{Turn: mine, Err: errors.New("boom")}), mine},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := model.Ended(tc.err, f); got != tc.want {
				t.Errorf("Ended(%v) =\n%+v, want\n%+v", tc.err, got, tc.want)
			}
		})
	}
}

// A machine that heard only the server's status ends the turn in the
// status's words; ServerSaid gives the failure the server's own, and
// leaves any other end as it is.
func TestServerSaidWordsOnlyAServersFailure(t *testing.T) {
	said := fmt.Errorf("POST /v1/chat/completions: 400 Bad Request: %w", errors.New(`{"error":{"message":"bad tool schema"}}`))
	upstream := model.TurnCommand{Kind: model.TurnDone, N: 1, Cause: landing.CauseUpstream, Failure: "HTTP 400 Bad Request"}
	budgetEnd := model.TurnCommand{Kind: model.TurnDone, N: 1, Cause: landing.CauseBudget}
	cases := []struct {
		name string
		c    model.TurnCommand
		err  error
		want string
	}{
		{"a server's failure is said in the server's words", upstream, said, model.Describe(said)},
		{"a turn the budget ended keeps its own words", budgetEnd, said, ""},
		{"no error read leaves the status's words", upstream, nil, "HTTP 400 Bad Request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := model.ServerSaid(tc.c, tc.err)
			if got.Failure != tc.want || got.Cause != tc.c.Cause || got.N != tc.c.N {
				t.Errorf("ServerSaid = %+v, want failure %q and the rest of %+v", got, tc.want, tc.c)
			}
		})
	}
}
