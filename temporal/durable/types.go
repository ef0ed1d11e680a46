package durable

import (
	"encoding/json"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

// Input is what starts a run. The zero value of every field but Task and
// Budget selects its default, as `harness run`'s flags do (SPEC §4).
type Input struct {
	Task string

	Instructions string        // before the harness's own system prompt
	Budget       time.Duration // B; it must be positive
	Reserve      time.Duration // R; zero: budget.DefaultReserve(Budget)
	Floor        time.Duration // F; zero: budget.DefaultFloor
	MaxSteps     int           // the most model turns before landing; zero: 50
	Parallel     int           // the most tool calls of one turn at once; zero: 4
	MaxAttempts  int           // the attempts of a model turn; zero: 3
	Quiet        time.Duration // the quiet clock Q (SPEC §3); zero: watchdog.DefaultQuiet
	RunID        string        // names the run in its result and trace; empty: the workflow's ID

	// MaxRepeats is how many repeated tool calls land the run stuck (SPEC
	// §3; harness.Config's MaxRepeats); zero: 3.
	MaxRepeats int `json:",omitempty"`

	// Deadline, if not zero, is when the budget ends, in workflow time: a
	// sub-agent starts at Deadline − Budget, so its start is spent from
	// its slice.
	Deadline time.Time
	// Spent is what the caller spent of the budget before it started the
	// run (a process's start, its connection to the server): the budget
	// started that much before the server had the run. A duration, not a
	// time, so that no two machines' clocks are compared (SPEC §3).
	Spent time.Duration

	// TimerResolution is how late the server may fire a timer it is
	// given: its history.timerProcessorMaxTimeShift, 1s by default. The
	// run's leases and backoffs count it once (package budget's Timers),
	// so that a lease's timeout, late by it, still ends by D. Zero: timers
	// fire on time, as in process.
	TimerResolution time.Duration `json:",omitempty"`

	Toolset string  // the worker's tools the run uses: "" the tools file's, else a sub-agent's path of agent names
	Parent  *Parent // a sub-agent's: the run that called it

	// Profile is how long each step kind (model, tool:NAME, agent:NAME)
	// took on this machine before the run, oldest first: a latency
	// profile, such as `harness run` seeds its estimates with (package
	// budget/profile). The run's estimates start from it (budget.Kind.Warm),
	// so that a tool whose ceiling is below its p50 is unavailable from the
	// first turn, as in process. Nil: none.
	Profile map[string][]time.Duration `json:",omitempty"`

	// Learned is, for each step kind, the longest silence a quiet clock
	// cut a call of it at in runs before this one, from the same profile:
	// its calls' allowance of silence is at least twice it (issue 27).
	// Nil: none.
	Learned map[string]time.Duration `json:",omitempty"`

	// QuietMode is what the quiet clock does when it fires (harness
	// Config's QuietMode): enforce, the zero value, lands the run; warn
	// records a quiet_warning and goes on; off never fires.
	QuietMode watchdog.Mode `json:",omitempty"`
	// MaxSilence caps every call's allowance of silence (harness Config's
	// MaxSilence); zero: watchdog.DefaultMaxSilence.
	MaxSilence time.Duration `json:",omitempty"`

	// ContinueAt is the history size, in bytes, past which the run
	// continues as new at its next turn boundary ([Carry]) if it has not
	// already at Temporal's suggestion, or lands if its state is past
	// [MaxCarryBytes]; zero: [DefaultContinueAt].
	ContinueAt int `json:",omitempty"`

	// Carry is the state a run continues as new with, set by the run
	// itself: a run started with one is bad input.
	Carry *Carry `json:",omitempty"`
}

// Defaults of Input's fields: `harness run`'s.
const (
	DefaultMaxSteps    = harness.DefaultMaxSteps
	DefaultParallel    = harness.DefaultParallel
	DefaultMaxRepeats  = harness.DefaultMaxRepeats
	DefaultMaxAttempts = model.DefaultMaxAttempts
)

// Output is what a run returns: its result, the `--json` object of
// `harness run`, and its trace records for the caller to write.
type Output struct {
	Result  landing.Result
	Trace   []trace.Record
	Dropped int // the records left out past MaxRecords or MaxTraceBytes
}

// MaxRecords bounds the records a run keeps in its workflow state.
const MaxRecords = 10_000

// MaxTraceBytes bounds the trace a run keeps by its encoded size, under
// the 2 MiB Temporal allows a workflow's result (the server terminates a
// workflow whose result is larger, its labeled result lost with it). A
// sub-agent's records count against its parent's bound too.
const MaxTraceBytes = 1 << 20

// Message is one message of the conversation as the workflow keeps it:
// plain data, turned into openai-go's types only inside an activity.
type Message = model.Message

// ToolCall is a tool call the model asked for.
type ToolCall = model.ToolCall

// ModelRequest is one model attempt, as the workflow schedules it.
type ModelRequest struct {
	Toolset  string // the run's Input.Toolset
	Messages []Message
	Tools    bool // offer the worker's tools; false: no tools field at all (landing)
	Parallel bool // the model may ask for several calls at once
	Landing  bool // the landing call: one attempt that may spend the reserve

	// Without names the worker's tools the turn does not offer, which
	// tools.Usable left out. The names left out, not those offered: in
	// most turns none is, so the request kept in the history grows by
	// nothing, and one recorded before it decodes the same.
	Without []string `json:",omitempty"`

	// Fingerprint is the run's (ToolList): a worker with another refuses
	// an attempt that offers its tools.
	Fingerprint Fingerprint

	// Headers asks the worker to signal the run when the model's server
	// answers: the turn's allowance holds its quiet clock from then
	// (issue 27). Only a turn whose allowance holds asks: a signal is a
	// history event.
	Headers bool `json:",omitempty"`
	// Turn tags the headers signal with the turn it answers (its step
	// index + 1): an attempt abandoned when its lease ended may still
	// signal after the run has begun its next turn, whose server has not
	// answered yet, and must not hold that turn.
	Turn int `json:",omitempty"`

	// Thoughts is the most units of model progress the run has heard (a
	// Responses reasoning summary part is one): the attempt's own count
	// from there. None on Chat Completions, whose request is as before.
	Thoughts int64 `json:",omitempty"`
}

// ModelReply is how one model attempt ended: a failure is data, not an
// activity error, so that the turn machine sees all of it (its Took is
// measured in workflow time).
type ModelReply = model.Reply

// ToolInfo is a tool of the worker's as the workflow knows it.
type ToolInfo struct {
	Spec      tools.Spec
	CanCancel bool       // a cancel.Canceller whose spec did not turn it off
	CanStatus bool       // a cancel.StatusReader: a cut write is reconciled by key
	Agent     *AgentInfo // a sub-agent: a call runs a child workflow
}

// ToolList is what a run's setup lists: the tools offered, those the
// tools file names that cannot be, and the worker's manifest fetches.
type ToolList struct {
	Tools       []ToolInfo
	Unavailable []landing.Unavailable
	Fetches     []Fetch
	Fingerprint Fingerprint // the worker's whole tools file's: every later tool step is checked against it
}

// ToolRequest is one attempt of a logical tool call.
type ToolRequest struct {
	Toolset string // the run's Input.Toolset
	Tool    string
	Key     string // minted once per logical call, in workflow code
	Args    json.RawMessage
	Attempt int // 1-based

	// Fingerprint is the run's (ToolList): a worker with another refuses
	// the attempt, which is then not sent.
	Fingerprint Fingerprint
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

	RetryAfter        budget.RetryAfter // read on the worker when it arrived
	RetryAfterInvalid string            // a Retry-After the worker could not use, for the backoff record
}

// StatusRequest asks how the call with Key went, by its key.
type StatusRequest struct {
	Toolset string // the run's Input.Toolset
	Tool    string
	Key     string

	// Fingerprint is the run's (ToolList): a worker with another refuses
	// to ask its idea of the tool.
	Fingerprint Fingerprint
}

// StatusReply is the tool's answer to a StatusRequest; Err: none.
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

	// Fingerprint is the run's (ToolList): a worker with another journals
	// nothing, as `harness reconcile` would ask its idea of the tool.
	Fingerprint Fingerprint
}

// OrphanReply says whether the orphan is in the worker's journal, and
// whether `harness reconcile` can ask its tool.
type OrphanReply struct {
	Journaled bool
	Reachable bool
	Next      string // the command that settles it, for the boundary (landing.Call.Next)
	Err       string
}
