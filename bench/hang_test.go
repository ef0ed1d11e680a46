package bench_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"

	"github.com/glidepath/glidepath/bench/battery"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools"
	"github.com/openai/openai-go/v3"
)

// hangBudget is B in BenchmarkHangingRun.
const hangBudget = 300 * time.Millisecond

// hangToolCeiling bounds the stuck tool's attempt, so that the run reaches
// its second model turn, the one that hangs, with time left to lease.
const hangToolCeiling = 50 * time.Millisecond

// BenchmarkHangingRun measures SPEC §7's "in process, a run returns within
// B + 2ms (p99) even when a tool ignores cancellation and the model endpoint
// hangs". The sim answers the first turn with a call of the offered tool,
// a local function that ignores its context, and hangs on every request
// after it, the landing call included. Each iteration is one Glidepath run
// and one baseline loop; the metrics are the p50 and p99 of return time − B
// over all iterations, in ms, negative when early.
//
// The sub-benchmarks differ in the floor F: with the default 50ms the
// landing lease ends F before the deadline, so the run returns about F
// early; with a 1ms floor nearly nothing is held back, and what is left of
// the margin is the bound itself.
func BenchmarkHangingRun(b *testing.B) {
	for _, bc := range []struct {
		name  string
		floor time.Duration
	}{
		{"floor=default", 0},
		{"floor=1ms", time.Millisecond},
	} {
		b.Run(bc.name, func(b *testing.B) { benchmarkHangingRun(b, bc.floor) })
	}
}

func benchmarkHangingRun(b *testing.B, floor time.Duration) {
	srv := sim.NewServer(&sim.Scenario{Rules: []sim.Rule{{Turn: 2, Hang: true}}})
	defer srv.Close()
	gp := glidepathModel(b, srv.URL, srv.Client())
	sdk := sdkClient(srv.URL, srv.Client())

	// stuck stands for a tool that ignores cancellation: it returns only
	// when the benchmark is over. Both arms' stuck calls are waited for
	// then, so that no goroutine outlives the benchmark.
	release := make(chan struct{})
	stuck := func(context.Context, json.RawMessage, tools.Progress) (any, error) {
		<-release
		return "too late", nil
	}
	reg := tools.NewRegistry(nil)
	spec := tools.Spec{Name: "lookup", Description: "Looks things up.", Effect: tools.Read, Ceiling: hangToolCeiling}
	if err := reg.Register(tools.Func(spec, stuck)); err != nil {
		b.Fatal(err)
	}
	var naiveTools sync.WaitGroup
	defer func() {
		close(release)
		reg.Wait()
		naiveTools.Wait()
	}()

	var gpLate, naiveLate []time.Duration
	for b.Loop() {
		gpLate = append(gpLate, glidepathRunLate(b, gp, reg, floor))
		naiveLate = append(naiveLate, naiveLoopLate(b, sdk, stuck, &naiveTools))
	}
	b.ReportMetric(0, "ns/op") // it would add the two arms together
	b.ReportMetric(ms(quantile(gpLate, 0.50)), "glidepath-p50-ms")
	b.ReportMetric(ms(quantile(gpLate, 0.99)), "glidepath-p99-ms")
	b.ReportMetric(ms(quantile(naiveLate, 0.50)), "naive-p50-ms")
	b.ReportMetric(ms(quantile(naiveLate, 0.99)), "naive-p99-ms")
}

// glidepathRunLate runs harness.Run and returns how long after B it
// returned. The clock starts before the budget, so making it counts
// against Glidepath.
func glidepathRunLate(b *testing.B, c *model.Client, reg *tools.Registry, floor time.Duration) time.Duration {
	start := time.Now()
	bud, err := budget.New(budget.Config{Total: hangBudget, Floor: floor})
	if err != nil {
		b.Fatal(err)
	}
	res, err := harness.Run(context.Background(), bud, harness.Config{
		Task:  "look up cats",
		Model: c,
		Tools: reg,
	})
	late := time.Since(start) - hangBudget
	if err != nil {
		b.Fatal(err)
	}
	if res.Status != landing.Partial || res.Boundary == "" {
		b.Fatalf("glidepath: got status %q with boundary %q, want a labeled partial result", res.Status, res.Boundary)
	}
	return late
}

// naiveLoopLate is the baseline: the same two turns with openai-go's
// defaults under one context.WithTimeout(B), and returns how long after B
// it returned. It already runs the tool on a goroutine and stops waiting
// when the context ends; a loop that called the tool inline would never
// return at all. It ends with the context's error and no answer.
func naiveLoopLate(b *testing.B, c openai.Client, tool tools.Fn, owned *sync.WaitGroup) time.Duration {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), hangBudget)
	defer cancel()
	params := openai.ChatCompletionNewParams{
		Model:    sim.ModelID,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("look up cats")},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
			Name: "lookup", Description: openai.String("Looks things up."),
		})},
	}
	var err error
	for turn := 1; err == nil; turn++ {
		var msg openai.ChatCompletionMessage
		msg, err = battery.StreamTurn(ctx, c, params)
		if err != nil {
			break
		}
		if len(msg.ToolCalls) == 0 {
			b.Fatalf("naive loop: turn %d answered without calling the tool; the sim should hang", turn)
		}
		params.Messages = append(params.Messages, msg.ToParam())
		for _, call := range msg.ToolCalls {
			done := make(chan string, 1)
			owned.Go(func() {
				out, _ := tool(ctx, json.RawMessage(call.Function.Arguments), nil)
				done <- out.(string)
			})
			var out string
			select {
			case out = <-done:
			case <-ctx.Done():
				out = "error: " + ctx.Err().Error()
			}
			params.Messages = append(params.Messages, openai.ToolMessage(out, call.ID))
		}
	}
	late := time.Since(start) - hangBudget
	if !errors.Is(err, context.DeadlineExceeded) {
		b.Fatalf("naive loop: got %v, want the context's deadline", err)
	}
	return late
}
