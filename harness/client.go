package harness

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/internal/ssecount"
	"github.com/glidepath/glidepath/landing"
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
// after the backoff the budget allows, as the turn's next attempt. The
// answer is read as the client reads it: a stream's chunks and keepalives,
// the tokens, the finish reason and the model go on the attempt's record
// with no help from the loop. A request sent on a context that carries no
// turn is refused with [ErrNoTurn] before it leaves: nothing unleased
// reaches the server.
//
// One client may serve any number of runs at once: the turn is the
// request's context's. The client speaks Chat Completions: a request to
// the Responses API is refused with [ErrResponsesAPI] before it leaves,
// since its answer would not be read; a loop on the Responses API makes
// its turns through a [*model.Client] made with [model.APIResponses].
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
	// whose answer the client never read: neither a chunk of a stream nor
	// a completion.
	ErrNoAnswer = errors.New("harness: the turn ended with no answer: the client read neither a chunk nor a completion")

	// ErrResponsesAPI is the error of a request to the Responses API sent
	// through a client made with [ClientOptions], which reads the answers
	// of Chat Completions only.
	ErrResponsesAPI = errors.New("harness: a Responses API request through harness.ClientOptions, which reads Chat Completions only: " +
		"make the turn with a model.Client whose API is model.APIResponses")

	// ErrMustLand is matched by every [*MustLandError].
	ErrMustLand = errors.New("harness: the run must land now")
)

// A MustLandError is [Session.BeginTurn]'s refusal of a turn the run may
// not make: it must land now, for Cause. [Session.Land] of it lands for
// that cause.
type MustLandError struct {
	Cause landing.Cause
}

func (e *MustLandError) Error() string {
	return fmt.Sprintf("harness: the run must land now (cause %s): no model turn may start", e.Cause)
}

// Is reports whether target is [ErrMustLand].
func (e *MustLandError) Is(target error) bool { return target == ErrMustLand }

// turnKey carries the Turn of a context BeginTurn returned.
type turnKey struct{}

// middleware sends a request as the attempts of the turn its context
// carries.
func middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	t, _ := req.Context().Value(turnKey{}).(*Turn)
	if t == nil || t.s == nil {
		return nil, ErrNoTurn
	}
	if strings.HasSuffix(req.URL.Path, "/responses") {
		return nil, ErrResponsesAPI
	}
	return t.send(req, next)
}

