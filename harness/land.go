package harness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/glidepath/glidepath/budget"
	grun "github.com/glidepath/glidepath/internal/run"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

// Answer ends the run with the model's answer: the result is complete,
// unless a write of the run is still orphaned, its outcome unknown: then
// it is partial with cause unsettled, the answer kept, and the boundary
// names the write and says to reconcile it ([landing.Settle]). Answer first
// gives the cancels the run sent their grace ([CancelGrace]), so that the
// record of the calls is final, and writes the run_end record.
// A run that already has its result, or is making it, keeps it: Answer
// waits for that one and returns it.
//
// An answer that says nothing (empty, or only white space) is not an
// answer: the run lands with cause upstream, the boundary says the model
// answered nothing, and the answer is the harness's summary of its record
// (SPEC §3: a partial result is never presented as complete).
func (s *Session) Answer(answer string) landing.Result {
	if !s.started() {
		return noSession()
	}
	if strings.TrimSpace(answer) == "" {
		return s.landFailed(context.Background(), errEmptyAnswer, nil)
	}
	if open := s.openTurns(); len(open) > 0 {
		// An answer while a turn is still open is not the run's answer
		// yet: the turn is ended, its attempt recorded, and the run lands
		// (issue 25).
		for _, t := range open {
			t.End(ErrTurnOpen)
		}
		return s.landFailed(context.Background(), ErrTurnOpen, nil)
	}
	if !s.claim() {
		return s.wait()
	}
	s.settleCancels()
	s.mu.Lock()
	rec := s.m.Record("", slices.Clone(s.calls))
	s.mu.Unlock()
	return s.finish(landing.Settle(rec, answer))
}

// errEmptyAnswer is the failure of a run whose model answered nothing.
var errEmptyAnswer = errors.New(landing.EmptyAnswer)

// landFor lands the run for cause, as [Session.Land] does.
func (s *Session) landFor(ctx context.Context, cause landing.Cause, summarize func(ctx context.Context, prompt string) (string, error)) landing.Result {
	if !s.started() {
		return noSession()
	}
	return s.land(ctx, grun.Event{Cause: cause}, summarize)
}

// land lands the run as the run's machine says, stop being what stopped
// it (its Cause, and its Failure when the machine has no words of its
// own for it): the machine decides the landing on its budget (the
// landing call, or the harness's summary: landing.Plan, the rule the
// workflow applies too) and makes its record and result; the Session
// moves the ladder, lands the sub-agents, makes the landing call and
// gives the cancels their grace. A run that already has its result keeps
// it, and its words.
func (s *Session) land(ctx context.Context, stop grun.Event, summarize func(ctx context.Context, prompt string) (string, error)) landing.Result {
	if ctx == nil {
		ctx = s.ctx
	}
	if !s.claim() {
		return s.wait()
	}
	if stop.Cause == "" { // the loop lands as its machine asked
		s.mu.Lock()
		stop.Cause = s.m.Cause()
		s.mu.Unlock()
	}
	s.ladder.Advance(landing.Land)
	s.syncPhase()
	lb := s.landingBudget(stop.Cause)
	s.mu.Lock()
	s.landBy = lb
	s.mu.Unlock()
	// The sub-agents still at work land now, and their labeled partials,
	// and their orphans, are the run's before its result is made.
	s.cancelChildren()
	waitUntil(&s.agentCalls, lb)
	// The parent of a sub-agent is landing and is owed this partial at
	// once: it makes the landing call, with this result in it.
	parentEnded := errors.Is(context.Cause(ctx), ErrParentEnded) || errors.Is(context.Cause(s.ctx), ErrParentEnded)
	stop.Kind, stop.NoCall = grun.Stopped, summarize == nil || parentEnded
	s.mu.Lock()
	stop.Setup = slices.Clone(s.rare.setupLeft())
	s.m.Step(stop)
	landed := grun.Event{Kind: grun.Landing, Figures: grun.Figures{Remaining: lb.Remaining(), Reserve: lb.Reserve(),
		Floor: lb.Floor(), P50: s.b.Estimates().Kind(model.Kind).P50(), Calls: slices.Clone(s.calls)}}
	landed.Stall, _ = errors.AsType[*watchdog.StallError](context.Cause(s.ctx))
	cmd := s.m.Step(landed)
	s.mu.Unlock()
	if cmd.Kind == grun.MakeLandingCall {
		text, err := s.landingCall(ctx, lb, cmd.Plan.Prompt, summarize)
		e := grun.Event{Kind: grun.LandingEnded, Reply: grun.Reply{Content: text}}
		if err != nil {
			e.Failed, e.Why = true, err.Error()
		}
		cmd = s.feed(e)
	}
	if cmd.Record != nil {
		s.record(*cmd.Record)
	}
	s.settleCancels()
	s.mu.Lock()
	res := s.m.Result(slices.Clone(s.calls))
	s.mu.Unlock()
	return s.finish(res)
}

