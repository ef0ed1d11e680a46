package cancel

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/glidepath/glidepath/internal/lines"
)

var (
	// ErrUnreachable is matched by every [*RequestError] but a cancel answered
	// 404: the status or cancel endpoint gave no usable answer, because the
	// request failed in transport, ran out of its lease, was answered with a
	// 5xx or another unexpected status, or the answer was malformed. For a
	// status request this means the call's outcome stays unknown.
	ErrUnreachable = errors.New("cancel: status endpoint unreachable")

	// ErrUnknownCall is matched by the [*RequestError] of a cancel answered
	// 404: the tool has no call with that key, so there is nothing to cancel.
	ErrUnknownCall = errors.New("cancel: call unknown to the tool")

	// ErrNoAnswer is what a [Canceller] returns when its cancel went out
	// its own way and no answer is expected, as an MCP server's
	// notifications/cancelled: the cancel is sent, and that is all anyone
	// will learn of it (SPEC §6: cancel_sent state "sent").
	ErrNoAnswer = errors.New("cancel: sent; no answer is expected")

	// ErrStillRunning wraps the [Resolution.Err] of a call the tool still
	// reported running when the budget said stop asking.
	ErrStillRunning = errors.New("cancel: call still running")

	// ErrBadJournal is matched by every [*LineError], and by a
	// [*SkippedError].
	ErrBadJournal = errors.New("cancel: bad journal line")
)

// RequestError reports a status or cancel request whose answer could not be
// used. It matches [ErrUnknownCall] when a cancel was answered 404 and
// [ErrUnreachable] otherwise, and unwraps to Err, so that
// errors.Is(err, context.DeadlineExceeded) and the like still work.
type RequestError struct {
	Method string // GET for a status request, DELETE for a cancel
	URL    string // the request's URL, with any password redacted
	Code   int    // the answer's HTTP status code; 0 when no answer arrived
	Err    error  // why: the transport error or context cause, the malformed part of the answer, or the tool's own message; may be nil
}

func (e *RequestError) unknownCall() bool {
	return e.Method == http.MethodDelete && e.Code == http.StatusNotFound
}

func (e *RequestError) Error() string {
	what := "status endpoint unreachable"
	switch {
	case e.unknownCall():
		what = "call unknown to the tool"
	case e.Method == http.MethodDelete:
		what = "cancel endpoint unreachable"
	}
	s := fmt.Sprintf("cancel: %s: %s %s", what, e.Method, e.URL)
	if e.Code != 0 {
		s += fmt.Sprintf(": %d %s", e.Code, http.StatusText(e.Code))
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *RequestError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrUnknownCall] for a cancel answered 404,
// or [ErrUnreachable] for any other failure.
func (e *RequestError) Is(target error) bool {
	if e.unknownCall() {
		return target == ErrUnknownCall
	}
	return target == ErrUnreachable
}

// LineError reports a journal line that is not an entry. It matches
// [ErrBadJournal].
type LineError struct {
	Path string
	Line int // 1-based
	Err  error
}

func (e *LineError) Error() string {
	return fmt.Sprintf("cancel: %s:%d: not a journal entry: %v", e.Path, e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrBadJournal].
func (e *LineError) Is(target error) bool { return target == ErrBadJournal }

// SkippedError reports the lines of a journal that [ReadJournal] skipped
// because they were not entries, each a [*LineError], in file order; the
// entries of every other line were read. It matches [ErrBadJournal], and
// errors.AsType finds its first [*LineError].
type SkippedError struct {
	Lines []*LineError
}

func (e *SkippedError) Error() string { return e.skipped().Error() }

// Unwrap returns the skipped lines' errors.
func (e *SkippedError) Unwrap() []error { return e.skipped().Unwrap() }

// skipped is e as the journal's message says it: each line by its file
// and number.
func (e *SkippedError) skipped() lines.Skipped[*LineError] {
	return lines.Skipped[*LineError]{Prefix: "cancel", Noun: "bad journal line", Lines: e.Lines,
		Name: func(l *LineError) string { return fmt.Sprintf("%s:%d: %v", l.Path, l.Line, l.Err) }}
}
