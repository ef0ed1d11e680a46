package harness_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/trace"
	"github.com/openai/openai-go/v3"
)

// ownModel is a harness.Model of the caller's own, not a *model.Client:
// its turn says only its error, and the run lands on it as a turn machine
// ends a turn on that error (issue 25).
type ownModel struct {
	complete func(ctx context.Context, b *budget.Budget, req model.Request, obs *trace.Observer) (model.Response, error)
}

func (m ownModel) Complete(ctx context.Context, b *budget.Budget, req model.Request, obs *trace.Observer) (model.Response, error) {
	return m.complete(ctx, b, req, obs)
}

func (m ownModel) Land(context.Context, *budget.Budget, []openai.ChatCompletionMessageParamUnion, *trace.Observer) (model.Response, error) {
	return model.Response{}, errors.New("no landing call here")
}

func TestARunOnAModelOfTheCallersOwnLandsAsItsTurnEnded(t *testing.T) {
	refused := &budget.RefusedError{Step: model.Kind, Rule: budget.BelowP50, Remaining: 9 * time.Second, Left: time.Second, Need: 2 * time.Second}
	srv := func() *sim.Server {
		return sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{Status: 429, RetryAfter: "3600"}}})
	}
	cases := []struct {
		name      string
		err       error // the turn's error; nil: the turn is a Client's, wrapped
		wantCause landing.Cause
		wantSays  string
	}{
		{"a failure of its own is the model's, in its words", errors.New("boom"),
			landing.CauseUpstream, "The model failed at step 1: boom."},
		{"a refusal of the budget's before anything was sent says there was no time for a turn", fmt.Errorf("mine: %w", refused),
			landing.CauseBudget, landing.NoModelTurn(refused)},
		{"a Client's failure it passes on is the Client's turn's end", nil,
			landing.CauseBudget, "asked to wait 1h0m0s before a retry"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := srv()
				defer s.Close()
				client := newModel(t, s)
				m := ownModel{complete: func(ctx context.Context, b *budget.Budget, req model.Request, obs *trace.Observer) (model.Response, error) {
					if tc.err != nil {
						return model.Response{}, tc.err
					}
					resp, err := client.Complete(ctx, b, req, obs)
					return resp, fmt.Errorf("mine: %w", err)
				}}
				res, err := run(t, t.Context(), 10*time.Second, harness.Config{Task: "find cats", Model: m}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if res.Status != landing.Partial || res.Cause != tc.wantCause || !strings.Contains(res.Boundary, tc.wantSays) {
					t.Errorf("result %s, cause %s, boundary %q; want partial, %s, saying %q", res.Status, res.Cause, res.Boundary, tc.wantCause, tc.wantSays)
				}
			})
		})
	}
}
