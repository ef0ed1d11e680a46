// Package plan computes the worst case a configuration really ships without
// a budget, beside what the same configuration costs under Glidepath.
//
// An agent's worst case is a product nobody wrote down: steps × (the model
// call's ceiling + the tool calls' ceilings) × (1 + retries), plus every
// backoff sleep at its longest. Each factor comes from a different library
// with its own defaults — openai-go sets no request timeout and retries
// twice, net/http and os/exec set no timeout at all — so a value the
// configuration leaves out is filled with the default of the [Library] in
// charge of it, and the [Plan] says which ([Plan.Defaults]). Under
// Glidepath the same configuration is leased from one deadline: its worst
// case is the budget, and the run lands with a labeled answer.
//
// [Make] is a pure function of a [Config]. A Config is built in code, read
// from a plan file by [Load] (YAML or JSON, every mistake reported at once
// with its line), or filled with the tools of a tool config — the file
// harness run --tools reads — by [LoadTools] and [FromTools], its
// mcpServers' tools included ([MCPSDK]). harness plan is this package
// behind flags.
//
// # Zero values
//
// The zero Config is a valid configuration: every value is left out and
// gets its default (a 2m budget, 50 steps, openai-go's model, no tools).
// A nil pointer field is "left out"; a zero ceiling is "no timeout", which
// makes the worst case unbounded. A [Tool] with a nil Caller is called by
// [NetHTTP]. The zero [Bound] is zero time.
//
// # Errors
//
// Every value that cannot be used is a [*FieldError] naming where it was
// written (a file's line or a flag) and unwrapping to one of the Err
// sentinels; [Make] and [Load] return all of them at once, joined.
package plan
