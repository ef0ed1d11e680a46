package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
)

// plugged is a tools.Tool of an embedder's own, not one of package tools:
// the promises must hold whatever its Attempt does (issue 25).
type plugged struct {
	spec    tools.Spec
	attempt func(ctx context.Context, c *tools.Call) tools.Answer
}

func (p plugged) Spec() tools.Spec { return p.spec }

func (p plugged) Attempt(ctx context.Context, c *tools.Call) tools.Answer { return p.attempt(ctx, c) }

// B = 1s: a custom tool whose Attempt ignores its context and answers after
// 3s. The call ends when its lease does, at the reserve (1s less R, 10%:
// 0.9s less the 50ms floor, whatever the budget grants), not 2s past the
// deadline; the late answer is neither recorded as OK nor used.
func TestACustomToolThatIgnoresItsContextEndsWithItsLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		late := plugged{spec: tools.Spec{Name: "late", Effect: tools.Read}, attempt: func(ctx context.Context, c *tools.Call) tools.Answer {
			time.Sleep(3 * time.Second)
			return tools.Answer{Output: json.RawMessage(`"too late"`)}
		}}
		sink, reg := &collect{}, registry(t, late)
		defer reg.Wait() // the tool that ran on is the registry's until it returns
		s, ctx := start(t, time.Second, harness.Config{Task: "t", Tools: reg, Sinks: []trace.Sink{sink}})
		begun := time.Now()
		res := s.Call(ctx, harness.ToolCall{Name: "late"})[0]
		took := time.Since(begun)
		s.Close()

		if took >= time.Second {
			t.Errorf("the call returned after %v, past the run's 1s deadline", took)
		}
		if res.Outcome == trace.OK || len(res.Output) > 0 {
			t.Errorf("result %+v: the answer that came after the lease was used", res)
		}
		for _, r := range only(sink.all(), trace.AttemptEnd, "tool:late") {
			if r.Outcome == trace.OK {
				t.Errorf("attempt_end %+v recorded OK after its lease", r)
			}
		}
	})
}

// Two calls at once under Call, one of a tool that panics: the panic is
// that attempt's failure, recorded, and the run goes on (it used to kill
// the process).
func TestAPanicInACustomToolIsThatAttemptsFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := plugged{spec: tools.Spec{Name: "boom", Effect: tools.Read}, attempt: func(ctx context.Context, c *tools.Call) tools.Answer {
			panic("the tool's bug")
		}}
		fine := plugged{spec: tools.Spec{Name: "fine", Effect: tools.Read}, attempt: func(ctx context.Context, c *tools.Call) tools.Answer {
			return tools.Answer{Output: json.RawMessage(`"ok"`)}
		}}
		sink := &collect{}
		s, ctx := start(t, time.Minute, harness.Config{Task: "t", Tools: registry(t, boom, fine), Sinks: []trace.Sink{sink}})
		out := s.Call(ctx, harness.ToolCall{Name: "boom"}, harness.ToolCall{Name: "fine"})
		s.Close()

		if _, ok := errors.AsType[*tools.PanicError](out[0].Cause); !ok || out[0].Attempts != 1 {
			t.Errorf("boom: %+v, want one attempt failed with a *tools.PanicError", out[0])
		}
		if out[1].Outcome != trace.OK {
			t.Errorf("fine: %+v, want OK beside the panic", out[1])
		}
		ends := only(sink.all(), trace.AttemptEnd, "tool:boom")
		if len(ends) != 1 || ends[0].Outcome != trace.UpstreamError {
			t.Errorf("boom's attempt_end records %+v, want one, upstream_error", ends)
		}
	})
}

// What an Attempt answers is read one way, whatever the tool: each row is
// an answer a custom tool gives to a read and to a write; none is used as
// output, and none but a write's plain error leaves the write orphaned,
// since the tool answered. A write's plain error says nothing of whether
// the effect happened (a POST's error wrapped with %v has lost its
// net.Error), so that write is in doubt: orphaned, never told as failed
// for the model to send again.
func TestAnAnswerThatCannotBeRightIsAFailureOfThatAttempt(t *testing.T) {
	cases := []struct {
		name    string
		ans     tools.Answer
		want    trace.Outcome
		words   string
		retries bool
		doubt   bool // a write's answer leaves it in doubt
	}{
		{"an answer with neither output nor error is invalid", tools.Answer{}, trace.Invalid, "neither output nor an error", false, false},
		{"output and an error together are invalid", tools.Answer{Output: json.RawMessage(`"done"`), Err: errors.New("and failed")},
			trace.Invalid, "both output and an error", false, false},
		{"output that is not JSON is invalid", tools.Answer{Output: json.RawMessage(`done`)}, trace.Invalid, "not JSON", false, false},
		{"a plain error of the tool's own is its failure, not retried, and leaves a write in doubt", tools.Answer{Err: errors.New("quota exceeded")},
			trace.UpstreamError, "quota exceeded", false, true},
		{"a tool error that says retry is retried", tools.Answer{Err: &tools.ToolError{Message: "busy", Retryable: true}},
			trace.UpstreamError, "busy", true, false},
	}
	for _, c := range cases {
		for _, effect := range []tools.Effect{tools.Read, tools.Write} {
			t.Run(c.name+"/"+string(effect), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					tool := plugged{spec: tools.Spec{Name: "t", Effect: effect}, attempt: func(context.Context, *tools.Call) tools.Answer { return c.ans }}
					s, ctx := start(t, time.Minute, harness.Config{Task: "t", Tools: registry(t, tool)})
					defer s.Close()
					res := s.Call(ctx, harness.ToolCall{Name: "t"})[0]

					doubt := c.doubt && effect == tools.Write
					if res.Outcome != c.want || !strings.Contains(res.Err, c.words) && !strings.Contains(res.Cause.Error(), c.words) || len(res.Output) > 0 {
						t.Errorf("result %+v, want %s saying %q, no output", res, c.want, c.words)
					}
					if (res.State == tools.StateOrphaned) != doubt {
						t.Errorf("state %s: want orphaned %v", res.State, doubt)
					}
					if retried := res.Attempts > 1; retried != (c.retries && effect == tools.Read) {
						t.Errorf("%d attempts; retried: want %v", res.Attempts, c.retries && effect == tools.Read)
					}
				})
			})
		}
	}
}
