package model_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// bodies keeps the bodies of the requests a client sends, on their way
// to the sim.
type bodies struct {
	mu   sync.Mutex
	sent [][]byte
	next http.RoundTripper
}

func (b *bodies) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.sent = append(b.sent, body)
	b.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body))
	return b.next.RoundTrip(r)
}

func searchTool() []openai.ChatCompletionToolUnionParam {
	return []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: "search",
		Parameters: shared.FunctionParameters{"type": "object",
			"properties": map[string]any{"query": map[string]any{"type": "string"}}, "required": []string{"query"}},
	})}
}

func TestTheResponsesAPIRoundTripsAToolCallAndCarriesItsOutputItems(t *testing.T) {
	srv := sim.NewServer(nil)
	defer srv.Close()
	sent := &bodies{next: srv.Client().Transport}
	c, err := model.New(model.Config{BaseURL: srv.URL, Model: "sim", API: model.APIResponses, HTTPClient: &http.Client{Transport: sent}})
	if err != nil {
		t.Fatal(err)
	}
	var rec record
	var progress []trace.Signal
	obs := rec.observer()
	heard := obs.Signal
	obs.Signal = func(s trace.Signal) {
		if s.Event == watchdog.Progress {
			progress = append(progress, s)
		}
		heard(s)
	}
	b := newBudget(t, time.Minute)

	req := ask("find cats")
	req.Tools, req.Parallel = searchTool(), true
	first, err := c.Complete(t.Context(), b, req, obs)
	if err != nil {
		t.Fatal(err)
	}
	calls := first.Message.ToolCalls
	if first.FinishReason != "tool_calls" || len(calls) != 1 || calls[0].Function.Name != "search" ||
		calls[0].Function.Arguments != `{"query":"find cats"}` {
		t.Fatalf("first turn %q with calls %+v, want one call of search", first.FinishReason, calls)
	}
	if first.Usage.TotalTokens == 0 || first.Usage.CompletionTokensDetails.ReasoningTokens == 0 {
		t.Errorf("usage %+v, want tokens and reasoning tokens", first.Usage)
	}

	req.Messages = append(req.Messages, model.AssistantOf(first.Message), openai.ToolMessage("3 cats", calls[0].ID))
	second, err := c.Complete(t.Context(), b, req, obs)
	if err != nil {
		t.Fatal(err)
	}
	if want := `[sim] Answer to "find cats": search returned 3 cats.`; second.Message.Content != want || second.FinishReason != "stop" {
		t.Errorf("second turn %q (%s), want %q", second.Message.Content, second.FinishReason, want)
	}

	// What went on the wire: the second request sends the first turn's
	// reasoning item back before its function call, and the call's
	// output after it.
	var body struct {
		Input []map[string]any `json:"input"`
	}
	if err := json.Unmarshal(sent.sent[1], &body); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, it := range body.Input {
		typ, _ := it["type"].(string)
		if typ == "" {
			typ = "message:" + it["role"].(string)
		}
		types = append(types, typ)
	}
	if got, want := strings.Join(types, " "), "message:user reasoning function_call function_call_output"; got != want {
		t.Errorf("second request's input %s, want %s", got, want)
	}
	// They go back as they came, with their ids, as the API pairs a
	// reasoning item with the item that followed it.
	for i, prefix := range map[int]string{1: "rs_sim_", 2: "fc_sim_"} {
		if id, _ := body.Input[i]["id"].(string); !strings.HasPrefix(id, prefix) {
			t.Errorf("carried item %v, want the sim's %s id", body.Input[i], prefix)
		}
	}

	// Each turn said one whole thing (the call, then the answer), and its
	// reasoning summary part was heard as the model call's progress,
	// under the model call's key with rising units, as the watchdog
	// counts progress.
	var messages int
	for _, e := range rec.events {
		if e == watchdog.ModelMessage {
			messages++
		}
	}
	if messages != 2 {
		t.Errorf("%d completed messages heard, want 2", messages)
	}
	if len(progress) != 2 {
		t.Fatalf("progress %+v, want one heartbeat a turn", progress)
	}
	for i, p := range progress {
		if p.Step != model.Kind || p.Key != "" || p.Units != int64(i+1) {
			t.Errorf("heartbeat %d: %+v, want step %q, a model call's key \"\", units %d", i, p, model.Kind, i+1)
		}
	}
	if !watchdog.Grew(progress[0].Units, progress[1].Units) {
		t.Errorf("the second turn's units %d did not grow on the first's %d", progress[1].Units, progress[0].Units)
	}
}