// send makes the attempts of req that the turn's machine asks for until
// one is answered, or none may follow: the lease of each, the retries and
// the backoffs are model.TurnMachine's, the rules of every model turn
// (issue 25). The attempt that was answered stays open until [Turn.End],
// which records how its stream ended; every failed one is recorded here.
func (t *Turn) send(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	for {
		// The check and the claim are one critical section: two requests
		// on one turn cannot both go out as its attempt, and an End that
		// comes between them finds the attempt started, or none.
		t.mu.Lock()
		if t.ended.Load() {
			t.mu.Unlock()
			return nil, ErrEnded // the turn has ended: nothing more is sent on it
		}
		switch {
		case t.open || t.cmd.Kind != model.TurnAttempt && t.cmd.Kind != model.TurnDone:
			// An attempt is in flight, or the turn is between two.
			t.mu.Unlock()
			return nil, fmt.Errorf("%w: a turn sends one request at a time", ErrTurnOpen)
		case t.cmd.Kind == model.TurnDone:
			// The machine has ended the turn's attempts: a request sent
			// again on it fails as the turn did.
			err := cmp.Or(t.over, t.info.Err)
			t.mu.Unlock()
			return nil, err
		}
		n, lease := t.cmd.N, t.cmd.Lease
		t.cmd.Kind = 0 // the attempt is claimed
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
			t.w.Headers(model.Kind) // the server answered: the turn's hold begins (issue 27)
		}
		if err == nil && resp.StatusCode < 400 {
			if resp.Body != nil {
				resp.Body = t.answerBody(resp)
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
		a, raErr := model.Attempted(ae, time.Now())
		a.Took = time.Since(info.Start)
		cmd := t.step(model.TurnEvent{Kind: model.TurnAttemptEnded, Attempt: a}, req, ae)
		if cmd.Kind == model.TurnSleep || cmd.Delay.GiveUp {
			t.obs.OnBackoff(model.Kind, "", n, cmd.Delay, raErr)
		}
		if cmd.Kind == model.TurnDone {
			return resp, err
		}
		if resp != nil {
			resp.Body.Close()
		}
		werr := cmd.Delay.Wait(req.Context())
		t.obs.OnBackoffEnd(model.Kind, "")
		if cmd = t.step(model.TurnEvent{Kind: model.TurnSleepOver}, req, ae); cmd.Refused != nil {
			t.obs.OnRefused(model.Kind, "", cmd.N+1, cmd.Refused)
			return nil, cmd.Refused
		} else if cmd.Kind == model.TurnDone {
			return nil, werr
		}
	}
}

// step feeds e to the turn's machine, with the budget's figures now, and
// keeps the command it returns; req is the turn's request, whose
// context's end ends its attempts, and last its last attempt's failure.
// When the machine ends the turn for want of time, or the request's
// context ended it, it keeps the turn's failure, as [model.Client]
// returns it (model.TurnFailure), for End; a failure of the server's is
// what End is handed.
func (t *Turn) step(e model.TurnEvent, req *http.Request, last *trace.AttemptError) model.TurnCommand {
	e.Figures = budget.FiguresOf(t.b, t.kind, req.Context().Err() != nil)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cmd = t.m.Step(e)
	switch c := &t.cmd; {
	case c.Kind == model.TurnAttempt:
		c.Lease.Deadline = time.Now().Add(c.Lease.Granted)
	case c.Delay.GiveUp, c.Refused != nil, c.RunEnded:
		// A turn ended with its request's context is named by its last
		// attempt's, which ended with it.
		t.over = model.TurnFailure(t.actx, *c, last, nil)
	}
	return t.cmd
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

// answerBody returns the body of resp, an answered attempt of the turn,
// read through what tells the turn what the answer carries as the
// caller's client reads it (issue 25: the loop no longer hands its chunks
// over): a stream's keepalives ([ssecount]) and chunks, counted as they
// pass, and the model, usage and finish reason of its chunks, or of the
// whole completion when the answer is not a stream.
func (t *Turn) answerBody(resp *http.Response) io.ReadCloser {
	// A body that is not JSON is read as a stream, as the SDK reads it:
	// it parses the media type, and takes any JSON one, +json too, for a
	// completion.
	a := &answer{t: t, body: resp.Body, r: resp.Body}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil ||
		!strings.Contains(mt, "application/json") && !strings.HasSuffix(mt, "+json") {
		a.stream = true
		a.r = ssecount.NewReader(resp.Body, t.keepalive, nil)
	}
	return a
}

// maxAnswerLine bounds what an answer keeps to read its tail from: a line
// or an event's data of a stream, or a whole completion. One longer is
// still an answer the client read, passed on unread: its tokens and
// finish reason are not on the record (a stream's finish reason in such a
// chunk is then missing, and the stream taken for cut short).
const maxAnswerLine = 4 << 20

// An answer is the body of a turn's answered attempt. It keeps the line
// being read and, for a stream, the data of the event being read, or the
// body so far (a completion), and reads the tail of each once it is whole.
type answer struct {
	t      *Turn
	r      io.Reader
	body   io.Closer
	stream bool
	line   []byte
	over   bool   // the line, or the completion, is longer than maxAnswerLine: not read
	event  []byte // the data lines of the stream's event being read, each ended by "\n", as the SDK joins them
	evOver bool   // the event's data is longer than maxAnswerLine: not read
	named  bool   // reports whether a chunk has named the model that answers
}

func (a *answer) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	switch {
	case a.t.ended.Load():
		// The turn has ended: what the client reads now is not its.
	case a.stream:
		a.lines(p[:n])
	default:
		a.line, a.over = keep(a.line, a.over, p[:n])
		if err == io.EOF {
			a.tail(a.line, a.over)
		}
	}
	return n, err
}

func (a *answer) Close() error { return a.body.Close() }

// lines reads the stream's bytes b line by line, as the SDK's decoder
// does (lines end at "\n", a "\r" before it dropped): data lines gather
// into the event's data, and an empty line ends the event, which is one
// chunk of the answer ("[DONE]" is not one) and tells the turn its tail.
// An event the stream never ended is not one: the SDK does not hand it
// over either.
func (a *answer) lines(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			a.line, a.over = keep(a.line, a.over, b)
			return
		}
		a.line, a.over = keep(a.line, a.over, b[:i])
		a.ended(bytes.TrimSuffix(a.line, []byte("\r")))
		a.line, a.over = a.line[:0], false
		b = b[i+1:]
	}
}

