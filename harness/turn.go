package harness

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
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
// step. Turn returns [ErrNoModel] when the Config has no Model.
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
	if s.cfg.Model == nil {
		return nil, ErrNoModel
	}
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
// request on the context BeginTurn returned, with Budget-Remaining-Ms set
// to Lease().Millis(), then call End with the request's error, and use the
// error End returns.
type Turn struct {
	s     *Session
	ctx   context.Context // the attempt's context: the lease over the run's context
	stop  context.CancelFunc
	w     *watchdog.Watchdog
	kind  *budget.Kind
	info  trace.Attempt
	index int
	ended atomic.Bool
}

// BeginTurn starts one model request of the caller's own, on a lease of
// the run's budget, and returns the context to send it on and the Turn to
// end when it is answered. Each BeginTurn is a step, one model turn, unless
// the run is landing: then it is the landing call, on a landing lease that
// may spend the reserve. A refused lease is returned as the error, a
// [*budget.RefusedError], and nothing is to be sent; once the run has its
// result the error is [ErrEnded].
func (s *Session) BeginTurn(ctx context.Context) (context.Context, *Turn, error) {
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
	t := &Turn{s: s, w: w, kind: kind, index: index,
		info: trace.Attempt{Step: model.Kind, N: 1, Lease: lease, Start: time.Now()}}
	t.ctx, t.stop = lease.Context(ctx)
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
func (t *Turn) Lease() budget.Lease { return t.info.Lease }

// End records how the request went and returns its failure as the run
// sees it: err nil is an answer, a semantic event for the quiet clock,
// whose duration informs the model's latency estimate, and End returns
// nil; any other error is classified as the model client classifies its
// own (our lease or the run's end: gave up, quiet, cancelled; an error
// status of openai-go: by its status; anything else: upstream) and End
// returns it as a [*trace.AttemptError], which [CauseOf] reads. End
// releases the turn's context; calls after the first return nil. End on
// the nil Turn of a BeginTurn that failed returns err, so that a caller
// may pass BeginTurn's error on through it.
func (t *Turn) End(err error) error {
	if t == nil {
		return err
	}
	if t.ended.Swap(true) {
		return nil
	}
	t.s.mu.Lock()
	delete(t.s.turns, t)
	t.s.mu.Unlock()
	t.info.End = time.Now()
	if err == nil {
		t.info.Outcome = trace.OK
		t.kind.Observe(t.info.End.Sub(t.info.Start))
		t.w.Mark(watchdog.ModelMessage)
	} else {
		ae := model.Classify(t.ctx, 1, err)
		t.info.Outcome, t.info.Status, t.info.Err = ae.Outcome, ae.Status, ae
		err = ae
	}
	t.stop()
	t.s.observer(t.index, t.w).OnAttemptEnd(t.info)
	return err
}

// landingCallNow returns the landing call's watchdog and budget, and
// whether the run is making its landing call now.
func (s *Session) landingCallNow() (*watchdog.Watchdog, *budget.Budget, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.landingW, s.landingB, s.landingW != nil
}
