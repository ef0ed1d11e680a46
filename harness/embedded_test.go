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
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// harnessClient is an openai-go client as an embedder makes it for a run:
// its own options, then the harness's.
func harnessClient(srv *sim.Server) *openai.Client {
	oa := openai.NewClient(append([]option.RequestOption{option.WithBaseURL(srv.URL), option.WithHTTPClient(srv.Client())},
		harness.ClientOptions()...)...)
	return &oa
}

// ask streams one request of the turn begun on ctx, as an embedded loop
// does, and ends the turn.
func ask(s *harness.Session, ctx context.Context, oa *openai.Client) (string, error) {
	tctx, turn, err := s.BeginTurn(ctx)
	if err != nil {
		return "", err
	}
	stream := oa.Chat.Completions.NewStreaming(tctx, openai.ChatCompletionNewParams{Model: sim.ModelID,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("say hello")}})
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := turn.End(stream.Err()); err != nil {
		return "", err
	}
	return acc.Choices[0].Message.Content, nil
}

// B = 5s: the model's server answers the first request 503. The turn is
// sent again, as its second attempt, after the budget's backoff, and the
// run answers: every physical request carried its lease and is on the
// record. It used to fail the run: nothing retried an embedded loop's
// request.
func TestOne503DoesNotFailAnEmbeddedRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{Request: 1, Status: http.StatusServiceUnavailable, Message: "overloaded"}}})
		defer srv.Close()
		sink := &collect{}
		s, ctx := start(t, 5*time.Second, harness.Config{Task: "say hello", Sinks: []trace.Sink{sink}})

		answer, err := ask(s, ctx, harnessClient(srv))
		res := s.Answer(answer)
		s.Close()

		if err != nil || res.Status != landing.Complete || res.Steps != 1 || res.Attempts != 2 {
			t.Errorf("result %+v (%v), want complete after one step of two attempts", res, err)
		}
		reqs := chatRequests(srv)
		if len(reqs) != 2 {
			t.Fatalf("%d requests reached the server, want 2", len(reqs))
		}
		for i, r := range reqs {
			if r.Header.Get(budget.Header) == "" {
				t.Errorf("request %d carried no %s", i+1, budget.Header)
			}
		}
		ends := only(sink.all(), trace.AttemptEnd, model.Kind)
		if len(ends) != 2 || ends[0].Status != http.StatusServiceUnavailable || ends[0].Attempt != 1 ||
			ends[1].Outcome != trace.OK || ends[1].Attempt != 2 || ends[1].StepIndex != 1 {
			t.Errorf("model attempt_end records %+v, want the 503 as attempt 1 and the answer as attempt 2 of step 1", ends)
		}
		if len(only(sink.all(), trace.Backoff, model.Kind)) != 1 {
			t.Error("no backoff record between the two attempts")
		}
	})
}

// A request of a client made with ClientOptions, sent on a context that
// carries no turn, is refused before it leaves; and a turn whose request
// went through a client without them is not an answer. Forgetting the
// lease can no longer send an unleased request that the run takes for
// its answer (it used to: three requests, one attempt recorded, no
// Budget-Remaining-Ms).
func TestARequestTheHarnessDidNotLeaseIsNotATurnsAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{Status: http.StatusServiceUnavailable}}})
		defer srv.Close()
		s, ctx := start(t, time.Minute, harness.Config{Task: "say hello"})
		defer s.Close()

		_, err := harnessClient(srv).Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: sim.ModelID,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}})
		if !errors.Is(err, harness.ErrNoTurn) || len(chatRequests(srv)) != 0 {
			t.Errorf("a request off any turn: %v, %d requests sent; want ErrNoTurn, none", err, len(chatRequests(srv)))
		}

		bare := openai.NewClient(option.WithBaseURL(srv.URL), option.WithHTTPClient(srv.Client()))
		_, err = ask(s, ctx, &bare)
		if !errors.Is(err, harness.ErrNotLeased) {
			t.Errorf("a turn sent through a client without ClientOptions: %v, want ErrNotLeased", err)
		}
	})
}

