package durable

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/trace/spans"
	"github.com/glidepath/glidepath/watchdog"
)

// Review of issue 27: the status query's held call carried the raw
// idempotency key of a held tool call, which a query's answer never does
// (whoever holds the key can send the write again as the same one).
func TestAStatusShowsAHeldCallByItsHashedKeyOnly(t *testing.T) {
	const raw = "run-1/step-2/search#c1"
	s := watchdog.Silent{Call: watchdog.Call{Key: raw, Step: "tool:search", Allowance: 6 * time.Second, Source: watchdog.SourceDeclared},
		For: 3 * time.Second, Held: true}
	h := heldOf(s, false)
	b, err := json.Marshal(Status{Held: h})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), raw) || h.Key != spans.HashKey(raw) {
		t.Errorf("status %s: want the held call by its hashed key %s only", b, spans.HashKey(raw))
	}
	if !strings.Contains(string(b), `"held":{"step":"tool:search","key":"key-sha256:`) || !strings.Contains(string(b), `"allowance_ms":6000,"silent_ms":3000,"source":"declared"`) {
		t.Errorf("status %s: want the held call in the answer's own words", b)
	}
	model := heldOf(watchdog.Silent{Call: watchdog.Call{Key: "model", Step: "model", Allowance: time.Second, AtHeaders: true}, Headers: true, Held: true}, true)
	if model.Key != "" || !model.Headers || !model.Paused {
		t.Errorf("a model's held call %+v; want no key, its headers and the pause said", model)
	}
}
