package kit

import (
	"errors"
	"fmt"
)

var (
	// ErrCancelled is the cause of a handler's context ended by the cancel
	// endpoint, DELETE /tools/{name}/calls/{key}.
	ErrCancelled = errors.New("kit: call cancelled")

	// ErrClosed is the cause of a handler's context ended by [Server.Close]
	// or [Server.Shutdown], and the error of a call that arrives after.
	ErrClosed = errors.New("kit: server closed")

	// ErrCallerGone is the cause of a handler's context ended because the
	// caller hung up: its lease ended, or it stopped waiting.
	ErrCallerGone = errors.New("kit: caller hung up")

	// ErrDuplicate is matched by the [*ToolError] of a name registered twice.
	ErrDuplicate = errors.New("kit: tool already registered")

	// ErrBadTool is matched by every [*ToolError].
	ErrBadTool = errors.New("kit: bad tool")

	errNil         = errors.New("must not be nil")
	errNegative    = errors.New("must not be negative")
	errBadName     = errors.New("must be 1 to 64 letters, digits, '_' or '-'")
	errBadEffect   = errors.New(`must be "read" or "write"`)
	errNotSchema   = errors.New("must be a JSON object")
	errP95BelowP50 = errors.New("must not be below P50")
)

// Error is the failure a handler returns to choose what the caller is
// told: the message, and whether another attempt with the same
// Idempotency-Key may succeed. Return it as a *Error. A handler's other
// errors are failures that are not retryable, unless the handler's
// context had ended (see the package documentation, # Errors).
type Error struct {
	Message   string
	Retryable bool
}

func (e *Error) Error() string { return e.Message }

// ToolError reports a [Tool] that [Server.Register] refused. It matches
// [ErrBadTool], and [ErrDuplicate] when the name was taken.
type ToolError struct {
	Name  string // the tool's name as given
	Field string // the field at fault, e.g. "Effect"
	Err   error
}

func (e *ToolError) Error() string {
	if errors.Is(e.Err, ErrDuplicate) {
		return fmt.Sprintf("kit: tool %q registered twice", e.Name)
	}
	return fmt.Sprintf("kit: tool %q: %s %v", e.Name, e.Field, e.Err)
}

// Unwrap returns the reason, [ErrDuplicate] for a name registered twice.
func (e *ToolError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrBadTool].
func (e *ToolError) Is(target error) bool { return target == ErrBadTool }
