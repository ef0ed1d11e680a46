package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

// request is one request a toolServer received.
type request struct {
	Key    string // Idempotency-Key, or the {key} of a status or cancel
	Budget string // Budget-Remaining-Ms
	Accept string
	Body   string
	At     time.Time
}

// toolServer speaks the remote tool protocol of SPEC §5 for one tool, with
// behavior set per test. It records what it receives.
type toolServer struct {
	// post answers the n-th POST (1-based); nil answers {"output":"ok"}.
	post func(w http.ResponseWriter, r *http.Request, n int)
	// status answers the n-th status ask; nil answers 404.
	status func(w http.ResponseWriter, r *http.Request, n int)
	// cancelCode is the cancel endpoint's answer; zero is 202, and -1
	// answers nothing until the request's context ends.
	cancelCode int
	// manifest is GET /tools's body; empty answers 404.
	manifest string

	mu       sync.Mutex
	posts    []request
	asks     []request
	cancels  []request
	onCancel chan struct{} // closed at the first cancel, if made
}

func (s *toolServer) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tools/{name}", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.posts = append(s.posts, request{Key: r.Header.Get("Idempotency-Key"), Budget: r.Header.Get(budget.Header),
			Accept: r.Header.Get("Accept"), Body: string(body), At: time.Now()})
		n := len(s.posts)
		s.mu.Unlock()
		if s.post == nil {
			writeJSON(w, http.StatusOK, `{"output":"ok"}`)
			return
		}
		s.post(w, r, n)
	})
	mux.HandleFunc("GET /tools/{name}/calls/{key}", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.asks = append(s.asks, request{Key: r.PathValue("key"), At: time.Now()})
		n := len(s.asks)
		s.mu.Unlock()
		if s.status == nil {
			http.NotFound(w, r)
			return
		}
		s.status(w, r, n)
	})
	mux.HandleFunc("DELETE /tools/{name}/calls/{key}", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.cancels = append(s.cancels, request{Key: r.PathValue("key"), At: time.Now()})
		if len(s.cancels) == 1 && s.onCancel != nil {
			close(s.onCancel)
		}
		s.mu.Unlock()
		code := s.cancelCode
		switch code {
		case 0:
			code = http.StatusAccepted
		case -1:
			<-r.Context().Done()
			return
		}
		w.WriteHeader(code)
	})
	mux.HandleFunc("GET /tools", func(w http.ResponseWriter, r *http.Request) {
		if s.manifest == "" {
			http.NotFound(w, r)
			return
		}
		writeJSON(w, http.StatusOK, s.manifest)
	})
	return mux
}

func (s *toolServer) got() (posts, asks, cancels []request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.posts), slices.Clone(s.asks), slices.Clone(s.cancels)
}

func writeJSON(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	io.WriteString(w, body)
}

// hang waits for the caller to give up, as a tool that never answers.
func hang(w http.ResponseWriter, r *http.Request, _ int) { <-r.Context().Done() }

// stream writes an event stream: each item is an event "name data" or, if
// it starts with ':', a comment line; each is flushed at once.
func stream(items ...string) func(http.ResponseWriter, *http.Request, int) {
	return func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		f := w.(http.Flusher)
		for _, it := range items {
			if it[0] == ':' {
				fmt.Fprintf(w, "%s\n\n", it)
			} else {
				name, data, _ := bytes.Cut([]byte(it), []byte(" "))
				fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
			}
			f.Flush()
		}
	}
}

// startServer serves s on loopback for the test's duration.
func startServer(t *testing.T, s *toolServer) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(s.handler())
	t.Cleanup(srv.Close)
	return srv
}

// memClient returns a client whose transport calls h in memory, on the
// calling goroutine's synctest bubble: an in-memory round trip, no socket.
func memClient(h http.Handler) *http.Client {
	return &http.Client{Transport: &memTransport{h: h}}
}

// memTransport is an in-memory http.RoundTripper. It runs the handler on a
// goroutine with the request's context and streams the answer through an
// io.Pipe; the client's context ending closes the pipe, as a broken
// connection would. It reports the request as written, as http.Transport's
// trace hooks do.
type memTransport struct{ h http.Handler }

func (m *memTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if tr := httptrace.ContextClientTrace(ctx); tr != nil {
		if tr.GetConn != nil {
			tr.GetConn(req.URL.Host)
		}
		if tr.WroteHeaders != nil {
			tr.WroteHeaders()
		}
	}
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body.Close()
	}
	sreq := httptest.NewRequestWithContext(ctx, req.Method, req.URL.String(), bytes.NewReader(body))
	sreq.Header = req.Header.Clone()
	pr, pw := io.Pipe()
	w := &memWriter{header: http.Header{}, pw: pw, ready: make(chan struct{})}
	go func() {
		m.h.ServeHTTP(w, sreq)
		w.WriteHeader(http.StatusOK)
		pw.Close()
	}()
	stop := context.AfterFunc(ctx, func() { pw.CloseWithError(context.Cause(ctx)) })
	select {
	case <-w.ready:
		return &http.Response{StatusCode: w.code, Header: w.sent, Body: &memBody{pr, stop}, Request: req,
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, ContentLength: -1}, nil
	case <-ctx.Done():
		stop()
		pr.CloseWithError(context.Cause(ctx))
		return nil, context.Cause(ctx)
	}
}

