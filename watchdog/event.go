package watchdog

import "fmt"

// An Event is a kind of thing that happened during a run. The semantic
// kinds, those a reader of the trace would call an event, reset the quiet
// clock; the others are transport or repetition and are only counted.
type Event uint8

const (
	// None is the zero Event: no semantic event has happened since Start.
	None Event = iota

	// ToolCall: a tool call was issued.
	ToolCall
	// ToolResult: a tool call returned a result (or a final error).
	ToolResult
	// ModelCall: a model request was sent. It is the model's counterpart of
	// ToolCall, so that [Config.QuietAfter] can give a model its own, longer
	// wait for the message to complete: streamed tokens do not reset the
	// clock, and thinking makes the time to first useful output vary by
	// design.
	ModelCall
	// ModelMessage: a model message was completed.
	ModelMessage
	// Checkpoint: a checkpoint was written.
	Checkpoint
	// Progress: a progress heartbeat whose units strictly increased for its
	// source (see [Watchdog.Progress]).
	Progress

	// Keepalive: an SSE comment, a ping, any transport-level sign of life.
	Keepalive
	// Token: streamed tokens arrived.
	Token
	// StaleProgress: a progress heartbeat that repeated or lowered the units
	// of its source.
	StaleProgress
	// Headers: a model call's server sent its response headers. It resets
	// nothing; it starts the call's hold ([Call.AtHeaders]).
	Headers
	// Begun: a call began, with its allowance of silence ([Call]); it
	// resets nothing: its tool call or model request is heard as one.
	Begun

	numEvents
)

var eventNames = [numEvents]string{
	None:          "none",
	ToolCall:      "tool_call",
	ToolResult:    "tool_result",
	ModelCall:     "model_call",
	ModelMessage:  "model_message",
	Checkpoint:    "checkpoint",
	Progress:      "progress",
	Keepalive:     "keepalive",
	Token:         "token",
	StaleProgress: "stale_progress",
	Headers:       "headers",
	Begun:         "begun",
}

// String returns the event's name as written in traces, e.g. "tool_call".
func (e Event) String() string {
	if e < numEvents {
		return eventNames[e]
	}
	return fmt.Sprintf("Event(%d)", uint8(e))
}

// Semantic reports whether e resets the quiet clock.
func (e Event) Semantic() bool { return e >= ToolCall && e <= Progress }
