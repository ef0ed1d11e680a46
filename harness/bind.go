package harness

import (
	"context"
	"errors"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/internal/ctxkey"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/watchdog"
	"github.com/openai/openai-go/v3"
)

// ErrNoSession is returned by the methods of a Session that [Start] did
// not make: the zero Session, or a nil *Session. It is not a run: it has
// no budget, no clock and no record, so it does nothing and says so,
// rather than panic (see # Zero values in the package doc).
var ErrNoSession = errors.New("harness: Session not started: use harness.Start")

// started reports whether s is a Session [Start] made.
func (s *Session) started() bool { return s != nil && s.b != nil }

// noSession is the result of a Session that was never started: partial,
// with ErrNoSession as its boundary, so that it cannot be read as an
// answer.
func noSession() landing.Result {
	return landing.Result{Status: landing.Partial, Boundary: ErrNoSession.Error() + ".", Answer: ErrNoSession.Error()}
}

// noSessionCall is a tool call's result on a Session that was never
// started: refused before anything was sent.
func noSessionCall(name string) tools.Result {
	return tools.Result{Tool: name, Refused: true, Err: "not run: " + ErrNoSession.Error(), Cause: ErrNoSession}
}

// runKey is the key of the mark a Session puts on its contexts: a context
// that carries the run's mark, its runContext, or its landing call's, a
// landingMark, is derived from that one, and so ends when it does.
type runKey struct{}

// landingMark marks a context as the landing call's of the run s.
type landingMark struct{ s *Session }

// runContext is the run's context: the Session's cctx, with the run's
// deadline D (the budget's, which Start shortened to the caller's) and
// mark. It is the size of a pointer, so that it is a context.Context
// without an allocation, and it answers the mark itself rather than wrap
// cctx in a context of context.WithValue's (issue 25 item 6). Contexts
// derived from it hear its end, with its cause, from cctx.
type runContext struct{ s *Session }

func (c runContext) Deadline() (time.Time, bool) { return c.s.b.Deadline(), true }
func (c runContext) Done() <-chan struct{}       { return c.s.cctx.Done() }

// Err is cctx's error, but DeadlineExceeded when the wall ended it, as a
// context with a deadline says (runHost.End cancels it with the budget's
// deadline as the cause).
func (c runContext) Err() error {
	err := c.s.cctx.Err()
	if err == context.Canceled && context.Cause(c.s.cctx) == budget.ErrDeadline {
		return context.DeadlineExceeded
	}
	return err
}

// Value answers the run's mark, and its budget ([budget.FromContext]).
func (c runContext) Value(key any) any {
	switch key {
	case runKey{}:
		return c
	case ctxkey.Budget{}:
		return c.s.b
	}
	return c.s.cctx.Value(key)
}

// runHost is the Session as the host of its watchdog ([watchdog.Host]):
// the watchdog's one timer ends the run's context, and records the
// frame's changes of phase when they happen rather than at the next
// record or gate.
type runHost struct{ s *Session }

func (h runHost) Done() <-chan struct{} { return h.s.cctx.Done() }

// End ends the run's context with cause, which is the run's own and not
// its caller's cancel (unwatch: noteCancel). The wall is the budget's
// deadline D, and its cause is the budget's ([budget.ErrDeadline]), as it
// was when a context of [budget.WithBudget]'s carried D: a call cut there
// gave up, whatever context it was derived by.
func (h runHost) End(cause error) {
	if cause == watchdog.ErrWall {
		cause = budget.ErrDeadline
	}
	h.s.unwatch()
	h.s.cancel(cause)
}

// Wake records the change of phase due by now, if any, and returns when
// the next is due: none once the run has its result (stopPhases).
func (h runHost) Wake(now time.Time) (time.Time, bool) {
	s := h.s
	s.recMu.Lock()
	defer s.recMu.Unlock()
	if s.phaseOff {
		return time.Time{}, false
	}
	if at, ok := s.frame.NextWake(); ok && !now.Before(at) {
		s.ladder.Phase() // the gates' ladder moves with the record's
		s.write(s.frame.Advance(now))
	}
	return s.frame.NextWake()
}

