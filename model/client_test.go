package model_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	"github.com/openai/openai-go/v3"
)

// record collects what the observer hears.
type record struct {
	mu       sync.Mutex
	starts   []trace.Attempt
	ends     []trace.Attempt
	delays   []budget.Delay
	refusals []error
	events   []watchdog.Event
}

func (r *record) observer() *trace.Observer {
	return &trace.Observer{
		AttemptStart: func(a trace.Attempt) { r.mu.Lock(); r.starts = append(r.starts, a); r.mu.Unlock() },
		AttemptEnd:   func(a trace.Attempt) { r.mu.Lock(); r.ends = append(r.ends, a); r.mu.Unlock() },
		Backoff: func(_, _ string, _ int, d budget.Delay, _ error) {
			r.mu.Lock()
			r.delays = append(r.delays, d)
			r.mu.Unlock()
		},
		Refused: func(_, _ string, _ int, err error) { r.mu.Lock(); r.refusals = append(r.refusals, err); r.mu.Unlock() },
		Signal:  func(s trace.Signal) { r.mu.Lock(); r.events = append(r.events, s.Event); r.mu.Unlock() },
	}
}

func (r *record) outcomes() []trace.Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []trace.Outcome
	for _, a := range r.ends {
		out = append(out, a.Outcome)
	}
	return out
}

func (r *record) semantic() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.events {
		if e.Semantic() {
			n++
		}
	}
	return n
}

