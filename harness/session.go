package harness

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/internal/inflight"
	"github.com/glidepath/glidepath/internal/redact"
	grun "github.com/glidepath/glidepath/internal/run"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

// SetupStep is the step kind of the work a run does before its first model
// turn: fetching manifests, starting servers (SPEC §3, §6).
const SetupStep = landing.SetupStep

// A Session is one run, as a value an agent loop drives step by step: the
// harness's own loop ([Session.Run]) or one the caller already has. It
// holds the run's budget, its watchdog and ladder, the record of its calls
// and its sinks; it tells the model its time ([Session.Note]) and what it
// may call ([Session.Tools]), and makes the steps on the budget: model
// turns the caller sends itself ([Session.BeginTurn], which also says when
// the run must land instead), tool calls through the ladder's gates
// ([Session.Call]), setup work ([Session.Setup]). It ends with a labeled
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

	// ctx is the run's context, the one Start returned: cctx as the run
	// presents it (runContext). It is kept, though a context is not to be
	// stored, because it is what a call on a context of the caller's own
	// is bound to ([Session.bind]): the run's quiet clock and deadline
	// hold whatever context a call is handed.
	ctx    runContext
	cctx   context.Context         // the run's one context made from the caller's: it ends when the run's work must stop
	cancel context.CancelCauseFunc // ends cctx, with the cause: the quiet clock's, the wall's, Close's

	cancels    cancel.Group   // the cancels the run sent, waited for once it has landed
	busy       inflight.Group // tool calls and setup work in flight, which Close waits for once it has cut them
	agentCalls inflight.Group // sub-agent calls in flight, which Land waits for once it has cancelled them
	unwatch    func() bool    // stops noting the caller's cancellation
	// The two counts are 32 bits, one word for both: over 512 bytes an
	// object has a word of header, and with one more word a Session went
	// from the 896-byte size class to 1024 (issue 25 item 6).
	attempts atomic.Int32 // physical requests started: model attempts, the landing call, tool attempts, setup
	orphans  atomic.Int32

	recMu sync.Mutex    // orders the records, and guards frame and phaseOff; held by the watchdog's timer while it records a change of phase
	frame landing.Frame // stamps the records and knows the phase on record: the rule the workflow stamps by too (issue 25)

	mu sync.Mutex // guards the fields below
	// m is the run's sequence and all its landing reads: the steps made,
	// the words of what stopped the run, how its last model turn ended
	// (internal/run, the machine the workflow drives too). The loop and a
	// loop of the embedder's feed it the same events (issue 25).
	m           grun.Machine
	calls       []landing.Call
	turns       map[*Turn]struct{}                   // BeginTurn's not yet ended; nil before the first
	pauses      map[pause]func()                     // the quiet clock's pauses for backoff sleeps in progress, and their resumes; nil before the first
	landingW    *watchdog.Watchdog                   // the landing call's own watchdog while it runs
	landingCtx  context.Context                      // the landing call's context while it runs: what calls are bound to then
	landingB    *budget.Budget                       // the budget the landing call leases from while it runs
	landBy      *budget.Budget                       // the landing's budget, once the run lands: its end bounds the waits that follow
	cancelledAt time.Duration                        // when the caller cancelled the run's context, from the budget's start, when cancelled
	children    map[*Session]context.CancelCauseFunc // sub-agents running, and how to cancel each; nil before the first
	result      *landing.Result                      // the run's result, once made
	done        chan struct{}                        // closed once the result is made and run_end recorded; nil until a caller waits for it (made)
	rare        *rare                                // what few runs have; nil until one has it
	// The flags last, together: one word for the four (issue 25 item 6).
	cancelled   bool // reports whether the caller cancelled the run's context, at cancelledAt
	landingSent bool // reports whether the landing call's model request has begun: a landing makes one
	claimed     bool // reports whether Land or Answer has begun to make the result
	closed      bool
	phaseOff    bool // reports whether the phases are no longer recorded: the run has its result, or is closed; guarded by recMu
}

