package harness

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glidepath/glidepath/budget"
	grun "github.com/glidepath/glidepath/internal/run"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

// turn makes one model turn with [Config.Model], on work leases of the
// run's budget and with the retries SPEC §2 allows: one step of the
// harness's own loop. req is sent as given but for Parallel, which the
// ladder turns off once the run has left the explore phase. While the run
// lands (inside the summarize function of [Session.Land]) the turn is the
// landing call instead: one attempt on a landing lease, offered no tools,
// which is not a step. h keeps how the turn's model attempts went
// unanswered, for its end as the run's machine takes it.
//
// It returns the response by pointer; nil when the turn was not made at
// all. It stays on the stack of a run blocked in a
// model stream, so it holds no response of its own: a Model with
// CompletePointer, as a [*model.Client] has, makes one when the turn
// ends, and one without is called from a frame of its own (issue 13; see
// # Stack at model.Client.call).
func (s *Session) turn(ctx context.Context, req model.Request, h *heard) (*model.Response, error) {
	if !s.started() {
		return nil, ErrNoSession
	}
	if s.cfg.Model == nil {
		return nil, ErrNoModel
	}
	ctx, release := s.bind(ctx)
	defer release()
	if w, b, ok := s.landingCallNow(); ok {
		if !s.landingCallOnce() {
			return nil, ErrLandingCallMade
		}
		return s.landingTurn(ctx, w, b, req)
	}
	if s.over() {
		return nil, ErrEnded
	}
	n := s.steps() + 1
	s.w.Mark(watchdog.ModelCall)
	req.Parallel = req.Parallel && s.ladder.MayWiden(landing.Parallel) == nil
	req.MaxSilence = s.cfg.MaxSilence
	obs := s.turnObserver(n, s.w, "", h)
	var resp *model.Response
	var err error
	if m, ok := s.cfg.Model.(pointerModel); ok {
		resp, err = m.CompletePointer(ctx, s.b, req, obs)
	} else {
		resp, err = s.complete(ctx, req, obs)
	}
	s.w.End(model.Kind) // the model call in flight, and its hold
	if resp == nil {    // a Model of someone else's may answer none
		resp = &model.Response{}
	}
	return resp, err
}

// complete calls Complete of a Model that has no CompletePointer. It is
// not inlined, so that the two copies of the response such a call holds
// stay out of the frame of turn.
//
//go:noinline
func (s *Session) complete(ctx context.Context, req model.Request, obs *trace.Observer) (*model.Response, error) {
	resp, err := s.cfg.Model.Complete(ctx, s.b, req, obs)
	return &resp, err
}

// landingTurn is the landing call, on the landing call's watchdog w and
// budget b. It is not inlined, so that the response it holds stays out of
// the frame of turn.
//
//go:noinline
func (s *Session) landingTurn(ctx context.Context, w *watchdog.Watchdog, b *budget.Budget, req model.Request) (*model.Response, error) {
	resp, err := s.cfg.Model.Land(ctx, b, req.Messages, s.observer(0, w))
	return &resp, err
}

// A Turn is one model turn of a caller's own loop ([Session.BeginTurn]),
// sent with the caller's openai-go client made with [ClientOptions]: the
// client's middleware makes each physical request an attempt of the turn,
// leased, retried and recorded, and reads what the answer carries as the
// client reads it — each chunk of a stream, the tokens, the finish reason,
// the model —, so that the record has it without the loop's help (issue
// 25). End it with the request's error, and use the error End returns.
//
// The zero Turn, and the nil one, are not turns: End returns the error it
// is given, or an error when given nil: no answer came on a turn that was
// never begun.
type Turn struct {
	s       *Session
	ctx     context.Context // the turn's context: its first lease over the run's context, carrying the Turn
	stop    context.CancelFunc
	release func() // releases the caller's context from the run's (Session.bind)
	w       *watchdog.Watchdog
	obs     *trace.Observer
	b       *budget.Budget // the run's, or the landing call's
	kind    *budget.Kind
	index   int
	ended   atomic.Bool

	chunks, keepalives atomic.Int64
	mu                 sync.Mutex         // guards the fields below
	m                  model.TurnMachine  // the turn's rules (issue 25)
	cmd                model.TurnCommand  // what the machine asked for last: TurnAttempt until the middleware claims it
	over               error              // the turn's failure when the machine ended its attempts for want of time or of a context
	info               trace.Attempt      // the attempt in progress, or the last one
	sent               int                // the attempts sent through the middleware
	open               bool               // reports whether the last attempt is not yet recorded as ended
	actx               context.Context    // the last attempt's context
	stopN              context.CancelFunc // ends the lease of an attempt after the first; nil: none
	usage              trace.Usage        // the tokens the model reported
	finish             string             // the finish reason the model gave
	answeredBy         string             // the model the server says answered
	answered           bool               // reports whether the client read a chunk or a completion of the answer
}

