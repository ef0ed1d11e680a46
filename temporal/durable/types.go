package durable

import (
	"encoding/json"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
)

// Input is what starts a run: the task and the budget. The zero value of
// every field but Task and Budget selects its documented default, as for
// `harness run`'s flags (SPEC §4).
type Input struct {
	Task string

	// Instructions, if not empty, come before the harness's own system
	// prompt.
	Instructions string

	// Budget is B. It must be positive.
	Budget time.Duration

	// Reserve is R; zero selects budget.DefaultReserve(Budget).
	Reserve time.Duration

	// Floor is F; zero selects budget.DefaultFloor.
	Floor time.Duration

	// MaxSteps is the most model turns before landing; zero: 50.
	MaxSteps int

	// Parallel is the most tool calls of one turn run at once; zero: 4.
	// One asks the model for one call per turn.
	Parallel int

	// MaxAttempts bounds the attempts of a model turn; zero: 3.
	MaxAttempts int
	// Quiet is the quiet clock Q (SPEC §3): the run lands with cause
	// quiet when Q passes with no semantic event. Zero selects
	// watchdog.DefaultQuiet (60s).
	Quiet time.Duration

	// RunID names the run in its result and trace; empty: the workflow's
	// own ID.
	RunID string

	// Deadline, if not zero, is when the run's budget ends, in workflow
	// time: a sub-agent's slice ends when its parent granted it to, so the
	// child starts at Deadline − Budget, and the time its start took is
	// spent from its slice, not added to it.
	Deadline time.Time
	// Toolset names the worker's tools the run uses: empty for the tools
	// file's own, a sub-agent's path of agent names for its tools file's.
	Toolset string
	// Parent is set on a sub-agent's run: the run that called it.
	Parent *Parent
}

// Defaults of Input's fields, as `harness run` has them.
const (
	DefaultMaxSteps    = 50
	DefaultParallel    = 4
	DefaultMaxAttempts = 3
)

// Output is what a run returns: its result, the `--json` object of
// `harness run`, and its trace records, stamped in workflow time, for
// the caller to write (see # Trace in the package doc).
type Output struct {
	Result landing.Result
	Trace  []trace.Record

	// Dropped counts the trace records left out once MaxRecords was
	// reached.
	Dropped int
}

// MaxRecords bounds the trace a run keeps in its workflow state: records
// past it are counted in Output.Dropped, not kept, so that a runaway run
// cannot grow its history without bound.
const MaxRecords = 10_000

// MaxTraceBytes bounds the trace a run keeps by its encoded size, under
// the 2 MiB Temporal allows a workflow's result (the server terminates a
// workflow whose result is larger, and the run's labeled result would be
// lost with it): records past it are counted in Output.Dropped. A
// sub-agent's records count against its parent's bound too, since the
// parent returns them.
const MaxTraceBytes = 1 << 20

// Message is one message of the conversation as the workflow keeps it:
// plain data that encodes the same on every worker, turned into
// openai-go's parameter types only inside an activity.
type Message struct {
	Role       string     `json:"role"` // system, user, assistant, tool
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ToolCall is a tool call the model asked for.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ModelRequest is one model attempt, as the workflow schedules it.
type ModelRequest struct {
	Toolset  string // the run's Input.Toolset
	Messages []Message
	Tools    bool // offer the worker's tools; false: no tools field at all (landing)
	Parallel bool // the model may ask for several calls at once
	Landing  bool // the landing call: one attempt that may spend the reserve
}

// ModelReply is how one model attempt ended. A failure is data, not an
// activity error, so that the workflow's retry rules see all of it.
type ModelReply struct {
	Content       string
	ToolCalls     []ToolCall
	FinishReason  string
	ResponseModel string // the model the server says answered, for the attempt's record

	Outcome    trace.Outcome     // ok, or how the attempt failed
	Status     int               // the HTTP status of an error answer
	Retry      bool              // reports whether SPEC §2 allows another attempt
	RetryAfter budget.RetryAfter // what the server said of when to come back (budget.ReadRetryAfter on the worker)
	// RetryAfterInvalid is a Retry-After the worker could not use, as it
	// read it, for the backoff record (retry_after_invalid).
	RetryAfterInvalid string
	Failure           string // for a person: the status and the server's message
	Cause             string // the error that ended the attempt, as trace.AttemptError wraps it, for its record
	Tokens            int64
	Refused           bool // the server refused the run itself (model.Refused: 401, 403, 404, unreachable)

	// What the attempt's stream carried before it ended, for the boundary
	// of one cut before its server finished (landing.Unanswered).
	Chunks     int64
	Keepalives int64
}

// ToolInfo is a tool of the worker's registry as the workflow needs to
// know it: its spec and its capabilities, found by type assertion on the
// worker.
type ToolInfo struct {
	Spec      tools.Spec
	CanCancel bool       // a cancel.Canceller whose spec did not turn it off
	CanStatus bool       // a cancel.StatusReader: a cut write is reconciled by key
	Agent     *AgentInfo // a sub-agent: a call runs a child workflow
}

// ToolList is what a run's setup lists of the worker's tools: those it
// offers, those its tools file names that it cannot (landing.Result's
// unavailable), and the fetches of manifests made when the worker loaded
// the file, which the run records as its setup attempts.
type ToolList struct {
	Tools       []ToolInfo
	Unavailable []landing.Unavailable
	Fetches     []Fetch
}

// ToolRequest is one attempt of a logical tool call.
type ToolRequest struct {
	Toolset string // the run's Input.Toolset
	Tool    string
	Key     string // minted once per logical call, in workflow code
	Args    json.RawMessage
	Attempt int // 1-based
}

// ToolReply is how one tool attempt ended, as the tool's Answer said it.
type ToolReply struct {
	Output   json.RawMessage
	Err      string        // empty on success
	Cause    string        // the error that ended the attempt, as trace.AttemptError wraps it, for its record
	Outcome  trace.Outcome // ok, or how it failed
	Status   int
	Answered bool // the tool said how it failed
	Cut      bool // the attempt's lease ended it
	Retry    bool
	NotSent  bool
	Stopped  bool
	CutShort bool

	// RetryAfter is what the attempt's response said about when to come
	// back, read on the worker when it arrived; the workflow's call
	// machine decides on it, with harness run's rule (issue 25).
	RetryAfter        budget.RetryAfter
	RetryAfterInvalid string // a Retry-After the worker could not use, for the backoff record
}

// StatusRequest asks how the call with Key went, by its key.
type StatusRequest struct {
	Toolset string // the run's Input.Toolset
	Tool    string
	Key     string
}

// StatusReply is the tool's answer to a StatusRequest. Err is set when
// the status could not be read: the call is then an orphan.
type StatusReply struct {
	State  string // done, failed, never_received, running
	Output json.RawMessage
	Err    string
}

// OrphanRequest journals a write whose outcome stays unknown.
type OrphanRequest struct {
	Toolset string // the run's Input.Toolset
	RunID   string
	Tool    string
	Kind    string
	Key     string
	Args    json.RawMessage
}

// OrphanReply says whether the orphan is in the worker's journal, and
// whether `harness reconcile` can ask its tool from outside the run.
type OrphanReply struct {
	Journaled bool
	Reachable bool
	Next      string // the command that settles it, for the boundary (landing.Call.Next)
	Err       string
}
