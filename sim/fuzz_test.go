package sim

import (
	"encoding/json"
	"errors"
	"regexp"
	"testing"
)

// FuzzParseScenario checks that any input parses or fails with a
// ScenarioError, never panics, and that what parses is valid.
func FuzzParseScenario(f *testing.F) {
	f.Add([]byte("rules:\n  - request: 1\n    status: 500\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := ParseScenario(data)
		if err != nil {
			if !errors.Is(err, ErrScenario) {
				t.Fatalf("error %v does not match ErrScenario", err)
			}
			if sc != nil {
				t.Fatalf("returned %+v with error %v", sc, err)
			}
			return
		}
		if err := sc.Validate(); err != nil {
			t.Fatalf("parsed scenario fails Validate: %v", err)
		}
	})
}

// FuzzMatching checks that any pattern gives a string it matches, or
// none, and never a panic.
func FuzzMatching(f *testing.F) {
	for _, p := range []string{`^[0-9]{5}$`, `^(cat|dog)s?$`, `[^"]+`, `\bx\b`, `(a{1000}){5}`, `[^\x00-\x{10FFFF}]`, `(?i)abc`} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, pattern string) {
		m, ok := matching(pattern)
		if !ok {
			return
		}
		if re, err := regexp.Compile(pattern); err != nil || !re.MatchString(m) {
			t.Fatalf("matching(%q) = %q, which it does not match (%v)", pattern, m, err)
		}
	})
}

// FuzzStructuredAnswer checks that any response_format schema gives a
// 400 or an answer that is JSON, never a panic.
func FuzzStructuredAnswer(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"answer":{"type":"string"},"n":{"type":"integer","minimum":3}},"required":["answer","n"]}`), true)
	f.Add([]byte(`{"type":"object","properties":{"next":{"$ref":"#"}},"required":["next"]}`), false)
	f.Add([]byte(`{"anyOf":[{"type":"null"},{"type":"array","items":{"$ref":"#/$defs/x"},"minItems":2}],"$defs":{"x":{"enum":[1,"a"]}}}`), true)
	f.Fuzz(func(t *testing.T, schema []byte, strict bool) {
		rf, err := json.Marshal(map[string]any{"type": "json_schema",
			"json_schema": map[string]any{"name": "f", "strict": strict, "schema": json.RawMessage(schema)}})
		if err != nil {
			return // not JSON, so not a schema a client could send
		}
		req := chatRequest{ResponseFormat: rf}
		if e := req.decodeFormat(nil); e != nil {
			return
		}
		content, e := req.format.content("[sim] answer", "task", 1)
		if e != nil {
			if e.status != 400 || e.param != "response_format" {
				t.Fatalf("refused with %+v, want a 400 about response_format", e)
			}
			return
		}
		if !json.Valid([]byte(content)) {
			t.Fatalf("answer %q is not JSON", content)
		}
	})
}