// errNoTurn is End's error on a Turn BeginTurn did not return.
var errNoTurn = errors.New("harness: no Turn: BeginTurn returned none, so nothing was sent on it")

// BeginTurn starts one model turn of the caller's own, on a lease of the
// run's budget, and returns the context to send its request on, through a
// client made with [ClientOptions], and the Turn to end when it is
// answered. Each BeginTurn is a step, one model turn, unless the run is
// landing: then it is the landing call, one attempt on a landing lease
// that may spend the reserve, and a second one is refused
// ([ErrLandingCallMade]).
//
// BeginTurn is also where a loop learns that it must stop: when the run
// must land now — its quiet clock fired, the wall or the reserve came,
// the caller cancelled, [Config.MaxSteps] turns were made — the error is
// a [*MustLandError] with the cause, and [Session.Land] of it lands for
// that cause. A refused lease is returned as the error, a
// [*budget.RefusedError]; once the run has its result the error is
// [ErrEnded]; on a Session that was never started, [ErrNoSession]. With
// any error nothing is to be sent: hand it to [Session.Land].
//
// The context returned ends when the lease does, when ctx ends, or when
// the run's context does (its quiet clock, its wall): ctx need not be the
// run's own.
func (s *Session) BeginTurn(ctx context.Context) (context.Context, *Turn, error) {
	if !s.started() {
		return nil, nil, ErrNoSession
	}
	kind := s.b.Estimates().Kind(model.Kind)
	w, lb, landingCall := s.landingCallNow()
	if !landingCall && s.over() {
		return nil, nil, ErrEnded
	}
	if err := s.callerEnded(ctx); err != nil {
		return nil, nil, err // nothing is sent on a context that has ended
	}
	if !landingCall {
		if cause, ok := s.mustLand(ctx); ok {
			return nil, nil, &MustLandError{Cause: cause}
		}
	}
	if landingCall && !s.landingCallOnce() {
		return nil, nil, ErrLandingCallMade
	}
	b, index := lb, 0
	if !landingCall {
		w, b, index = s.w, s.b, s.steps()+1
	}
	// The turn's lease, its refusal and the attempts after the first are
	// its machine's, which the middleware drives (issue 25).
	m := model.NewTurnMachine(model.TurnRules{Landing: landingCall, Silence: model.Silence(kind, s.cfg.MaxSilence)})
	cmd := m.Step(model.TurnEvent{Kind: model.TurnStarted, Figures: budget.FiguresOf(b, kind, false)})
	if cmd.Heard != watchdog.None {
		w.Mark(cmd.Heard)
	}
	if cmd.Begin.Key != "" {
		cmd.Begin.Index = index
		w.Begin(cmd.Begin)
	}
	obs := s.observer(index, w)
	if cmd.Kind != model.TurnAttempt {
		obs.OnRefused(model.Kind, "", 1, cmd.Refused)
		if !landingCall {
			s.turnEnded(ctx, cmd, grun.Reply{}, true) // no step: the boundary says there was no time for one
		}
		return nil, nil, cmd.Refused
	}
	cmd.Lease.Deadline = time.Now().Add(cmd.Lease.Granted)
	t := &Turn{s: s, w: w, obs: obs, b: b, kind: kind, index: index, m: m, cmd: cmd,
		info: trace.Attempt{Step: model.Kind, N: 1, Lease: cmd.Lease, Start: time.Now()}}
	bctx, release := s.bind(ctx)
	t.ctx, t.stop = cmd.Lease.Context(bctx)
	t.ctx = context.WithValue(t.ctx, turnKey{}, t)
	t.release = release
	s.mu.Lock()
	if s.turns == nil {
		s.turns = make(map[*Turn]struct{})
	}
	s.turns[t] = struct{}{}
	s.mu.Unlock()
	return t.ctx, t, nil
}

