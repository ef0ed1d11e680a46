package tools

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

// A Tool is something a [Registry] can call. [Func] (a local Go function),
// [Command] (a subprocess) and [Remote] (a tool server speaking SPEC §5)
// make the kinds Glidepath knows; a tool of any other kind — an MCP server's,
// a sub-agent, a queue — implements Tool outside this package.
//
// Attempt makes one attempt of a call on ctx, which is the attempt's lease:
// it ends when the lease does, or the run does, with a cause that says
// which (see [budget.Lease.Context]). It should return when ctx ends, and
// say in its [Answer] what it knows: whether the call may have reached the
// tool, whether its work stopped with ctx, how it failed. The [Registry]
// does the rest: the key, leases, retries, cancels, reconciliation,
// orphans, events; and it keeps the promises whatever Attempt does
// ([RunAttempt]): an Attempt that ignores ctx is abandoned when the lease
// ends, a panic is that attempt's failure, and an answer that cannot be
// right is a bad one.
//
// What a tool can do beyond an attempt is found by type assertion:
//
//   - [cancel.Canceller]: stop a call by its key; a call cut short is
//     cancelled with it, unless its spec turns that off
//     ([Spec.NotCancellable]);
//   - [cancel.StatusReader]: say how a call went, by its key, so that a
//     write whose attempt was cut is reconciled rather than sent again; a
//     cut write of a tool without one is an orphan;
//   - [Closer]: release what the tool holds (a connection, a session, a
//     process) when the registry closes.
//
// A tool has a capability when its type implements it, and no spec field
// is needed for it: a spec may only turn cancelling off, and a spec that
// claims Cancellable for a type that is not a Canceller is refused by
// [Registry.Register]. Reconciliation and closing have no spec field at
// all: a StatusReader is always asked, a Closer always closed.
//
// A tool whose [Spec.Kind] starts with [AgentKindPrefix] is a sub-agent: its
// attempts are leased as slices of the run's budget ([Run.Keep]).
type Tool interface {
	// Spec returns what the tool declares about itself.
	Spec() Spec

	// Attempt makes one attempt of call on ctx.
	Attempt(ctx context.Context, call *Call) Answer
}

// A Closer is a [Tool] that holds something for as long as its registry
// lives: [Registry.Close] closes it. Close must return when ctx ends.
type Closer interface {
	Close(ctx context.Context) error
}

// A ToolsFiler is a tool built from a tools file ([Config.Tools], or an
// MCP server a file names): ToolsFile returns that file's path. An
// orphan's journal entry records it, made absolute, beside the tool's
// name, so that `harness reconcile` can build the tool again from the
// file the journal names and ask it how the call went (--tools FILE only
// stands in for a file that has moved).
type ToolsFiler interface {
	ToolsFile() string
}

// checker is implemented by the tools of this package that can be checked
// at registration beyond their spec: a URL, an argv, a function.
type checker interface {
	check() *fieldErr
}

// baseURLer is implemented by the remote tool, whose orphans carry its base
// URL in the journal, so that `harness reconcile` can ask it again.
type baseURLer interface {
	baseURL() string
}

// A Call is one attempt of a logical call, as a [Tool] sees it: the key
// minted once for the logical call, the arguments (checked against the
// tool's parameters and compacted, exactly as sent), the attempt's number
// and lease, and the run's budget. Progress and Keepalive report what the
// attempt hears, for the run's watchdog and trace; both are cheap, never
// block, and are dropped once the attempt has ended.
//
// A Call not made by a Registry — the zero Call, or one a test builds to
// drive a tool's Attempt directly — is valid: Progress and Keepalive go to
// its Heard, if set, and else, like Pause, do nothing.
type Call struct {
	Key    cancel.Key
	Args   json.RawMessage
	N      int          // 1-based
	Lease  budget.Lease // its Granted is the Budget-Remaining-Ms to send
	Budget *budget.Budget

	// Heard, on a Call no Registry made, receives what the attempt hears —
	// progress heartbeats and keepalives, as a Registry's run would — for
	// an attempt made away from its run: a durable run's activity forwards
	// them to the quiet clock of its workflow (temporal/durable). It must
	// not block. A Registry's Call reports to its run and ignores it.
	Heard func(trace.Signal)

	c          *call
	keepalives atomic.Int64
	ended      atomic.Bool
}

