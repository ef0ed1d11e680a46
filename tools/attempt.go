package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

// RunAttempt makes one attempt of call with t the way a [Registry] makes
// every attempt, whatever t is (issue 25): a tool of another package — an
// MCP server's, a sub-agent, one an embedder wrote — runs on a goroutine of
// its own, so that the attempt ends when ctx, its lease, ends even if the
// tool ignores ctx (the tool then runs on, owned by the Registry until it
// returns: [Registry.Wait]; made away from a Registry, by a Temporal
// activity, it has no owner to wait for it, and a tool that ignores its
// context leaks its goroutine there); a panic is recovered as the
// attempt's failure,
// a [*PanicError] that keeps the stack; and what the tool answered is
// checked once, here, so that every host reads an [Answer] the same way:
//
//   - an answer that is neither output nor error, output and error
//     together (but for output cut short), or output that is not JSON is
//     a bad answer ([ErrBadAnswer], outcome invalid): the tool answered,
//     so a write is not orphaned, and nothing of it is used;
//   - an error with no outcome is a transport failure, as [Answer] says,
//     only when it is one: the attempt's context ended, the tool says the
//     call was not sent, or the error is a network, URL or stream error,
//     or wraps [ErrNoAnswer]. Any other error of a read is the tool's own
//     failure (outcome upstream_error), tried again only when the tool
//     says so ([Answer.Retry], or a [*ToolError] that is Retryable); a
//     write's stays a failure that may have happened, reconciled by its
//     key or orphaned, unless the tool answered: it set the outcome, or
//     its error is a [*ToolError].
//
// The package's own tools ([Func], [Command], [Remote]) return when ctx
// ends by construction, and are called on the caller's goroutine. A host
// that makes attempts away from a Registry (a Temporal activity) calls
// RunAttempt rather than [Tool.Attempt].
func RunAttempt(ctx context.Context, t Tool, call *Call) Answer {
	if ownsItsTime(t) {
		return checked(ctx, t, attemptRecovered(ctx, t, call))
	}
	// Buffered, so that a tool that outlives the attempt can still hand
	// over its answer and end.
	done := make(chan Answer, 1)
	start := func(f func()) { go f() }
	if call.c != nil {
		start = call.c.reg.stragglers.Go
	}
	start(func() { done <- attemptRecovered(ctx, t, call) })
	select {
	case ans := <-done:
		return checked(ctx, t, ans)
	case <-ctx.Done():
		if strings.HasPrefix(t.Spec().Kind, AgentKindPrefix) && !call.Lease.Deadline.IsZero() {
			// A sub-agent cut short lands, with a labeled partial worth
			// more than nothing, inside its slice (SPEC §5b): it is
			// waited for until the slice's deadline, and no longer.
			wait := time.NewTimer(time.Until(call.Lease.Deadline))
			defer wait.Stop()
			select {
			case ans := <-done:
				return checked(ctx, t, ans)
			case <-wait.C:
			}
		}
		// The lease ended before the tool answered: the attempt ends now,
		// as a Func's does (SPEC §7: the run returns within its budget
		// whatever a tool does). What the tool answers later is not used,
		// and whether its work stopped is unknown: not Stopped, so that a
		// write is reconciled or orphaned, and a cancellable call is
		// cancelled.
		return Answer{Err: context.Cause(ctx)}
	}
}

// attemptRecovered calls t's Attempt and turns a panic into the attempt's
// failure: the tool answered, badly, and its goroutine has ended.
func attemptRecovered(ctx context.Context, t Tool, call *Call) (ans Answer) {
	defer func() {
		if v := recover(); v != nil {
			ans = Answer{Err: &PanicError{Value: v, Stack: debug.Stack()}, Outcome: trace.UpstreamError, Stopped: true}
		}
	}()
	return t.Attempt(ctx, call)
}

// ownsItsTime reports whether t is one of the package's own tools, which
// return when their context ends and need no goroutine of their own: a
// Func runs its function on one already.
func ownsItsTime(t Tool) bool {
	if r, ok := t.(respec); ok {
		t = r.Tool
	}
	switch t.(type) {
	case *funcTool, *commandTool, *remoteTool:
		return true
	}
	return false
}