func (t *Turn) keepalive() {
	t.keepalives.Add(1)
	t.obs.OnSignal(trace.Signal{Event: watchdog.Keepalive, Step: model.Kind})
}

// chunk counts one data line of the answer's stream: heard as streamed
// tokens, which are not progress (SPEC §3: they reset no clock). Lines
// read after End are not the turn's.
func (t *Turn) chunk() {
	if t.ended.Load() {
		return
	}
	t.chunks.Add(1)
	t.obs.OnSignal(trace.Signal{Event: watchdog.Token, Step: model.Kind})
}

// took keeps what a chunk or a completion the client read reports: the
// model that answered, the usage (a stream carries it when asked with
// stream_options.include_usage), and the finish reason of the first
// choice, for End.
func (t *Turn) took(a answerTail) {
	if t.ended.Load() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.answered = true
	if a.Model != "" {
		t.answeredBy = a.Model
	}
	if u := a.Usage; u != nil && (u.TotalTokens > 0 || u.PromptTokens > 0 || u.CompletionTokens > 0) {
		t.usage = trace.Usage{Input: u.PromptTokens, Output: u.CompletionTokens, Total: u.TotalTokens,
			Cached: u.Prompt.Cached, Reasoning: u.Completion.Reasoning}
	}
	if len(a.Choices) > 0 && a.Choices[0].FinishReason != "" {
		t.finish = a.Choices[0].FinishReason
	}
}

// End records how the turn's last attempt went and returns the turn's
// failure as the run sees it. err nil is an answer, a semantic event for
// the quiet clock, whose duration informs the model's latency estimate;
// the attempt's record carries the tokens, chunks and keepalives the turn
// was given. It is not an answer when the client read none
// ([ErrNoAnswer]), when no request went through a client made with
// [ClientOptions] ([ErrNotLeased]), or when a streamed answer ended
// without a finish reason: it was cut short, and is failed with
// [model.ErrIncomplete], as the model client fails its own.
// Then, if the finish reason says the model did not stop on its own
// ("length", "content_filter": [model.CheckFinish]), End returns that
// [*model.ReplyError]: the reply is not the answer, and the loop should
// land ([Session.Land]) rather than present it as complete; otherwise
// nil. Any other err is classified as the model client classifies its
// own (our lease or the run's end: gave up, quiet, cancelled; an error
// status of openai-go: by its status; anything else: upstream) and End
// returns it as a [*trace.AttemptError], or a [*trace.GaveUpError] when
// the budget could not afford the wait before another attempt; both
// [Session.Land] reads. End releases the turn's context; calls after the
// first return nil. End on the nil Turn of a BeginTurn that failed returns
// err, so that a caller may pass BeginTurn's error on through it.
func (t *Turn) End(err error) error {
	if t == nil || t.s == nil {
		if err == nil {
			return errNoTurn // not an answer: nothing was sent on a turn
		}
		return err
	}
	if t.ended.Swap(true) {
		return nil
	}
	t.s.mu.Lock()
	delete(t.s.turns, t)
	t.s.mu.Unlock()
	defer t.release()
	defer t.stop()
	err, answered := t.end(err)
	// After the answer is heard: ended first, the hold would no longer
	// keep the deadline ahead of it, and a held answer would come late.
	t.w.End(model.Kind)
	if t.index > 0 {
		// The run's machine takes the step's end: a turn's failure is
		// in its own machine's words (done), as the workflow hands it.
		done := model.TurnCommand{Kind: model.TurnDone, OK: true, N: 1}
		if !answered {
			done = t.done(err)
		}
		t.s.turnEnded(nil, done, grun.Reply{}, true)
	}
	return err
}

