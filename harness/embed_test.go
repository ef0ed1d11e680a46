package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// start starts a Session on a budget of total started now.
func start(t *testing.T, total time.Duration, cfg harness.Config) (*harness.Session, context.Context) {
	t.Helper()
	b, err := budget.New(budget.Config{Total: total})
	if err != nil {
		t.Fatal(err)
	}
	s, ctx, err := harness.Start(t.Context(), b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, ctx
}

// Q = 2s, B = 1m: a read that hangs, called on the caller's own context
// (t.Context(), not the Session's): the run's quiet clock still cuts it at
// 2s, where it would have waited out its lease, 44.95s. And the caller's
// own cancellation, at 1s, still cancels it.
func TestACallOnTheCallersOwnContextKeepsTheRunsQuietClock(t *testing.T) {
	calls := []struct {
		name string
		call func(s *harness.Session, ctx context.Context) error
	}{
		{"Call", func(s *harness.Session, ctx context.Context) error {
			res := s.Call(ctx, harness.ToolCall{Name: "read"})[0]
			return res.Cause
		}},
		{"Call of two", func(s *harness.Session, ctx context.Context) error {
			return s.Call(ctx, harness.ToolCall{Name: "read"}, harness.ToolCall{Name: "read"})[1].Cause
		}},
		{"Setup", func(s *harness.Session, ctx context.Context) error {
			return s.Setup(ctx, "fetch a manifest", 0, func(ctx context.Context) error {
				<-ctx.Done()
				return context.Cause(ctx)
			})
		}},
		{"BeginTurn", func(s *harness.Session, ctx context.Context) error {
			tctx, turn, err := s.BeginTurn(ctx)
			if err != nil {
				return err
			}
			<-tctx.Done() // a model request that hangs
			return turn.End(context.Cause(tctx))
		}},
	}
	for _, c := range calls {
		for _, cancelAt := range []time.Duration{0, time.Second} {
			if c.name == "Setup" && cancelAt == 0 {
				// Setup is not watched by the quiet clock
				// (TestASetupSlowerThanTheQuietClockIsNotAStall).
				continue
			}
			name := c.name + "/quiet clock"
			want, wantErr := 2*time.Second, error(watchdog.ErrQuiet)
			if cancelAt > 0 {
				name, want, wantErr = c.name+"/caller cancels", cancelAt, errCallerLeft
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					s, _ := start(t, time.Minute, harness.Config{Task: "find cats", Quiet: 2 * time.Second,
						Tools: registry(t, hangs("read"))})
					defer s.Close()
					own, cancel := context.WithCancelCause(t.Context())
					defer cancel(nil)
					if cancelAt > 0 {
						time.AfterFunc(cancelAt, func() { cancel(errCallerLeft) })
					}
					begin := time.Now()

					err := c.call(s, own)

					if got := time.Since(begin); got != want {
						t.Errorf("the call ended after %v, want %v", got, want)
					}
					if !errors.Is(err, wantErr) {
						t.Errorf("the call ended with %v, want %v", err, wantErr)
					}
					if cancelAt == 0 {
						_, _, err := s.BeginTurn(own)
						if ml, ok := errors.AsType[*harness.MustLandError](err); !ok || ml.Cause != landing.CauseQuiet {
							t.Errorf("BeginTurn on the caller's context: %v; want must land, quiet", err)
						}
					}
				})
			})
		}
	}
}

var errCallerLeft = errors.New("the caller left")

// Q = 1s: a setup step that takes 3s — an MCP server slow to start on a
// loaded machine — completes, and the run's work that follows is watched
// from then on: the quiet clock waits while setup runs, which its own
// lease bounds.
func TestASetupSlowerThanTheQuietClockIsNotAStall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, ctx := start(t, time.Minute, harness.Config{Task: "find cats", Quiet: time.Second,
			Tools: registry(t, hangs("read"))})
		defer s.Close()
		err := s.Setup(ctx, "start a slow server", 0, func(ctx context.Context) error {
			select {
			case <-time.After(3 * time.Second):
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		})
		if err != nil {
			t.Fatalf("setup: %v", err)
		}
		if ctx.Err() != nil {
			t.Fatalf("after a 3s setup the run's context ended (%v): the quiet clock watched it", context.Cause(ctx))
		}
		begin := time.Now()
		res := s.Call(ctx, harness.ToolCall{Name: "read"})[0]
		if got := time.Since(begin); got != time.Second || !errors.Is(res.Cause, watchdog.ErrQuiet) {
			t.Errorf("the first call after setup ended after %v with %v, want the quiet clock at 1s", got, res.Cause)
		}
	})
}

