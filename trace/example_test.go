package trace_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

func ExampleOutcomeOfStatus() {
	for _, code := range []int{200, 404, 408, 429, 503} {
		o := trace.OutcomeOfStatus(code)
		fmt.Println(code, o, trace.RetryableStatus(code))
	}
	// Output:
	// 200 ok false
	// 404 invalid false
	// 408 upstream_error true
	// 429 rate_limited true
	// 503 upstream_error true
}

func ExampleOutcomeOfContext() {
	// A lease the ceiling limited, already over: a per-attempt timeout.
	lease := budget.Lease{Deadline: time.Now(), Capped: true}
	actx, stop := lease.Context(context.Background())
	defer stop()
	fmt.Println(trace.OutcomeOfContext(actx, watchdog.ErrQuiet))

	// The run's quiet clock fired while the attempt was in flight.
	run, cancel := context.WithCancelCause(context.Background())
	cancel(&watchdog.StallError{Quiet: time.Minute})
	fmt.Println(trace.OutcomeOfContext(run, watchdog.ErrQuiet))
	// Output:
	// gave_up
	// quiet
}

func ExampleAttemptError() {
	err := fmt.Errorf("search: %w", &trace.AttemptError{
		Step:    "tool:search",
		Attempt: 2,
		Outcome: trace.UpstreamError,
		Status:  http.StatusBadGateway,
		Err:     errors.New("bad gateway"),
	})
	fmt.Println(err)
	fmt.Println("we gave up:", errors.Is(err, trace.ErrGaveUp))
	fmt.Println("they failed:", errors.Is(err, trace.ErrFailed))
	if ae, ok := errors.AsType[*trace.AttemptError](err); ok {
		fmt.Println("retry:", trace.Retryable(ae))
	}
	// Output:
	// search: tool:search: attempt 2: upstream_error (status 502): bad gateway
	// we gave up: false
	// they failed: true
	// retry: true
}

func ExampleGaveUpError() {
	last := &trace.AttemptError{Step: "model", Attempt: 1, Outcome: trace.RateLimited, Status: http.StatusTooManyRequests, Err: errors.New("slow down")}
	err := &trace.GaveUpError{
		Step:  "model",
		Delay: budget.Delay{Sleep: 90 * time.Second, Source: budget.FromRetryAfter, GiveUp: true, Reason: budget.RetryAfterExceedsBudget},
		Last:  last,
	}
	fmt.Println(err)
	fmt.Println("we gave up:", errors.Is(err, trace.ErrGaveUp))
	// Output:
	// model: gave up: retry_after_exceeds_budget (sleep 1m30s): model: attempt 1: rate_limited (status 429): slow down
	// we gave up: true
}

func ExampleOutcome_Ours() {
	for _, o := range []trace.Outcome{trace.OK, trace.GaveUp, trace.UpstreamError, trace.Quiet} {
		fmt.Println(o, o.Ours())
	}
	// Output:
	// ok false
	// gave_up true
	// upstream_error false
	// quiet true
}
