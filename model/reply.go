package model

import (
	"context"
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

	TurnAttempted
	RetryAfterInvalid string // a Retry-After that could not be used, for the backoff record
	Cause             string // the error that ended the attempt, as trace.AttemptError wraps it, redacted of the key, for its record
	Tokens            int64
	// Headers reports that the attempt's server sent its response
	// headers: a quiet stall of a cut attempt that had them is not a
	// server that never answered (issue 27).
	Headers bool `json:",omitempty"`
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
	obs := &trace.Observer{AttemptEnd: func(at trace.Attempt) { heard = at }, Signal: func(s trace.Signal) {
		if s.Event == watchdog.Headers {
			headers = true
		}
		if signal != nil {
			signal(s)
		}
	}}
	resp, ae := c.Attempt(ctx, lease, n, req, obs)
	out := Reply{ResponseModel: heard.Model, Headers: headers}
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
	out.Outcome = trace.OK
	return out
}
