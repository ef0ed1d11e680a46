package model_test

import (
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