type memWriter struct {
	header, sent http.Header
	code         int
	pw           *io.PipeWriter
	ready        chan struct{}
	once         sync.Once
}

func (w *memWriter) Header() http.Header { return w.header }

func (w *memWriter) WriteHeader(code int) {
	w.once.Do(func() {
		w.code, w.sent = code, w.header.Clone()
		close(w.ready)
	})
}

func (w *memWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(p)
}

func (w *memWriter) Flush() { w.WriteHeader(http.StatusOK) }

type memBody struct {
	*io.PipeReader
	stop func() bool
}

func (b *memBody) Close() error {
	b.stop()
	return b.PipeReader.Close()
}

// recorder is an Observer that keeps everything it hears. Heartbeats are
// told from stale ones by a real watchdog, as in a run: "units strictly
// increase" is decided there, once.
type recorder struct {
	w *watchdog.Watchdog

	mu         sync.Mutex
	starts     []trace.Attempt
	ends       []trace.Attempt
	signals    []trace.Signal // a heartbeat's Event is Progress or StaleProgress, as the watchdog decided
	backoffs   []budget.Delay
	refused    []error
	sent       []budget.Lease // cancels sent
	cancels    []error        // cancels answered, nil when accepted
	reconciles []reconciled
	orphans    []string // their keys
}

type reconciled struct {
	state string
	asks  int
}

// newRecorder returns a recorder whose watchdog lives as long as t; in a
// synctest bubble, call it inside the bubble.
func newRecorder(t *testing.T) *recorder {
	t.Helper()
	w, _, err := watchdog.Start(t.Context(), watchdog.Config{Quiet: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return &recorder{w: w}
}

func (r *recorder) observer() *trace.Observer {
	lock := func(f func()) { r.mu.Lock(); defer r.mu.Unlock(); f() }
	return &trace.Observer{
		AttemptStart: func(a trace.Attempt) { lock(func() { r.starts = append(r.starts, a) }) },
		AttemptEnd:   func(a trace.Attempt) { lock(func() { r.ends = append(r.ends, a) }) },
		Backoff: func(_, _ string, _ int, d budget.Delay, _ error) {
			lock(func() { r.backoffs = append(r.backoffs, d) })
		},
		Refused:    func(_, _ string, _ int, err error) { lock(func() { r.refused = append(r.refused, err) }) },
		CancelSent: func(_, _ string, l budget.Lease) { lock(func() { r.sent = append(r.sent, l) }) },
		CancelSettled: func(_, _ string, _ trace.CancelState, err error) {
			lock(func() { r.cancels = append(r.cancels, err) })
		},
		Reconcile: func(_, _, state string, asks int, _ error) {
			lock(func() { r.reconciles = append(r.reconciles, reconciled{state, asks}) })
		},
		Orphan: func(_, key string, _ error) { lock(func() { r.orphans = append(r.orphans, key) }) },
		Signal: func(s trace.Signal) {
			if s.Event == watchdog.Progress && !r.w.Progress(s.Key, s.Units) {
				s.Event = watchdog.StaleProgress
			}
			if s.Event == watchdog.ToolResult {
				r.w.End(s.Key)
			}
			lock(func() { r.signals = append(r.signals, s) })
		},
	}
}

// kinds returns the events heard, in order.
func (r *recorder) kinds() []watchdog.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ks []watchdog.Event
	for _, s := range r.signals {
		ks = append(ks, s.Event)
	}
	return ks
}

func (r *recorder) count(k watchdog.Event) int {
	n := 0
	for _, got := range r.kinds() {
		if got == k {
			n++
		}
	}
	return n
}

// newBudget starts a budget of total with the default reserve and floor.
func newBudget(t *testing.T, total time.Duration) *budget.Budget {
	t.Helper()
	b, err := budget.New(budget.Config{Total: total})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fastBackoff sleeps at most a few milliseconds between attempts, for
// real-time tests.
var fastBackoff = budget.Backoff{Base: time.Millisecond, Cap: 5 * time.Millisecond}

// mustRegister returns a registry holding tools.
func mustRegister(t *testing.T, tools ...Tool) *Registry {
	t.Helper()
	r := NewRegistry(nil)
	for _, tool := range tools {
		if err := r.Register(tool); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(r.Wait)
	return r
}

func millis(s string) time.Duration {
	n, _ := strconv.ParseInt(s, 10, 64)
	return time.Duration(n) * time.Millisecond
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}
