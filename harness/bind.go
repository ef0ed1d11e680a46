package harness

import (
	"context"
	"errors"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/tools"
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

// runKey is the key of the mark a Session puts on its contexts.
type runKey struct{}

// runMark marks a context as the run's (landing false) or its landing
// call's: a context that carries it is derived from that one, and so ends
// when it does.
type runMark struct {
	s       *Session
	landing bool
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
	run, landingCall := s.runContext()
	if ctx == nil {
		return run, func() {}
	}
	switch ctx.Value(runKey{}) {
	case runMark{s: s, landing: landingCall}:
		return ctx, func() {}
	case runMark{s: s}:
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

// runContext returns the context calls are bound to now: the landing
// call's while it runs (landingCall true), else the run's.
func (s *Session) runContext() (ctx context.Context, landingCall bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.landingCtx != nil {
		return s.landingCtx, true
	}
	return s.ctx, false
}

// Phase returns the run's phase on the ladder now (SPEC §3), moving the
// ladder if the clock says so: what the budget note tells the model, for
// a loop that decides by it. A Session that was never started is in
// [landing.Land]: nothing may start on it.
func (s *Session) Phase() landing.Phase {
	if !s.started() {
		return landing.Land
	}
	return s.ladder.Phase()
}

// LandOn ends the run because the loop must stop, with the words that fit
// why, whatever err is: the one landing call for a loop of its own. err is
// what stopped the loop, typically [Turn.End]'s error, or nil when the
// loop stopped because [Session.MustLand] said so.
//
//   - nil: the run lands for the cause MustLand names, or cancelled when
//     it names none (the loop chose to stop).
//   - The run's end (its quiet clock, its deadline, a cancellation) or the
//     caller's: that cause.
//   - A refusal of the budget, a backoff that would outlast it, an attempt
//     cut at the start of the reserve: budget, and a wait the server asked
//     for that the budget could not afford is named.
//   - The model's failure: upstream, and the boundary names the status and
//     the server's message ("The model failed at step 1: 401 Incorrect API
//     key provided."); a reply that was not a whole answer
//     ([model.ErrNotAnswer]) says so. When the server refused the run itself
//     (401, 403, 404, unreachable: [model.Refused]) summarize is not called:
//     the landing call would go to the server that just refused, so the
//     harness summarizes.
//
// Otherwise it is [Session.Land]: summarize, if not nil, is the landing
// call, and a run that already has its result keeps it.
func (s *Session) LandOn(ctx context.Context, err error, summarize func(ctx context.Context, prompt string) (string, error)) landing.Result {
	if !s.started() {
		return noSession()
	}
	if ctx == nil {
		ctx = s.ctx
	}
	if err == nil {
		cause, ok := s.MustLand(ctx)
		if !ok {
			cause = landing.CauseCancelled
		}
		return s.Land(ctx, cause, summarize)
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
