package logs_test

import (
	"os"

	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/trace/logs"
	"github.com/rs/zerolog"
)

// The sink logs each record with the budget's fields; the key it was
// given never reaches a line, though the server's message quoted it.
func ExampleNew() {
	sink := logs.New(zerolog.New(os.Stdout), "sk-secret-123")
	sink.Record(trace.Record{Event: trace.AttemptEnd, RunID: "run-1", Step: "model", StepIndex: 1, Attempt: 1,
		GrantedMs: 14900, RemainingMs: 19800, ElapsedMs: 200, Phase: "explore",
		Outcome: trace.UpstreamError, Message: "401 Incorrect API key provided: sk-secret-123"})
	// Output:
	// {"level":"warn","run_id":"run-1","event":"attempt_end","elapsed_ms":200,"remaining_ms":19800,"phase":"explore","step":"model","step_index":1,"attempt":1,"granted_ms":14900,"outcome":"upstream_error","message":"attempt_end model: 401 Incorrect API key provided: [redacted]"}
}
