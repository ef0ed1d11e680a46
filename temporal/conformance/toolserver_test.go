package conformance_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// toolURL stands in a row's tools file for the URL of the suite's tool
// server, which serves the tools no builtin and no command can be: one
// whose cancel hangs, one whose server asks to wait.
const toolURL = "{{tools}}"

// toolServer speaks the tool protocol of SPEC §5 (tools.Remote's side):
//
//   - hang: every POST, and every DELETE of a call (its cancel), hangs
//     until the client leaves;
//   - busy: a call's first POST answers 503 with Retry-After: 2 after
//     1.2s of silence, its next ones hang until the client leaves.
//
// A call's state is kept by its Idempotency-Key, so the two hosts' runs,
// whose keys differ, never see each other's.
type toolServer struct {
	*httptest.Server
	mu      sync.Mutex
	posts   map[string]int
	release chan struct{} // closed when the suite ends: nothing hangs past it
}

const manifest = `{"tools":[
{"name":"hang","description":"Hangs, and so does its cancel.","parameters":{"type":"object"},"effect":"read","cancellable":true,"p50_ms":100,"p95_ms":500},
{"name":"busy","description":"Asks to wait, then hangs.","parameters":{"type":"object"},"effect":"read","cancellable":false,"p50_ms":100,"p95_ms":500}]}`

func newToolServer() *toolServer {
	s := &toolServer{posts: map[string]int{}, release: make(chan struct{})}
	s.Server = httptest.NewServer(s)
	return s
}

func (s *toolServer) Close() {
	close(s.release)
	s.Server.Close()
}

// hold waits until the client leaves or the suite ends.
func (s *toolServer) hold(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-s.release:
	}
}

func (s *toolServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/tools":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, manifest)
	case r.Method == http.MethodPost && r.URL.Path == "/tools/hang",
		r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/tools/hang/calls/"):
		s.hold(r)
	case r.Method == http.MethodPost && r.URL.Path == "/tools/busy":
		s.mu.Lock()
		key := r.Header.Get("Idempotency-Key")
		n := s.posts[key]
		s.posts[key]++
		s.mu.Unlock()
		if n > 0 {
			s.hold(r)
			return
		}
		select {
		case <-time.After(1200 * time.Millisecond):
		case <-r.Context().Done():
			return
		case <-s.release:
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "2")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error":"busy: try again in 2s"}`)
	default:
		http.NotFound(w, r)
	}
}
