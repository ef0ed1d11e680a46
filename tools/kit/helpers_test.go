package kit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glidepath/glidepath/tools/kit"
)

// Real sockets are outside synctest's reach: tests over them bound
// generously and assert order and outcome.
const patience = 10 * time.Second

// memoryRecorder is an in-memory http.ResponseWriter that can stream: it
// cuts what was written into chunks at every Flush, each stamped with the
// time it was flushed, so that inside a synctest bubble a test can assert
// at exactly which instant each event was sent. Only the goroutine
// serving the request writes to it; read it after ServeHTTP returned.
type memoryRecorder struct {
	start   time.Time
	header  http.Header
	code    int
	pending bytes.Buffer
	body    bytes.Buffer
	chunks  []chunk
}

type chunk struct {
	at   time.Duration // since the request started
	text string
}

func newMemoryRecorder() *memoryRecorder {
	return &memoryRecorder{start: time.Now(), header: make(http.Header)}
}

func (m *memoryRecorder) Header() http.Header { return m.header }

func (m *memoryRecorder) WriteHeader(code int) {
	if m.code == 0 {
		m.code = code
	}
}

func (m *memoryRecorder) Write(p []byte) (int, error) {
	m.WriteHeader(http.StatusOK)
	m.body.Write(p)
	return m.pending.Write(p)
}

func (m *memoryRecorder) Flush() {
	m.WriteHeader(http.StatusOK)
	if m.pending.Len() > 0 {
		m.chunks = append(m.chunks, chunk{at: time.Since(m.start), text: m.pending.String()})
		m.pending.Reset()
	}
}

// event is one server-sent event or comment, as a test reads it.
type event struct {
	at      time.Duration
	typ     string // "" for a comment
	data    string
	comment string
}

// events parses the chunks of a stream: every chunk the kit flushes is one
// event or one comment.
func (m *memoryRecorder) events(t *testing.T) []event {
	t.Helper()
	if m.pending.Len() > 0 {
		t.Errorf("%q written but never flushed", m.pending.String())
	}
	var evs []event
	for _, c := range m.chunks {
		evs = append(evs, parseEvent(t, c.text, c.at))
	}
	return evs
}

func parseEvent(t *testing.T, text string, at time.Duration) event {
	t.Helper()
	if !strings.HasSuffix(text, "\n\n") {
		t.Fatalf("event %q does not end with a blank line", text)
	}
	ev := event{at: at}
	for line := range strings.SplitSeq(strings.TrimSuffix(text, "\n\n"), "\n") {
		switch {
		case strings.HasPrefix(line, ":"):
			ev.comment = strings.TrimSpace(line[1:])
		case strings.HasPrefix(line, "event: "):
			ev.typ = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			ev.data += line[len("data: "):]
		default:
			t.Fatalf("unexpected line %q in event %q", line, text)
		}
	}
	return ev
}

// request is one call to a tool: the body defaults to empty arguments
// and the key to "k1"; header values replace them ("" deletes one).
type request struct {
	method string
	path   string
	body   string
	header map[string]string
	stream bool
}

func (rq request) build(ctx context.Context) *http.Request {
	method, body := rq.method, rq.body
	if method == "" {
		method = http.MethodPost
	}
	if body == "" && method == http.MethodPost {
		body = `{"arguments":{}}`
	}
	r := httptest.NewRequestWithContext(ctx, method, rq.path, strings.NewReader(body))
	if method == http.MethodPost {
		r.Header.Set("Idempotency-Key", "k1")
	}
	if rq.stream {
		r.Header.Set("Accept", "text/event-stream")
	}
	for k, v := range rq.header {
		if v == "" {
			r.Header.Del(k)
			continue
		}
		r.Header.Set(k, v)
	}
	return r
}

// serve calls h in memory and returns what it answered.
func serve(ctx context.Context, h http.Handler, rq request) *memoryRecorder {
	m := newMemoryRecorder()
	h.ServeHTTP(m, rq.build(ctx))
	return m
}

// serveAsync serves in a goroutine; receive from the channel for the answer.
func serveAsync(ctx context.Context, h http.Handler, rq request) <-chan *memoryRecorder {
	c := make(chan *memoryRecorder, 1)
	go func() { c <- serve(ctx, h, rq) }()
	return c
}

type errorAnswer struct {
	Error struct {
		Message   string `json:"message"`
		Retryable bool   `json:"retryable"`
		Code      string `json:"code"`
	} `json:"error"`
}

// jsonError decodes an HTTP error answer, failing the test unless it is
// JSON with a message.
func jsonError(t *testing.T, m *memoryRecorder) errorAnswer {
	t.Helper()
	if ct := m.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q, want application/json; body %q", ct, m.body.String())
	}
	var e errorAnswer
	if err := json.Unmarshal(m.body.Bytes(), &e); err != nil || e.Error.Message == "" {
		t.Fatalf("body %q is not a JSON error with a message (%v)", m.body.String(), err)
	}
	return e
}

// output decodes a 200 JSON answer's output.
func output(t *testing.T, m *memoryRecorder) string {
	t.Helper()
	if m.code != http.StatusOK {
		t.Fatalf("status %d, want 200; body %q", m.code, m.body.String())
	}
	var r struct{ Output json.RawMessage }
	if err := json.Unmarshal(m.body.Bytes(), &r); err != nil {
		t.Fatalf("body %q: %v", m.body.String(), err)
	}
	return string(r.Output)
}

func mustRegister(t *testing.T, srv *kit.Server, tools ...kit.Tool) {
	t.Helper()
	for _, tl := range tools {
		if err := srv.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
}

// counter counts handler runs; safe for concurrent use.
type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) add() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return c.n
}

func (c *counter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// syncBuffer is a log sink safe for the handler goroutines that write it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// echo answers its arguments at once.
func echo(name string) kit.Tool {
	return kit.Tool{Name: name, Effect: kit.Read, Max: time.Second, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
		return call.Args, nil
	}}
}

// waitCause is a handler that waits for its context and answers how long
// that took and why it ended.
func waitCause(ctx context.Context, call *kit.Call) (any, error) {
	start := time.Now()
	<-ctx.Done()
	return map[string]string{"after": time.Since(start).String(), "cause": context.Cause(ctx).Error()}, nil
}