// Start starts a run on b, the budget the caller started (so that what the
// caller did before, such as reading its config, is spent from it too), and
// returns its Session and the run's context, which ends when the run must
// stop working: its quiet clock fired (cause a [*watchdog.StallError]), its
// deadline came (cause [budget.ErrDeadline], and ctx.Err() is
// [context.DeadlineExceeded]; a context derived from it has the cause and
// Err [context.Canceled], see # Contexts), or ctx ended, with ctx's cause. Pass
// that context to the Session's methods; a call passed another still keeps
// the run's clocks (see # Contexts in the package doc).
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
	return startValid(ctx, b, cfg)
}

// startValid is [Start] of a cfg already validated, with b not nil: [Run]
// has validated it once, and a fleet's runs are started by the thousand
// (issue 20).
func startValid(ctx context.Context, b *budget.Budget, cfg Config) (*Session, context.Context, error) {
	cfg = cfg.withDefaults()
	if err := cfg.admitted(b); err != nil {
		return nil, nil, err
	}
	if d, ok := ctx.Deadline(); ok {
		b = b.Shorten(d)
	}
	// The maps of turns, pauses and children are made at their first
	// entry: most runs need none of them, and a run is kept small (issue
	// 13).
	s := &Session{cfg: cfg, id: cfg.RunID, b: b,
		m: grun.New(grun.Rules{Task: cfg.Task, Quiet: cfg.Quiet, MaxSteps: cfg.MaxSteps, Parallel: cfg.Parallel > 1, MaxRepeats: cfg.MaxRepeats})}
	if s.id == "" {
		s.id = newRunID()
	}
	// No OnChange: the ladder would call it under its lock, and recording
	// calls the sinks, which do I/O. The frame records the changes.
	s.ladder = landing.New(b, landing.Config{})
	s.frame = landing.FrameOf(s.id, cfg.ParentRunID, b)
	// The frame stamps the records and the recorder writes them (Write);
	// b bounds the recorder's flush by D.
	s.rec = trace.NewRecorder(s.id, b, nil, cfg.Sinks...)
	// The run has one context made from the caller's, and one timer, the
	// watchdog's, for its quiet clock, its wall and its phases (runHost):
	// a context, a timer and a registration with the caller's context per
	// clock were most of an idle run's own memory (issue 25 item 6).
	s.cctx, s.cancel = context.WithCancelCause(ctx)
	s.ctx = runContext{s}
	// The moment the caller cancels is when "land now" starts counting R.
	// A ctx that can never be cancelled has no such moment, and needs no
	// callback registered.
	s.unwatch = neverUnwatched
	if ctx.Done() != nil {
		s.unwatch = context.AfterFunc(s.cctx, s.noteCancel)
	}
	s.specs()
	s.record(trace.Record{Event: trace.RunStart, TotalMs: b.Total().Milliseconds(), Key: cfg.CallKey})
	w, err := watchdog.Watch(watchdog.Config{Quiet: cfg.Quiet, Wall: b.Deadline(), Mode: cfg.QuietMode, Warn: s.warned}, runHost{s})
	if err != nil { // Validate has judged the quiet period: this cannot happen
		s.unwatch()
		s.cancel(err)
		cfg.Admit.Done()
		return nil, nil, &ConfigError{Field: "quiet", Value: cfg.Quiet.String(), Err: err}
	}
	s.w = w
	return s, s.ctx, nil
}

// noteCancel notes when the caller cancelled the run's context: the run's
// own ends (runHost.End, Close) stop it first, so that it runs only when
// the caller's context ended, and a deadline of the caller's is not a
// cancellation.
func (s *Session) noteCancel() {
	if errors.Is(s.cctx.Err(), context.Canceled) {
		s.mu.Lock()
		s.cancelled, s.cancelledAt = true, time.Since(s.b.Start())
		s.mu.Unlock()
	}
}

