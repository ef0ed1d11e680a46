package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/glidepath/glidepath/trace"
)

// Progress reports how far a local tool has come. Report is cheap and never
// blocks: a heartbeat whose units strictly increased over the call's last
// one is a semantic event that resets the run's quiet clock; one that
// repeats or lowers them is counted and resets nothing. Reports after the
// attempt has ended are dropped.
type Progress interface {
	Report(units, total int64, msg string)
}

// Fn is a local tool's function. ctx is the attempt's lease: it ends when
// the lease does, or the run does, with a cause that says which. args are
// the model's arguments, already checked against the tool's parameters. The
// result is the tool's output: a json.RawMessage is used as it is, anything
// else is encoded with encoding/json. A returned error is shown to the
// model.
type Fn func(ctx context.Context, args json.RawMessage, p Progress) (any, error)

// Func returns a local tool that runs fn. fn runs on a goroutine of its
// own, so that a call returns when its lease ends even if fn ignores its
// context; such an fn keeps running until it returns, owned by the
// [Registry] ([Registry.Wait]). A panic in fn is recovered there and ends
// the attempt with a [*PanicError] that keeps the stack.
func Func(spec Spec, fn Fn) Tool { return &funcTool{spec: spec, fn: fn} }

type funcTool struct {
	spec Spec
	fn   Fn
}

func (t *funcTool) Spec() Spec { return t.spec }

func (t *funcTool) check() *fieldErr {
	if t.fn == nil {
		return &fieldErr{"func", errors.New("nil function")}
	}
	return nil
}

type funcResult struct {
	out any
	err error
}

func (t *funcTool) Attempt(ctx context.Context, call *Call) Answer {
	// Buffered, so that an fn that outlives the attempt can still hand
	// over its result and end.
	done := make(chan funcResult, 1)
	// A Registry counts a function that outlives its call, so that the
	// process can wait for it; a Call no Registry made (the zero Call, a
	// Temporal worker's activity, issue 19) is valid too, and its function
	// runs on a goroutine of its own that ends when fn returns.
	start := func(f func()) { go f() }
	if call.c != nil {
		start = call.c.reg.stragglers.Go
	}
	start(func() {
		defer func() {
			if v := recover(); v != nil {
				done <- funcResult{err: &PanicError{Value: v, Stack: debug.Stack()}}
			}
		}()
		out, err := t.fn(ctx, call.Args, reporter{call})
		done <- funcResult{out, err}
	})
	var r funcResult
	select {
	case r = <-done:
	case <-ctx.Done():
		select {
		case r = <-done: // it finished as the lease ended: take what it made
		default:
			// Its context has ended, which is how a Go function is
			// cancelled (SPEC §4: cancelled is "its local context
			// ended"); one that ignores it runs on, owned by the Registry.
			return Answer{Err: context.Cause(ctx), Stopped: true}
		}
	}
	if r.err != nil {
		if ctx.Err() != nil {
			return Answer{Err: r.err, Stopped: true} // cut: the loop reads the cause
		}
		return Answer{Err: r.err, Outcome: trace.UpstreamError, Stopped: true}
	}
	out, err := encodeOutput(r.out)
	if err != nil {
		return Answer{Err: &ToolError{Message: err.Error()}, Outcome: trace.Invalid, Stopped: true}
	}
	return Answer{Output: out, Stopped: true}
}

// encodeOutput turns a local tool's result into JSON.
func encodeOutput(v any) (json.RawMessage, error) {
	if raw, ok := v.(json.RawMessage); ok {
		if !json.Valid(raw) {
			return nil, errors.New("the tool returned json.RawMessage that is not JSON")
		}
		return raw, nil
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("the tool's output cannot be encoded as JSON: %w", err)
	}
	return out, nil
}

// reporter is the Progress of one attempt.
type reporter struct{ c *Call }

func (r reporter) Report(units, total int64, msg string) { r.c.Progress(units, total, msg) }