// The zero Session is not a run: every method says so, none panics.
func TestAZeroSessionErrorsAndNeverPanics(t *testing.T) {
	for _, s := range []*harness.Session{new(harness.Session), nil} {
		name := "zero"
		if s == nil {
			name = "nil"
		}
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			if _, _, err := s.BeginTurn(ctx); !errors.Is(err, harness.ErrNoSession) {
				t.Errorf("BeginTurn: %v", err)
			}
			if err := s.Setup(ctx, "x", 0, func(context.Context) error { return nil }); !errors.Is(err, harness.ErrNoSession) {
				t.Errorf("Setup: %v", err)
			}
			if res := s.Call(ctx, harness.ToolCall{Name: "read"})[0]; !errors.Is(res.Cause, harness.ErrNoSession) || !res.Refused {
				t.Errorf("Call: %+v", res)
			}
			if res := s.Call(ctx, harness.ToolCall{Name: "read"}); len(res) != 1 || !errors.Is(res[0].Cause, harness.ErrNoSession) {
				t.Errorf("Call: %+v", res)
			}
			if s.Tools() != nil {
				t.Errorf("Tools %v", s.Tools())
			}
			if note := s.Note(); note != harness.ErrNoSession.Error() {
				t.Errorf("Note: %q", note)
			}
			for what, res := range map[string]landing.Result{
				"Answer": s.Answer("42"), "Land a cause": s.Land(ctx, &harness.MustLandError{Cause: landing.CauseBudget}, nil),
				"Land": s.Land(ctx, nil, nil), "Land an error": s.Land(ctx, errors.New("x"), nil), "Run": s.Run(ctx),
			} {
				if res.Status != landing.Partial || !strings.Contains(res.Text(), harness.ErrNoSession.Error()) {
					t.Errorf("%s: %+v, want a partial result that says the Session was not started", what, res)
				}
			}
			if err := s.Close(); !errors.Is(err, harness.ErrNoSession) {
				t.Errorf("Close: %v", err)
			}
		})
	}
	var agent harness.Agent
	b, err := budget.New(budget.Config{Total: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Run(t.Context(), b, "find cats", harness.ChildCall{}); !errors.Is(err, harness.ErrNoModel) {
		t.Errorf("a zero Agent's run: %v, want ErrNoModel", err)
	}
	var ts harness.Toolset
	ts.Resolve(t.Context(), new(harness.Session))
	reg := tools.NewRegistry(nil)
	ts.Register(reg)
	if err := ts.Close(t.Context()); err != nil || len(reg.Specs()) != 0 {
		t.Errorf("a zero Toolset registered %v, closed with %v", reg.Specs(), err)
	}
	var turn harness.Turn
	if err := turn.End(nil); err == nil {
		t.Error("End of a zero Turn with no error: nil, want an error: nothing was sent on it")
	}
}

func TestTheNoteSaysTheRunIsOverOnceItHasItsResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := start(t, time.Minute, harness.Config{Task: "find cats"})
		if note := s.Note(); !strings.HasPrefix(note, "Budget: 1m0s left until the deadline") {
			t.Errorf("before the result: %q", note)
		}
		time.Sleep(time.Second)
		s.Answer("42")
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if note := s.Note(); note != harness.NoteOver {
			t.Errorf("after Close: %q, want %q", note, harness.NoteOver)
		}
	})
}

// An answer that says nothing is not complete: the run lands, upstream,
// with the harness's own summary and a boundary that says why.
func TestAnEmptyAnswerIsNotACompleteAnswer(t *testing.T) {
	for _, answer := range []string{"", " \n\t"} {
		t.Run(strconv.Quote(answer), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, _ := start(t, time.Minute, harness.Config{Task: "find cats"})
				defer s.Close()

				res := s.Answer(answer)

				if res.Status != landing.Partial || res.Cause != landing.CauseUpstream ||
					res.Boundary != "The model failed at step 0: its answer was empty." {
					t.Errorf("result %+v; want partial, upstream, saying the answer was empty", res)
				}
				if again := s.Answer("42"); again.Status != landing.Partial {
					t.Errorf("a second Answer changed the result: %+v", again)
				}
			})
		})
	}
}