// made returns a channel closed once the run's result is made ([Session.keep]).
// It is made at the first wait: a caller waits only when Land or Answer
// is called while another makes the result, which most runs never do, and
// the channel was an object of every run's (issue 25 item 6).
func (s *Session) made() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done == nil {
		s.done = make(chan struct{})
		if s.result != nil {
			close(s.done)
		}
	}
	return s.done
}

// keep keeps res as the run's result, and tells the callers waiting for it.
func (s *Session) keep(res *landing.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.result = res
	if s.done != nil {
		close(s.done)
	}
}

// neverUnwatched is the unwatch of a run whose caller's context can never
// be cancelled: there is nothing to stop.
func neverUnwatched() bool { return false }

// runIDEncoding is [rand.Text]'s base32 in lower case, so that an id is
// made in one allocation rather than made and then lowered.
var runIDEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newRunID returns "run-" and 26 random characters of rand.Text's
// alphabet, in lower case: 128 bits from crypto/rand.
func newRunID() string {
	var src [16]byte
	rand.Read(src[:]) // never fails (crypto/rand)
	const prefix = "run-"
	var dst [len(prefix) + 26]byte
	copy(dst[:], prefix)
	runIDEncoding.Encode(dst[len(prefix):], src[:])
	return string(dst[:])
}

// Note returns the budget note the model reads at every turn (SPEC §3):
// the time left until the deadline and until landing begins, the phase,
// and what the phase forbids; when a sub-agent is on offer, how much
// one could get now, for a model that plans how to split its time; and,
// once the run has repeated a tool call, that it is repeating itself
// (see [Config.MaxRepeats]). Once
// the run has its result, or is closed, the note says the run is over
// ([NoteOver]); on a Session that was never started it is
// [ErrNoSession]'s text.
func (s *Session) Note() string {
	if !s.started() {
		return ErrNoSession.Error()
	}
	if s.finished() {
		return NoteOver
	}
	return s.note(s.cfg.Tools.Specs())
}

// NoteOver is the budget note of a run that has its result or is closed:
// its time is no longer a budget anyone may spend.
const NoteOver = "Budget: the run is over: it has its result, and no more model turns or tool calls are made."

// finished reports whether the run has its result or is closed.
func (s *Session) finished() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.result != nil || s.closed
}

// note is [Session.Note] with the tools on offer already read, as the loop
// has them for the turn's request.
func (s *Session) note(specs []tools.Spec) string {
	note := s.agentNote(s.ladder.Note(), specs)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m.Note(note)
}

// agentNote is note with, when a sub-agent is on offer in specs, how
// much time one could get now.
func (s *Session) agentNote(note string, specs []tools.Spec) string {
	if !offersAgents(specs) || s.ladder.MayWiden(landing.SubAgent) != nil {
		return note
	}
	room := s.b.Available() - Keep(s.b)
	if room <= s.b.Floor() {
		return note + " A sub-agent cannot start now: too little time is left to share."
	}
	return note + fmt.Sprintf(" A sub-agent started now would get at most %s (less if its ceiling is lower); "+
		"sub-agents started together share the same deadline.", landing.Human(room))
}

// offersAgents reports whether a sub-agent is among specs.
func offersAgents(specs []tools.Spec) bool {
	for _, sp := range specs {
		if strings.HasPrefix(sp.Kind, AgentKindPrefix) {
			return true
		}
	}
	return false
}

// adopt keeps the child session c, a sub-agent of the run, and the cancel
// of its context, so that the run's landing cancels it.
func (s *Session) adopt(c *Session, cancel context.CancelCauseFunc) {
	s.mu.Lock()
	landing := s.claimed
	if !landing {
		if s.children == nil {
			s.children = make(map[*Session]context.CancelCauseFunc)
		}
		s.children[c] = cancel
	}
	s.mu.Unlock()
	if landing {
		cancel(fmt.Errorf("%w: it is landing", ErrParentEnded))
	}
}

