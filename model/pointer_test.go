package model_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
)

// CompletePointer is Complete by pointer: the same turn, the same
// response, and a response, never nil, that says how many attempts a
// failed turn made.
func TestCompletePointerIsCompleteByPointer(t *testing.T) {
	cases := []struct {
		name         string
		scenario     *sim.Scenario
		budget       time.Duration
		wantErr      error // nil: an answer; errAny: any error
		wantAttempts int
	}{
		{name: "an answer", budget: time.Minute, wantAttempts: 1},
		{
			name:         "a 400 is not retried",
			scenario:     &sim.Scenario{Rules: []sim.Rule{{Status: 400}}},
			budget:       time.Minute,
			wantErr:      errAny,
			wantAttempts: 1,
		},
		{
			name:         "a 502 is retried until the attempts run out",
			scenario:     &sim.Scenario{Rules: []sim.Rule{{Status: 502}}},
			budget:       time.Minute,
			wantErr:      errAny,
			wantAttempts: 3,
		},
		{name: "refused before any attempt", budget: 10 * time.Millisecond, wantErr: budget.ErrRefused},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := sim.NewPipeServer(tc.scenario)
				defer srv.Close()
				c := newClient(t, srv, model.Config{})

				got, err := c.CompletePointer(t.Context(), newBudget(t, tc.budget), ask("find cats"), nil)
				if got == nil {
					t.Fatalf("CompletePointer returned a nil response (err %v)", err)
				}
				if !errorMatches(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				if got.Attempts != tc.wantAttempts {
					t.Errorf("Attempts = %d, want %d", got.Attempts, tc.wantAttempts)
				}
				if err != nil {
					return
				}
				want, err := c.Complete(t.Context(), newBudget(t, tc.budget), ask("find cats"), nil)
				if err != nil {
					t.Fatal(err)
				}
				if got.Message.Content != want.Message.Content || got.FinishReason != want.FinishReason ||
					got.Usage.TotalTokens != want.Usage.TotalTokens || got.Attempts != want.Attempts {
					t.Errorf("CompletePointer answered %q (%s, %d tokens, %d attempts); Complete %q (%s, %d tokens, %d attempts)",
						got.Message.Content, got.FinishReason, got.Usage.TotalTokens, got.Attempts,
						want.Message.Content, want.FinishReason, want.Usage.TotalTokens, want.Attempts)
				}
			})
		})
	}
}

// errAny stands for any error in a table.
var errAny = errors.New("any error")

// errorMatches reports whether err is what want asks for: none when want
// is nil, any when it is errAny, else one matching want.
func errorMatches(err, want error) bool {
	switch want {
	case nil:
		return err == nil
	case errAny:
		return err != nil
	}
	return errors.Is(err, want)
}
