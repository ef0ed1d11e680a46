// Package spans turns a run's records into OpenTelemetry spans (SPEC §8),
// as one more sink beside the JSONL trace, so that a run shows in the
// tools people already watch: one invoke_agent span per run, one chat span
// per model attempt, one execute_tool span per tool attempt, with the
// GenAI attribute names of semconv v1.41.0 and the budget beside them
// under glidepath.*. A sub-agent's run is a child of its parent's
// execute_tool span. Backoff sleeps, refusals, cancels, reconciliations,
// orphans, phase changes and the landing are events on the run's span;
// progress heartbeats are events on the attempt that heard them.
//
// Raw idempotency keys are never put on spans, as the GenAI conventions
// ask of identifiers that are not the model's: a tool call is named by the
// model's tool call id (gen_ai.tool.call.id) when it gave one. The sink
// is also a [trace.ContextSink]: it gives a tool attempt's context with its
// span, so that a remote tool's POST carries the attempt's traceparent.
package spans