// landingBudget is the budget a landing for cause leases from and waits
// on. A run its caller cancelled (the first Ctrl-C) is owed its answer
// now: the landing, its call and the waits for cancels and sub-agents
// alike, is over within the reserve R of the moment it was cancelled, not
// within whatever the budget had left (SPEC §3). A sub-agent cancelled by
// its parent's end is over by then too, with the parent's keep to spare,
// so that the parent still lands in time.
func (s *Session) landingBudget(cause landing.Cause) *budget.Budget {
	if cause != landing.CauseCancelled {
		return s.b
	}
	by, _ := s.landsBy()
	if p := s.cfg.parent; p != nil {
		if pb, ok := p.s.landsBy(); ok && pb.Add(-Keep(p.s.b)).Before(by) {
			by = pb.Add(-Keep(p.s.b))
		}
	}
	return s.b.Shorten(by)
}

// LandsBy returns by when the run has its result once it lands, for a
// caller that tells a person how long to wait (harness run's line at the
// first Ctrl-C, SPEC §3): the landing's own deadline once it has begun
// (R after the caller cancelled the run, for a run cancelled before or as
// it landed; the budget's deadline for one that was landing already); R
// after the caller cancelled it, if it has not begun landing yet; else R
// from now. Never past the budget's deadline. The zero time on a Session
// that was never started.
func (s *Session) LandsBy() time.Time {
	if !s.started() {
		return time.Time{}
	}
	by, _ := s.landsBy()
	if d := s.b.Deadline(); by.After(d) {
		by = d
	}
	return by
}

// landsBy returns when the run's landing ends: its landing budget's
// deadline once it lands, R after its caller cancelled it, else now + R;
// ok reports whether one of the first two is what it says.
func (s *Session) landsBy() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.landBy != nil:
		return s.landBy.Deadline(), true
	case s.cancelled:
		return s.b.Start().Add(s.cancelledAt + s.b.Reserve()), true
	}
	return time.Now().Add(s.b.Reserve()), false
}

// landFailed ends the run because a model request failed with err, as
// [Session.landFor] does with the cause [CauseOf] names (the run's own end
// first: a call on a context of the caller's own sees the run's quiet
// clock too). The run's machine has the words of a turn that failed (a
// Turn's end, a turn BeginTurn refused); an err it did not hear that
// the model failed with is named for a person, its status and the
// server's message ("The model failed at step 1: 401 Incorrect API key
// provided."). It is [Session.Land] of an err that is not nil.
func (s *Session) landFailed(ctx context.Context, err error, summarize func(ctx context.Context, prompt string) (string, error)) landing.Result {
	if !s.started() {
		return noSession()
	}
	if ctx == nil {
		ctx = s.ctx
	}
	stop := grun.Event{Cause: landing.TurnCause(s.workEnded(ctx), outOfTime(err))}
	if stop.Cause == landing.CauseUpstream {
		stop.Failure = model.Describe(err)
	}
	return s.land(ctx, stop, summarize)
}

// landingCall runs summarize with prompt on the landing context, with the run's
// landing watchdog and b, the landing's budget, in place for the turns it
// makes.
func (s *Session) landingCall(parent context.Context, b *budget.Budget, prompt string, summarize func(context.Context, string) (string, error)) (string, error) {
	ctx, stop := budget.WithBudget(context.WithoutCancel(parent), b)
	defer stop()
	w, wctx, err := watchdog.Start(ctx, watchdog.Config{Quiet: s.cfg.Quiet, Wall: b.Deadline()})
	if err != nil {
		return "", err
	}
	defer w.Stop()
	wctx = context.WithValue(wctx, runKey{}, landingMark{s})
	s.mu.Lock()
	s.landingW, s.landingB, s.landingCtx = w, b, wctx
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.landingW, s.landingB, s.landingCtx = nil, nil, nil
		s.mu.Unlock()
	}()
	// A summarize that heeds its context returns when the landing's quiet
	// clock or deadline ends it, with the record of its attempt made: it
	// is waited for until the landing's deadline, and only one that
	// ignores it is left there (issue 25).
	return heeded(s, ctx, 0, func() (string, error) { return summarize(wctx, prompt) })
}

