package model

import (
	"io"
	"net/http"
	"net/url"
	"sync/atomic"

	"github.com/glidepath/glidepath/internal/ssecount"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	"github.com/openai/openai-go/v3/option"
)

// counter counts the SSE comments (keepalives) and data lines (chunks) of a
// response body as it is read, and signals each. It sits below the SDK's
// decoder, which drops comments silently.
//
// It also keeps what the answer was, for [Client] to tell a server that
// is not a model server from a stream cut short (issue 24): where the
// request went, the status, the media type, and how many bytes of body
// came. The middleware runs, and the body is read, on the attempt's own
// goroutine, before the attempt ends; the atomics are for the signals.
type counter struct {
	obs                *trace.Observer
	keepalives, chunks atomic.Int64
	bytes              atomic.Int64
	// events reports a body of typed events (the Responses API), whose
	// data lines are not all the answer's: its lifecycle events
	// (response.created, a reasoning item added) come before a reasoning
	// model's silence, and counted as chunks they named a model that had
	// said nothing "still streaming" (issue 27). Its client counts the
	// deltas itself ([counter.chunk]).
	events bool

	url         *url.URL // the request's URL; nil until it is sent
	status      int      // the answer's status; 0 until one came
	contentType string   // the answer's Content-Type, as sent
}

func (c *counter) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	c.url = req.URL
	res, err := next(req)
	if err == nil && res != nil && res.StatusCode < 400 {
		// The server answered, and is not refusing: a model call's hold
		// begins (issue 27). A 429 or a 503 is a failed attempt, and the
		// retry's server may never answer.
		c.obs.OnSignal(trace.Signal{Event: watchdog.Headers, Step: Kind, Key: Kind})
	}
	if err == nil && res != nil && res.Body != nil {
		c.status, c.contentType = res.StatusCode, res.Header.Get("Content-Type")
		data := c.chunk
		if c.events {
			data = nil
		}
		r := ssecount.NewReader(bodyCounter{res.Body, &c.bytes}, c.keepalive, data)
		res.Body = struct {
			io.Reader
			io.Closer
		}{r, res.Body}
	}
	return res, err
}

// bodyCounter counts the bytes read from r into n.
type bodyCounter struct {
	r io.Reader
	n *atomic.Int64
}

func (b bodyCounter) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.n.Add(int64(n))
	return n, err
}

func (c *counter) keepalive() {
	c.keepalives.Add(1)
	c.obs.OnSignal(trace.Signal{Event: watchdog.Keepalive, Step: Kind})
}

// chunk signals streamed tokens: bytes at full speed are not progress, a
// model can stream a long, wrong plan.
func (c *counter) chunk() {
	c.chunks.Add(1)
	c.obs.OnSignal(trace.Signal{Event: watchdog.Token, Step: Kind})
}