// checked is ans of t as the Registry reads it: the one definition of a
// usable answer (see [RunAttempt]). ctx is the attempt's context.
func checked(ctx context.Context, t Tool, ans Answer) Answer {
	switch {
	case ans.Err == nil && len(ans.Output) == 0:
		return badAnswer(ans, errors.New("the attempt returned neither output nor an error"))
	case ans.Err == nil && !json.Valid(ans.Output):
		return badAnswer(ans, errors.New("the output is not JSON"))
	case ans.Err == nil:
		return ans
	case len(ans.Output) > 0 && !ans.CutShort:
		// Output and an error together say two things: neither is used,
		// and the tool answered, so a write is not orphaned (issue 25).
		return badAnswer(ans, fmt.Errorf("the attempt returned both output and an error: %w", ans.Err))
	case ans.Outcome != "" || ctx.Err() != nil || ans.NotSent || noAnswer(ans.Err):
		return ans
	case t.Spec().Effect != Read && !isToolError(ans.Err):
		// A write's error that says nothing of how the call went — a
		// POST's error wrapped with %v loses its net.Error — may come
		// after the effect happened: it stays unanswered, so the write
		// is reconciled by its key or orphaned, never told as failed
		// for the model to send again (Answer's zero fields are the safe
		// ones; issue 25).
		return ans
	}
	// A plain error of the tool's own: it answered, and failed. It is
	// tried again only when it says so (issue 25).
	ans.Outcome = trace.UpstreamError
	if te, ok := errors.AsType[*ToolError](ans.Err); ok && te.Retryable {
		ans.Retry = true
	}
	return ans
}

// isToolError reports whether err is a [*ToolError]: the tool's own word
// on how the call failed, which answers it.
func isToolError(err error) bool {
	_, ok := errors.AsType[*ToolError](err)
	return ok
}

// badAnswer is ans made an invalid answer for why.
func badAnswer(ans Answer, why error) Answer {
	return Answer{Err: fmt.Errorf("%w: %w", ErrBadAnswer, why), Outcome: trace.Invalid, Stopped: ans.Stopped, NotSent: ans.NotSent}
}

// noAnswer reports whether err says that no answer came: a network or URL
// error, a stream cut short, or one marked [ErrNoAnswer].
func noAnswer(err error) bool {
	if errors.Is(err, ErrNoAnswer) || errors.Is(err, ErrIncomplete) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	if _, ok := errors.AsType[*url.Error](err); ok {
		return true
	}
	_, ok := errors.AsType[net.Error](err)
	return ok
}

// NoAnswerError marks a tool's error as a failure that got no answer — a
// broken connection, a transport's rejection — which [Answer] with no
// outcome is only when its error says so ([RunAttempt]). It matches
// [ErrNoAnswer], and says what Err says.
type NoAnswerError struct{ Err error }

func (e *NoAnswerError) Error() string { return e.Err.Error() }

func (e *NoAnswerError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrNoAnswer].
func (e *NoAnswerError) Is(target error) bool { return target == ErrNoAnswer }

// maxProgressMessage bounds the message of a progress record, in bytes.
const maxProgressMessage = 256

// ProgressMessage is msg as a progress record says it: cut to
// maxProgressMessage bytes at a rune boundary, marked when cut. A host
// that hears progress other than through [Call.Progress] (a durable
// sub-agent's, signalled by its child workflow) words it with it.
func ProgressMessage(msg string) string { return clip(msg, maxProgressMessage) }

