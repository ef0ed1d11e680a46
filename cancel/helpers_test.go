package cancel_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
)

// inMemoryTransport serves each request by calling a handler in the
// caller's goroutine: no sockets, so that inside a synctest bubble every
// wait is seen by the fake clock and sleeps are exact. A handler that
// blocks on its request's context ends when that context does, as a hung
// server's connection would.
type inMemoryTransport struct{ h http.Handler }

func (t inMemoryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	return rec.Result(), nil
}

func inMemoryClient(h http.Handler) *http.Client {
	return &http.Client{Transport: inMemoryTransport{h}}
}

// toolServer is a tool's status and cancel endpoints that answer from a
// script, one answer per request, the last one repeated, and record what
// they were asked.
type toolServer struct {
	mu       sync.Mutex
	answers  []answer
	requests []string // "METHOD PATH"
}

type answer struct {
	code int
	body string
	hang bool // wait for the request's context to end instead
}

func (s *toolServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r.Method+" "+r.URL.EscapedPath())
	a := s.answers[min(len(s.requests), len(s.answers))-1]
	s.mu.Unlock()
	if a.hang {
		<-r.Context().Done()
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.code)
	w.Write([]byte(a.body))
}

func (s *toolServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
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

// longest draws the top of every jitter range, so that sleeps are known.
var longest = budget.Backoff{Rand: func(n int64) int64 { return n - 1 }}

var (
	running = answer{code: 200, body: `{"state":"running","units":3}`}
	done    = answer{code: 200, body: `{"state":"done","output":{"id":7},"units":9}`}
	failed  = answer{code: 200, body: `{"state":"failed","output":"card declined"}`}
	unknown = answer{code: 404, body: `{"error":{"message":"no such call"}}`}
	broken  = answer{code: 503, body: `{"error":{"message":"db down"}}`}
	garbage = answer{code: 200, body: `<html>hello</html>`}
	hang    = answer{hang: true}
)