// A loop of its own streams a turn with openai-go, and hands the Turn
// nothing: the middleware reads the stream as the client does. The reply
// is cut at the token limit, so End says it is not an answer, Land lands
// the run, and the attempt's record has the tokens, chunks and keepalives
// the model sent; the request carried the lease.
func TestAStreamedTurnCutAtTheTokenLimitLandsWithItsTokensCounted(t *testing.T) {
	for _, finish := range []string{"length", "content_filter"} {
		t.Run(finish, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var sentMs []string
				mux := http.NewServeMux()
				mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
					io.Copy(io.Discard, r.Body)
					sentMs = append(sentMs, r.Header.Get(budget.Header))
					w.Header().Set("Content-Type", "text/event-stream")
					chunk := func(delta, finish string) {
						f := "null"
						if finish != "" {
							f = strconv.Quote(finish)
						}
						fmt.Fprintf(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n", delta, f)
					}
					io.WriteString(w, ": keepalive\n\n")
					chunk(`{"role":"assistant","content":"The cats "}`, "")
					chunk(`{"content":"are in"}`, "")
					chunk(`{}`, finish)
					io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":7,"total_tokens":27}}`+"\n\n")
					io.WriteString(w, "data: [DONE]\n\n")
				})
				srv := serveHandler(mux)
				defer srv.close()
				oa := openai.NewClient(append([]option.RequestOption{option.WithBaseURL("http://tools.invalid/v1"),
					option.WithHTTPClient(srv.client())}, harness.ClientOptions()...)...)
				var sink collect
				s, ctx := start(t, time.Minute, harness.Config{Task: "find cats", Sinks: []trace.Sink{&sink}})

				tctx, turn, err := s.BeginTurn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				stream := oa.Chat.Completions.NewStreaming(tctx, openai.ChatCompletionNewParams{Model: "m",
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("find cats")}})
				for stream.Next() {
				}
				err = turn.End(stream.Err())
				stream.Close()

				if !errors.Is(err, model.ErrNotAnswer) {
					t.Fatalf("End: %v, want ErrNotAnswer", err)
				}
				res := s.Land(ctx, err, nil)
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				if res.Status != landing.Partial || res.Cause != landing.CauseUpstream || !strings.Contains(res.Boundary, "finish reason "+finish) {
					t.Errorf("result %+v; want partial, upstream, naming the finish reason", res)
				}
				if len(sentMs) != 1 || sentMs[0] != "44950" {
					t.Errorf("%s sent %v, want the lease, 44950", budget.Header, sentMs)
				}
				ends := only(sink.all(), trace.AttemptEnd, model.Kind)
				if len(ends) != 1 || ends[0].Outcome != trace.OK || ends[0].Tokens != 27 || ends[0].InputTokens != 20 ||
					ends[0].OutputTokens != 7 || ends[0].Chunks != 4 || ends[0].Keepalives != 1 {
					t.Errorf("attempt_end %+v; want ok, 27 tokens (20 in, 7 out), 4 chunks, 1 keepalive", ends)
				}
			})
		})
	}
}

// The model's server refuses the key: Land does not send it the landing
// call, and the boundary quotes the server.
func TestARefusedKeyLandsWithoutASecondRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{Status: http.StatusUnauthorized, Message: "Incorrect API key provided"}}})
		defer srv.Close()
		oa := openai.NewClient(append([]option.RequestOption{option.WithBaseURL(srv.URL), option.WithHTTPClient(srv.Client())},
			harness.ClientOptions()...)...)
		s, ctx := start(t, time.Minute, harness.Config{Task: "find cats"})
		defer s.Close()
		summarize := func(ctx context.Context, prompt string) (string, error) {
			tctx, turn, err := s.BeginTurn(ctx)
			if err != nil {
				return "", err
			}
			resp, err := oa.Chat.Completions.New(tctx, openai.ChatCompletionNewParams{Model: sim.ModelID,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}})
			if err = turn.End(err); err != nil {
				return "", err
			}
			return resp.Choices[0].Message.Content, nil
		}

		tctx, turn, err := s.BeginTurn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = oa.Chat.Completions.New(tctx, openai.ChatCompletionNewParams{Model: sim.ModelID,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("find cats")}})
		res := s.Land(ctx, turn.End(err), summarize)

		if want := "The model failed at step 1: 401 Incorrect API key provided."; res.Boundary != want || res.Cause != landing.CauseUpstream {
			t.Errorf("boundary %q, cause %s; want %q, upstream", res.Boundary, res.Cause, want)
		}
		if n := len(chatRequests(srv)); n != 1 {
			t.Errorf("%d requests, want 1: no landing call to the server that refused", n)
		}
	})
}

