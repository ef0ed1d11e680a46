package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// countingSink counts what an answer reported besides its result.
type countingSink struct{ keepalives, reports int }

func (s *countingSink) Keepalive()                    { s.keepalives++ }
func (s *countingSink) Progress(int64, int64, string) { s.reports++ }

// FuzzRemoteAnswer feeds arbitrary bodies, as an event stream or as JSON,
// to the decoding of a remote tool's answer: it never panics, reads a
// bounded amount, and ends in an output that is JSON or in one of the
// errors it documents.
func FuzzRemoteAnswer(f *testing.F) {
	f.Add([]byte(`{"output":{"a":1}}`), false)
	f.Add([]byte("event: progress\ndata: {\"units\":1}\n\n: ping\n\nevent: result\ndata: {\"output\":2}\n\n"), true)
	f.Fuzz(func(t *testing.T, body []byte, stream bool) {
		ct := "application/json"
		if stream {
			ct = "text/event-stream; charset=utf-8"
		}
		s := &countingSink{}
		out, err := readAnswer(bytes.NewReader(body), ct, s)
		switch {
		case err == nil:
			if !json.Valid(out) || len(out) > MaxAnswer {
				t.Fatalf("output %q is not JSON within %d bytes", out, MaxAnswer)
			}
		case isTool(err), errors.Is(err, ErrBadAnswer), errors.Is(err, ErrIncomplete):
		default:
			t.Fatalf("undocumented error %v", err)
		}
		if !stream && (s.keepalives != 0 || s.reports != 0) {
			t.Fatalf("a JSON answer reported %+v", s)
		}
		if s.keepalives > bytes.Count(body, []byte(":")) || s.reports > bytes.Count(body, []byte("progress")) {
			t.Fatalf("counted %+v from %q", s, body)
		}
	})
}

// FuzzParseConfig feeds arbitrary files to ParseConfig: it never panics,
// every failure is a located *ConfigError, and every config it accepts
// registers without error.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("tools:\n  - name: a\n    url: http://x\n    effect: read\n"))
	f.Add([]byte(`{"tools":[{"name":"a","command":["ls"],"ceiling":"1s"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig("f.yaml", data, demo)
		if err != nil {
			for _, e := range unjoin(err) {
				ce, ok := errors.AsType[*ConfigError](e)
				if !ok || ce.Line < 0 || !errors.Is(e, ErrConfig) {
					t.Fatalf("error %v is not a located config error", e)
				}
			}
			return
		}
		reg := NewRegistry(nil)
		for _, tool := range c.Tools(nil) {
			if err := reg.Register(tool); err != nil {
				t.Fatalf("accepted config does not register: %v\n%s", err, data)
			}
		}
	})
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func isTool(err error) bool {
	_, ok := errors.AsType[*ToolError](err)
	return ok
}
