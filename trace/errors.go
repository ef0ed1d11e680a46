package trace

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/glidepath/glidepath/budget"
)

var (
	// ErrGaveUp is matched when we stopped the work: our lease or the
	// run's deadline ended an attempt, the quiet clock fired, the run was
	// cancelled, or a backoff sleep would have outlasted the budget.
	ErrGaveUp = errors.New("trace: we gave up")

	// ErrFailed is matched when the other side failed the work: an error
	// status, a transport error, a broken stream, an answer that cannot be
	// used, a failure it reported.
	ErrFailed = errors.New("trace: they failed")
)

// AttemptError is the failure of one attempt. It matches [ErrGaveUp] when
// its Outcome is one of ours ([Outcome.Ours]) and [ErrFailed] otherwise,
// and unwraps to Err: the underlying error, or the context cause that ended
// the attempt.
type AttemptError struct {
	Step    string // the step kind, e.g. "model" or "tool:search"
	Attempt int    // 1-based
	Outcome Outcome
	Status  int         // the HTTP status, when there was one
	Header  http.Header // the error answer's headers, for Retry-After
	Err     error
}

func (e *AttemptError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%sattempt %d: %s (status %d): %v", prefix(e.Step), e.Attempt, e.Outcome, e.Status, e.Err)
	}
	return fmt.Sprintf("%sattempt %d: %s: %v", prefix(e.Step), e.Attempt, e.Outcome, e.Err)
}

func (e *AttemptError) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel of e's outcome.
func (e *AttemptError) Is(target error) bool {
	if e.Outcome.Ours() {
		return target == ErrGaveUp
	}
	return target == ErrFailed
}

// GaveUpError reports retries stopped because the next backoff sleep would
// outlast the budget (the backoff record's gave_up, SPEC §6). It matches
// [ErrGaveUp] and unwraps to Last, the last attempt's error.
type GaveUpError struct {
	Step  string // the step kind, e.g. "model" or "tool:search"
	Delay budget.Delay
	Last  error
}

func (e *GaveUpError) Error() string {
	return fmt.Sprintf("%sgave up: %s (sleep %v): %v", prefix(e.Step), e.Delay.Reason, e.Delay.Sleep, e.Last)
}

func (e *GaveUpError) Unwrap() error { return e.Last }

// Is reports whether target is [ErrGaveUp].
func (e *GaveUpError) Is(target error) bool { return target == ErrGaveUp }

// prefix starts a message with the step that failed, when it is known.
func prefix(step string) string {
	if step == "" {
		return ""
	}
	return step + ": "
}
