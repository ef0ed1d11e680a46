package tools

import (
	"errors"
	"fmt"
	"strings"

	"github.com/glidepath/glidepath/cancel"
)

var (
	// ErrUnknownTool is matched when a call names no registered tool.
	ErrUnknownTool = errors.New("tools: unknown tool")

	// ErrDuplicate is matched when a name is registered twice.
	ErrDuplicate = errors.New("tools: name already registered")

	// ErrBadSpec is matched by every [*SpecError]: a tool that cannot be
	// registered.
	ErrBadSpec = errors.New("tools: bad tool")

	// ErrNoCapability is matched by the [*SpecError] of a spec that claims
	// what its tool's type cannot do: Cancellable for a type that is not a
	// [cancel.Canceller].
	ErrNoCapability = errors.New("tools: the spec claims what the tool's type cannot do")

	// ErrNoBudget is the [Result.Cause] of a call made with no [Run] or
	// no [Run.Budget]: nothing could be leased, so nothing was started.
	ErrNoBudget = errors.New("tools: call without a budget")

	// ErrNoCancelTime is what the cancel of a cut call says when the
	// budget had no time left even to send it: nothing was sent.
	ErrNoCancelTime = errors.New("tools: no time left to send the cancel")

	// ErrConfig is matched by every [*ConfigError].
	ErrConfig = errors.New("tools: bad config")

	// ErrManifest is matched by every [*ManifestError].
	ErrManifest = errors.New("tools: bad manifest")

	// ErrNoManifest is matched by the [*ManifestError] of a tool server
	// that answered GET U/tools with a 4xx or a 501: it serves no manifest,
	// so its entries must say what one would have, and its tools may
	// still work. A server that answers 200 with something that is not a
	// manifest (an HTML page, garbage), or with another 5xx (it, or what
	// stands behind its proxy, is down), does not match it.
	ErrNoManifest = errors.New("tools: no manifest")

	// ErrServerDown is matched by the [*ManifestError] of a tool server
	// that answered GET U/tools with a 5xx other than 501: it, or what
	// stands behind its proxy, is down, and its tools are unavailable
	// (issue 24).
	ErrServerDown = errors.New("tools: tool server down")

	// ErrNotListed is matched by the [*ManifestError] of a url entry whose
	// tool its server's manifest does not list: the server does not serve
	// it, so every call would fail (issue 24).
	ErrNotListed = errors.New("tools: the tool is not in its server's manifest")

	// ErrInvalidArguments is matched by every [*ArgumentsError]: the model's
	// arguments are not JSON or do not match the tool's parameters.
	ErrInvalidArguments = errors.New("tools: invalid arguments")

	// ErrIncomplete is matched when an event stream ended without a result
	// or error event: the attempt failed, whatever its progress said.
	ErrIncomplete = errors.New("tools: stream ended without a result")

	// ErrBadAnswer is matched when a tool's answer cannot be used: not the
	// protocol's JSON, or larger than [MaxAnswer].
	ErrBadAnswer = errors.New("tools: bad answer")

	// ErrNoAnswer is matched by a [*NoAnswerError]: a tool's failure that
	// got no answer from what it calls, a transport failure, which may be
	// tried again ([RunAttempt]).
	ErrNoAnswer = errors.New("tools: no answer")

	// ErrOrphaned is matched by every [*OrphanError]: a write whose outcome
	// is unknown.
	ErrOrphaned = errors.New("tools: write outcome unknown")
)

// SpecError reports a tool that [Registry.Register] refused. It matches
// [ErrBadSpec] and unwraps to Err, which is [ErrDuplicate] for a name
// registered twice.
type SpecError struct {
	Tool  string
	Field string // "name", "parameters", "effect", …
	Err   error
}

func (e *SpecError) Error() string {
	return fmt.Sprintf("tools: tool %q: %s: %v", e.Tool, e.Field, e.Err)
}

func (e *SpecError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrBadSpec].
func (e *SpecError) Is(target error) bool { return target == ErrBadSpec }

// ArgumentsError reports arguments a call was not made with. Its message is
// written for the model, which can correct them. It matches
// [ErrInvalidArguments].
type ArgumentsError struct {
	Tool string
	Err  error // the JSON syntax error or the schema's validation error
}

func (e *ArgumentsError) Error() string {
	return fmt.Sprintf("invalid arguments for tool %q: %v", e.Tool, e.Err)
}

func (e *ArgumentsError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrInvalidArguments].
func (e *ArgumentsError) Is(target error) bool { return target == ErrInvalidArguments }

// ToolError is a failure the tool itself reported: an error event, an HTTP
// error answer, a non-zero exit, an error returned by a local function.
type ToolError struct {
	Message   string
	Retryable bool   // reports whether the tool said another attempt may succeed
	Code      string // what the tool said the failure is, e.g. [CodeDeadline]
}

// CodeDeadline is the code a remote tool gives a failure that the caller's
// own time caused: the Budget-Remaining-Ms it was sent ran out, or was 0
// on arrival (tools/kit answers so). Such an attempt is ours: it ends with
// outcome gave_up, not upstream_error.
const CodeDeadline = "deadline_exceeded"

func (e *ToolError) Error() string { return e.Message }

// OrphanError reports a write whose outcome stays unknown. Entry is what
// was appended to the journal; Journaled reports whether it was. It matches
// [ErrOrphaned] and unwraps to why the outcome is unknown and, when the
// journal could not take the entry, to that error too.
type OrphanError struct {
	Entry     cancel.Entry
	Journaled bool

	// Reachable reports whether the entry names a way to ask the tool
	// from outside the run: a URL, or a tools file whose tool can say how
	// a call went ([cancel.StatusReader]) and does not live inside the
	// process (a builtin does), so that `harness reconcile` can settle it.
	Reachable bool

	// Next is, for an orphan in the journal, the command a person runs
	// next: [cancel.ReconcileCommand] of the journal when the tool can be
	// asked, else [cancel.SettleCommand], to record what they found by
	// hand. The run's boundary names it, as `harness orphans` and
	// `harness reconcile` do (issue 24). Empty when it is in no journal.
	Next string

	Err error
}

func (e *OrphanError) Error() string {
	s := fmt.Sprintf("tools: %s call %s orphaned: %v", e.Entry.Tool, e.Entry.IdempotencyKey, e.Err)
	if !e.Journaled {
		s += " (not journaled)"
	}
	return s
}

func (e *OrphanError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrOrphaned].
func (e *OrphanError) Is(target error) bool { return target == ErrOrphaned }

// PanicError is a local tool's panic, recovered where the tool's function
// ran, with the stack at the panic.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("tools: panic: %v", e.Value) }

// clip cuts s to n bytes at a rune boundary, for messages.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
