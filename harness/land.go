package harness

import (
	"context"
	"fmt"
	"strings"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

// Answer ends the run with the model's answer: the result is complete. It
// first waits for the cancels the run sent, until the budget's deadline,
// so that the record of the calls is final, and writes the run_end record.
// A run that already has its result, or is making it, keeps it: Answer
// waits for that one and returns it.
func (s *Session) Answer(answer string) landing.Result {
	if !s.claim() {
		return s.wait()
	}
	s.settleCancels()
	return s.finish(landing.Result{Status: landing.Complete, Answer: answer})
}

// Land ends the run early, for cause, with a labeled partial result: the
// ladder moves to land, and summarize, if not nil, is asked for the answer
// with the landing prompt, which carries the boundary ("Ran out of allotted
// time at step 3: search done; fetch was in flight and is not included.").
// When summarize is nil, fails or answers nothing, the answer is
// [landing.Summarize]'s, built from the run's own record. Either way the
// result carries the cause, the boundary, and the established, not
// established and in-flight lists, made once the cancels the run sent are
// answered or the deadline has come.
//
// summarize runs on ctx without its cancellation (the run's context may
// have ended: that may be why it lands), bounded by the budget's deadline
// and by a quiet clock of its own, so that a landing call that only streams
// keepalives ends as a stall does. Inside it, [Session.Turn] and
// [Session.BeginTurn] make the landing call: one attempt on a landing lease
// that may spend the reserve. A run that already has its result, or is
// making it, keeps it: Land waits for that one and returns it.
func (s *Session) Land(ctx context.Context, cause landing.Cause, summarize func(ctx context.Context, prompt string) (string, error)) landing.Result {
	if !s.claim() {
		return s.wait()
	}
	s.ladder.Advance(landing.Land)
	s.syncPhase()
	boundary := landing.Summarize(s.landingRecord(cause)).Boundary
	who, msg, answer := "harness", boundary, ""
	if summarize != nil {
		text, err := s.landingCall(ctx, boundary, summarize)
		switch {
		case err != nil:
			msg = "landing call failed: " + err.Error()
		case strings.TrimSpace(text) == "":
			msg = "landing call answered nothing"
		default:
			who, answer = "model", text
		}
	}
	s.record(trace.Record{Event: trace.Landing, Cause: string(cause), Result: who, Message: msg})
	s.settleCancels()
	res := landing.Summarize(s.landingRecord(cause))
	if answer != "" {
		res.Answer = answer
	}
	return s.finish(res)
}

// landingCall runs summarize on the landing context, with the run's
// landing watchdog in place for the turns it makes.
func (s *Session) landingCall(parent context.Context, boundary string, summarize func(context.Context, string) (string, error)) (string, error) {
	ctx, stop := budget.WithBudget(context.WithoutCancel(parent), s.b)
	defer stop()
	w, wctx, err := watchdog.Start(ctx, watchdog.Config{Quiet: s.cfg.Quiet, Wall: s.b.Deadline()})
	if err != nil {
		return "", err
	}
	defer w.Stop()
	s.mu.Lock()
	s.landingW = w
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.landingW = nil
		s.mu.Unlock()
	}()
	return summarize(wctx, landingPrompt(boundary))
}

func landingPrompt(boundary string) string {
	return fmt.Sprintf(`The run must stop now. %s
Do not call any tool. Summarize for the user what is established, what is not established, and what was in flight when the run stopped. Say plainly that the answer is partial.`, boundary)
}

// settleCancels waits for the cancels the run sent until they are answered
// or the budget's deadline comes, whichever is first: a call's state is
// final only then (SPEC §4: cancelled means its cancel was accepted).
func (s *Session) settleCancels() {
	ctx, stop := budget.WithBudget(context.Background(), s.b)
	defer stop()
	s.cancels.Wait(ctx)
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
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.result
}

// finish fills what every result carries, records run_end and keeps the
// result as the run's.
func (s *Session) finish(res landing.Result) landing.Result {
	s.stopPhases()
	res.RunID = s.id
	res.Budget = landing.ReportOf(s.b)
	res.Steps = s.steps()
	res.Attempts = int(s.attempts.Load())
	res.Orphans = int(s.orphans.Load())
	s.record(trace.Record{Event: trace.RunEnd, TotalMs: s.b.Total().Milliseconds(),
		Cause: string(res.Cause), Result: string(res.Status)})
	s.mu.Lock()
	s.result = &res
	s.mu.Unlock()
	close(s.done)
	return res
}
