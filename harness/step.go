package harness

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	"github.com/openai/openai-go/v3"
	"golang.org/x/sync/semaphore"
)

// runTools runs the tool calls of step and returns what the model reads
// for each, in order. In the explore phase several calls run at once, at
// most Config.Parallel; from narrow on they run one by one, since width is
// bought with budget the run no longer has (SPEC §3). The phase is asked
// again before each call starts, not once per step: a call that waited for
// a slot while the run entered narrow is a new branch, so it waits for the
// calls in flight to end and then runs alone. Every goroutine it starts has
// ended when it returns.
func (r *run) runTools(ctx context.Context, step int, calls []openai.ChatCompletionMessageToolCallUnion) []string {
	out := make([]string, len(calls))
	run := &tools.Run{ID: r.id, Budget: r.b, Journal: r.cfg.Journal, Observer: r.toolObserver(step), Quiet: watchdog.ErrQuiet}
	width := int64(r.cfg.Parallel)
	if len(calls) == 1 || width == 1 || r.ladder.MayWiden(landing.Parallel) != nil {
		for i, c := range calls {
			out[i] = r.call(ctx, run, step, c)
		}
		return out
	}
	// Slots are taken here, in call order, and only here, so the wait for
	// all of them cannot deadlock: each call in flight ends on its lease and
	// gives its slots back. The wait is not cut by ctx: a call that finds
	// the run stopping still owes the model its tool message, which gate
	// writes at once.
	slots := semaphore.NewWeighted(width)
	wait := context.WithoutCancel(ctx)
	var wg sync.WaitGroup
	for i, c := range calls {
		held := int64(1)
		slots.Acquire(wait, 1) // cannot fail: wait is never done
		if r.ladder.MayWiden(landing.Parallel) != nil {
			slots.Acquire(wait, width-1)
			held = width
		}
		wg.Go(func() {
			defer slots.Release(held)
			out[i] = r.call(ctx, run, step, c)
		})
	}
	wg.Wait()
	return out
}

// call runs one tool call, unless a gate of the ladder refuses it, and
// returns what the model reads.
func (r *run) call(ctx context.Context, run *tools.Run, step int, c openai.ChatCompletionMessageToolCallUnion) string {
	name := c.Function.Name
	if reason, ok := r.gate(ctx, name); !ok {
		r.record(landing.Call{Step: step, Tool: name, Outcome: landing.Refused, Summary: reason})
		r.write(trace.Record{Event: trace.Refused, Step: tools.KindPrefix + name, StepIndex: step, Attempt: 1,
			Reason: "gated", Message: reason})
		return "error: not run: " + reason
	}
	what := tools.KindPrefix + name
	r.begin(what)
	res := r.cfg.Tools.Call(ctx, run, name, json.RawMessage(c.Function.Arguments))
	r.end(what)
	if res.Key != "" {
		r.w.End(string(res.Key))
	}
	r.record(callOf(step, name, res))
	return res.Content()
}

// gate asks the ladder whether the call may start now. A tool the registry
// does not know is let through: the registry answers it at once, without
// any I/O, and the model learns which tools there are.
func (r *run) gate(ctx context.Context, name string) (reason string, ok bool) {
	if ctx.Err() != nil {
		return "the run is stopping: no more work is started", false
	}
	spec, known := r.specs[name]
	if !known {
		return "", true
	}
	if spec.Speculative {
		if err := r.ladder.MayWiden(landing.Speculative); err != nil {
			return gateReason(err), false
		}
	}
	if err := r.ladder.Admit(r.b.Estimates().Kind(tools.KindPrefix+name), spec.Ceiling); err != nil {
		return gateReason(err), false
	}
	return "", true
}

func gateReason(err error) string {
	if ge, ok := errors.AsType[*landing.GateError](err); ok {
		return ge.Reason
	}
	return err.Error()
}

func (r *run) record(c landing.Call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
}

// callOf records how a call ended, for the landing summary. A call left
// unfinished by the run's end (its deadline, the quiet clock, a
// cancellation) was in flight; one cut by its own ceiling while the run
// went on failed, and the run knew it. An orphaned write is always listed
// in flight: nobody knows yet whether it happened.
func callOf(step int, name string, res tools.Result) landing.Call {
	c := landing.Call{Step: step, Tool: name, Key: string(res.Key)}
	switch {
	case res.State == tools.StateOrphaned,
		res.State != "" && !errors.Is(res.Cause, budget.ErrLeaseExpired):
		c.Outcome, c.State = landing.Interrupted, string(res.State)
	case res.Refused:
		c.Outcome, c.Summary = landing.Refused, oneLine(res.Err)
	case res.Err != "":
		c.Outcome, c.Summary = landing.Failed, oneLine(res.Err)
	default:
		c.Outcome, c.Summary = landing.Done, oneLine(outputText(res.Output))
	}
	return c
}

// outputText is a tool's output as a person reads it: a JSON string
// unquoted, anything else as sent.
func outputText(out json.RawMessage) string {
	var s string
	if json.Unmarshal(out, &s) == nil {
		return s
	}
	return string(out)
}

// maxSummary bounds a call's one-line summary in the landing record.
const maxSummary = 200

// oneLine is the first line of s, cut to maxSummary bytes on a rune
// boundary.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i]) + " …"
	}
	if len(s) <= maxSummary {
		return s
	}
	cut := maxSummary
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
