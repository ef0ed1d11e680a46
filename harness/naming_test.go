package harness_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
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
)

// Each failure named once, in words about what happened (issue 24): "no
// tool call had finished" was the boundary of every run that had nothing
// else to say, tools or none.

func TestABoundaryWithNoToolCallSaysWhatTheRunWasDoing(t *testing.T) {
	cases := []struct {
		name     string
		rules    []sim.Rule
		p50      time.Duration // the model's declared p50; 0: none
		cancelAt time.Duration // 0: never; <0: before the run starts
		cause    landing.Cause
		boundary string
		requests int // chat requests, the landing call's included
	}{
		{
			// B = 5s: the work lease would be 5s − 1.25s − 50ms.
			name: "the budget refused the first model turn", p50: 10 * time.Second,
			cause:    landing.CauseBudget,
			boundary: "Ran out of allotted time at step 0: there was no time for a model turn: its lease would have been 3.7s, below the model's p50 of 10s.",
		},
		{
			// The 503 takes 1s, the backoff 125ms: the retry's lease would
			// be 2.575s, below the p50 of 3s.
			name: "the model failed and there was no time to try again", p50: 3 * time.Second,
			rules: []sim.Rule{{Status: 503, Message: "overloaded", Delay: time.Second}},
			cause: landing.CauseBudget,
			boundary: "Stopped at step 1: the model failed (503 overloaded), and there was no time for another attempt: " +
				"its lease would have been 2.5s, below the model's p50 of 3s.",
			requests: 2, // the landing call: a 503 is not a refusal of the run
		},
		{
			name: "it was cancelled before the first model turn", cancelAt: -1,
			cause: landing.CauseCancelled, boundary: "Cancelled at step 0: no model turn had started.", requests: 1, // the landing call
		},
		{
			// A cancelled attempt is named, and the model, which was not cut
			// by its lease or the quiet clock, is still asked to land.
			name: "it was cancelled while the model sent nothing", rules: []sim.Rule{{Request: 1, Hang: true}}, cancelAt: 2 * time.Second,
			cause: landing.CauseCancelled, boundary: "Cancelled at step 1: the model sent nothing for 2s.", requests: 2,
		},
		{
			name: "it was cancelled while the model sent only keepalives", rules: []sim.Rule{{Request: 1, Keepalive: sim.Forever}}, cancelAt: 2 * time.Second,
			cause: landing.CauseCancelled, boundary: "Cancelled at step 1: the model sent only keepalives for 2s.", requests: 2,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := sim.NewPipeServer(&sim.Scenario{Rules: tc.rules})
				defer srv.Close()
				b, err := budget.New(budget.Config{Total: 5 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				if tc.p50 > 0 {
					b.Estimates().Kind(model.Kind).Declare(tc.p50, 2*tc.p50)
				}
				ctx, cancel := context.WithCancelCause(t.Context())
				defer cancel(nil)
				switch {
				case tc.cancelAt < 0:
					cancel(harness.ErrInterrupted)
				case tc.cancelAt > 0:
					time.AfterFunc(tc.cancelAt, func() { cancel(harness.ErrInterrupted) })
				}

				res, err := harness.Run(ctx, b, harness.Config{Task: "q", Model: newModel(t, srv)})

				if err != nil {
					t.Fatal(err)
				}
				if res.Cause != tc.cause || res.Boundary != tc.boundary {
					t.Errorf("cause %s, boundary %q; want %s, %q", res.Cause, res.Boundary, tc.cause, tc.boundary)
				}
				if n := len(chatRequests(srv)); n != tc.requests {
					t.Errorf("%d chat requests, want %d", n, tc.requests)
				}
			})
		})
	}
}

// A run whose every tool call failed answers, but not as complete: its
// result is partial with cause tools_failed, the model's answer kept.
func TestARunWhoseEveryToolCallFailedIsNotComplete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(nil)
		defer srv.Close()
		broken := tools.Func(tools.Spec{Name: "search", Effect: tools.Read}, func(context.Context, json.RawMessage, tools.Progress) (any, error) {
			return nil, errors.New("index is down")
		})
		var tr bytes.Buffer

		res, err := run(t, t.Context(), time.Minute, harness.Config{Task: "find cats", Model: newModel(t, srv), Tools: registry(t, broken)}, &tr)

		if err != nil {
			t.Fatal(err)
		}
		if res.Status != landing.Partial || res.Cause != landing.CauseToolsFailed {
			t.Errorf("status %s, cause %s; want partial, tools_failed", res.Status, res.Cause)
		}
		if want := "Answered at step 2 without a tool's result: search failed."; res.Boundary != want {
			t.Errorf("boundary %q, want %q", res.Boundary, want)
		}
		if !strings.HasPrefix(res.Answer, "[sim]") {
			t.Errorf("answer %q, want the model's, kept", res.Answer)
		}
		recs := records(t, &tr)
		if end := recs[len(recs)-1]; end.Event != trace.RunEnd || end.Result != "partial" || end.Cause != "tools_failed" {
			t.Errorf("last record %+v, want run_end partial, tools_failed", end)
		}
	})
}

// A base URL that answers 200 with an HTML page is named, asked once, and
// not asked to land. Real loopback: the page comes from an httptest
// server, read by openai-go.
func TestABaseURLThatIsNotAModelServerIsNamedAndNotAskedToLand(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!doctype html><html><body>It works!</body></html>\n")
	}))
	defer srv.Close()
	m, err := model.New(model.Config{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client(), Model: "gpt-x"})
	if err != nil {
		t.Fatal(err)
	}

	res, err := run(t, t.Context(), time.Minute, harness.Config{Task: "q", Model: m}, nil)

	if err != nil {
		t.Fatal(err)
	}
	want := "The model failed at step 1: " + srv.URL + "/v1 is not an OpenAI-compatible model server: it answered 200 text/html."
	if res.Cause != landing.CauseUpstream || res.Boundary != want {
		t.Errorf("cause %s, boundary %q; want upstream, %q", res.Cause, res.Boundary, want)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("%d requests, want 1: not retried, no landing call", n)
	}
	if res.Attempts != 1 {
		t.Errorf("%d attempts, want 1", res.Attempts)
	}
}