// An AttemptEnd is how one attempt of a call ended, read from its [Answer]
// by [Classify] the same way on every host (issue 25): what the call's
// machine is told ([AttemptEnd.Attempted]), the failure its record gives
// (Err), and the failure the model reads ([AttemptEnd.Failure]).
type AttemptEnd struct {
	// Answer is the tool's ([RunAttempt]). When no answer came, its
	// Outcome is the attempt's context's, or upstream_error (a transport
	// error, a stream cut short); its Err, for a cut attempt, the context's
	// cause; and Retry whether SPEC §2 lets it be tried again.
	Answer Answer

	// Err is the failure as the attempt's record says it; nil when the
	// attempt succeeded. Its Step and Attempt are the host's to fill in.
	Err *trace.AttemptError

	Lease    budget.Lease // the attempt's
	Cut      bool         // reports whether the attempt's context ended it before the tool answered
	Answered bool         // reports whether the tool said how it failed (it set the outcome)

	// Why is what ended an attempt that gave up: the cause of its lease's
	// context ([budget.ErrLeaseExpired] for the tool's ceiling,
	// [budget.ErrDeadline] for the run's time for work), or, when the tool
	// itself answered that its deadline passed before our context ended,
	// the same cause read from the lease. Nil for other outcomes.
	Why error

	// RetryAfter is what a failed attempt's answer said about when to come
	// back, read when it arrived; RetryAfterErr a Retry-After it carried
	// that could not be used, for the backoff record.
	RetryAfter    budget.RetryAfter
	RetryAfterErr error
}

// Classify reads ans, the answer of an attempt made on lease with context
// actx, as every host reads it: an error with no outcome got no answer,
// and is the outcome of actx when actx has ended (the attempt was cut),
// else a transport failure (upstream_error) that SPEC §2 may retry; one
// that gave up says what ended it (see [AttemptEnd.Why]).
func Classify(actx context.Context, lease budget.Lease, ans Answer) AttemptEnd {
	e := AttemptEnd{Answer: ans, Lease: lease}
	if ans.Err == nil {
		return e
	}
	e.Answered = ans.Outcome != ""
	if !e.Answered && actx.Err() != nil {
		e.Cut = true
		e.Answer.Err = context.Cause(actx)
		e.Answer.Outcome = trace.OutcomeOfContext(actx, watchdog.ErrQuiet)
	} else if !e.Answered {
		e.Answer.Outcome = trace.UpstreamError
	}
	e.Err = &trace.AttemptError{Outcome: e.Answer.Outcome, Status: ans.Status, Header: ans.Header, Err: e.Answer.Err}
	if !e.Answered {
		e.Answer.Retry = trace.Retryable(e.Err)
	}
	if e.Err.Outcome == trace.GaveUp {
		e.Why = gaveUpWhy(actx, lease)
		if !e.Cut && !errors.Is(ans.Err, e.Why) {
			// The tool said its deadline passed, a moment before our
			// lease ended: the record names our cause first, as a cut
			// attempt's does, then what the tool said (issue 18).
			e.Err.Err = fmt.Errorf("%w: the tool said: %w", e.Why, ans.Err)
		}
	}
	e.RetryAfter, e.RetryAfterErr = budget.ReadRetryAfter(ans.Header, time.Now())
	return e
}

// gaveUpWhy is what ended an attempt on lease that gave up: the cause of
// its context actx when that has ended, else the cause the lease's own
// context would give.
func gaveUpWhy(actx context.Context, lease budget.Lease) error {
	switch {
	case actx.Err() != nil:
		return context.Cause(actx)
	case lease.Capped:
		return budget.ErrLeaseExpired
	}
	return budget.ErrDeadline
}

// Attempted is what the call's machine is told of the attempt
// ([AttemptEnded]).
func (e AttemptEnd) Attempted() Attempted {
	return Attempted{OK: e.Err == nil, Cut: e.Cut, GaveUp: e.Err != nil && e.Err.Outcome == trace.GaveUp,
		Answered: e.Answered, NotSent: e.Answer.NotSent, Stopped: e.Answer.Stopped, Retry: e.Answer.Retry,
		RetryAfter: e.RetryAfter}
}

// Failure is the attempt's failure as the model reads it ([Describe]),
// for spec's tool; empty when it succeeded.
func (e AttemptEnd) Failure(spec Spec) string {
	if e.Err == nil {
		return ""
	}
	return Describe(spec, e.Err, e.Why, e.Lease.Granted)
}
