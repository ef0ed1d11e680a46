package model

import (
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/trace"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// Event is something a model stream did, for the run's watchdog.
type Event uint8

const (
	// MessageCompleted: the model finished a message's content. Semantic.
	MessageCompleted Event = iota + 1
	// ToolCallCompleted: the model finished asking for one tool call. Semantic.
	ToolCallCompleted
	// Keepalive: an SSE comment. Transport only; it says nothing of progress.
	Keepalive
	// Chunk: a streamed data chunk (tokens). Bytes at full speed are not
	// progress: a model can stream a long, wrong plan.
	Chunk
)

var eventNames = [...]string{"", "model_message", "tool_call", "keepalive", "chunk"}

func (e Event) String() string {
	if int(e) < len(eventNames) {
		return eventNames[e]
	}
	return "Event(?)"
}

// Semantic reports whether e resets a run's quiet clock.
func (e Event) Semantic() bool { return e == MessageCompleted || e == ToolCallCompleted }

// Attempt describes one physical request.
type Attempt struct {
	N          int          // 1-based
	Lease      budget.Lease // its Granted is the Budget-Remaining-Ms sent
	Start, End time.Time
	Outcome    trace.Outcome // set at the end
	Status     int           // HTTP status of an error response
	Err        error         // the failure, nil when OK
	Keepalives int64         // SSE comments seen
	Chunks     int64         // data chunks seen
	Usage      openai.CompletionUsage
}

// Observer receives what a call does. Every field may be nil. The
// callbacks run on the calling goroutine, except Event's, which may run on
// the goroutine reading the response body; they must be quick.
type Observer struct {
	AttemptStart func(Attempt)
	AttemptEnd   func(Attempt)
	// Backoff is called before each retry with the decision taken: a sleep,
	// or giving up because the sleep would outlast the budget.
	Backoff func(after int, d budget.Delay)
	// Refused is called when the budget refused the lease for attempt n.
	Refused func(n int, err error)
	Event   func(Event)
}

func (o Observer) start(a Attempt) {
	if o.AttemptStart != nil {
		o.AttemptStart(a)
	}
}

func (o Observer) end(a Attempt) {
	if o.AttemptEnd != nil {
		o.AttemptEnd(a)
	}
}

func (o Observer) backoff(n int, d budget.Delay) {
	if o.Backoff != nil {
		o.Backoff(n, d)
	}
}

func (o Observer) refused(n int, err error) {
	if o.Refused != nil {
		o.Refused(n, err)
	}
}

func (o Observer) event(e Event) {
	if o.Event != nil {
		o.Event(e)
	}
}

// counter counts SSE comments and data lines in a response body as it is
// read. It sits below the SDK's decoder, which drops comments silently.
type counter struct {
	obs                Observer
	keepalives, chunks atomic.Int64
}

func (c *counter) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if err == nil && res != nil && res.Body != nil {
		res.Body = &countingBody{ReadCloser: res.Body, c: c, lineStart: true}
	}
	return res, err
}

type countingBody struct {
	io.ReadCloser
	c         *counter
	lineStart bool // reports whether the next byte begins a line
	prefix    []byte
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	for _, ch := range p[:n] {
		b.scan(ch)
	}
	return n, err
}

// scan classifies lines by their first bytes: ":" is a comment, "data:" a
// chunk. Only the first five bytes of a line are kept.
func (b *countingBody) scan(ch byte) {
	if ch == '\n' {
		b.lineStart, b.prefix = true, b.prefix[:0]
		return
	}
	if !b.lineStart {
		return
	}
	if len(b.prefix) == 0 && ch == ':' {
		b.lineStart = false
		b.c.keepalives.Add(1)
		b.c.obs.event(Keepalive)
		return
	}
	b.prefix = append(b.prefix, ch)
	if string(b.prefix) == "data:" {
		b.lineStart = false
		b.c.chunks.Add(1)
		b.c.obs.event(Chunk)
	} else if len(b.prefix) >= 5 {
		b.lineStart = false
	}
}