// done is how the turn ended, failed with err, as its machine says: the
// command that ended it, or, when End heard the failure, the machine's
// end of it as the turn's last attempt, since no request is left to send
// it again.
func (t *Turn) done(err error) model.TurnCommand {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.cmd; c.Kind == model.TurnDone {
		if t.over == nil {
			// The middleware heard the server fail by its status; err is
			// that failure as the client read its answer.
			c = model.ServerSaid(c, err)
		}
		return c
	}
	a, _ := model.Attempted(err, time.Now())
	a.Retry, a.Chunks, a.Keepalives, a.Took = false, t.info.Chunks, t.info.Keepalives, t.info.End.Sub(t.info.Start)
	return t.m.Step(model.TurnEvent{Kind: model.TurnAttemptEnded, Figures: budget.FiguresOf(t.b, t.kind, false), Attempt: a})
}

// end is End of a Turn not ended before: the turn's failure, and whether
// it answered (a reply that is not a whole answer too).
func (t *Turn) end(err error) (error, bool) {
	t.mu.Lock()
	sent, open, over, actx, stopN := t.sent, t.open, t.over, t.actx, t.stopN
	t.info.End = time.Now()
	t.info.Usage, t.info.Chunks, t.info.Keepalives = t.usage, t.chunks.Load(), t.keepalives.Load()
	t.info.Finish, t.info.Model = t.finish, t.answeredBy
	finish, answered, info := t.finish, t.answered, t.info
	t.open = false
	t.mu.Unlock()
	if stopN != nil {
		defer stopN()
	}
	switch {
	case sent == 0 && err == nil:
		return ErrNotLeased, false
	case sent == 0 && t.ctx.Err() != nil:
		// Nothing went out before the turn's context ended: there is no
		// attempt to record, and its end is classified as an attempt's.
		return model.Classify(t.ctx, 1, err), false
	case sent == 0:
		return fmt.Errorf("%w: %w", ErrNotLeased, model.Classify(t.ctx, 1, err)), false
	case !open && over != nil:
		return over, false // the machine ended the turn's attempts
	case !open:
		// The middleware recorded the last attempt's failure as it came.
		if err == nil {
			err = ErrNoAnswer
		}
		return model.Classify(actx, sent, err), false
	}
	switch {
	case err == nil && !answered:
		err = ErrNoAnswer
	case err == nil && finish == "" && info.Chunks > 0:
		// A stream that ended without a finish reason was cut short: it is
		// a failed attempt, as the model client judges its own.
		err = model.ErrIncomplete
	}
	if err == nil {
		// An answer ends the turn as its machine says; a failure End
		// hears is the turn's last: no request is left to send it again.
		info.Outcome = trace.OK
		t.mu.Lock()
		cmd := t.m.Step(model.TurnEvent{Kind: model.TurnAttemptEnded, Figures: budget.FiguresOf(t.b, t.kind, false),
			Attempt: model.TurnAttempted{Outcome: trace.OK, Took: info.End.Sub(info.Start)}})
		t.mu.Unlock()
		t.kind.Observe(cmd.Took)
		t.w.Mark(cmd.Heard)
		t.obs.OnAttemptEnd(info)
		return model.CheckFinish(finish), true
	}
	ae := model.Classify(actx, sent, err)
	info.Outcome, info.Status, info.Err = ae.Outcome, ae.Status, ae
	t.obs.OnAttemptEnd(info)
	return ae, false
}

// landingCallNow returns the landing call's watchdog and budget, and
// whether the run is making its landing call now.
func (s *Session) landingCallNow() (*watchdog.Watchdog, *budget.Budget, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.landingW, s.landingB, s.landingW != nil
}