// release forgets the child session c once it has closed.
func (s *Session) release(c *Session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.children, c)
}

// cancelChildren cancels every sub-agent still running: the run is
// landing, and a child's partial is worth more now than its work later.
func (s *Session) cancelChildren() {
	s.mu.Lock()
	cancels := make([]context.CancelCauseFunc, 0, len(s.children))
	for _, cancel := range s.children {
		cancels = append(cancels, cancel)
	}
	s.mu.Unlock()
	for _, cancel := range cancels {
		cancel(fmt.Errorf("%w: it is landing", ErrParentEnded))
	}
}

// adoptOrphans makes the orphans a sub-agent of step left the run's own:
// journaled once, by the child, and listed in the run's in_flight, named
// agent/tool.
func (s *Session) adoptOrphans(step int, agent string, inFlight []landing.InFlight) {
	for _, c := range landing.Adopt(step, agent, inFlight) {
		s.orphans.Add(1)
		s.recordCall(c)
	}
}

// mustLand reports whether the run must stop working and land now, and
// why ([Session.BeginTurn] refuses a turn then, with a [*MustLandError]):
// ctx (the run's context) ended — the quiet clock ([landing.CauseQuiet]),
// the wall ([landing.CauseBudget]), a cancellation
// ([landing.CauseCancelled]) —, the budget reached its reserve
// ([landing.CauseBudget]), or [Config.MaxSteps] turns were made
// ([landing.CauseMaxSteps]).
//
// The run's context is asked first, then ctx: a loop that passes a
// context of its own still hears the run's clocks. On a Session that was
// never started it reports true with no cause: there is no run to work
// on, and [Session.Land] says why.
func (s *Session) mustLand(ctx context.Context) (landing.Cause, bool) {
	if !s.started() {
		return "", true
	}
	if ended := s.workEnded(ctx); ended != "" {
		return ended, true
	}
	phase := s.ladder.Phase()
	s.mu.Lock()
	defer s.mu.Unlock()
	return landing.MustLand(s.m.Loop("", phase))
}

// workEnded names why the run's work ended, the run's context asked first,
// then ctx; "" while it goes on.
func (s *Session) workEnded(ctx context.Context) landing.Cause {
	switch {
	case s.ctx.Err() != nil:
		return causeOfContext(s.ctx)
	case ctx != nil && ctx.Err() != nil:
		return causeOfContext(ctx)
	}
	return ""
}

// Setup runs fn, work the run does before its first model turn such as
// fetching a manifest, on a work lease of the run's budget with ceiling
// (zero: the run's setup share, [budget.Budget.SetupCeiling]: the smaller
// of 5s and a quarter of its work time B − R), and records it as an
// attempt of step "setup" whose message is what. It returns fn's error,
// as a [*SetupError] when the lease or the run's deadline ended fn, or the
// budget's refusal, in which case fn is not called. Setup is safe to call
// for several pieces of setup at once, and they should go at once: each
// has its own share, so several mute servers cost a run one share, not
// one each (issue 24). The quiet clock waits while fn runs: setup is
// bounded by its lease and the wall, and the run's work, which the quiet
// clock watches, has not begun. A run that lands before its first model
// turn names the setup that did not finish in its boundary.
func (s *Session) Setup(ctx context.Context, what string, ceiling time.Duration, fn func(ctx context.Context) error) error {
	if !s.started() {
		return ErrNoSession
	}
	if s.over() {
		return ErrEnded
	}
	ctx, release := s.bind(ctx)
	defer release()
	s.busy.Add()
	defer s.busy.Done()
	kind := s.b.Estimates().Kind(SetupStep)
	now := time.Now()
	lease, err := s.frame.SetupLease(now, ceiling, kind.P50()) // of the frame's figures, which never change: no lock
	if err != nil {
		rec, left := landing.SetupRefused(what, 1, err)
		s.record(rec)
		s.setupLeft(left)
		return err
	}
	a := trace.Attempt{Step: SetupStep, N: 1, Lease: lease, Start: now, Message: what}
	obs := s.observer(0, s.w)
	obs.OnAttemptStart(a)
	lctx, stop := lease.Context(ctx)
	// Setup is bounded by its own lease (an MCP server's connect_timeout,
	// a manifest's ceiling) and the wall; the quiet clock watches the
	// run's work, which has not begun, so it waits: a server slow to start
	// on a loaded machine is not a stalled run.
	resume := s.pause(s.w)
	_, err = heeded(s, lctx, setupGrace, func() (struct{}, error) { return struct{}{}, fn(lctx) })
	resume()
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
	if a.Outcome == trace.GaveUp {
		err = &SetupError{What: what, Granted: lease.Granted, Err: err}
	}
	if left, _ := landing.SetupEnd(what, a.Outcome, lease.Granted); left != "" {
		s.setupLeft(left)
	}
	return err
}