// heeded runs fn, a function of the caller's, on a goroutine of the run's
// work in flight and returns what it returns; or, once ctx ends and fn has
// not returned within grace (never past the run's deadline), ctx's cause:
// whatever fn does, it cannot hold the run past ctx and its grace (issue
// 25), as a tool's attempt cannot ([tools.RunAttempt]). The grace lets an
// fn that heeds ctx say in its own words how ctx ended it. A panic in fn
// is its error. One that runs on is work in flight, which Close waits for
// until the deadline.
func heeded[T any](s *Session, ctx context.Context, grace time.Duration, fn func() (T, error)) (T, error) {
	type returned struct {
		v   T
		err error
	}
	done := make(chan returned, 1)
	s.busy.Go(func() {
		defer func() {
			if v := recover(); v != nil {
				done <- returned{err: fmt.Errorf("harness: panic: %v", v)}
			}
		}()
		v, err := fn()
		done <- returned{v, err}
	})
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
	}
	if grace = min(grace, time.Until(s.b.Deadline())); grace > 0 {
		wait := time.NewTimer(grace)
		defer wait.Stop()
		select {
		case r := <-done:
			return r.v, r.err
		case <-wait.C:
		}
	}
	select {
	case r := <-done: // it returned as ctx ended: take what it made
		return r.v, r.err
	default:
		var zero T
		return zero, context.Cause(ctx)
	}
}

// CancelGrace is the most a run's result waits, once it exists (the
// model's answer, the landing summary, or the harness's own), for the
// cancels the run sent to be answered (SPEC §3: cancels never hold the
// answer). A cancel answered within it settles its call's state (accepted:
// cancelled); one still unanswered then stays "sent", its call abandoned,
// and is cut.
const CancelGrace = 100 * time.Millisecond

// errGraceOver is the cause the cancels still unanswered when their grace
// ends are cut with.
var errGraceOver = fmt.Errorf("harness: the run's result exists and the cancel's grace of %v is over", CancelGrace)

// settleCancels gives the cancels the run sent their grace, at most
// [CancelGrace] and never past the deadline (the budget's, or the
// landing's once the run lands: a cancelled run waits no longer than its
// reserve), and then cuts those still unanswered: the call states it
// settled are final, and the others stay as they were (SPEC §4: cancelled
// means its cancel was accepted). The cut cancels' goroutines end at once;
// Close waits for them.
func (s *Session) settleCancels() {
	s.mu.Lock()
	b := s.b
	if s.landBy != nil {
		b = s.landBy
	}
	s.mu.Unlock()
	if s.cancels.Idle() {
		return // nothing to give a grace to, or to cut (issue 25)
	}
	ctx, stop := budget.WithBudget(context.Background(), b)
	defer stop()
	gctx, cancel := context.WithTimeout(ctx, CancelGrace)
	defer cancel()
	s.cancels.Wait(gctx)
	s.cancels.Cut(errGraceOver)
}

// endCancels waits for the goroutines of the cancels the run cut to
// return, until the deadline: a [cancel.Canceller] returns when its
// context ends, so they end at once, and none outlives the run.
func (s *Session) endCancels() {
	s.mu.Lock()
	b := s.b
	if s.landBy != nil {
		b = s.landBy
	}
	s.mu.Unlock()
	waitUntil(&s.cancels, b)
}

// claim reports whether the caller is the one to make the run's result:
// the first of Land and Answer to ask. From then on no work is started.
func (s *Session) claim() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.claimed {
		return false
	}
	s.claimed = true
	return true
}

// wait returns the run's result once the caller that claimed it has made
// it.
func (s *Session) wait() landing.Result {
	<-s.made()
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.result
}

// finish fills what every result carries, records run_end and keeps the
// result as the run's.
func (s *Session) finish(res landing.Result) landing.Result {
	s.stopPhases()
	s.mu.Lock()
	unavailable := slices.Clone(s.rare.unavailableTools())
	s.mu.Unlock()
	s.record(trace.Record{Event: trace.RunEnd, TotalMs: s.b.Total().Milliseconds(),
		Cause: string(res.Cause), Result: string(res.Status)})
	// The budget is reported as run_end was stamped, the instant the result
	// exists: a late run's spent_ms is past total_ms exactly when run_end
	// carries late_ms (SPEC §3, issue 24).
	res = landing.Finish(res, landing.Totals{RunID: s.id, Steps: s.steps(), Attempts: int(s.attempts.Load()),
		Unavailable: unavailable, Budget: landing.ReportOf(s.b, s.rec.Ended())})
	res.Orphans = int(s.orphans.Load())
	s.keep(&res)
	return res
}