func newClient(t *testing.T, srv *sim.Server, cfg model.Config) *model.Client {
	t.Helper()
	cfg.BaseURL, cfg.HTTPClient, cfg.Model = srv.URL, srv.Client(), "sim"
	if cfg.Backoff.Rand == nil {
		cfg.Backoff.Rand = func(n int64) int64 { return n / 2 } // the middle of the jitter range
	}
	c, err := model.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newBudget(t *testing.T, total time.Duration) *budget.Budget {
	t.Helper()
	b, err := budget.New(budget.Config{Total: total})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ask(task string) model.Request {
	return model.Request{Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(task)}}
}

func TestRetriesUnderTheBudgetAsTheSpecAllows(t *testing.T) {
	cases := []struct {
		name         string
		scenario     *sim.Scenario
		cfg          model.Config
		budget       time.Duration
		wantRequests int
		wantOutcomes []trace.Outcome
		wantErr      error // nil: the call succeeds
		wantElapsed  time.Duration
		spreadUpTo   time.Duration // the jitter after a server's wait: elapsed may pass wantElapsed by up to this
		check        func(t *testing.T, reqs []sim.Request, rec *record)
	}{
		{
			name:         "a 500 then ok makes exactly two requests",
			scenario:     &sim.Scenario{Rules: []sim.Rule{{Request: 1, Status: 500}}},
			budget:       time.Minute,
			wantRequests: 2,
			wantOutcomes: []trace.Outcome{trace.UpstreamError, trace.OK},
			wantElapsed:  125 * time.Millisecond, // the middle of [0, 250ms]
			check: func(t *testing.T, _ []sim.Request, rec *record) {
				if len(rec.delays) != 1 || rec.delays[0].Source != budget.FromJitter || rec.delays[0].GiveUp {
					t.Errorf("backoff %+v, want one jitter sleep", rec.delays)
				}
			},
		},
		{
			name:         "429 with retry-after-ms 200 waits 200ms, then its spread of at most 250ms",
			scenario:     &sim.Scenario{Rules: []sim.Rule{{Request: 1, Status: 429, RetryAfterMs: "200"}}},
			budget:       time.Minute,
			wantRequests: 2,
			wantOutcomes: []trace.Outcome{trace.RateLimited, trace.OK},
			wantElapsed:  200 * time.Millisecond,
			spreadUpTo:   budget.DefaultBase,
			check: func(t *testing.T, reqs []sim.Request, rec *record) {
				if gap := reqs[1].Time.Sub(reqs[0].Time); gap < 200*time.Millisecond {
					t.Errorf("second request %v after the first, want ≥ 200ms", gap)
				}
				if rec.delays[0].Source != budget.FromRetryAfter {
					t.Errorf("delay source %v", rec.delays[0].Source)
				}
			},
		},
		{
			name:         "Retry-After 3600 on a 5s budget gives up at once",
			scenario:     &sim.Scenario{Rules: []sim.Rule{{Status: 429, RetryAfter: "3600"}}},
			budget:       5 * time.Second,
			wantRequests: 1,
			wantOutcomes: []trace.Outcome{trace.RateLimited},
			wantErr:      trace.ErrGaveUp,
			wantElapsed:  0,
			check: func(t *testing.T, _ []sim.Request, rec *record) {
				if len(rec.delays) != 1 || !rec.delays[0].GiveUp || rec.delays[0].Reason != budget.RetryAfterExceedsBudget {
					t.Errorf("delays %+v, want a give-up with %s", rec.delays, budget.RetryAfterExceedsBudget)
				}
			},
		},
		{
			name:         "a hanging server ends the attempt at its lease, then a retry answers",
			scenario:     &sim.Scenario{Rules: []sim.Rule{{Request: 1, Hang: true}}},
			cfg:          model.Config{Ceiling: 2 * time.Second},
			budget:       time.Minute,
			wantRequests: 2,
			wantOutcomes: []trace.Outcome{trace.GaveUp, trace.OK},
			wantElapsed:  2*time.Second + 125*time.Millisecond,
			check: func(t *testing.T, _ []sim.Request, rec *record) {
				if !errors.Is(rec.ends[0].Err, budget.ErrLeaseExpired) || !errors.Is(rec.ends[0].Err, trace.ErrGaveUp) {
					t.Errorf("first attempt's error %v, want the lease's cause", rec.ends[0].Err)
				}
			},
		},
		{
			name:         "a hanging server with one attempt gives up at the lease",
			scenario:     &sim.Scenario{Rules: []sim.Rule{{Hang: true}}},
			cfg:          model.Config{Ceiling: 3 * time.Second, MaxAttempts: 1},
			budget:       time.Minute,
			wantRequests: 1,
			wantOutcomes: []trace.Outcome{trace.GaveUp},
			wantErr:      budget.ErrLeaseExpired,
			wantElapsed:  3 * time.Second,
		},
		{
			name:         "keepalives only: counted, nothing semantic, cut at the lease",
			scenario:     &sim.Scenario{Rules: []sim.Rule{{Keepalive: sim.Forever, KeepaliveEvery: time.Second}}},
			cfg:          model.Config{Ceiling: 5500 * time.Millisecond, MaxAttempts: 1},
			budget:       time.Minute,
			wantRequests: 1,
			wantOutcomes: []trace.Outcome{trace.GaveUp},
			wantErr:      trace.ErrGaveUp,
			wantElapsed:  5500 * time.Millisecond,
			check: func(t *testing.T, _ []sim.Request, rec *record) {
				if k := rec.ends[0].Keepalives; k < 5 || k > 6 {
					t.Errorf("keepalives %d, want one a second for 5.5s", k)
				}
				if n := rec.semantic(); n != 0 {
					t.Errorf("%d semantic events from keepalives", n)
				}
				if rec.ends[0].Chunks != 0 {
					t.Errorf("chunks %d", rec.ends[0].Chunks)
				}
			},
		},
		{
			name:         "a stream closed mid-way is a failed attempt and is retried",
			scenario:     &sim.Scenario{Rules: []sim.Rule{{Request: 1, CloseAfterChunks: new(2)}}},
			budget:       time.Minute,
			wantRequests: 2,
			wantOutcomes: []trace.Outcome{trace.UpstreamError, trace.OK},
			wantElapsed:  125 * time.Millisecond,
		},
		{
			name:         "a 400 is invalid and not retried",
			scenario:     &sim.Scenario{Rules: []sim.Rule{{Status: 400}}},
			budget:       time.Minute,
			wantRequests: 1,
			wantOutcomes: []trace.Outcome{trace.Invalid},
			wantErr:      trace.ErrFailed,
		},
		{
			name:         "retries stop at MaxAttempts",
			scenario:     &sim.Scenario{Rules: []sim.Rule{{Status: 503}}},
			cfg:          model.Config{MaxAttempts: 2},
			budget:       time.Minute,
			wantRequests: 2,
			wantOutcomes: []trace.Outcome{trace.UpstreamError, trace.UpstreamError},
			wantErr:      trace.ErrFailed,
			wantElapsed:  125 * time.Millisecond,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := sim.NewPipeServer(tc.scenario)
				defer srv.Close()
				c := newClient(t, srv, tc.cfg)
				b := newBudget(t, tc.budget)
				rec := &record{}
				start := time.Now()
				resp, err := c.Complete(t.Context(), b, ask("capital of France?"), rec.observer())
				elapsed := time.Since(start)
				if tc.wantErr == nil && err != nil {
					t.Fatalf("Complete: %v", err)
				}
				if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
					t.Fatalf("Complete = %v, want %v", err, tc.wantErr)
				}
				if tc.wantErr == nil && (resp.FinishReason != "stop" || !strings.Contains(resp.Message.Content, "[sim]")) {
					t.Errorf("response %+v", resp)
				}
				reqs := srv.Requests()
				if len(reqs) != tc.wantRequests {
					t.Errorf("%d requests reached the server, want %d", len(reqs), tc.wantRequests)
				}
				if got := rec.outcomes(); !slices.Equal(got, tc.wantOutcomes) {
					t.Errorf("outcomes %v, want %v", got, tc.wantOutcomes)
				}
				if elapsed < tc.wantElapsed || elapsed > tc.wantElapsed+tc.spreadUpTo {
					t.Errorf("took %v, want %v (and at most %v more)", elapsed, tc.wantElapsed, tc.spreadUpTo)
				}
				if tc.check != nil && len(reqs) == tc.wantRequests {
					tc.check(t, reqs, rec)
				}
			})
		})
	}
}

