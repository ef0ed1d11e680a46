package harness

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

// SetupStep is the step kind of the work a run does before its first model
// turn: fetching manifests, starting servers (SPEC §3, §6).
const SetupStep = "setup"

// A Session is one run, as a value an agent loop drives step by step: the
// harness's own loop ([Session.Run]) or one the caller already has. It
// holds the run's budget, its watchdog and ladder, the record of its calls
// and its sinks; it answers what a loop must ask before each step — the
// budget note for the model ([Session.Note]), whether the run must land now
// and why ([Session.MustLand]) — and makes the steps on the budget: model
// turns ([Session.Turn], or [Session.BeginTurn] for a model the caller
// calls itself), tool calls through the ladder's gates ([Session.Call],
// [Session.CallAll]), setup work ([Session.Setup]). It ends with a labeled
// result ([Session.Answer] or [Session.Land]) and is closed with
// [Session.Close].
//
// A Session is safe for concurrent use: the calls of one step may run at
// once.
type Session struct {
	cfg    Config
	id     string
	b      *budget.Budget
	ladder *landing.Ladder
	w      *watchdog.Watchdog
	rec    *trace.Recorder
	stopB  context.CancelFunc // ends the budget's context

	recMu sync.Mutex // guards ended, and orders it with the records
	ended bool       // reports whether run_end is recorded

	cancels  cancel.Group // the cancels the run sent, waited for once it has landed
	attempts atomic.Int64 // physical requests started: model attempts, the landing call, tool attempts, setup
	orphans  atomic.Int64

	mu       sync.Mutex // guards the fields below
	step     int        // model turns made
	calls    []landing.Call
	landingW *watchdog.Watchdog // the landing call's own watchdog while it runs; nil before
	result   *landing.Result    // the run's result, once made
	phaseT   *time.Timer        // fires at the next change of phase
	closed   bool
}

// Start starts a run on b, the budget the caller started (so that what the
// caller did before, such as reading its config, is spent from it too), and
// returns its Session and the run's context, which ends when the run must
// stop working: its quiet clock fired (cause a [*watchdog.StallError]), its
// wall came ([watchdog.ErrWall], [budget.ErrDeadline]), or ctx ended. Pass
// that context to the Session's methods.
//
// A cfg that [Config.Validate] rejects is a [*ConfigError], and nothing
// starts. When ctx's deadline comes before b's, the run's budget is b
// shortened to it ([budget.Budget.Shorten]): the run lands inside the
// caller's deadline, with a reserve taken from the time it really has.
// Start writes the run_start record. Close the Session when the run is
// done.
func Start(ctx context.Context, b *budget.Budget, cfg Config) (*Session, context.Context, error) {
	if b == nil {
		return nil, nil, &ConfigError{Field: "budget", Err: errRequired}
	}
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	cfg = cfg.withDefaults()
	if d, ok := ctx.Deadline(); ok {
		b = b.Shorten(d)
	}
	s := &Session{cfg: cfg, id: cfg.RunID, b: b}
	if s.id == "" {
		s.id = "run-" + strings.ToLower(rand.Text())
	}
	s.ladder = landing.New(b, landing.Config{OnChange: s.phaseChanged})
	s.rec = trace.NewRecorder(s.id, b, func(spent time.Duration) string { return s.ladder.Peek(spent).String() }, cfg.Sinks...)
	bctx, stop := budget.WithBudget(ctx, b)
	w, wctx, err := watchdog.Start(bctx, watchdog.Config{Quiet: cfg.Quiet, Wall: b.Deadline()})
	if err != nil { // Validate has judged the quiet period: this cannot happen
		stop()
		return nil, nil, &ConfigError{Field: "quiet", Value: cfg.Quiet.String(), Err: err}
	}
	s.w, s.stopB = w, stop
	s.specs()
	s.record(trace.Record{Event: trace.RunStart, TotalMs: b.Total().Milliseconds()})
	s.armPhase()
	return s, wctx, nil
}

// ID returns the run's id.
func (s *Session) ID() string { return s.id }

// Budget returns the run's budget: the one Start was given, or that budget
// shortened to the caller's deadline.
func (s *Session) Budget() *budget.Budget { return s.b }

// Note returns the budget note the model reads at every turn (SPEC §3):
// the time left until the deadline and until landing begins, the phase,
// and what the phase forbids.
func (s *Session) Note() string { return s.ladder.Note() }

// MustLand reports whether the run must stop working and land now, and
// why: ctx (the run's context) ended — the quiet clock ([landing.CauseQuiet]),
// the wall ([landing.CauseBudget]), a cancellation
// ([landing.CauseCancelled]) —, the budget reached its reserve
// ([landing.CauseBudget]), or [Config.MaxSteps] turns were made
// ([landing.CauseMaxSteps]).
func (s *Session) MustLand(ctx context.Context) (landing.Cause, bool) {
	switch {
	case ctx.Err() != nil:
		return causeOfContext(ctx), true
	case s.ladder.MustLand():
		return landing.CauseBudget, true
	case s.steps() >= s.cfg.MaxSteps:
		return landing.CauseMaxSteps, true
	}
	return "", false
}