// setupGrace is how long a piece of setup whose lease has ended is given
// to return and say how it ended: a fetch that heeds its context returns
// at once, with words for the boundary (issue 24); one that ignores it is
// left (issue 25).
const setupGrace = 100 * time.Millisecond

// setupLeft notes a piece of setup that did not finish, for the boundary
// of a run that lands before its first model turn: then it, not "no tool
// call had finished", is what the run was doing (issue 24).
func (s *Session) setupLeft(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.more()
	r.setup = append(r.setup, what)
}

// Close ends the session. It stops the run's work (the run's context ends,
// so calls still in flight are cut and their cancels sent), ends the model
// requests begun with [Session.BeginTurn] and not ended, lands the run with
// cause cancelled if it has no result yet (or waits for the one being
// made), gives the cancels sent since their grace ([CancelGrace]), cuts
// those still unanswered and waits for their goroutines to return, and
// flushes the sinks. It returns an error matching [ErrTrace] when a sink
// could not take every record, and [ErrNoSession] on a Session that was
// never started. Close blocks at most until the budget's deadline, a bound
// the run carries with it; call it once the calls you started have
// returned. Close is idempotent.
func (s *Session) Close() error {
	if !s.started() {
		return ErrNoSession
	}
	s.mu.Lock()
	already := s.closed
	s.closed = true
	s.mu.Unlock()
	if already {
		return s.traceErr(s.rec.Err())
	}
	defer s.cfg.Admit.Done() // the run has ended: its place at the door is free
	s.stopPhases()
	s.unwatch()
	s.cancel(context.Canceled)
	s.w.Stop()
	// The work in flight has been cut; wait for it to say how it ended,
	// so that its record is the run's before the result is built.
	waitUntil(&s.busy, s.b)
	for _, t := range s.openTurns() {
		t.End(context.Cause(t.ctx))
	}
	s.landFor(context.Background(), landing.CauseCancelled, nil)
	// Cancels sent since the result was made (a call Close cut) get their
	// grace too; then every cancel's goroutine has been cut, and ends.
	s.settleCancels()
	s.endCancels()
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
	return s.m.Steps()
}

// feed tells the run's machine e, and returns what it asks for.
func (s *Session) feed(e grun.Event) grun.Command {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m.Step(e)
}

// turnEnded tells the run's machine how a model turn of a step ended, t,
// as an embedder's (open) or the loop's, whose reply r is the machine's to
// act on.
func (s *Session) turnEnded(ctx context.Context, t model.TurnCommand, r grun.Reply, open bool) grun.Command {
	return s.feed(grun.Event{Kind: grun.TurnEnded, Figures: grun.Figures{Ended: s.workEnded(ctx)}, Turn: t, Reply: r, Open: open})
}

// specs returns the tools on offer ([Session.usable]), and declares their
// latency hints on the run's estimates, which the fit gate reads: the
// registry may have declared them on others.
func (s *Session) specs() toolSpecs {
	specs := s.cfg.Tools.Specs()
	for _, sp := range specs {
		s.b.Estimates().Kind(sp.Kind).Declare(sp.P50, sp.P95)
	}
	return s.usable(specs)
}