// ended takes a whole line of the stream.
func (a *answer) ended(line []byte) {
	if len(line) == 0 {
		if len(a.event) > 0 || a.evOver {
			a.chunk()
		}
		a.event, a.evOver = a.event[:0], false
		return
	}
	name, value, _ := bytes.Cut(line, []byte(":"))
	if string(name) != "data" {
		return // a comment (a keepalive, counted as it passed), an event name, an id
	}
	value = bytes.TrimPrefix(value, []byte(" "))
	a.event, a.evOver = keep(a.event, a.evOver || a.over, value)
	a.event, a.evOver = keep(a.event, a.evOver, []byte("\n"))
}

// chunk takes the event just ended, a chunk of the answer unless it is
// "[DONE]".
func (a *answer) chunk() {
	data := a.event
	if bytes.HasPrefix(data, []byte("[DONE]")) {
		return
	}
	a.t.chunk()
	if a.named && !a.evOver && !valued(data, `"finish_reason"`) && !valued(data, `"usage"`) {
		// Most chunks carry only content: decoding each, as the client
		// does, would double its cost (issue 25 item 6).
		a.t.took(answerTail{})
		return
	}
	a.tail(data, a.evOver)
}

// keep adds b to buf, unless buf has grown too long, as over says: then
// what it has is kept, but not read.
func keep(buf []byte, over bool, b []byte) ([]byte, bool) {
	if over || len(b) == 0 {
		return buf, over
	}
	if len(buf)+len(b) > maxAnswerLine {
		return buf, true
	}
	return append(buf, b...), false
}

// tail tells the turn what data, a chunk or a completion, says of the
// answer; data that is not one tells it nothing. Data too long to read
// (over) is an answer the client read, of which the record says nothing.
func (a *answer) tail(data []byte, over bool) {
	if over {
		a.t.took(answerTail{})
		return
	}
	var at answerTail
	if json.Unmarshal(data, &at) == nil && (at.Choices != nil || at.Usage != nil) {
		a.named = a.named || at.Model != ""
		a.t.took(at)
	}
}

// valued reports whether key is a field of the JSON object data with a
// value other than null. It may say so of a key inside a string, which
// costs a decode and no more.
func valued(data []byte, key string) bool {
	for {
		i := bytes.Index(data, []byte(key))
		if i < 0 {
			return false
		}
		data = bytes.TrimLeft(data[i+len(key):], " \t")
		if len(data) == 0 || data[0] != ':' {
			continue
		}
		if data = bytes.TrimLeft(data[1:], " \t"); !bytes.HasPrefix(data, []byte("null")) {
			return true
		}
	}
}

// answerTail is what the record takes of a chunk or a completion: the
// fields of both that say who answered, for how many tokens, and why it
// stopped. Decoded apart from the client's own decoding, which the
// harness does not see.
type answerTail struct {
	Model string `json:"model"`
	Usage *struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
		TotalTokens      int64 `json:"total_tokens"`
		Prompt           struct {
			Cached int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		Completion struct {
			Reasoning int64 `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
	Choices []struct {
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}