// bind returns ctx bound to the run (SPEC §3; STYLE: a context passed in
// is a floor, not a replacement): a context derived from the run's is
// returned as it is, and any other ends when either it or the run's ends,
// with the cause of the one that ended first — the quiet clock, the wall,
// the caller's own cancellation. While the run makes its landing call the
// run's context has ended (that is why it lands), so calls are bound to
// the landing call's context instead; a context derived from the run's
// then gives only its values. release must be called once the call is
// done.
func (s *Session) bind(ctx context.Context) (bound context.Context, release func()) {
	run, landingCall := s.boundTo()
	if ctx == nil {
		return run, func() {}
	}
	switch mark := ctx.Value(runKey{}); {
	case !landingCall && mark == any(s.ctx), landingCall && mark == any(landingMark{s}):
		return ctx, func() {}
	case mark == any(s.ctx):
		// landingCall: the run's context has ended; only its values remain.
		ctx = context.WithoutCancel(ctx)
	}
	mctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(run, func() { cancel(context.Cause(run)) })
	return mctx, func() {
		stop()
		cancel(context.Canceled)
	}
}

// boundTo returns the context calls are bound to now: the landing
// call's while it runs (landingCall true), else the run's.
func (s *Session) boundTo() (ctx context.Context, landingCall bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.landingCtx != nil {
		return s.landingCtx, true
	}
	return s.ctx, false
}

// Land ends the run early, with a labeled partial result and the words
// that fit why: the one way a loop of its own stops without an answer. err
// is what stopped the loop, typically [Session.BeginTurn]'s or
// [Turn.End]'s error:
//
//   - nil: the loop chose to stop; the run lands for the cause it must
//     land for now, if any, else cancelled.
//   - [*MustLandError] (BeginTurn's: the run must land now): its cause.
//   - The run's end (its quiet clock, its deadline, a cancellation) or the
//     caller's: that cause.
//   - A refusal of the budget, a backoff that would outlast it, an attempt
//     cut at the start of the reserve: budget, and a wait the server asked
//     for that the budget could not afford is named.
//   - The model's failure: upstream, and the boundary names the status and
//     the server's message ("The model failed at step 1: 401 Incorrect API
//     key provided."); a reply that was not a whole answer
//     ([model.ErrNotAnswer]) says so.
//
// The ladder moves to land, and summarize, if not nil, is asked for the
// answer with the landing prompt, which carries the boundary ("Ran out of
// allotted time at step 3: search done; fetch was in flight and is not
// included."). When summarize is nil, fails or answers nothing, the
// answer is [landing.Summarize]'s, built from the run's own record; so it
// is, and summarize is not called, when the landing call could not be
// answered ([landing.Plan], the rule both hosts apply: a model's server
// that refused the run ([model.Refused]: 401, 403, 404, unreachable) or
// was mute, or no landing lease above the floor and the model's p50: "no
// time for a landing call: below p50"). Either way the result carries the
// cause, the boundary, and the established, not established and
// in-flight lists, made once the cancels the run sent are answered or
// their grace ([CancelGrace]) is over.
//
// summarize runs on ctx without its cancellation (the run's context may
// have ended: that may be why it lands), bounded by the budget's deadline
// and by a quiet clock of its own, so that a landing call that only
// streams keepalives ends as a stall does, and by the landing's deadline
// even if it ignores its context. Inside it, [Session.BeginTurn] makes the
// landing call: one request ([ErrLandingCallMade] for a second) on a
// landing lease that may spend the reserve, offered no tools
// ([Session.Tools] is nil). A run that already has its result, or is
// making it, keeps it: Land waits for that one and returns it.
func (s *Session) Land(ctx context.Context, err error, summarize func(ctx context.Context, prompt string) (string, error)) landing.Result {
	if !s.started() {
		return noSession()
	}
	if ctx == nil {
		ctx = s.ctx
	}
	if ml, ok := errors.AsType[*MustLandError](err); ok {
		return s.landFor(ctx, ml.Cause, summarize)
	}
	if err == nil {
		cause, ok := s.mustLand(ctx)
		if !ok {
			cause = landing.CauseCancelled
		}
		return s.landFor(ctx, cause, summarize)
	}
	return s.landFailed(ctx, err, summarize)
}

// Tools returns the tools the run offers now, in the shape of the tools
// field of an openai-go request ([Offer]): what a loop of its own sends
// with each turn, so that the model is offered exactly what [Session.Call]
// will run. Nil when there are none, on a Session that was never
// started, and once the run lands: the landing call is offered no tools
// (SPEC §4, issue 25).
func (s *Session) Tools() []openai.ChatCompletionToolUnionParam {
	if !s.started() || s.over() {
		return nil
	}
	return Offer(s.specs())
}