// usable returns specs without the tools whose ceiling is below their
// p50 as the run's estimates stand, each marked unavailable instead
// (markUnavailable): the rule is tools.Usable's, the Temporal workflow's
// too (issue 25). specs is copied only when one is left out, and never
// written: a step's cost stays what it was (issue 13), and a Tools of the
// caller's own keeps its slice.
func (s *Session) usable(specs []tools.Spec) []tools.Spec {
	est := s.b.Estimates()
	return tools.Usable(specs, func(sp *tools.Spec) time.Duration { return est.Kind(sp.Kind).P50() }, s.markUnavailable)
}

// markUnavailable says that tool, which the run's config names, cannot be
// used by the run, and why ("tool server http://…: connection refused"):
// it is listed in the result's Unavailable (SPEC §4), once, with the first
// reason given. A Toolset marks the tools of a server that is down; the
// run marks a tool whose ceiling is below its p50. Marking does not take
// a tool off the registry: leave it off, or it is still offered. On a
// Session that was never started it does nothing.
func (s *Session) markUnavailable(tool, why string) {
	if !s.started() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.more()
	r.unavailable = landing.MarkUnavailable(r.unavailable, tool, why)
}

// Held returns the call in flight whose allowance of silence holds the
// run's quiet clock nearest its end, and reports whether one does
// (watchdog.Clock.Held): a live line warns of it at half its allowance
// (issue 27). On a Session that was never started it reports false.
func (s *Session) Held() (watchdog.Silent, bool) {
	if !s.started() {
		return watchdog.Silent{}, false
	}
	return s.w.Held()
}

// Unavailable returns the tools the run cannot use now, and why, in the
// order they were found: those a [Toolset] marked (its server is down) and
// those whose ceiling is below their p50 as the run's estimates stand. A
// caller that must not run without its tools (harness run
// --require-tools) asks before the first turn. Nil when there are none,
// or on a Session that was never started.
func (s *Session) Unavailable() []landing.Unavailable {
	if !s.started() {
		return nil
	}
	s.specs()
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.rare.unavailableTools())
}

// rare is what few runs have, kept out of the Session that every run
// holds (issue 25 item 6: an idle run's memory).
type rare struct {
	unavailable []landing.Unavailable // the tools the run could not offer, and why, each named once
	setup       []string              // the pieces of setup that did not finish, in words ([Session.setupLeft]), which the machine is told as the run lands
}

func (r *rare) unavailableTools() []landing.Unavailable {
	if r == nil {
		return nil
	}
	return r.unavailable
}

func (r *rare) setupLeft() []string {
	if r == nil {
		return nil
	}
	return r.setup
}

// more returns s.rare, made on first use, for a writer; s.mu must be
// held.
func (s *Session) more() *rare {
	if s.rare == nil {
		s.rare = new(rare)
	}
	return s.rare
}

// toolSpecs are the tools on offer at a step.
type toolSpecs []tools.Spec

// lookup returns the spec of the tool called name, the last of that name
// if there are several, and whether there is one. It searches the list
// rather than a map: a map of a few specs, made at every step, cost more
// than the search (issue 13, BenchmarkStepCPU).
func (ts toolSpecs) lookup(name string) (tools.Spec, bool) {
	for i := len(ts) - 1; i >= 0; i-- {
		if ts[i].Name == name {
			return ts[i], true
		}
	}
	return tools.Spec{}, false
}

// stopPhases stops recording changes of phase: the run has its result, or
// is closed. A ring of the watchdog's timer after it returns records
// nothing.
func (s *Session) stopPhases() {
	s.recMu.Lock()
	defer s.recMu.Unlock()
	s.phaseOff = true
}

