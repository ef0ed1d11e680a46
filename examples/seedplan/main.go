// Command seedplan is the synthetic example that closes the design note
// this project started from ("Deadline Budget", seed 1), on Glidepath's own
// parts: a plan of three steps — search, a fetch that hangs on its first
// attempt, extract — on one budget of 1s, each step with its own ceiling
// and attempts; then the same plan on 0.01s, which the budget refuses
// before any tool is called.
//
// Every timeout is a lease of [budget.Budget] (min(ceiling, remaining − R
// − F)), every retry sleep is full jitter checked against the budget
// before it is slept, and [tools.Registry] is the one retry layer: what
// the seed's call_step does by hand. The timings are fabricated, as the
// seed's are, to make the control flow observable.
//
//	go run ./examples/seedplan
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
)

// The seed's numbers, where Glidepath has the same knob. Its floor is
// 20ms; Glidepath wants the floor below the budget it guards (a 20ms
// floor on a 10ms budget is a configuration error, budget.ConfigError),
// so the plan keeps 5ms and the second run is refused by the lease
// itself: 2.5ms is what it could grant, below the 10ms every step needs.
const (
	backoffBase = 50 * time.Millisecond
	backoffCap  = 400 * time.Millisecond
	floor       = 5 * time.Millisecond
	quickTime   = 10 * time.Millisecond // what a quick step takes, and every step's declared p50
	hangTime    = 10 * time.Second      // a hung attempt, cut short by its lease
)

// A step of the plan: the tool it calls, its per-attempt ceiling and the
// most attempts it may make. The seed's plan, in its order.
type step struct {
	name        string
	ceiling     time.Duration
	maxAttempts int
	hangs       int // the first hangs attempts hang
	label       string
}

var steps = []step{
	{name: "search", ceiling: 250 * time.Millisecond, maxAttempts: 2, label: "results"},
	{name: "fetch", ceiling: 100 * time.Millisecond, maxAttempts: 3, hangs: 1, label: "body"},
	{name: "extract", ceiling: 250 * time.Millisecond, maxAttempts: 2, label: "fields"},
}

// An attempt as the trace saw it: the step, its number and the lease it
// was granted.
type attempt struct {
	step    string
	n       int
	granted time.Duration
}

// outcome is what one run of the plan did.
type outcome struct {
	results  map[string]string // each step's output
	attempts []attempt         // every attempt started, in order
	left     time.Duration     // the budget's remaining time at the end
	calls    *atomic.Int64     // times a tool function was entered: the I/O a refusal must prevent
}

// runPlan runs the plan on a budget of total, step after step, and stops
// at the first step that fails or is refused.
func runPlan(ctx context.Context, total time.Duration) (outcome, error) {
	out := outcome{results: map[string]string{}, calls: new(atomic.Int64)}
	b, err := budget.New(budget.Config{Total: total, Floor: floor})
	if err != nil {
		return out, err
	}
	reg := tools.NewRegistry(b.Estimates())
	for _, s := range steps {
		if err := reg.Register(tools.Func(tools.Spec{
			Name: s.name, Effect: tools.Read, Ceiling: s.ceiling, MaxAttempts: s.maxAttempts, P50: quickTime,
		}, operation(s, out.calls))); err != nil {
			return out, err
		}
	}
	var mu sync.Mutex
	run := &tools.Run{
		Budget:  b,
		Backoff: budget.Backoff{Base: backoffBase, Cap: backoffCap},
		Observer: &trace.Observer{AttemptStart: func(a trace.Attempt) {
			mu.Lock()
			defer mu.Unlock()
			out.attempts = append(out.attempts, attempt{step: a.Step[len(tools.KindPrefix):], n: a.N, granted: a.Lease.Granted})
		}},
	}
	for _, s := range steps {
		res := reg.Call(ctx, run, s.name, nil)
		if res.Err != "" {
			out.left = b.Remaining()
			return out, fmt.Errorf("%s: %w", s.name, res.Cause)
		}
		var text string
		if err := json.Unmarshal(res.Output, &text); err != nil {
			return out, fmt.Errorf("%s: %w", s.name, err)
		}
		out.results[s.name] = text
	}
	out.left = b.Remaining()
	return out, nil
}

// operation is the step's tool: quick, except for its first s.hangs
// attempts, which hang until their lease cuts them.
func operation(s step, calls *atomic.Int64) tools.Fn {
	var attempts atomic.Int64
	return func(ctx context.Context, _ json.RawMessage, _ tools.Progress) (any, error) {
		calls.Add(1)
		n := attempts.Add(1)
		wait := quickTime
		if n <= int64(s.hangs) {
			wait = hangTime
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		return fmt.Sprintf("%s(attempt=%d)", s.label, n), nil
	}
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "seedplan:", err)
		os.Exit(1)
	}
}

// run prints both runs of the plan: the 1s one attempt by attempt, the
// 0.01s one refused before dialing.
func run(ctx context.Context, w io.Writer) error {
	out, err := runPlan(ctx, time.Second)
	if err != nil {
		return err
	}
	for _, a := range out.attempts {
		fmt.Fprintf(w, "%-8s attempt %d  lease %v\n", a.step, a.n, a.granted)
	}
	fmt.Fprintf(w, "results: search=%s fetch=%s extract=%s\n", out.results["search"], out.results["fetch"], out.results["extract"])

	short, err := runPlan(ctx, 10*time.Millisecond)
	if !errors.Is(err, budget.ErrRefused) {
		return fmt.Errorf("the 0.01s plan was not refused: %v", err)
	}
	fmt.Fprintf(w, "refused before dialing out (%d tool calls made): %v\n", short.calls.Load(), err)
	fmt.Fprintf(w, "plan complete, %.3fs unused\n", out.left.Seconds())
	return nil
}
