package trace_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/landing"
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

func ExampleRecorder() {
	b, err := budget.New(budget.Config{Total: 2 * time.Minute})
	if err != nil {
		panic(err)
	}
	ladder := landing.New(b, landing.Config{})
	var file bytes.Buffer // the trace file (an *os.File) of a real run
	rec := trace.NewRecorder("run-1", b, func(spent time.Duration) string { return ladder.Peek(spent).String() },
		trace.NewJSONL(&file)) // each record in the file before the next one

	lease, err := b.Lease(b.Estimates().Kind("tool:search"), 30*time.Second)
	if err != nil {
		panic(err)
	}
	rec.Record(trace.Record{Event: trace.AttemptStart, Step: "tool:search", StepIndex: 3,
		Attempt: 1, GrantedMs: lease.Granted.Milliseconds(), Key: "gp_7Hq"})
	if err := rec.Flush(); err != nil { // the trace could not be written
		panic(err)
	}

	// The time fields depend on the clock; the rest is what was written.
	recs, err := trace.ReadRecords(&file)
	if err != nil {
		panic(err)
	}
	r := recs[0]
	fmt.Println(r.Seq, r.RunID, r.Event, r.Phase)
	fmt.Println(r.Step, r.StepIndex, r.Attempt, r.GrantedMs, r.ResendCount, r.Key)
	fmt.Println("elapsed + remaining within the budget:", r.ElapsedMs+r.RemainingMs <= 120000)
	// Output:
	// 1 run-1 attempt_start explore
	// tool:search 3 1 30000 0 gp_7Hq
	// elapsed + remaining within the budget: true
}

func ExampleAppendJSON() {
	r := trace.Record{
		TS:    time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.UTC),
		RunID: "run-1", Seq: 7, Event: trace.Backoff, ElapsedMs: 4200, RemainingMs: 115800, Phase: "explore",
		Step: "model", StepIndex: 2,
		SleepMs: 130000, Source: "retry_after", GaveUp: true, Reason: budget.RetryAfterExceedsBudget,
	}
	fmt.Printf("%s\n", trace.AppendJSON(nil, r))
	// Output:
	// {"ts":"2025-03-14T15:09:26.535897932Z","run_id":"run-1","seq":7,"event":"backoff","elapsed_ms":4200,"remaining_ms":115800,"phase":"explore","step":"model","step_index":2,"sleep_ms":130000,"source":"retry_after","gave_up":true,"reason":"retry_after_exceeds_budget"}
}

// A run of 10s ran out of budget: a search at step 1 took 6s, and step 2's
// model turn held the budget when the reserve began at 7.5s.
func ExampleSummarize() {
	file := strings.NewReader(`
{"ts":"2025-03-14T15:00:00Z","run_id":"r1","seq":1,"event":"run_start","elapsed_ms":0,"remaining_ms":10000,"phase":"explore","total_ms":10000}
{"ts":"2025-03-14T15:00:00Z","run_id":"r1","seq":2,"event":"attempt_start","elapsed_ms":0,"remaining_ms":10000,"phase":"explore","step":"model","step_index":1,"attempt":1,"granted_ms":7450,"resend_count":0}
{"ts":"2025-03-14T15:00:01Z","run_id":"r1","seq":3,"event":"attempt_end","elapsed_ms":1000,"remaining_ms":9000,"phase":"explore","step":"model","step_index":1,"attempt":1,"granted_ms":7450,"resend_count":0,"outcome":"ok","keepalives":0}
{"ts":"2025-03-14T15:00:01Z","run_id":"r1","seq":4,"event":"attempt_start","elapsed_ms":1000,"remaining_ms":9000,"phase":"explore","step":"tool:search","step_index":1,"attempt":1,"granted_ms":6450,"resend_count":0}
{"ts":"2025-03-14T15:00:07Z","run_id":"r1","seq":5,"event":"attempt_end","elapsed_ms":7000,"remaining_ms":3000,"phase":"narrow","step":"tool:search","step_index":1,"attempt":1,"granted_ms":6450,"resend_count":0,"outcome":"ok","keepalives":4}
{"ts":"2025-03-14T15:00:07Z","run_id":"r1","seq":6,"event":"attempt_start","elapsed_ms":7000,"remaining_ms":3000,"phase":"narrow","step":"model","step_index":2,"attempt":1,"granted_ms":450,"resend_count":0}
{"ts":"2025-03-14T15:00:07.5Z","run_id":"r1","seq":7,"event":"attempt_end","elapsed_ms":7500,"remaining_ms":2500,"phase":"land","step":"model","step_index":2,"attempt":1,"granted_ms":450,"resend_count":0,"outcome":"gave_up","keepalives":0}
{"ts":"2025-03-14T15:00:08Z","run_id":"r1","seq":8,"event":"run_end","elapsed_ms":8000,"remaining_ms":2000,"phase":"land","total_ms":10000,"cause":"budget","result":"partial"}
`)
	recs, err := trace.ReadRecords(file)
	if _, skipped := errors.AsType[*trace.SkippedError](err); err != nil && !skipped {
		panic(err) // the file could not be read; a bad line only costs itself
	}
	rep := trace.Summarize(recs)
	fmt.Printf("utilization p50 %.0f%%\n", 100*rep.Utilization.P50)
	for _, s := range rep.Steps {
		fmt.Printf("%s: %dms, %.0f%%\n", s.Step, s.Ms, 100*s.Share)
	}
	for _, e := range rep.Exhausted {
		fmt.Printf("%s ran out: step %d (%s) spent %dms\n", e.RunID, e.StepIndex, e.Step, e.Ms)
		fmt.Printf("step %d (%s) held the budget at the end\n", e.HeldByIndex, e.HeldBy)
	}
	fmt.Println("we gave up:", rep.Outcomes.Ours.Total, "they failed:", rep.Outcomes.Theirs.Total)
	// Output:
	// utilization p50 80%
	// tool:search: 6000ms, 80%
	// model: 1500ms, 20%
	// r1 ran out: step 1 (tool:search) spent 7000ms
	// step 2 (model) held the budget at the end
	// we gave up: 1 they failed: 0
}
