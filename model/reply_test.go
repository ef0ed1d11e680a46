package model_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/trace"
)

// leaseOf is a lease of d from now, as a host that leases each attempt
// grants it.
func leaseOf(d time.Duration) budget.Lease {
	return budget.Lease{Granted: d, Remaining: d, Deadline: time.Now().Add(d)}
}

// An answered attempt's reply carries the message, its calls as plain
// data and the model that answered.
func TestAnAnsweredAttemptsReplyCarriesTheMessageAndItsCalls(t *testing.T) {
	srv := sim.NewServer(&sim.Scenario{Rules: []sim.Rule{{Answer: "Looking.",
		ToolCalls: []sim.ToolCall{{ID: "c1", Name: "search", Arguments: `{"q":"x"}`}}}}})
	defer srv.Close()
	c := newClient(t, srv, model.Config{})

	got := c.AttemptReply(t.Context(), leaseOf(5*time.Second), 1, ask("find x"), nil)
	if got.Outcome != trace.OK || got.Content != "Looking." || got.FinishReason != "tool_calls" || got.Cause != "" {
		t.Errorf("got %+v, want ok with the answer and finish reason tool_calls", got)
	}
	if len(got.ToolCalls) != 1 || got.ToolCalls[0].ID != "c1" || got.ToolCalls[0].Name != "search" ||
		string(got.ToolCalls[0].Arguments) != `{"q":"x"}` {
		t.Errorf("tool calls %+v, want search c1 {\"q\":\"x\"}", got.ToolCalls)
	}
	if got.ResponseModel == "" {
		t.Error("no response model, want the one the server named")
	}
}

// A failed attempt's reply is data: how the turn machine reads it, a
// Retry-After it could not use, and its cause without the model's key.
func TestAFailedAttemptsReplySaysHowItFailedWithoutTheKey(t *testing.T) {
	const key = "sk-test-0123456789"
	srv := sim.NewServer(&sim.Scenario{Rules: []sim.Rule{{Status: 429, RetryAfter: "soon", Message: "slow down, " + key}}})
	defer srv.Close()
	c := newClient(t, srv, model.Config{APIKey: key})

	got := c.AttemptReply(t.Context(), leaseOf(5*time.Second), 1, ask("find x"), nil)
	if got.Outcome != trace.RateLimited || got.Status != 429 || !got.Retry {
		t.Errorf("got outcome %s, status %d, retry %v; want rate_limited, 429, true", got.Outcome, got.Status, got.Retry)
	}
	if got.RetryAfterInvalid != "soon" {
		t.Errorf("RetryAfterInvalid %q, want %q", got.RetryAfterInvalid, "soon")
	}
	if got.Cause == "" || strings.Contains(got.Cause, key) || strings.Contains(got.Failure, key) {
		t.Errorf("cause %q, failure %q: want a cause without the key", got.Cause, got.Failure)
	}
}

// A reply of the Responses API kept as plain data, as a Temporal
// workflow keeps it (encoded as JSON between turns), sends its reasoning
// back with the next request as the process's conversation does, and
// carries its reasoning summary as progress; a reply of Chat Completions
// has neither, so its message encodes as it did before.
func TestAReplyKeptAsPlainDataCarriesItsReasoningToTheNextTurn(t *testing.T) {
	for _, tc := range []struct {
		name, api     string
		wantReasoning bool
	}{
		{"over the Responses API the reasoning goes back", model.APIResponses, true},
		{"over Chat Completions there is none to carry", model.APIChat, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := sim.NewServer(&sim.Scenario{Rules: []sim.Rule{{Request: 1,
				ToolCalls: []sim.ToolCall{{Name: "search", Arguments: `{"query":"cats"}`}}}}})
			defer srv.Close()
			c := newClient(t, srv, model.Config{API: tc.api})
			msgs := []model.Message{{Role: "user", Content: "find cats"}}
			req := model.Request{Messages: model.Params(msgs), Tools: searchTool()}

			first := c.AttemptReply(t.Context(), leaseOf(5*time.Second), 1, req, nil)
			if first.Outcome != trace.OK || len(first.ToolCalls) != 1 {
				t.Fatalf("first turn %+v, want one call", first)
			}
			// Its reasoning summary is the model call's progress, which
			// the reply carries for a host that hears it by signal.
			if heard := first.Progress != nil && first.Progress.Units > 0; heard != tc.wantReasoning {
				t.Errorf("the reply's progress %+v, want heard: %v", first.Progress, tc.wantReasoning)
			}
			b, err := json.Marshal(first.Message())
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(string(b), `"output"`); got != tc.wantReasoning {
				t.Errorf("the kept message %s has output items: %v, want %v", b, got, tc.wantReasoning)
			}
			var kept model.Message
			if err := json.Unmarshal(b, &kept); err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, kept, model.Message{Role: "tool", Content: "3 cats", ToolCallID: first.ToolCalls[0].ID})
			req.Messages = model.Params(msgs)
			if second := c.AttemptReply(t.Context(), leaseOf(5*time.Second), 2, req, nil); second.Outcome != trace.OK {
				t.Fatalf("second turn %+v, want ok", second)
			}
			got := srv.Requests()[1].Reasoning
			if carried := len(got) > 0 && strings.HasPrefix(got[0], "rs_sim_"); carried != tc.wantReasoning {
				t.Errorf("the second request carried reasoning %q, want carried: %v", got, tc.wantReasoning)
			}
		})
	}
}