func TestAReasoningSummaryIsProgressThatTheWatchdogHears(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A reasoning model that is silent for 1s after its opening
		// events, then sends an event every 250ms: its summary part is
		// done at 1.75s, its message not before 5s. On a quiet clock of
		// 2s, the opening events and the deltas keep nothing alive; the
		// summary part is progress, and the clock cuts the call 2s after
		// it rather than 2s after the start.
		srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{FirstToken: time.Second, ChunkGap: 250 * time.Millisecond}}})
		defer srv.Close()
		c := newClient(t, srv, model.Config{API: model.APIResponses, MaxAttempts: 1})
		w, ctx, err := watchdog.Start(t.Context(), watchdog.Config{Quiet: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		var grew []int64
		obs := &trace.Observer{Signal: func(s trace.Signal) {
			switch s.Event {
			case watchdog.Progress:
				if w.Progress(s.Key, s.Units) {
					grew = append(grew, s.Units)
				}
			case watchdog.Token:
				w.Token(1)
			default:
				w.Mark(s.Event)
			}
		}}
		start := time.Now()
		var rec record
		_, err = c.Complete(ctx, newBudget(t, time.Minute), ask("find cats"), combine(obs, rec.observer()))
		if got, want := time.Since(start), 3750*time.Millisecond; got != want {
			t.Errorf("cut after %v, want %v: 2s after the summary part", got, want)
		}
		if !errors.Is(err, watchdog.ErrQuiet) {
			t.Errorf("err %v, want the quiet clock's", err)
		}
		if len(grew) != 1 || grew[0] != 1 {
			t.Errorf("progress heard %v, want the one summary part's", grew)
		}
		if got := rec.outcomes(); !slices.Equal(got, []trace.Outcome{trace.Quiet}) {
			t.Errorf("outcomes %v", got)
		}
	})
}

// combine is an observer whose signals and attempt ends both a and b hear.
func combine(a, b *trace.Observer) *trace.Observer {
	return &trace.Observer{
		Signal:     func(s trace.Signal) { a.Signal(s); b.Signal(s) },
		AttemptEnd: b.AttemptEnd,
	}
}

func TestErrorsInAResponsesStreamAreClassifiedAsTheChatPathClassifiesTheirStatus(t *testing.T) {
	cases := []struct {
		name         string
		rule         sim.Rule
		wantOutcomes []trace.Outcome
		wantErr      error // nil: the turn answers
		wantStatus   int   // the first attempt's
	}{
		{
			name:         "an error event rate_limit_exceeded is a 429, retried",
			rule:         sim.Rule{Request: 1, StreamError: "rate_limit_exceeded"},
			wantOutcomes: []trace.Outcome{trace.RateLimited, trace.OK},
			wantStatus:   http.StatusTooManyRequests,
		},
		{
			name:         "response.failed server_error is a 500, retried",
			rule:         sim.Rule{Request: 1, Failed: "server_error"},
			wantOutcomes: []trace.Outcome{trace.UpstreamError, trace.OK},
			wantStatus:   http.StatusInternalServerError,
		},
		{
			name:         "an error event of the request's, invalid_prompt, is a 400, not retried",
			rule:         sim.Rule{StreamError: "invalid_prompt"},
			wantOutcomes: []trace.Outcome{trace.Invalid},
			wantErr:      trace.ErrFailed,
			wantStatus:   http.StatusBadRequest,
		},
		{
			name:         "a stream that stops after its opening events is upstream, retried",
			rule:         sim.Rule{Request: 1, CloseAfterChunks: new(3)},
			wantOutcomes: []trace.Outcome{trace.UpstreamError, trace.OK},
		},
		{
			name:         "a 503 before the stream is upstream, retried",
			rule:         sim.Rule{Request: 1, Status: 503},
			wantOutcomes: []trace.Outcome{trace.UpstreamError, trace.OK},
			wantStatus:   http.StatusServiceUnavailable,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{tc.rule}})
				defer srv.Close()
				c := newClient(t, srv, model.Config{API: model.APIResponses})
				var rec record
				resp, err := c.Complete(t.Context(), newBudget(t, time.Minute), ask("find cats"), rec.observer())
				if got := rec.outcomes(); !slices.Equal(got, tc.wantOutcomes) {
					t.Errorf("outcomes %v, want %v", got, tc.wantOutcomes)
				}
				switch {
				case tc.wantErr == nil && err != nil:
					t.Fatalf("err %v", err)
				case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				case tc.wantErr == nil && !strings.HasPrefix(resp.Message.Content, "[sim] Summary"):
					t.Errorf("answer %q", resp.Message.Content)
				}
				if st := rec.ends[0].Status; st != tc.wantStatus {
					t.Errorf("first attempt's status %d, want %d", st, tc.wantStatus)
				}
			})
		})
	}
}

