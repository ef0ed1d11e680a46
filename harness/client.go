package harness

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/internal/ssecount"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/trace"
	"github.com/openai/openai-go/v3/option"
)

// ClientOptions are the openai-go client options of a loop that calls its
// model itself ([Session.BeginTurn]): pass them to openai.NewClient, after
// your own. They turn the SDK's retries off and install the harness's
// middleware, which makes every request of the client a leased, retried
// and recorded model turn (issue 25): each physical request is an attempt
// of the turn whose context it is sent on, with its lease as
// Budget-Remaining-Ms (SPEC §2) and as its deadline, on the record; a
// failure SPEC §2 retries (429, 408, 5xx, a transport error) is sent again
// after the backoff the budget allows, as the turn's next attempt. A
// request sent on a context that carries no turn is refused with
// [ErrNoTurn] before it leaves: nothing unleased reaches the server.
//
// One client may serve any number of runs at once: the turn is the
// request's context's.
func ClientOptions() []option.RequestOption {
	return []option.RequestOption{option.WithMaxRetries(0), option.WithMiddleware(middleware)}
}

var (
	// ErrNoTurn is the error of a request sent through a client made with
	// [ClientOptions] on a context that carries no turn: send it on the
	// context [Session.BeginTurn] returned.
	ErrNoTurn = errors.New("harness: a model request outside a turn: send it on the context BeginTurn returned")

	// ErrNotLeased is [Turn.End]'s error for a turn none of whose requests
	// went through a client made with [ClientOptions]: what was sent was
	// not leased, retried or recorded, and is not taken as an answer.
	ErrNotLeased = errors.New("harness: the turn's request did not go through a client made with harness.ClientOptions")

	// ErrNoAnswer is [Turn.End]'s error for a turn ended without error
	// that was handed no answer: neither a chunk ([Turn.Chunk]) nor a
	// completion ([Turn.Completion]).
	ErrNoAnswer = errors.New("harness: the turn ended with no answer: it was handed neither a chunk nor a completion")
)

// turnKey carries the Turn of a context BeginTurn returned.
type turnKey struct{}

// middleware sends a request as the attempts of the turn its context
// carries.
func middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	t, _ := req.Context().Value(turnKey{}).(*Turn)
	if t == nil || t.s == nil {
		return nil, ErrNoTurn
	}
	return t.send(req, next)
}

// send makes the turn's attempts of req until one is answered, or none may
// follow. The attempt that was answered stays open until [Turn.End],
// which records how its stream ended; every failed one is recorded here.
func (t *Turn) send(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	s := t.s
	for {
		// The check and the claim are one critical section: two requests
		// on one turn cannot both go out as its attempt, and an End that
		// comes between them finds the attempt started, or none.
		t.mu.Lock()
		if t.ended.Load() {
			t.mu.Unlock()
			return nil, ErrEnded // the turn has ended: nothing more is sent on it
		}
		if t.open {
			t.mu.Unlock()
			return nil, fmt.Errorf("%w: a turn sends one request at a time", ErrTurnOpen)
		}
		n, lease := t.sent+1, t.info.Lease
		if n > 1 {
			var err error
			if lease, err = s.b.Lease(t.kind, 0); err != nil {
				t.mu.Unlock()
				t.obs.OnRefused(model.Kind, "", n, err)
				return nil, err
			}
		}
		// Every attempt, the first too, ends with its lease, whatever
		// context the caller's client put on the request (issue 25).
		actx, stop := lease.Context(req.Context())
		prev := t.stopN
		t.stopN = stop
		t.sent, t.open, t.actx = n, true, actx
		t.info.N, t.info.Lease, t.info.Start = n, lease, time.Now()
		info := t.info
		t.obs.OnAttemptStart(info)
		t.mu.Unlock()
		if prev != nil {
			prev() // the last attempt's lease: its answer has been read
		}
		r := req.Clone(actx)
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				t.endAttempt(&trace.AttemptError{Step: model.Kind, Attempt: n, Outcome: trace.UpstreamError, Err: err})
				return nil, err
			}
			r.Body = body
		}
		// What is left of the lease now, not what it was when granted:
		// the caller may have spent some of it building the request.
		r.Header.Set(budget.Header, budget.FormatRemaining(max(time.Until(lease.Deadline), 0)))
		resp, err := next(r)
		if err == nil && resp.StatusCode < 400 {
			if resp.Body != nil {
				resp.Body = struct {
					io.Reader
					io.Closer
				}{ssecount.NewReader(resp.Body, t.keepalive, nil), resp.Body}
			}
			return resp, nil
		}
		ae := model.Classify(actx, n, err)
		if err == nil {
			ae = &trace.AttemptError{Step: model.Kind, Attempt: n, Status: resp.StatusCode, Header: resp.Header,
				Outcome: trace.OutcomeOfStatus(resp.StatusCode),
				Err:     fmt.Errorf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))}
		}
		if !t.endAttempt(ae) {
			return resp, err // End has ended the turn, and recorded the attempt
		}
		if t.landing || !trace.Retryable(ae) || n >= model.DefaultMaxAttempts || req.Context().Err() != nil {
			return resp, err
		}
		d, raErr := s.b.NextDelay(budget.Backoff{}, n, ae.Header)
		t.obs.OnBackoff(model.Kind, "", n, d, raErr)
		if d.GiveUp {
			t.mu.Lock()
			t.gaveUp = &trace.GaveUpError{Step: model.Kind, Delay: d, Last: ae}
			t.mu.Unlock()
			return resp, err
		}
		if resp != nil {
			resp.Body.Close()
		}
		werr := d.Wait(req.Context())
		t.obs.OnBackoffEnd(model.Kind, "")
		if werr != nil {
			return nil, werr
		}
	}
}

// endAttempt records the end of the turn's open attempt, failed with ae,
// and reports whether it did: End may have ended it first.
func (t *Turn) endAttempt(ae *trace.AttemptError) bool {
	t.mu.Lock()
	if !t.open {
		t.mu.Unlock()
		return false
	}
	t.open = false
	t.info.End = time.Now()
	t.info.Outcome, t.info.Status, t.info.Err = ae.Outcome, ae.Status, ae
	t.info.Keepalives = t.keepalives.Load()
	info := t.info
	t.mu.Unlock()
	// Its lease's context stays until the next attempt or End: the SDK
	// reads the error answer of the last one on it.
	t.obs.OnAttemptEnd(info)
	return true
}
