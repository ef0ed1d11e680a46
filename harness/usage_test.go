package harness_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/trace"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// A loop of its own that asks for a limit gets its answer cut there, and
// the turn's record has the whole usage: cached input and reasoning too
// (issue 28), streamed or not.
func TestATurnsRecordCarriesItsCachedAndReasoningTokensAndItsCut(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole", true: "streamed"}[stream], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{CachedTokens: 3, ReasoningTokens: 6}}})
				defer srv.Close()
				oa := openai.NewClient(append([]option.RequestOption{option.WithBaseURL(srv.URL), option.WithHTTPClient(srv.Client())},
					harness.ClientOptions()...)...)
				var sink collect
				s, ctx := start(t, time.Minute, harness.Config{Task: "find cats", Sinks: []trace.Sink{&sink}})

				tctx, turn, err := s.BeginTurn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				params := openai.ChatCompletionNewParams{Model: sim.ModelID, MaxCompletionTokens: openai.Int(10),
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("find cats")}}
				if stream {
					params.StreamOptions.IncludeUsage = openai.Bool(true)
					st := oa.Chat.Completions.NewStreaming(tctx, params)
					for st.Next() {
					}
					err = st.Err()
				} else {
					_, err = oa.Chat.Completions.New(tctx, params)
				}
				err = turn.End(err)
				s.Close()

				if !errors.Is(err, model.ErrNotAnswer) {
					t.Errorf("End: %v, want ErrNotAnswer: the reply was cut at its limit", err)
				}
				ends := only(sink.all(), trace.AttemptEnd, model.Kind)
				if len(ends) != 1 || ends[0].OutputTokens != 10 || ends[0].ReasoningTokens != 6 || ends[0].CachedTokens != 3 ||
					ends[0].FinishReason != "length" || ends[0].Outcome != trace.OK {
					t.Errorf("attempt_end %+v; want an OK attempt of 10 output tokens (6 reasoning), 3 cached, finish length", ends)
				}
			})
		})
	}
}