// Setup runs fn, work the run does before its first model turn such as
// fetching a manifest, on a work lease of the run's budget with ceiling
// (zero: none but the budget's), and records it as an attempt of step
// "setup" whose message is what. It returns fn's error, or the budget's
// refusal, in which case fn is not called. Setup is safe to call for
// several pieces of setup at once.
func (s *Session) Setup(ctx context.Context, what string, ceiling time.Duration, fn func(ctx context.Context) error) error {
	kind := s.b.Estimates().Kind(SetupStep)
	lease, err := s.b.Lease(kind, ceiling)
	if err != nil {
		rec := refusedRecord(SetupStep, 0, 1, "", err)
		rec.Message = what + ": " + rec.Message
		s.record(rec)
		return err
	}
	a := trace.Attempt{Step: SetupStep, N: 1, Lease: lease, Start: time.Now(), Message: what}
	obs := s.observer(0, s.w)
	obs.OnAttemptStart(a)
	lctx, stop := lease.Context(ctx)
	err = fn(lctx)
	a.End, a.Outcome = time.Now(), trace.OK
	if err != nil {
		a.Err, a.Outcome = err, trace.UpstreamError
		if lctx.Err() != nil {
			a.Outcome = trace.OutcomeOfContext(lctx, watchdog.ErrQuiet)
		}
	} else {
		kind.Observe(a.End.Sub(a.Start))
	}
	stop()
	obs.OnAttemptEnd(a)
	return err
}

// Close ends the session: it stops the watchdog and the phase timer, waits
// for the cancels the run sent (until the budget's deadline), and flushes
// the sinks. A run that made no result is recorded as landed with cause
// cancelled. It returns an error matching [ErrTrace] when a sink could not
// take every record. Close is idempotent.
func (s *Session) Close() error {
	if !s.hasResult() {
		s.Land(context.Background(), landing.CauseCancelled, nil)
	}
	s.mu.Lock()
	already := s.closed
	s.closed = true
	if s.phaseT != nil {
		s.phaseT.Stop()
	}
	s.mu.Unlock()
	s.w.Stop()
	s.stopB()
	if already {
		return s.traceErr(s.rec.Err())
	}
	return s.traceErr(s.rec.Flush())
}

func (s *Session) traceErr(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrTrace, err)
}

// steps returns the model turns made so far.
func (s *Session) steps() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.step
}

// specs returns the tools on offer by name, and declares their latency
// hints on the run's estimates, which the fit gate reads: the registry may
// have declared them on others.
func (s *Session) specs() map[string]tools.Spec {
	specs := s.cfg.Tools.Specs()
	m := make(map[string]tools.Spec, len(specs))
	for _, sp := range specs {
		m[sp.Name] = sp
		s.b.Estimates().Kind(sp.Kind).Declare(sp.P50, sp.P95)
	}
	return m
}

// armPhase arms a timer for the ladder's next change of phase, so that the
// change is recorded, and seen by the sinks, when it happens rather than at
// the next gate that polls the ladder.
func (s *Session) armPhase() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.result != nil {
		return
	}
	_, at, ok := s.ladder.Next()
	if !ok {
		return
	}
	s.phaseT = time.AfterFunc(time.Until(at), func() {
		s.ladder.Phase()
		s.armPhase()
	})
}

// phaseChanged is the ladder's OnChange: it runs under the ladder's lock,
// and the recorder reads the phase with Peek, which takes none.
func (s *Session) phaseChanged(c landing.Change) {
	rec := trace.Record{Event: trace.PhaseChange, From: c.From.String(), To: c.To.String()}
	if c.Forced {
		rec.Reason = "forced"
	}
	s.record(rec)
}

// record hands rec to the recorder, unless the run has its result: run_end
// is the last record of a run, and what comes after it (a phase the clock
// reached, a cancel a tool answered past the deadline) is not the run's.
func (s *Session) record(rec trace.Record) {
	s.recMu.Lock()
	defer s.recMu.Unlock()
	if s.ended {
		return
	}
	s.ended = rec.Event == trace.RunEnd
	s.rec.Record(rec)
}

// recordCall keeps how a tool call ended, for the landing summary.
func (s *Session) recordCall(c landing.Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
}

// cancelAccepted marks the call with key cancelled: its tool accepted the
// cancel that was sent without waiting.
func (s *Session) cancelAccepted(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.calls {
		if c := &s.calls[i]; c.Key == key && c.State == landing.StateAbandoned {
			c.State = landing.StateCancelled
		}
	}
}

// landingRecord is what the run knows about itself when it lands.
func (s *Session) landingRecord(cause landing.Cause) landing.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return landing.Record{Task: s.cfg.Task, Cause: cause, Step: s.step, Quiet: s.cfg.Quiet, Calls: slices.Clone(s.calls)}
}

func (s *Session) hasResult() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.result != nil
}

// CauseOf names why a model turn that failed with err ends the run, for a
// loop that lands then: ctx, the run's context, ended (see
// [Session.MustLand]); the budget refused the turn, a backoff would have
// outlasted it, or an attempt was cut at the start of the reserve
// ([landing.CauseBudget]: the time ran out, the model did not fail); or
// the model failed ([landing.CauseUpstream]).
func CauseOf(ctx context.Context, err error) landing.Cause {
	if ctx.Err() != nil {
		return causeOfContext(ctx)
	}
	_, gaveUp := errors.AsType[*trace.GaveUpError](err)
	if gaveUp || errors.Is(err, budget.ErrRefused) || errors.Is(err, budget.ErrDeadline) {
		return landing.CauseBudget
	}
	return landing.CauseUpstream
}

// causeOfContext names why the run's context ended. The wall and the
// budget's deadline are the same instant, D; either may be the cause, and
// so may the deadline of the caller's context, which Start made the
// budget's own.
func causeOfContext(ctx context.Context) landing.Cause {
	c := context.Cause(ctx)
	switch {
	case errors.Is(c, watchdog.ErrQuiet):
		return landing.CauseQuiet
	case errors.Is(c, watchdog.ErrWall), errors.Is(c, budget.ErrDeadline), errors.Is(c, context.DeadlineExceeded):
		return landing.CauseBudget
	}
	return landing.CauseCancelled
}
