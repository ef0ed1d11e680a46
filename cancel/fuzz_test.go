package cancel_test

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/glidepath/glidepath/cancel"
)

// A journal is read back whatever it holds: ReadJournal never panics, at
// worst skips lines, and what it accepts has a key and a state and
// survives being appended again.
func FuzzReadJournal(f *testing.F) {
	f.Add([]byte(`{"ts":"2025-03-14T15:09:26Z","run_id":"r","tool":"pay","url":"http://u","idempotency_key":"gp_a","args_sha256":"","state":"open"}` + "\n"))
	f.Add([]byte(`{"idempotency_key":"gp_a","state":"open"}` + "\n" + `{"idempotency_key":"gp_a","st`))
	f.Add([]byte("\n\n{}\n"))
	f.Add([]byte(`{"ts":"not a time","idempotency_key":"k","state":"open"}` + "\n"))
	f.Add([]byte(`{"idempotency_key":"k","state":"open","extra":[1,2,{"x":null}]}` + "\n"))
	f.Fuzz(func(t *testing.T, content []byte) {
		if len(content) > 8<<10 {
			// Re-encoding can grow a line (an invalid byte becomes \ufffd),
			// and a line grown past MaxLine is refused by Append.
			return
		}
		dir := t.TempDir()
		path := filepath.Join(dir, "in.jsonl")
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		entries, err := cancel.ReadJournal(path)
		if err != nil && !errors.Is(err, cancel.ErrBadJournal) {
			t.Fatalf("ReadJournal = %v, want nil or ErrBadJournal", err)
		}
		out := filepath.Join(dir, "out.jsonl")
		j, err := cancel.OpenJournal(out)
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		for _, e := range entries {
			if e.IdempotencyKey == "" || e.State == "" {
				t.Fatalf("accepted an entry without key or state: %+v", e)
			}
			if e.TS.IsZero() {
				continue // Append would stamp it
			}
			if err := j.Append(e); err != nil {
				t.Fatalf("Append(%+v) = %v", e, err)
			}
		}
		again, err := cancel.ReadJournal(out)
		if err != nil {
			t.Fatalf("a journal of accepted entries does not read back: %v", err)
		}
		i := 0
		for _, e := range entries {
			if e.TS.IsZero() {
				continue
			}
			if !again[i].TS.Equal(e.TS) || again[i].IdempotencyKey != e.IdempotencyKey || again[i].State != e.State || again[i].URL != e.URL {
				t.Fatalf("entry %d read back as %+v, want %+v", i, again[i], e)
			}
			i++
		}
	})
}

// Whatever a tool answers, Status never panics and either reports one of
// the protocol's states or is unreachable.
func FuzzStatus(f *testing.F) {
	for _, a := range []answer{running, done, failed, unknown, broken, garbage,
		{code: 200, body: `{"state":"done","output":`}, {code: 200, body: `{"state":"running","units":1.5}`}, {code: 200, body: `null`}, {code: 302}} {
		f.Add(a.code, a.body)
	}
	f.Fuzz(func(t *testing.T, code int, body string) {
		if code < 100 || code > 999 {
			code = 200
		}
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.WriteHeader(code)
			w.Write([]byte(body))
		})
		e := cancel.Endpoint{URL: "http://tool.test", Tool: "pay", Client: inMemoryClient(h)}
		st, err := e.Status(t.Context(), key)
		if err != nil {
			if !errors.Is(err, cancel.ErrUnreachable) {
				t.Fatalf("Status = %v, want nil or ErrUnreachable", err)
			}
			return
		}
		switch st.State {
		case cancel.Running, cancel.Done, cancel.Failed, cancel.NeverReceived:
		default:
			t.Fatalf("Status = %+v, a state outside the protocol", st)
		}
	})
}
