package spans_test

import (
	"context"
	"fmt"

	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/trace/spans"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// A run of one model turn and one tool call becomes three spans: the run's
// invoke_agent span, parent of a chat span and an execute_tool span.
func ExampleNew() {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	sink := spans.New(tp.Tracer("example"), spans.Config{Provider: "openai", Model: "gpt-4.1-mini"})

	for _, r := range []trace.Record{
		{Event: trace.RunStart, RunID: "run-1", TotalMs: 20000, RemainingMs: 20000},
		{Event: trace.AttemptStart, RunID: "run-1", Step: "model", StepIndex: 1, Attempt: 1, GrantedMs: 14900, RemainingMs: 20000},
		{Event: trace.AttemptEnd, RunID: "run-1", Step: "model", StepIndex: 1, Attempt: 1, GrantedMs: 14900, RemainingMs: 19800, Outcome: trace.OK},
		{Event: trace.AttemptStart, RunID: "run-1", Step: "tool:search", StepIndex: 1, Attempt: 1, Key: "gp_1", GrantedMs: 2000, RemainingMs: 19800},
		{Event: trace.AttemptEnd, RunID: "run-1", Step: "tool:search", StepIndex: 1, Attempt: 1, Key: "gp_1", GrantedMs: 2000, RemainingMs: 19700, Outcome: trace.OK},
		{Event: trace.RunEnd, RunID: "run-1", TotalMs: 20000, RemainingMs: 19600, Result: "complete", Cause: "none"},
	} {
		sink.Record(r)
	}
	got := exp.GetSpans() // before Shutdown, which erases them
	tp.Shutdown(context.Background())

	run := got[len(got)-1]
	fmt.Println(run.Name)
	for _, s := range got[:len(got)-1] {
		fmt.Println(" ", s.Name, s.Parent.SpanID() == run.SpanContext.SpanID())
	}
	// Output:
	// invoke_agent glidepath
	//   chat gpt-4.1-mini true
	//   execute_tool search true
}
