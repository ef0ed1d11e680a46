package model

import (
	"io"
	"net/http"
	"sync/atomic"

	"github.com/glidepath/glidepath/internal/ssecount"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	"github.com/openai/openai-go/v3/option"
)

// counter counts the SSE comments (keepalives) and data lines (chunks) of a
// response body as it is read, and signals each. It sits below the SDK's
// decoder, which drops comments silently.
type counter struct {
	obs                *trace.Observer
	keepalives, chunks atomic.Int64
}

func (c *counter) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if err == nil && res != nil && res.Body != nil {
		r := ssecount.NewReader(res.Body, c.keepalive, c.chunk)
		res.Body = struct {
			io.Reader
			io.Closer
		}{r, res.Body}
	}
	return res, err
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
