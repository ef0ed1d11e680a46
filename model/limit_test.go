package model_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/trace"
)

// overAPI is a client of srv speaking api, whose request bodies sent
// keeps.
func overAPI(t *testing.T, srv *sim.Server, api string) (*model.Client, *bodies) {
	t.Helper()
	sent := &bodies{next: srv.Client().Transport}
	c, err := model.New(model.Config{BaseURL: srv.URL, Model: "sim", API: api, HTTPClient: &http.Client{Transport: sent}})
	if err != nil {
		t.Fatal(err)
	}
	return c, sent
}

// limitField is the parameter each API carries the output-token limit in.
var limitField = map[string]string{model.APIChat: "max_completion_tokens", model.APIResponses: "max_output_tokens"}

func TestAnAnswerCutAtItsTokenLimitIsAnOKAttemptThatFinishedForLength(t *testing.T) {
	for _, api := range []string{model.APIChat, model.APIResponses} {
		t.Run(api, func(t *testing.T) {
			srv := sim.NewServer(nil)
			defer srv.Close()
			c, sent := overAPI(t, srv, api)
			rec := &record{}
			req := ask("hi there")
			req.MaxOutputTokens = 16
			resp, err := c.Complete(t.Context(), newBudget(t, time.Minute), req, rec.observer())
			if err != nil {
				t.Fatal(err)
			}
			if resp.FinishReason != "length" || len(rec.ends) != 1 || rec.ends[0].Outcome != trace.OK || rec.ends[0].Finish != "length" {
				t.Errorf("finish %q, attempts %+v; want one OK attempt that finished for length", resp.FinishReason, rec.ends)
			}
			if !errors.Is(model.CheckFinish(resp.FinishReason), model.ErrNotAnswer) {
				t.Errorf("CheckFinish(%q) takes the cut answer for a whole one", resp.FinishReason)
			}
			if u := rec.ends[0].Usage; u.Output != 16 {
				t.Errorf("%d output tokens on the record, want the limit, 16", u.Output)
			}
			if got := srv.Requests()[0].MaxOutputTokens; got != 16 {
				t.Errorf("the sim received a limit of %d, want 16", got)
			}
			var body map[string]any
			if err := json.Unmarshal(sent.sent[0], &body); err != nil {
				t.Fatal(err)
			}
			if body[limitField[api]] != 16.0 {
				t.Errorf("body %s, want %s: 16", sent.sent[0], limitField[api])
			}
		})
	}
}

func TestARequestWithoutALimitSendsNone(t *testing.T) {
	for _, api := range []string{model.APIChat, model.APIResponses} {
		t.Run(api, func(t *testing.T) {
			srv := sim.NewServer(nil)
			defer srv.Close()
			c, sent := overAPI(t, srv, api)
			resp, err := c.Complete(t.Context(), newBudget(t, time.Minute), ask("hi there"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.FinishReason != "stop" || srv.Requests()[0].MaxOutputTokens != 0 {
				t.Errorf("finish %q, limit received %d; want stop and none", resp.FinishReason, srv.Requests()[0].MaxOutputTokens)
			}
			for _, field := range []string{"max_completion_tokens", "max_output_tokens", "max_tokens"} {
				if bytes.Contains(sent.sent[0], []byte(`"`+field+`"`)) {
					t.Errorf("body %s carries %s", sent.sent[0], field)
				}
			}
		})
	}
}

func TestCachedAndReasoningTokensReachTheAttemptsRecord(t *testing.T) {
	for _, api := range []string{model.APIChat, model.APIResponses} {
		t.Run(api, func(t *testing.T) {
			srv := sim.NewServer(&sim.Scenario{Rules: []sim.Rule{{CachedTokens: 4, ReasoningTokens: 30}}})
			defer srv.Close()
			c, _ := overAPI(t, srv, api)
			rec := &record{}
			resp, err := c.Complete(t.Context(), newBudget(t, time.Minute), ask("hi there"), rec.observer())
			if err != nil {
				t.Fatal(err)
			}
			u := rec.ends[0].Usage
			if u.Cached != 4 || u.Reasoning != 30 || u.Output != resp.Usage.CompletionTokens || u.Output < 30 || u.Input < 4 {
				t.Errorf("usage on the record %+v; want 4 cached within the input, 30 reasoning within the output", u)
			}
			r := trace.AttemptRecord(trace.AttemptEnd, 1, rec.ends[0])
			if r.CachedTokens != 4 || r.ReasoningTokens != 30 {
				t.Errorf("attempt_end %+v, want cached_tokens 4 and reasoning_tokens 30", r)
			}
		})
	}
}

func TestEachAttemptSendsTheLimitOfItsOwnRequest(t *testing.T) {
	srv := sim.NewServer(nil)
	defer srv.Close()
	c, _ := overAPI(t, srv, model.APIChat)
	for n, limit := range []int64{40, 0, 24} {
		req := ask("hi there")
		req.MaxOutputTokens = int32(limit)
		lease := budget.Lease{Granted: time.Minute, Remaining: time.Minute, Deadline: time.Now().Add(time.Minute)}
		if _, ae := c.Attempt(t.Context(), lease, n+1, req, nil); ae != nil {
			t.Fatal(ae)
		}
	}
	var got []int64
	for _, r := range srv.Requests() {
		got = append(got, r.MaxOutputTokens)
	}
	if want := []int64{40, 0, 24}; !slices.Equal(got, want) {
		t.Errorf("limits received %v, want %v", got, want)
	}
}
