package model

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/internal/redact"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

// A Reply is how one model attempt ended, as plain data that a host
// carries across a boundary (a Temporal activity's result): a failure is
// data, not an error, so that the turn machine sees all of it
// (TurnAttempted; its Took is the host's to measure).
type Reply struct {
	Content       string
	ToolCalls     []ToolCall
	FinishReason  string
	ResponseModel string // the model the server says answered, for the attempt's record
	// Output is the output items a reply of the Responses API came in
	// ([OutputOf]), which the next request sends back ([Reply.Message]);
	// none on Chat Completions.
	Output json.RawMessage `json:",omitempty"`

	TurnAttempted
	RetryAfterInvalid string // a Retry-After that could not be used, for the backoff record
	Cause             string // the error that ended the attempt, as trace.AttemptError wraps it, redacted of the key, for its record
	Tokens            int64  // Usage.Total, which a Temporal run's recorded histories carry
	// Usage is the tokens the answer reported, in all its parts (cached
	// input, reasoning output), for the attempt's record (issue 28).
	Usage trace.Usage `json:",omitzero"`
	// Headers reports that the attempt's server sent its response
	// headers: a quiet stall of a cut attempt that had them is not a
	// server that never answered (issue 27).
	Headers bool `json:",omitempty"`
	// Progress is the last progress of the model call the attempt heard
	// (a Responses reasoning summary part), nil for none: a host that
	// hears progress apart from the reply (a Temporal run, by a signal
	// that may come after it) takes it in with the reply too.
	Progress *trace.Signal `json:",omitempty"`
}

// AttemptReply makes attempt n of req on lease ([Client.Attempt]) and
// returns how it ended as a [Reply]: on failure, what the turn machine
// is told ([Attempted], read now) and what the stream carried; on
// success, the message, its tool calls and the tokens spent. It blocks
// until the attempt ends. signal, if not nil, hears what the attempt's
// stream did, as an Observer's Signal does (its server's headers).
func (c *Client) AttemptReply(ctx context.Context, lease budget.Lease, n int, req Request, signal func(trace.Signal)) Reply {
	// The attempt's end as the client reports it: the model that
	// answered, and what the stream carried, for the boundary.
	var heard trace.Attempt
	var headers bool
	var progress *trace.Signal
	obs := &trace.Observer{AttemptEnd: func(at trace.Attempt) { heard = at }, Signal: func(s trace.Signal) {
		switch s.Event {
		case watchdog.Headers:
			headers = true
		case watchdog.Progress:
			progress = &s
		}
		if signal != nil {
			signal(s)
		}
	}}
	resp, ae := c.Attempt(ctx, lease, n, req, obs)
	out := Reply{ResponseModel: heard.Model, Headers: headers, Progress: progress}
	if ae != nil {
		var raErr error
		out.TurnAttempted, raErr = Attempted(ae, time.Now())
		out.Chunks, out.Keepalives = heard.Chunks, heard.Keepalives
		out.Cause = redact.Secrets(ae.Err.Error(), c.cfg.APIKey)
		if re, ok := errors.AsType[*budget.RetryAfterError](raErr); ok {
			out.RetryAfterInvalid = re.Value
		}
		return out
	}
	out.Content, out.ToolCalls, out.FinishReason, out.Tokens = resp.Message.Content, ToolCallsOf(resp.Message.ToolCalls), resp.FinishReason, resp.Usage.TotalTokens
	out.Usage = usageOf(resp.Usage)
	out.Output = OutputOf(resp.Message)
	out.Outcome = trace.OK
	return out
}

// Message is the assistant's message of a reply that succeeded, as a host
// that keeps its conversation as plain data keeps it: what [Params] sends
// back as [AssistantOf] sends back a reply's message in process, its
// output items included.
func (r Reply) Message() Message {
	return Message{Role: "assistant", Content: r.Content, ToolCalls: r.ToolCalls, Output: r.Output}
}