func TestEveryAttemptCarriesItsLeaseAsBudgetRemainingMs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{Request: 1, Status: 502}}})
		defer srv.Close()
		c := newClient(t, srv, model.Config{Ceiling: 30 * time.Second})
		b := newBudget(t, 20*time.Second) // reserve 5s: 15s − 50ms available, below the ceiling
		rec := &record{}
		if _, err := c.Complete(t.Context(), b, ask("q"), rec.observer()); err != nil {
			t.Fatal(err)
		}
		reqs := srv.Requests()
		for i, r := range reqs {
			got := r.Header.Get(budget.Header)
			want := rec.starts[i].Lease.Millis()
			if got != want {
				t.Errorf("request %d sent %s %q, lease %q", i+1, budget.Header, got, want)
			}
		}
		if reqs[0].Header.Get(budget.Header) != "14950" {
			t.Errorf("first lease %s, want 14950 (20s − 5s reserve − 50ms floor)", reqs[0].Header.Get(budget.Header))
		}
	})
}

func TestARefusedLeaseSendsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(nil)
		defer srv.Close()
		c := newClient(t, srv, model.Config{})
		b := newBudget(t, 10*time.Second)
		b.Estimates().Kind(model.Kind).Declare(3*time.Second, 5*time.Second)
		time.Sleep(5 * time.Second) // 2.45s could be granted, below the 3s p50
		rec := &record{}
		_, err := c.Complete(t.Context(), b, ask("q"), rec.observer())
		if !errors.Is(err, budget.ErrRefused) {
			t.Fatalf("Complete = %v, want a refusal", err)
		}
		if len(srv.Requests()) != 0 || len(rec.starts) != 0 || len(rec.refusals) != 1 {
			t.Errorf("requests %d, attempts %d, refusals %d", len(srv.Requests()), len(rec.starts), len(rec.refusals))
		}
	})
}