// The Session refuses what cannot be right, each with an error that says
// what happened (issue 25).
func TestTheSessionRefusesWhatCannotBeRight(t *testing.T) {
	t.Run("a turn ended with no answer read is not an answer", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := sim.NewPipeServer(nil)
			defer srv.Close()
			s, ctx := start(t, time.Minute, harness.Config{Task: "say hello"})
			defer s.Close()
			tctx, turn, err := s.BeginTurn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// Sent and answered, but not one chunk of the stream is read.
			stream := harnessClient(srv).Chat.Completions.NewStreaming(tctx, openai.ChatCompletionNewParams{Model: sim.ModelID,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}})
			defer stream.Close()
			if stream.Err() != nil {
				t.Fatal(stream.Err())
			}
			if err := turn.End(nil); !errors.Is(err, harness.ErrNoAnswer) {
				t.Errorf("End(nil) with no chunk read: %v, want ErrNoAnswer", err)
			}
		})
	})
	t.Run("an answer while a turn is open is not a complete result", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			sink := &collect{}
			s, ctx := start(t, time.Minute, harness.Config{Task: "say hello", Sinks: []trace.Sink{sink}})
			srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{Hang: true}}})
			defer srv.Close()
			tctx, _, err := s.BeginTurn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			sent := make(chan struct{})
			go func() {
				defer close(sent)
				harnessClient(srv).Chat.Completions.New(tctx, openai.ChatCompletionNewParams{Model: sim.ModelID,
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}})
			}()
			synctest.Wait()
			res := s.Answer("hello")
			<-sent
			s.Close()

			if res.Status == landing.Complete {
				t.Errorf("result %+v: complete while its turn was open", res)
			}
			starts, ends := only(sink.all(), trace.AttemptStart, model.Kind), only(sink.all(), trace.AttemptEnd, model.Kind)
			if len(starts) != 1 || len(ends) != 1 {
				t.Errorf("%d model attempts started, %d ended; want each that started ended", len(starts), len(ends))
			}
		})
	})
	t.Run("the landing call is offered no tools and is made once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := sim.NewPipeServer(nil)
			defer srv.Close()
			c := newCalls()
			s, ctx := start(t, time.Minute, harness.Config{Task: "say hello", Tools: registry(t, c.sleeper("search", time.Second, "x"))})
			defer s.Close()
			if len(s.Tools()) != 1 {
				t.Fatalf("%d tools offered before landing, want 1", len(s.Tools()))
			}
			var offered int
			var second error
			s.Land(ctx, &harness.MustLandError{Cause: landing.CauseCancelled}, func(ctx context.Context, prompt string) (string, error) {
				offered = len(s.Tools())
				answer, err := ask(s, ctx, harnessClient(srv))
				_, second = ask(s, ctx, harnessClient(srv))
				return answer, err
			})
			if offered != 0 {
				t.Errorf("%d tools offered to the landing call, want none", offered)
			}
			if !errors.Is(second, harness.ErrLandingCallMade) || len(chatRequests(srv)) != 1 {
				t.Errorf("a second landing call: %v, %d requests; want ErrLandingCallMade, one request", second, len(chatRequests(srv)))
			}
		})
	})
	t.Run("a summarize that ignores its context does not hold the result past the deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s, ctx := start(t, 10*time.Second, harness.Config{Task: "say hello"})
			begun := time.Now()
			over := make(chan struct{})
			defer func() { <-over }() // it runs on, then ends
			res := s.Land(ctx, &harness.MustLandError{Cause: landing.CauseCancelled}, func(context.Context, string) (string, error) {
				defer close(over)
				time.Sleep(time.Hour)
				return "too late", nil
			})
			took := time.Since(begun)
			s.Close()
			if took > 10*time.Second || res.Answer == "too late" {
				t.Errorf("the result came after %v, answer %q; want by the deadline, the harness's summary", took, res.Answer)
			}
		})
	})
	t.Run("a setup that ignores its context ends with its lease", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s, ctx := start(t, 10*time.Second, harness.Config{Task: "say hello"})
			over := make(chan struct{})
			defer func() { <-over }() // it runs on, then ends
			begun := time.Now()
			err := s.Setup(ctx, "fetch a manifest", time.Second, func(context.Context) error {
				defer close(over)
				time.Sleep(time.Hour)
				return nil
			})
			took := time.Since(begun)
			s.Close()
			if _, ok := errors.AsType[*harness.SetupError](err); !ok || took > time.Second+100*time.Millisecond {
				t.Errorf("Setup returned %v after %v; want a *SetupError at its 1s lease and its 100ms grace", err, took)
			}
		})
	})
	t.Run("a refusal the caller's own context caused says so", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := newCalls()
			s, _ := start(t, time.Minute, harness.Config{Task: "say hello", Tools: registry(t, c.sleeper("search", time.Second, "x"))})
			defer s.Close()
			mine, cancel := context.WithCancel(context.Background())
			cancel()
			res := s.Call(mine, harness.ToolCall{Name: "search"})[0]
			if !errors.Is(res.Cause, harness.ErrCallerEnded) || !strings.Contains(res.Err, "the caller's context ended") {
				t.Errorf("a call on the caller's ended context: %q (%v), want it to say the caller's context ended", res.Err, res.Cause)
			}
			if _, _, err := s.BeginTurn(mine); !errors.Is(err, harness.ErrCallerEnded) {
				t.Errorf("a turn on the caller's ended context: %v, want ErrCallerEnded", err)
			}
		})
	})
}

// Q = 1s, the model's p95 known at 2s (its allowance 4s): an embedded
// loop's turn whose first token comes at 1.5s is held from its server's
// headers, not cut at Q, and the run answers (issue 27).
func TestAnEmbeddedTurnHeldPastQAnswersInTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{Request: 1, FirstToken: 1500 * time.Millisecond}}})
		defer srv.Close()
		b, err := budget.New(budget.Config{Total: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		b.Estimates().Kind(model.Kind).Warm([]time.Duration{2 * time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second})
		s, ctx, err := harness.Start(t.Context(), b, harness.Config{Task: "say hello", Quiet: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		answer, err := ask(s, ctx, harnessClient(srv))
		res := s.Answer(answer)
		s.Close()
		if err != nil || res.Status != landing.Complete {
			t.Errorf("result %s, cause %s, boundary %q (%v); want complete: the turn was held for its allowance", res.Status, res.Cause, res.Boundary, err)
		}
	})
}

// Review of issue 27: a loop on the Responses API that made its turns
// through a client with ClientOptions had every healthy answer refused at
// its end ("the client read neither a chunk nor a completion"), since the
// middleware reads Chat Completions. The request is refused before it
// leaves, saying what to use instead.
func TestAResponsesAPIRequestThroughClientOptionsIsRefusedBeforeItLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(nil)
		defer srv.Close()
		s, ctx := start(t, time.Minute, harness.Config{Task: "say hello"})
		defer s.Close()
		tctx, turn, err := s.BeginTurn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = harnessClient(srv).Responses.New(tctx, responses.ResponseNewParams{Model: sim.ModelID,
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")}})
		if !errors.Is(err, harness.ErrResponsesAPI) || len(srv.Requests()) != 0 {
			t.Errorf("a Responses API request: %v, %d requests sent; want ErrResponsesAPI, none", err, len(srv.Requests()))
		}
		turn.End(err)
	})
}
