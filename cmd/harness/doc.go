// Harness runs an agent on one deadline and lands it inside its budget.
//
// Usage:
//
//	harness <command> [arguments]
//	harness help [command]
//
// Every command takes --help. Flags and arguments may come in any order;
// an argument after "--" is never a flag.
//
// # harness plan
//
//	harness plan [flags] [FILE]
//
// Plan prints the worst case a configuration really ships without a
// budget, and beside it what the same configuration costs under Glidepath.
//
// Without a budget, every attempt may run to its ceiling and then fail in a
// way that is retried, and every sleep before a retry may be its longest:
//
//	model call = model ceiling × (1 + model retries) + model backoff sleeps
//	tool call  = tool ceiling × (1 + tool retries) + tool backoff sleeps
//	per step   = model call + tool_calls_per_step × slowest tool call
//	total      = steps × per step
//
// A value the configuration leaves out takes the default of the library in
// charge of it, and plan says which default it used. For the model that is
// openai-go (v3): no request timeout at all, so an unset model ceiling makes
// the total unbounded; 2 retries; sleeps of 0.5s·2^n, at most 8s. A server's
// Retry-After replaces those sleeps and openai-go honors up to 2m of it per
// retry, which plan shows as a second total. For a tool that is net/http: no
// timeout, no retries; a tool's retries are taken to sleep as Glidepath's
// backoff does (250ms·2^(n−1), at most 8s). A ceiling of 0 means no timeout.
//
// Under Glidepath the run costs at most its budget B, whatever the
// configuration: every attempt's timeout and every sleep is leased from one
// deadline, a reserve R (max(10%·B, min(20s, 25%·B))) is kept for landing,
// and the run returns a labeled answer, complete or partial.
//
// FILE is YAML or JSON ("-" reads standard input); flags override it:
//
//	budget: 2m              # --budget; default 2m, as harness run
//	steps: 20               # --steps; max model turns, default 50
//	tool_calls_per_step: 1  # --tool-calls-per-step; default 1
//	model:
//	  ceiling: 60s          # --model-ceiling
//	  retries: 2            # --model-retries
//	tools:                  # --tool-ceiling and --tool-retries set every tool
//	  - name: search
//	    ceiling: 30s
//	    retries: 2
//
// Durations are Go duration strings ("90s", "2m"). An unknown field, a
// value that is not a duration or a whole number, a negative value or a
// budget that is not positive is an error that names the field and, in a
// file, its line. --json prints one JSON object instead of the table, with
// every duration in milliseconds and an unbounded one as null beside a true
// "*_unbounded" field.
//
// # harness orphans
//
//	harness orphans [--journal FILE] [--json]
//
// Orphans lists the open orphans of the journal: remote write calls whose
// outcome a run could not learn before it had to land, because the tool still
// said running or its status endpoint did not answer. One line each, "KEY
// TOOL URL since TS run RUN_ID"; KEY is the call's Idempotency-Key. The
// journal defaults to $XDG_STATE_HOME/glidepath/orphans.jsonl, falling back to
// ~/.local/state/glidepath/orphans.jsonl; a journal that does not exist has
// no orphans. --json prints a JSON array of the entries.
//
// # harness reconcile
//
//	harness reconcile [--journal FILE] [--budget D]
//
// Reconcile asks the tool of every open orphan for the call's status, once,
// and appends an entry with the settled state (done, failed or
// never_received) for each that settled. Orphans still running or whose tool
// does not answer stay open. The journal is only appended to, never
// rewritten. Every status request is leased from one budget (--budget,
// default 30s); the exit code is 0 even when orphans stay open.
//
// # harness sim serve
//
//	harness sim serve [--addr 127.0.0.1:8089] [--scenario FILE]
//
// Serves the simulated OpenAI-compatible model (model id "sim") at
// http://ADDR/v1 until interrupted, so that any OpenAI client, curl
// included, can talk to it. A scenario file scripts faults per request or
// per turn (see package sim); a bad one is bad usage, with the field and line
// named. A bare :PORT listens on loopback. One line per request is logged on
// standard error, never with header values.
//
// # Exit codes
//
//	0  success
//	1  internal error
//	2  bad usage or a bad configuration: the message on standard error names
//	   what is wrong, nothing is started and nothing is printed on standard
//	   output
package main