func TestTheLandingCallOffersNoToolsAndMaySpendTheReserve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(nil)
		defer srv.Close()
		c := newClient(t, srv, model.Config{})
		b := newBudget(t, 10*time.Second)
		time.Sleep(8 * time.Second) // inside the 2.5s reserve
		if _, err := c.Complete(t.Context(), b, ask("q"), nil); !errors.Is(err, budget.ErrRefused) {
			t.Fatalf("a work call inside the reserve = %v, want refused", err)
		}
		rec := &record{}
		resp, err := c.Land(t.Context(), b, ask("summarize").Messages, rec.observer())
		if err != nil {
			t.Fatal(err)
		}
		reqs := srv.Requests()
		if len(reqs) != 1 || reqs[0].HasTools {
			t.Fatalf("landing requests %+v: want one, with no tools field", reqs)
		}
		if !rec.starts[0].Lease.Landing || rec.starts[0].Lease.Granted != 1950*time.Millisecond {
			t.Errorf("landing lease %+v, want 2s − 50ms", rec.starts[0].Lease)
		}
		if resp.Message.Content == "" {
			t.Error("empty landing summary")
		}
	})
}

func TestToolCallsAndUsageAreReportedAndSemantic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(nil)
		defer srv.Close()
		c := newClient(t, srv, model.Config{})
		b := newBudget(t, time.Minute)
		rec := &record{}
		tools := []openai.ChatCompletionToolUnionParam{
			openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "search", Description: openai.String("web search")}),
			openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "fetch", Description: openai.String("fetch a page")}),
		}
		resp, err := c.Complete(t.Context(), b, model.Request{Messages: ask("q").Messages, Tools: tools, Parallel: true}, rec.observer())
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Message.ToolCalls) != 2 || resp.FinishReason != "tool_calls" {
			t.Fatalf("message %+v finish %q, want two tool calls", resp.Message, resp.FinishReason)
		}
		// No content, two tool calls: each finished call is a message of
		// the model's, semantic, and nothing else is.
		if n := rec.semantic(); n != 2 || !slices.Contains(rec.events, watchdog.Token) {
			t.Errorf("%d semantic events, want 2, one per tool call, among tokens (events %v)", n, rec.events)
		}
		if resp.Usage.TotalTokens == 0 || rec.ends[0].Usage.Total != resp.Usage.TotalTokens ||
			rec.ends[0].Usage.Input != resp.Usage.PromptTokens || rec.ends[0].Usage.Output != resp.Usage.CompletionTokens {
			t.Errorf("usage %+v, attempt usage %+v", resp.Usage, rec.ends[0].Usage)
		}
		if p := srv.Requests()[0].Parallel; p == nil || !*p {
			t.Errorf("parallel_tool_calls %v, want true", p)
		}
	})
}

func TestTheRunsCauseNamesTheOutcome(t *testing.T) {
	cases := []struct {
		name  string
		cause error
		wall  bool // reports whether the cause comes with the context's deadline
		want  trace.Outcome
	}{
		{"quiet clock", &watchdog.StallError{Quiet: time.Second}, false, trace.Quiet},
		{"cancelled", errors.New("ctrl-c"), false, trace.Cancelled},
		{"the wall is a deadline, so we gave up", watchdog.ErrWall, true, trace.GaveUp},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{Hang: true}}})
				defer srv.Close()
				c := newClient(t, srv, model.Config{})
				b := newBudget(t, time.Minute)
				ctx, cancel := context.WithCancelCause(t.Context())
				defer cancel(nil)
				if tc.wall {
					var stop context.CancelFunc
					ctx, stop = context.WithTimeoutCause(ctx, time.Second, tc.cause)
					defer stop()
				} else {
					time.AfterFunc(time.Second, func() { cancel(tc.cause) })
				}
				rec := &record{}
				_, err := c.Complete(ctx, b, ask("q"), rec.observer())
				if !errors.Is(err, trace.ErrGaveUp) || !errors.Is(err, tc.cause) {
					t.Errorf("Complete = %v", err)
				}
				if got := rec.outcomes(); !slices.Equal(got, []trace.Outcome{tc.want}) {
					t.Errorf("outcomes %v, want [%v]", got, tc.want)
				}
				if len(srv.Requests()) != 1 {
					t.Errorf("%d requests, want 1: a cancelled run does not retry", len(srv.Requests()))
				}
			})
		})
	}
}

