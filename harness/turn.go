package harness

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// Turn makes one model turn with [Config.Model], on work leases of the
// run's budget and with the retries SPEC §2 allows: one step. req is sent
// as given but for Parallel, which the ladder turns off once the run has
// left the explore phase; put the budget note ([Session.Note]) in its
// messages. While the run lands (inside the summarize function of
// [Session.Land]) the turn is the landing call instead: one attempt on a
// landing lease, offered no tools, which is not a step.
//
// A turn the budget refused before anything was sent is not counted as a
// step. Turn returns [ErrNoModel] when the Config has no Model, and
// [ErrNoSession] on a Session that was never started. Like every call of
// a Session, a turn keeps the run's quiet clock and deadline whatever ctx
// it is passed.
func (s *Session) Turn(ctx context.Context, req model.Request) (model.Response, error) {
	resp, err := s.turn(ctx, req)
	if resp == nil {
		return model.Response{}, err
	}
	return *resp, err
}

// turn is [Session.Turn] returning the response by pointer; nil when the
// turn was not made at all. It stays on the stack of a run blocked in a
// model stream, so it holds no response of its own: a Model with
// CompletePointer, as a [*model.Client] has, makes one when the turn
// ends, and one without is called from a frame of its own (issue 13; see
// # Stack at model.Client.call).
func (s *Session) turn(ctx context.Context, req model.Request) (*model.Response, error) {
	if !s.started() {
		return nil, ErrNoSession
	}
	if s.cfg.Model == nil {
		return nil, ErrNoModel
	}
	ctx, release := s.bind(ctx)
	defer release()
	if w, b, ok := s.landingCallNow(); ok {
		return s.landingTurn(ctx, w, b, req)
	}
	if s.over() {
		return nil, ErrEnded
	}
	n := s.steps() + 1
	s.w.Mark(watchdog.ModelCall)
	req.Parallel = req.Parallel && s.ladder.MayWiden(landing.Parallel) == nil
	obs := s.observer(n, s.w)
	var resp *model.Response
	var err error
	if m, ok := s.cfg.Model.(pointerModel); ok {
		resp, err = m.CompletePointer(ctx, s.b, req, obs)
	} else {
		resp, err = s.complete(ctx, req, obs)
	}
	if resp == nil { // a Model of someone else's may answer none
		resp = &model.Response{}
	}
	if err == nil || resp.Attempts > 0 || !errors.Is(err, budget.ErrRefused) {
		s.mu.Lock()
		s.step = n
		s.mu.Unlock()
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

// A Turn is one model request that a caller's own loop sends with its own
// client ([Session.BeginTurn]): its lease, and the record of it. Send the
// request on the context BeginTurn returned, with [Turn.Options] (the
// lease as Budget-Remaining-Ms and as the timeout, the SDK's retries off,
// keepalives counted); hand the Turn what the model sent — each chunk of a
// streamed answer ([Turn.Chunk]) or the whole completion
// ([Turn.Completion]) — so that its tokens, chunks and finish reason are
// on the record; then call End with the request's error, and use the
// error End returns.
//
// The zero Turn, and the nil one, are not turns: their methods do nothing,
// and End returns the error it is given, or an error when given nil: no
// answer came on a turn that was never begun.
type Turn struct {
	s       *Session
	ctx     context.Context // the attempt's context: the lease over the run's context
	stop    context.CancelFunc
	release func() // releases the caller's context from the run's (Session.bind)
	w       *watchdog.Watchdog
	obs     *trace.Observer
	kind    *budget.Kind
	info    trace.Attempt
	index   int
	ended   atomic.Bool

	chunks, keepalives atomic.Int64
	mu                 sync.Mutex  // guards the two fields below
	usage              trace.Usage // the tokens the model reported
	finish             string      // the finish reason the model gave
	answeredBy         string      // the model the server says answered
}

// errNoTurn is End's error on a Turn BeginTurn did not return.
var errNoTurn = errors.New("harness: no Turn: BeginTurn returned none, so nothing was sent on it")

// BeginTurn starts one model request of the caller's own, on a lease of
// the run's budget, and returns the context to send it on and the Turn to
// end when it is answered. Each BeginTurn is a step, one model turn, unless
// the run is landing: then it is the landing call, on a landing lease that
// may spend the reserve. A refused lease is returned as the error, a
// [*budget.RefusedError], and nothing is to be sent; once the run has its
// result the error is [ErrEnded]; on a Session that was never started,
// [ErrNoSession].
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
	index := 0
	var lease budget.Lease
	var err error
	if landingCall {
		lease, err = lb.LandingLease(kind, 0)
	} else {
		w, index = s.w, s.steps()+1
		lease, err = s.b.Lease(kind, 0)
	}
	obs := s.observer(index, w)
	if err != nil {
		obs.OnRefused(model.Kind, "", 1, err)
		return nil, nil, err
	}
	if !landingCall {
		s.mu.Lock()
		s.step = index
		s.mu.Unlock()
		w.Mark(watchdog.ModelCall)
	}
	t := &Turn{s: s, w: w, obs: obs, kind: kind, index: index,
		info: trace.Attempt{Step: model.Kind, N: 1, Lease: lease, Start: time.Now()}}
	bctx, release := s.bind(ctx)
	t.ctx, t.stop = lease.Context(bctx)
	t.release = release
	s.mu.Lock()
	if s.turns == nil {
		s.turns = make(map[*Turn]struct{})
	}
	s.turns[t] = struct{}{}
	s.mu.Unlock()
	obs.OnAttemptStart(t.info)
	return t.ctx, t, nil
}

// Lease returns the turn's lease; its Millis is the Budget-Remaining-Ms to
// send.
func (t *Turn) Lease() budget.Lease {
	if t == nil {
		return budget.Lease{}
	}
	return t.info.Lease
}

// Options returns the openai-go request options the turn's request needs
// ([model.LeaseOptions]): Budget-Remaining-Ms set to the lease, the lease
// as the request's timeout, the SDK's retries off (the run is the one
// retry layer, SPEC §2), and a count of the SSE comments of a streamed
// answer, which the SDK drops unseen: keepalives, transport only, which
// reset no clock.
func (t *Turn) Options() []option.RequestOption {
	if t == nil || t.s == nil {
		return nil
	}
	return model.LeaseOptions(t.info.Lease, t.keepalive)
}

func (t *Turn) keepalive() {
	t.keepalives.Add(1)
	t.obs.OnSignal(trace.Signal{Event: watchdog.Keepalive, Step: model.Kind})
}

// Chunk takes one chunk of a streamed answer: it is counted, and heard as
// streamed tokens, which are not progress (SPEC §3: they reset no clock);
// the usage of the chunk that carries it (ask for it with
// stream_options.include_usage) and the finish reason are kept for End.
// Chunk is safe to call while End runs; chunks after End are not counted.
func (t *Turn) Chunk(c openai.ChatCompletionChunk) {
	if t == nil || t.s == nil || t.ended.Load() {
		return
	}
	t.chunks.Add(1)
	t.obs.OnSignal(trace.Signal{Event: watchdog.Token, Step: model.Kind})
	t.took(c.Model, c.Usage, c.Choices)
}

// Completion takes the answer of a request that was not streamed: its
// usage and finish reason, for End.
func (t *Turn) Completion(c *openai.ChatCompletion) {
	if t == nil || t.s == nil || c == nil || t.ended.Load() {
		return
	}
	t.took(c.Model, c.Usage, nil)
	if len(c.Choices) > 0 {
		t.mu.Lock()
		t.finish = string(c.Choices[0].FinishReason)
		t.mu.Unlock()
	}
}

// took keeps the model and usage a chunk or completion reports, and the
// finish reason of the first of a chunk's choices.
func (t *Turn) took(answeredBy string, u openai.CompletionUsage, choices []openai.ChatCompletionChunkChoice) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if answeredBy != "" {
		t.answeredBy = answeredBy
	}
	if u.TotalTokens > 0 || u.PromptTokens > 0 || u.CompletionTokens > 0 {
		t.usage = trace.Usage{Input: u.PromptTokens, Output: u.CompletionTokens, Total: u.TotalTokens}
	}
	if len(choices) > 0 && choices[0].FinishReason != "" {
		t.finish = choices[0].FinishReason
	}
}