// record stamps rec with the run's frame, and hands the recorder a phase
// record for any change of phase not yet on the record, then rec; nothing
// once run_end is recorded: it is the last record of a run, and what comes
// after it (a cancel a tool answered past the deadline) is not the run's.
func (s *Session) record(rec trace.Record) {
	if len(s.cfg.Secrets) > 0 {
		// The free text of a record is what a tool or a server said, which
		// may quote a key it was given (issue 24); the patterns are applied
		// where the text is made (observe.go), the known values here, once
		// for every sink.
		rec.Message = redact.Secrets(rec.Message, s.cfg.Secrets...)
		rec.RetryAfterInvalid = redact.Secrets(rec.RetryAfterInvalid, s.cfg.Secrets...)
	}
	s.recMu.Lock()
	defer s.recMu.Unlock()
	st := s.frame.Stamp(time.Now(), rec)
	s.write(st.Change)
	s.write(st.Record)
}

// write hands rec, stamped, to the recorder, unless it is empty: the frame
// had nothing to record. s.recMu is held.
func (s *Session) write(rec trace.Record) {
	if rec.Event != "" {
		s.rec.Write(rec)
	}
}

// syncPhase records a change of phase the caller has just made on the
// ladder: the run lands early, and its phase record says "forced".
func (s *Session) syncPhase() {
	s.recMu.Lock()
	defer s.recMu.Unlock()
	s.write(s.frame.MoveTo(time.Now(), s.ladder.Phase()))
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

// over reports whether the run has ended, or is landing: no more work is
// started (the landing call excepted, which the landing makes).
func (s *Session) over() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.claimed
}

// pause names a backoff sleep in progress: one per call at a time, on the
// watchdog that hears the call.
type pause struct {
	w         *watchdog.Watchdog
	step, key string
}

// paused keeps the resume of the quiet clock's pause for a backoff sleep.
func (s *Session) paused(w *watchdog.Watchdog, step, key string, resume func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pauses == nil {
		s.pauses = make(map[pause]func())
	}
	s.pauses[pause{w, step, key}] = resume
}

// resumed starts the quiet clock again once a backoff sleep has ended.
func (s *Session) resumed(w *watchdog.Watchdog, step, key string) {
	p := pause{w, step, key}
	s.mu.Lock()
	resume := s.pauses[p]
	delete(s.pauses, p)
	s.mu.Unlock()
	if resume != nil {
		resume()
	}
}

// landingCallOnce reports whether the caller may make the landing call's
// model request: the first to ask may, and no other (issue 25).
func (s *Session) landingCallOnce() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.landingSent {
		return false
	}
	s.landingSent = true
	return true
}

// openTurns returns the Turns begun and not ended.
func (s *Session) openTurns() []*Turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Turn, 0, len(s.turns))
	for t := range s.turns {
		out = append(out, t)
	}
	return out
}

// CauseOf names why a model turn that failed with err ends the run, for a
// loop that lands then: ctx, the run's context, ended (see
// [*MustLandError]); the budget refused the turn, a backoff would have
// outlasted it, or an attempt was cut at the start of the reserve
// ([landing.CauseBudget]: the time ran out, the model did not fail); or
// the model failed ([landing.CauseUpstream]).
func CauseOf(ctx context.Context, err error) landing.Cause {
	var ended landing.Cause
	if ctx.Err() != nil {
		ended = causeOfContext(ctx)
	}
	return landing.TurnCause(ended, outOfTime(err))
}

// outOfTime reports whether err, a model turn's failure, says the time ran
// out rather than the model failed: the budget refused the turn, a backoff
// would have outlasted it, or the deadline cut an attempt.
func outOfTime(err error) bool {
	_, gaveUp := errors.AsType[*trace.GaveUpError](err)
	return gaveUp || errors.Is(err, budget.ErrRefused) || errors.Is(err, budget.ErrDeadline)
}

// causeOfContext names why the run's context ended. Its wall is the
// budget's deadline D (cause budget.ErrDeadline); the deadline of the
// caller's context, which Start made the budget's own, is the same
// instant and may be the cause instead, and so may a watchdog's wall on a
// context of the caller's.
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