// Progress reports a progress heartbeat: units of work done so far, of
// total if known. Whether it is progress is the run's to decide (units must
// strictly increase over the call's most, across its attempts); every
// heartbeat is reported as heard.
func (c *Call) Progress(units, total int64, msg string) {
	if c.ended.Load() {
		return
	}
	s := trace.Signal{Event: watchdog.Progress, Units: units, Total: total, Message: ProgressMessage(msg)}
	switch {
	case c.c != nil:
		c.c.signal(s)
	case c.Heard != nil:
		s.Key = string(c.Key)
		c.Heard(s)
	}
}

// Pause stops the run's quiet clock while the call waits by a choice of
// its own — a sub-agent whose child sleeps before a retry — which is not
// silence (SPEC §3), until resume is called. A resume is idempotent; once
// the attempt has ended, Pause does nothing.
func (c *Call) Pause() (resume func()) {
	if c.c == nil || c.ended.Load() {
		return func() {}
	}
	return c.c.obs.OnPause(c.c.t.spec.Kind, string(c.c.key))
}

// Keepalive reports a sign of life that says nothing of progress, such as
// an SSE comment. It is counted and resets nothing.
func (c *Call) Keepalive() {
	if c.ended.Load() {
		return
	}
	c.keepalives.Add(1)
	switch {
	case c.c != nil:
		c.c.signal(trace.Signal{Event: watchdog.Keepalive})
	case c.Heard != nil:
		c.Heard(trace.Signal{Event: watchdog.Keepalive, Key: string(c.Key)})
	}
}

// An Answer is what one attempt came back with. A successful attempt sets
// Output and leaves Err nil; a failed one sets Err and says what it knows.
//
// Every field's zero value is the one that keeps the promises when a tool
// says nothing: Answer{Err: err} may have reached the tool (not NotSent)
// and its work may still be running (not Stopped), so that a write cut by
// its lease is reconciled or orphaned, never sent again, and a call that
// can be cancelled is. Its error is a transport failure, retried for a
// read, only when it is one (a network or URL error, a stream cut short,
// a [*NoAnswerError]); any other is the tool's own failure, retried only
// when the tool says so ([RunAttempt]). A tool sets a field only to say
// what it knows.
type Answer struct {
	Output json.RawMessage // the tool's output, JSON
	Err    error           // nil when the attempt succeeded

	// Outcome is set for a failure the tool answered: an error status, an
	// error event, an exit code, an answer that cannot be used. It may be
	// left empty: the Registry then reads the outcome off what ended the
	// attempt (its context, a transport error), or else takes the error
	// for the tool's own, upstream_error ([RunAttempt]).
	Outcome trace.Outcome
	Status  int         // the HTTP status of an error answer
	Header  http.Header // the error answer's headers, for Retry-After

	// Retry reports, for a failure the tool answered, whether it may be
	// tried again: by its status as SPEC §2 says, or as the tool itself
	// said. For a failure with no answer the Registry decides.
	Retry bool

	// CutShort reports whether Output is only what came before a cut.
	CutShort bool

	// NotSent reports that the tool knows the call never reached it: no
	// request went out, no process or function started, so nothing of it
	// is in flight. Set it only when that is known. The zero value, false,
	// means the call may have reached the tool: a write whose attempt was
	// cut then is reconciled by its key, or journaled as an orphan, and
	// never reported as failed, which would invite the model to send it
	// again (issue 17).
	NotSent bool

	// Stopped reports whether the end of the attempt stopped the call's
	// work itself, so that it needs no cancel: a subprocess group killed, a
	// local function whose context ended (which is how Go cancels a
	// function; SPEC §4 counts it cancelled). A remote call cut short is
	// not stopped until its tool says so. The zero value, false, means its
	// work may still be running: it is cancelled, if its tool can be, and
	// left abandoned rather than called cancelled.
	Stopped bool
}
