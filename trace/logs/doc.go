// Package logs writes a run's records as structured log lines with zerolog
// (SPEC §4, §8): the sink behind `harness run -v`. Every line carries the
// run's id and what its record says of the budget — the step, the attempt,
// the lease granted, the time remaining, the outcome — so that a slow run
// can be read from its log as from its trace. Messages are scrubbed of
// secrets (internal/redact) before they are written: a server's error may
// quote the key it was sent.
//
// A command that runs a run decides with [ModeOf] how it writes to its
// stderr (-v, --log-format): text, console lines or JSON lines, and
// [Logger] is the logger a Sink then writes with. In JSON mode every line
// on stderr is one JSON object: [Lines] turns the command's own lines
// (warnings, the summary, its last error) into such objects. `harness
// run` and `harness-temporal run` share them.
package logs