// Offer is what the harness's loop sends, for a loop of its own: the
// run's tools, by name, with their descriptions and schemas.
func TestTheRunsToolsAreOfferedToOpenAIAsTheHarnessOffersThem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spec := tools.Spec{Name: "search", Description: "Searches.", Effect: tools.Read,
			Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)}
		s, _ := start(t, time.Minute, harness.Config{Task: "find cats",
			Tools: registry(t, tools.Func(spec, func(context.Context, json.RawMessage, tools.Progress) (any, error) { return "", nil }))})
		defer s.Close()

		offered := s.Tools()

		body, err := json.Marshal(offered)
		if err != nil {
			t.Fatal(err)
		}
		want := `[{"function":{"name":"search","description":"Searches.","parameters":{"properties":{"q":{"type":"string"}},"type":"object"}},"type":"function"}]`
		if string(body) != want {
			t.Errorf("offered %s\nwant    %s", body, want)
		}
		if harness.Offer(nil) != nil {
			t.Error("no tools are offered as a tools field")
		}
		if note := s.Note(); !strings.Contains(note, "Phase: "+landing.Explore.String()+".") {
			t.Errorf("note %q, want phase explore", note)
		}
	})
}

// A completion that is not streamed is read by the middleware as the
// client reads it: the loop hands the Turn nothing, and the attempt's
// record still has the tokens, the finish reason and the model; a reply
// cut at the token limit is not an answer.
func TestACompletionIsOnTheRecordWithoutTheLoopsHelp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mux := http.NewServeMux()
		mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"m-2026","choices":[{"index":0,`+
				`"message":{"role":"assistant","content":"The cats are in"},"finish_reason":"length"}],`+
				`"usage":{"prompt_tokens":20,"completion_tokens":7,"total_tokens":27}}`)
		})
		srv := serveHandler(mux)
		defer srv.close()
		oa := openai.NewClient(append([]option.RequestOption{option.WithBaseURL("http://tools.invalid/v1"),
			option.WithHTTPClient(srv.client())}, harness.ClientOptions()...)...)
		var sink collect
		s, ctx := start(t, time.Minute, harness.Config{Task: "find cats", Sinks: []trace.Sink{&sink}})

		tctx, turn, err := s.BeginTurn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = oa.Chat.Completions.New(tctx, openai.ChatCompletionNewParams{Model: "m",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("find cats")}})
		err = turn.End(err)
		s.Close()

		if !errors.Is(err, model.ErrNotAnswer) {
			t.Errorf("End: %v, want ErrNotAnswer: the reply was cut at the token limit", err)
		}
		ends := only(sink.all(), trace.AttemptEnd, model.Kind)
		if len(ends) != 1 || ends[0].Tokens != 27 || ends[0].InputTokens != 20 || ends[0].OutputTokens != 7 ||
			ends[0].FinishReason != "length" || ends[0].ResponseModel != "m-2026" {
			t.Errorf("attempt_end %+v; want 27 tokens (20 in, 7 out), finish length, model m-2026", ends)
		}
	})
}

// BeginTurn is where a loop of its own learns that the run must land: it
// refuses the turn with the cause, and Land of that error lands for it.
func TestBeginTurnRefusesATurnTheRunMustNotMakeAndLandSaysWhy(t *testing.T) {
	cases := []struct {
		name  string
		cfg   harness.Config
		after time.Duration
		turns int // turns made and ended before the one refused
		cause landing.Cause
	}{
		{"the steps ran out", harness.Config{Task: "find cats", MaxSteps: 1}, 0, 1, landing.CauseMaxSteps},
		{"the reserve came", harness.Config{Task: "find cats"}, 46 * time.Second, 0, landing.CauseBudget},
		{"the quiet clock fired", harness.Config{Task: "find cats", Quiet: 2 * time.Second}, 3 * time.Second, 0, landing.CauseQuiet},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := sim.NewPipeServer(nil)
				defer srv.Close()
				s, ctx := start(t, time.Minute, tc.cfg)
				defer s.Close()
				for range tc.turns {
					if _, err := ask(s, ctx, harnessClient(srv)); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(tc.after)

				_, turn, err := s.BeginTurn(ctx)

				ml, ok := errors.AsType[*harness.MustLandError](err)
				if !ok || ml.Cause != tc.cause || !errors.Is(err, harness.ErrMustLand) || turn != nil {
					t.Fatalf("BeginTurn: %v, %v; want a MustLandError, cause %s, and no turn", turn, err, tc.cause)
				}
				res := s.Land(ctx, err, nil)
				if res.Status != landing.Partial || res.Cause != tc.cause {
					t.Errorf("result %+v, want partial, %s", res, tc.cause)
				}
				if n := len(chatRequests(srv)); n != tc.turns {
					t.Errorf("%d requests, want %d: nothing is sent on a refused turn", n, tc.turns)
				}
			})
		})
	}
}
