package harness_test

import (
	"context"
	"errors"
	"net/http"
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

// B = 5s, the model's p50 declared at 3s: the model's server answers the
// first request 503 after 1s, and the retry's lease, about 2.5s after the
// backoff, would be below the p50. An embedded loop's turn ends as
// the harness's own loop's does, both driving model.TurnMachine (issue 25): the run
// lands on cause budget and the boundary names the model's failure and
// why it was not tried again, and a request sent again on the turn is not
// sent. The embedded turn used to end with the refusal as the model's own
// failure, and to send the request again.
func TestAnEmbeddedTurnWhoseRetryTheBudgetRefusesLandsAsTheHarnessLoopDoes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{Status: http.StatusServiceUnavailable, Message: "overloaded", Delay: time.Second}}})
		defer srv.Close()
		b, err := budget.New(budget.Config{Total: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		b.Estimates().Kind(model.Kind).Declare(3*time.Second, 6*time.Second)
		sink := &collect{}
		s, ctx, err := harness.Start(t.Context(), b, harness.Config{Task: "q", Sinks: []trace.Sink{sink}})
		if err != nil {
			t.Fatal(err)
		}
		oa := harnessClient(srv)
		params := openai.ChatCompletionNewParams{Model: sim.ModelID, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("q")}}

		tctx, turn, err := s.BeginTurn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = oa.Chat.Completions.New(tctx, params)
		_, again := oa.Chat.Completions.New(tctx, params)
		ended := turn.End(err)
		res := s.Land(ctx, ended, func(context.Context, string) (string, error) { return "", errors.New("no landing call") })
		s.Close() // the sinks have every record

		// The retry's lease is 2.45s to 2.7s, as the backoff's jitter drew.
		const head = "Stopped at step 1: the model failed (HTTP 503 Service Unavailable), and there was no time for another attempt: its lease would have been "
		const tail = ", below the model's p50 of 3s."
		if res.Cause != landing.CauseBudget || !strings.HasPrefix(res.Boundary, head) || !strings.HasSuffix(res.Boundary, tail) {
			t.Errorf("cause %s, boundary %q; want budget, %q…%q", res.Cause, res.Boundary, head, tail)
		}
		if !errors.Is(again, budget.ErrRefused) || len(chatRequests(srv)) != 1 {
			t.Errorf("a request sent again on the turn: %v, %d requests; want the refusal, one request", again, len(chatRequests(srv)))
		}
		if refused := only(sink.all(), trace.Refused, model.Kind); len(refused) != 1 || refused[0].Attempt != 2 || refused[0].Reason != budget.BelowP50.String() {
			t.Errorf("refused records %+v, want attempt 2 refused below p50", refused)
		}
	})
}