func TestAStreamThatStopsEndsAsOnTheChatPath(t *testing.T) {
	for _, api := range []string{model.APIChat, model.APIResponses} {
		t.Run(api, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{CloseAfterChunks: new(2)}}})
				defer srv.Close()
				c := newClient(t, srv, model.Config{API: api, MaxAttempts: 1})
				var rec record
				_, err := c.Complete(t.Context(), newBudget(t, time.Minute), ask("find cats"), rec.observer())
				if !errors.Is(err, io.ErrUnexpectedEOF) || !errors.Is(err, trace.ErrFailed) {
					t.Errorf("err %v, want the stream's unexpected EOF, failed", err)
				}
				if got := rec.outcomes(); !slices.Equal(got, []trace.Outcome{trace.UpstreamError}) {
					t.Errorf("outcomes %v", got)
				}
				// On the Responses API the two events that came are its
				// lifecycle events (response.created, in_progress):
				// nothing of an answer, which a boundary must not call
				// streaming (issue 27).
				want := map[string]int64{model.APIChat: 2, model.APIResponses: 0}[api]
				if rec.ends[0].Chunks != want {
					t.Errorf("chunks %d, want %d of the 2 events that came", rec.ends[0].Chunks, want)
				}
			})
		})
	}
}

func TestTheResponsesAPISendsTheLeaseAsBudgetRemainingMs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(nil)
		defer srv.Close()
		c := newClient(t, srv, model.Config{API: model.APIResponses, Ceiling: 4 * time.Second})
		if _, err := c.Complete(t.Context(), newBudget(t, time.Minute), ask("find cats"), nil); err != nil {
			t.Fatal(err)
		}
		reqs := srv.Requests()
		if len(reqs) != 1 || reqs[0].Path != "/v1/responses" || reqs[0].Header.Get(budget.Header) != "4000" {
			t.Errorf("requests %+v, want one to /v1/responses with %s 4000", reqs, budget.Header)
		}
	})
}

func TestNewRefusesAnAPIItDoesNotSpeak(t *testing.T) {
	_, err := model.New(model.Config{Model: "sim", API: "completions"})
	if !errors.Is(err, model.ErrAPI) {
		t.Errorf("err %v, want ErrAPI", err)
	}
}

// Issue 27: on the Responses API a chunk is a delta of the answer, as a
// chat chunk is; a reasoning model's lifecycle events before its silence
// are not, or a model that had said nothing was named "still streaming".
func TestOnTheResponsesAPIOnlyDeltasAreChunks(t *testing.T) {
	cases := []struct {
		name       string
		rule       sim.Rule
		wantChunks bool
	}{
		{"an answer streams its deltas as chunks", sim.Rule{Request: 1}, true},
		{"a model silent after its opening events sent no chunk", sim.Rule{Request: 1, HangAfterChunks: new(3)}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{tc.rule}})
				defer srv.Close()
				c := newClient(t, srv, model.Config{API: model.APIResponses, MaxAttempts: 1})
				var rec record
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				defer cancel()
				c.Complete(ctx, newBudget(t, time.Minute), ask("find cats"), rec.observer())
				if got := rec.ends[0].Chunks > 0; got != tc.wantChunks {
					t.Errorf("chunks %d, want some: %v", rec.ends[0].Chunks, tc.wantChunks)
				}
			})
		})
	}
}