// End records how the request went and returns its failure as the run
// sees it. err nil is an answer, a semantic event for the quiet clock,
// whose duration informs the model's latency estimate; the attempt's
// record carries the tokens, chunks and keepalives the turn was given.
// A streamed answer ([Turn.Chunk]) that ended without a finish reason was
// cut short, and is failed with [model.ErrIncomplete], as the model
// client fails its own. Then, if the finish reason says the model did not
// stop on its own
// ("length", "content_filter": [model.CheckFinish]), End returns that
// [*model.ReplyError]: the reply is not the answer, and the loop should
// land ([Session.LandOn]) rather than present it as complete; otherwise
// nil. Any other err is classified as the model client classifies its
// own (our lease or the run's end: gave up, quiet, cancelled; an error
// status of openai-go: by its status; anything else: upstream) and End
// returns it as a [*trace.AttemptError], which [Session.LandOn] reads.
// End releases the turn's context; calls after the first return nil. End
// on the nil Turn of a BeginTurn that failed returns err, so that a caller
// may pass BeginTurn's error on through it.
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
	t.info.End = time.Now()
	t.mu.Lock()
	t.info.Usage, t.info.Chunks, t.info.Keepalives = t.usage, t.chunks.Load(), t.keepalives.Load()
	t.info.Finish, t.info.Model = t.finish, t.answeredBy
	finish := t.finish
	t.mu.Unlock()
	if err == nil && finish == "" && t.info.Chunks > 0 {
		// A stream that ended without a finish reason was cut short: it is
		// a failed attempt, as the model client judges its own.
		err = model.ErrIncomplete
	}
	if err == nil {
		t.info.Outcome = trace.OK
		t.kind.Observe(t.info.End.Sub(t.info.Start))
		t.w.Mark(watchdog.ModelMessage)
		err = model.CheckFinish(finish)
	} else {
		ae := model.Classify(t.ctx, 1, err)
		t.info.Outcome, t.info.Status, t.info.Err = ae.Outcome, ae.Status, ae
		err = ae
	}
	t.stop()
	t.release()
	t.obs.OnAttemptEnd(t.info)
	return err
}

// landingCallNow returns the landing call's watchdog and budget, and
// whether the run is making its landing call now.
func (s *Session) landingCallNow() (*watchdog.Watchdog, *budget.Budget, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.landingW, s.landingB, s.landingW != nil
}
