package bench_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/trace"
	"github.com/openai/openai-go/v3"
)

// retryAfterBudget is the run's budget in BenchmarkRetryAfterOverBudget:
// small, so that the baseline, which waits all of it out, stays quick.
const retryAfterBudget = 2 * time.Second

// BenchmarkRetryAfterOverBudget measures SPEC §7's "a Retry-After longer
// than the budget costs under 1ms of waiting (today's SDK default waits out
// the whole budget)". Each iteration makes one call of each kind against a
// sim that answers every request 429 with Retry-After: 60.
func BenchmarkRetryAfterOverBudget(b *testing.B) {
	srv := sim.NewServer(&sim.Scenario{Rules: []sim.Rule{{Status: 429, RetryAfter: "60"}}})
	defer srv.Close()
	gp := glidepathModel(b, srv.URL, srv.Client())
	sdk := sdkClient(srv.URL, srv.Client())
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("find cats")}

	var gpTotal, gpWait, sdkTotal time.Duration
	for b.Loop() {
		total, wait := glidepathGivesUp(b, gp, msgs)
		gpTotal += total
		gpWait += wait
		sdkTotal += sdkWaitsOut(b, sdk, msgs)
	}
	n := time.Duration(b.N)
	b.ReportMetric(0, "ns/op") // it would add the two arms together
	b.ReportMetric(ms(gpTotal/n), "glidepath-ms")
	b.ReportMetric(ms(gpWait/n), "glidepath-wait-ms")
	b.ReportMetric(ms(sdkTotal/n), "sdk-ms")
	b.ReportMetric(float64(sdkTotal)/float64(gpTotal), "sdk/glidepath")
}

// glidepathGivesUp makes one model.Client.Complete on a fresh budget and
// returns how long it took in all and how much of that came after the
// 429 had arrived: the waiting the Retry-After cost.
func glidepathGivesUp(b *testing.B, c *model.Client, msgs []openai.ChatCompletionMessageParamUnion) (total, wait time.Duration) {
	bud, err := budget.New(budget.Config{Total: retryAfterBudget})
	if err != nil {
		b.Fatal(err)
	}
	var answered time.Time
	var decision budget.Delay
	obs := &trace.Observer{
		AttemptEnd: func(a trace.Attempt) { answered = a.End },
		Backoff:    func(_, _ string, _ int, d budget.Delay, _ error) { decision = d },
	}
	start := time.Now()
	_, err = c.Complete(context.Background(), bud, model.Request{Messages: msgs}, obs)
	end := time.Now()
	if !errors.Is(err, trace.ErrGaveUp) || decision.Reason != budget.RetryAfterExceedsBudget {
		b.Fatalf("glidepath: got %v (backoff %+v), want a give-up for %s", err, decision, budget.RetryAfterExceedsBudget)
	}
	return end.Sub(start), end.Sub(answered)
}

// sdkWaitsOut makes the same call with openai-go's defaults under a plain
// context.WithTimeout of the same budget, and returns how long it took.
func sdkWaitsOut(b *testing.B, c openai.Client, msgs []openai.ChatCompletionMessageParamUnion) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), retryAfterBudget)
	defer cancel()
	start := time.Now()
	stream := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: sim.ModelID, Messages: msgs})
	for stream.Next() {
	}
	err := stream.Err()
	took := time.Since(start)
	stream.Close()
	if !errors.Is(err, context.DeadlineExceeded) {
		b.Fatalf("sdk: got %v, want the context's deadline", err)
	}
	return took
}
