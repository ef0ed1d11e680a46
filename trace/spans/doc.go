// Package spans turns a run's records into OpenTelemetry spans (SPEC §8),
// as one more sink beside the JSONL trace, so that a run shows in the
// tools people already watch: one invoke_agent span per run, one chat span
// per model attempt, one execute_tool span per tool attempt, with the
// GenAI attribute names of semconv v1.41.0 and the budget beside them
// under glidepath.*. A sub-agent's run is a child of its parent's
// execute_tool span and is named for its entry (invoke_agent researcher).
// Backoff sleeps, refusals, cancels, reconciliations, orphans, phase
// changes and the landing are events on the run's span; progress
// heartbeats are events on the attempt that heard them.
//
// # Attributes
//
// chat spans are CLIENT (a request to the model's server, server.address
// and server.port when [Config] names them) and carry, where the server
// said them, gen_ai.response.model and gen_ai.response.finish_reasons;
// execute_tool spans are INTERNAL, as the GenAI conventions ask, whatever
// the tool calls. invoke_agent carries glidepath.status (complete or
// partial), glidepath.cause only when the run landed early, and
// gen_ai.response.status: completed, incomplete (a labeled partial),
// cancelled, or failed (the model failed the run), so that a partial run
// reads as incomplete in any backend.
//
// # Keys
//
// Raw idempotency keys never leave the process (SPEC §8): they are not put
// on spans, as the GenAI conventions ask of identifiers that are not the
// model's, and a tool call is named by the model's tool call id
// (gen_ai.tool.call.id) when it gave one. Where a message names a key — the
// landing message of a run with an orphan, an error, a progress note — the
// key is replaced by its hash ([HashKey]) in whatever is exported, span
// events, attributes and status messages alike: every key the run's
// records named (a child's included), and anything shaped like a key
// cancel.NewKey mints. Secrets are redacted as everywhere else.
//
// # Context
//
// The sink is also a [trace.ContextSink]: it gives a tool attempt's
// context with its span, so that a remote tool's POST carries the
// attempt's traceparent. A run served to a caller in another process
// (`harness serve`) is made a child of the caller's span with
// [Sink.ParentCall]. A sink on the run's path must not block: the sink
// only starts and ends spans, and the SDK's batch span processor exports
// them off the path.
//
// A zero Sink makes no spans.
package spans
