package kit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/tools/kit"
)

// FuzzServeCall feeds arbitrary bodies and headers through ServeHTTP: it
// never panics, and every answer is well formed: JSON with an output or an
// error message, or a stream ending in exactly one result or error event.
func FuzzServeCall(f *testing.F) {
	f.Add([]byte(`{"arguments":{"q":"cats"}}`), "500", false, "gp_k", "")
	f.Add([]byte(`{"arguments":{}}`), "", false, "k", "text/event-stream")
	f.Fuzz(func(t *testing.T, body []byte, remaining string, twice bool, key, accept string) {
		srv := &kit.Server{MaxBody: 512, KeepaliveEvery: -1, Logger: discardLogger()}
		mustRegister(t, srv, kit.Tool{Name: "echo", Effect: kit.Read, Max: time.Second, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
			call.Progress(1, 1, "")
			if bytes.Contains(call.Args, []byte("fail")) {
				return nil, &kit.Error{Message: "echo: asked to fail", Retryable: bytes.Contains(call.Args, []byte("retry"))}
			}
			return call.Args, nil
		}})
		defer srv.Close()
		r := httptest.NewRequestWithContext(t.Context(), "POST", "/tools/echo", bytes.NewReader(body))
		r.Header[budget.Header] = []string{remaining}
		if twice {
			r.Header[budget.Header] = append(r.Header[budget.Header], remaining)
		}
		r.Header["Idempotency-Key"] = []string{key}
		r.Header["Accept"] = []string{accept}
		m := newMemoryRecorder()
		srv.ServeHTTP(m, r)
		switch ct := m.header.Get("Content-Type"); ct {
		case "application/json":
			var a struct {
				Output json.RawMessage
				Error  *struct{ Message string }
			}
			if err := json.Unmarshal(m.body.Bytes(), &a); err != nil {
				t.Fatalf("body %q: %v", m.body.String(), err)
			}
			if m.code == http.StatusOK && a.Output == nil || m.code != http.StatusOK && (a.Error == nil || a.Error.Message == "") {
				t.Fatalf("%d %q: want an output or an error message", m.code, m.body.String())
			}
		case "text/event-stream":
			evs := m.events(t)
			for i, ev := range evs {
				terminal := ev.typ == "result" || ev.typ == "error"
				if terminal != (i == len(evs)-1) || ev.typ != "progress" && !terminal {
					t.Fatalf("events %v: want progress, then exactly one result or error", evs)
				}
				if !json.Valid([]byte(ev.data)) {
					t.Fatalf("event data %q is not JSON", ev.data)
				}
			}
			if len(evs) == 0 {
				t.Fatalf("an empty stream")
			}
		default:
			t.Fatalf("Content-Type %q, body %q", ct, m.body.String())
		}
	})
}