// TestOverRealLoopback runs the same client over a real socket: the
// ordering and counts hold, time is only bounded.
func TestOverRealLoopback(t *testing.T) {
	srv := sim.NewServer(&sim.Scenario{Rules: []sim.Rule{{Request: 1, Status: 500}, {Request: 2, CloseAfterChunks: new(1)}}})
	defer srv.Close()
	c := newClient(t, srv, model.Config{APIKey: "sk-secret"})
	b := newBudget(t, 30*time.Second)
	rec := &record{}
	resp, err := c.Complete(t.Context(), b, ask("q"), rec.observer())
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.outcomes(); !slices.Equal(got, []trace.Outcome{trace.UpstreamError, trace.UpstreamError, trace.OK}) {
		t.Errorf("outcomes %v", got)
	}
	if len(srv.Requests()) != 3 || resp.Attempts != 3 {
		t.Errorf("%d requests, %d attempts; want 3", len(srv.Requests()), resp.Attempts)
	}
	if auth := srv.Requests()[0].Header.Get("Authorization"); strings.Contains(auth, "sk-secret") {
		t.Errorf("the recorded Authorization header leaks the key: %q", auth)
	}
}

func TestAFailedLandingCallIsNotRetried(t *testing.T) {
	cases := []struct {
		name  string
		sleep time.Duration // before landing, on a 10s budget whose reserve starts at 7.5s
	}{
		{"landing early, with work time left", 0},
		{"landing inside the reserve", 8 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{Request: 1, Status: 500}}})
				defer srv.Close()
				c := newClient(t, srv, model.Config{})
				b := newBudget(t, 10*time.Second)
				time.Sleep(tc.sleep)
				rec := &record{}
				start := time.Now()
				_, err := c.Land(t.Context(), b, ask("summarize").Messages, rec.observer())
				if !errors.Is(err, trace.ErrFailed) {
					t.Errorf("Land = %v, want the upstream failure", err)
				}
				if n := len(srv.Requests()); n != 1 {
					t.Errorf("%d landing requests, want exactly one", n)
				}
				if len(rec.delays) != 0 {
					t.Errorf("backoff decisions %+v, want none: landing is one call", rec.delays)
				}
				if got := time.Since(start); got != 0 {
					t.Errorf("Land took %v, want no sleep", got)
				}
			})
		})
	}
}

// The sim always ends a complete stream with a finish reason, so these
// streams come from a handler of their own, on a real loopback socket.
func TestAStreamWithoutAFinishReasonIsAFailedAttempt(t *testing.T) {
	const chunk = `data: {"id":"c1","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"half an ans"},"finish_reason":null}]}` + "\n\n"
	cases := []struct {
		name string
		body string
	}{
		{"data: [DONE] without a finish reason", chunk + "data: [DONE]\n\n"},
		{"a clean end of body without [DONE] or a finish reason", chunk},
		{"no chunk at all", "data: [DONE]\n\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var requests atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			c, err := model.New(model.Config{
				BaseURL: srv.URL + "/v1", HTTPClient: srv.Client(), Model: "m", MaxAttempts: 2,
				Backoff: budget.Backoff{Rand: func(int64) int64 { return 0 }},
			})
			if err != nil {
				t.Fatal(err)
			}
			rec := &record{}
			resp, err := c.Complete(t.Context(), newBudget(t, time.Minute), ask("q"), rec.observer())
			if !errors.Is(err, model.ErrIncomplete) || !errors.Is(err, trace.ErrFailed) {
				t.Fatalf("Complete = %+v, %v; want a failure matching ErrIncomplete and ErrFailed", resp, err)
			}
			if got := rec.outcomes(); !slices.Equal(got, []trace.Outcome{trace.UpstreamError, trace.UpstreamError}) {
				t.Errorf("outcomes %v, want two upstream errors: a cut stream is retried", got)
			}
			if n := requests.Load(); n != 2 {
				t.Errorf("%d requests, want 2", n)
			}
			if n := rec.semantic(); n != 0 {
				t.Errorf("%d semantic events from an unfinished message", n)
			}
		})
	}
}
