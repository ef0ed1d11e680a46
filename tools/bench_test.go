package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
)

// BenchmarkCallLocal is the whole overhead of a call to a local tool that
// does nothing: argument validation, a key, a lease, the function's
// goroutine, the result.
func BenchmarkCallLocal(b *testing.B) {
	params := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)
	reg := NewRegistry(nil)
	if err := reg.Register(Func(Spec{Name: "nop", Effect: Read, Parameters: params},
		func(context.Context, json.RawMessage, Progress) (any, error) { return json.RawMessage(`1`), nil })); err != nil {
		b.Fatal(err)
	}
	bud, err := budget.New(budget.Config{Total: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	run := &Run{Budget: bud}
	args := json.RawMessage(`{"q":"x"}`)
	b.ReportAllocs()
	for b.Loop() {
		if res := reg.Call(context.Background(), run, "nop", args); res.Err != "" {
			b.Fatal(res.Err)
		}
	}
	reg.Wait()
}

// BenchmarkReadEvents decodes a stream of 100 heartbeats, 100 keepalives
// and a result.
func BenchmarkReadEvents(b *testing.B) {
	var sb strings.Builder
	for i := range 100 {
		sb.WriteString(": keepalive\n\nevent: progress\ndata: {\"units\":")
		sb.WriteString(strings.Repeat("1", 1+i%3))
		sb.WriteString("}\n\n")
	}
	sb.WriteString("event: result\ndata: {\"output\":{\"ok\":true}}\n\n")
	body := []byte(sb.String())
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := readAnswer(bytes.NewReader(body), "text/event-stream", &countingSink{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallMachine is the call machine's share of a call that
// succeeds at once: its two steps, started and the attempt ended.
func BenchmarkCallMachine(b *testing.B) {
	f := budget.Figures{Remaining: time.Hour, Reserve: time.Minute, Floor: 100 * time.Millisecond}
	rules := CallRules{Kind: "tool:nop", Effect: Read, Ceiling: time.Second}
	b.ReportAllocs()
	for b.Loop() {
		m := NewCallMachine(rules)
		if c := m.Step(CallEvent{Kind: CallStarted, Figures: f}); c.Kind != CallAttempt {
			b.Fatal(c)
		}
		if c := m.Step(CallEvent{Kind: AttemptEnded, Figures: f, Attempt: Attempted{OK: true}}); c.End != EndOK {
			b.Fatal(c)
		}
	}
}
