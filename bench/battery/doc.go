// Package battery is the fault battery (issue 13): every fault scenario of
// the simulator and of a tool server, run against how people run agents
// today and against Glidepath, with the same model, the same tools and
// the same budget, so that a report can put the four side by side. It is
// two-sided (issue 20): it also runs healthy cases where Glidepath's
// defences cost something, and counts that cost. It is
// an API for a report generator (bench/cmd/benchmd), not a benchmark:
// [Run] measures one cell, a [Scenario] against a [System]; [Duplicates]
// makes many writes that commit after their lease ended and counts what
// was committed twice.
//
//	sc, _ := battery.Lookup("hung-tool")
//	for _, sys := range battery.Systems() {
//		r, err := battery.Run(ctx, sc, sys, 10)
//		if err != nil {
//			return err // a server could not start, or ctx ended
//		}
//		fmt.Printf("%s: p99 %v of B %v, %d/%d labeled\n", r.System, r.Wall.P99, r.Budget, r.Labeled, r.Runs)
//	}
//
// # Systems
//
// All four talk to the same servers: the sim (package sim, a real
// OpenAI-compatible server on loopback, driven by the real openai-go
// client) and a tool server on loopback.
//
//   - "defaults" ([Defaults]): an agent loop on openai-go v3 with its
//     defaults — two silent retries, Retry-After honoured up to two
//     minutes, no overall timeout — and each tool call a plain HTTP POST
//     of its arguments under context.WithTimeout(the tool's ceiling), as
//     tutorials write it; no tool retries, no idempotency key.
//   - "per-call" ([PerCall]): the same loop with a timeout on every
//     request, model (B/2) and tool (its ceiling), and a fixed 3-attempt
//     exponential backoff (github.com/cenkalti/backoff/v5, its defaults)
//     around every call, model and tools alike; the SDK's own retries are
//     off so that 3 attempts are 3 requests; writes are retried like
//     reads, each attempt a new request; no shared budget.
//   - "per-call-keyed" ([PerCallKeyed]): per-call, and a stable
//     Idempotency-Key minted once per logical tool call and sent on every
//     attempt: the best loop people write without a budget. The tool
//     server dedupes keyed requests, so its duplicates should be 0; what
//     is left to compare is what it tells the user and how long it takes.
//   - "glidepath" ([Glidepath]): [harness.Run]'s loop (harness.Start, then
//     Session.Run) on budget.New(budget.Config{Total: B}), a
//     [model.Client] against the sim, and the tool as [tools.Remote]
//     (manifest values declared in its spec; POST with Idempotency-Key and
//     Budget-Remaining-Ms, SSE progress, status, cancel), or over MCP with
//     package tools/mcp, connected as a setup step of the run.
//
// Every run, of any system, runs under an outer safety cap, [Scenario.Cap]
// (3·B), so that the battery finishes: a run still going then is stopped
// and counted in [Result.Capped], "did not return by the cap", never
// dropped. The cap is the battery's, not the system's: a baseline that
// reaches it had no bound of its own that would have stopped it sooner.
//
// # Scenarios
//
// [Scenarios] lists them. Each has its budget B, Glidepath's quiet period
// Q (B/4 unless it says), the tool's ceiling (the same for all systems)
// and a fault:
//
//	scenario                  B   tool ceiling  fault
//	hung-tool                 2s  400ms         lookup never answers; it ends when its caller leaves
//	slow-tool                 3s  1s            lookup answers at 900ms (90% of its ceiling), progress every 100ms
//	429-short                 2s  1s            the first 2 model requests: 429, retry-after-ms 200
//	429-long                  2s  1s            every model request: 429, Retry-After 60
//	model-keepalive           2s  1s            every model stream: keepalive comments every 100ms, forever
//	tool-keepalive            2s  5s            lookup streams SSE comments every 50ms, no progress, no result
//	late-commit               3s  500ms         pay commits 1.5s after it arrives, whatever its context says
//	lost-write                2s  500ms         the first POST of each order is dropped before the tool (status: 404)
//	midstream                 2s  1s            the first 2 model streams: connection closed after 1 chunk
//	ignores-cancel            2s  400ms         lookup keeps working 30s after its context ends and after DELETE
//	cancel-hangs              2s  400ms         lookup hangs and its DELETE never answers
//	mcp-progress-stops        2s  5s            research over MCP: progress 3 times 100ms apart, then silence
//	model-hang-headers        4s  1s            every model request: no headers, ever; p95 known, Q 500ms
//	model-hang-after-headers  4s  1s            every model stream: headers, then nothing; p95 known, Q 500ms
//	repeated-call             2s  1s            every model turn calls lookup {"query":"order 7"}, same answer
//
// and the model's faults on the Responses API ([Scenario.API]), each
// beside its Chat Completions twin ([Scenario.Twin]):
//
//	scenario                      B   twin                      fault on POST /v1/responses
//	responses-hang-headers        4s  model-hang-headers        every request: no headers, ever; p95 known, Q 500ms
//	responses-hang-after-headers  4s  model-hang-after-headers  every stream: response.created, in_progress, then nothing; p95 known
//	responses-keepalive           2s  model-keepalive           every stream: keepalive comments every 100ms, forever
//	responses-midstream           2s  midstream                 the first 2 streams: connection closed after the 3 opening events
//	responses-error-429           2s  429-short                 the first 2 streams: an error event rate_limit_exceeded (a 429) after a 200
//	responses-failed-500          2s  —                         the first stream: response.failed server_error (a 500) after a 200
//
// and the healthy ones, where nothing goes wrong ([Scenario.Healthy]):
//
//	scenario                  B   tool ceiling  what is slow
//	silent-0.9Q               2s  1s            lookup answers at 450ms (0.9·Q), no progress
//	silent-1.5Q               2s  1s            lookup answers at 750ms (1.5·Q), no progress, declares p95 800ms
//	silent-1.5Q-cold          2s  1s            the same, declaring nothing
//	reasoning-cold            4s  1s            every model stream: headers, then 750ms (1.5·Q, Q 500ms) of nothing
//	reasoning-warm            4s  1s            the same, the model's p95 known from a profile (800ms)
//	distinct-calls            2s  1s            model turns 1–5 each call lookup with another query, turn 6 answers
//	slow-first-token          2s  1s            the first model stream's first token comes at 750ms (1.5·Q)
//	retry-after-1             5s  1s            the first model request: 429, Retry-After 1
//	p50-too-high              2s  2s            lookup takes 50ms, declares p50 1.6s
//	p50-too-low               2s  2s            lookup takes 1.6s (progress every 100ms), declares p50 20ms
//	subagent-unsliced         2s  2s            lookup takes 1.2s (progress every 100ms), called directly
//	subagent-slice            2s  2s            the same, called by a sub-agent on a slice (Glidepath only)
//	responses-healthy         2s  1s            nothing: the Responses API, lookup, then the answer
//	responses-reasoning-cold  4s  1s            as reasoning-cold on the Responses API: 750ms of nothing after the opening events
//	responses-reasoning-warm  4s  1s            the same, the model's p95 known from a profile
//
// A 5s ceiling is a long tool's, longer than B: only a semantic clock can
// tell such a tool stalled before its ceiling. The MCP scenario's tool is
// one tools/kit tool served both ways: Glidepath calls it over MCP
// (kit.Server.MCPHandler at /mcp, tools/mcp on its side), the baselines
// over the plain HTTP protocol, where they see no progress.
//
// Issue 27's scenarios show the trade of a quiet clock that holds each
// call in flight for its allowance of silence E = 2 × the p95 of its kind
// (at most its ceiling, its lease and --max-silence): a healthy call
// silent for 1.5·Q is held and answers when its p95 is known — declared
// by the tool (silent-1.5Q) or from a latency profile of the model's
// earlier turns, which the battery warms Glidepath's estimates with
// (reasoning-warm) — and is still cut at Q when nothing is known of it
// (silent-1.5Q-cold, reasoning-cold, slow-first-token: the cold start's
// cost). A model whose server never sends its headers is caught at Q all
// the same, since a model call is held only from its headers; one that
// answers and then says nothing is caught at max(Q, E). A model that
// asks for the same call every turn lands stuck after the bounded
// repeats (3); a loop of distinct calls does not. The baselines have no
// bound of the kind: their loop stops at 10 turns, as tutorials' do.
//
// The responses- scenarios are the model's faults again on the Responses
// API, which every system speaks in them: Glidepath with
// model.Config.API = [model.APIResponses], the baselines with openai-go's
// Responses.NewStreaming in the same loop, sending the whole input each
// turn with each response's output items, reasoning included. The sim
// sends a response's opening events (response.created,
// response.in_progress, the reasoning item's output_item.added) with its
// headers; they are not semantic, so the silence after them is a
// reasoning phase, held for E when the model's p95 is known, or a hang,
// caught at max(Q, E). An error inside the stream (an error event, or
// response.failed) comes after a 200: Glidepath retries it as the status
// its code stands for, as on Chat Completions; openai-go retries only an
// error status, so the defaults baseline fails at the first.
//
// # Worlds
//
// Each run has a world of its own: a sim (so that a rule's request counts
// are the run's) and a tools/kit server behind a fault layer, both on
// loopback. The fault layer drops connections, hangs cancel endpoints and
// gives a key to a POST that came without one (each such POST is a new
// call, as at a server that does not insist on keys). What the battery
// counts is counted by the world, not by any system: commits per logical
// write, keyed by the order id in the arguments rather than by
// idempotency key, so that a baseline that sends no key, or a fresh one on
// each attempt, is counted honestly; the requests the servers received;
// and when the stalled part last did real work.
//
// # Measures
//
// A [Result] gives, per cell: the wall time of each run, p50, p99 and max,
// against B; how runs ended — Glidepath's labeled answers (complete, or
// partial with a boundary), and apart from them the share that returned
// any answer, an error, or nothing by the cap; doomed attempts, started
// and then ended by a timeout, a deadline or the quiet clock, whoever set
// it (Glidepath: attempt_end records with outcome gave_up or quiet, read
// from its trace by a sink; a baseline: calls ended by their own timeout
// or by the battery's cap); the work attempts Glidepath started and, of
// all of them, cut or not, those granted less than their kind's p50 when
// they started; in a healthy scenario, false stalls (every attempt cut
// there was a healthy call); the calls Glidepath refused and those of them
// that would have fit, found by replaying each refused read against the
// same tool server after the run under the lease the budget would have
// granted; duplicate writes; writes the user was told
// had failed though they had committed; the time to detect a stall, from
// the last real work of the stalled part (a tool call's arrival or its
// last progress, a model request's arrival, as the servers saw them) to
// the first attempt of it the system cut (Glidepath's lease or quiet
// clock; a baseline's timeout), or "never" for a run that noticed nothing
// and returned only at the cap; and what the user was told, the first
// line of the answer or error, the most common in the cell.
//
// For Glidepath it also states E, the allowance its quiet clock gave the
// silent or stalled part's first attempt ([Scenario.Silent],
// [Scenario.Stall]), computed by the rule the run holds calls by
// (watchdog.Expected.Allowance) from what the run knew of the call's kind
// and the lease it was granted, and where it came from; each run's
// detection time against its own bound max(Q, E); and the runs it landed
// stuck.
//
// # Goroutines
//
// [Run] and [Duplicates] block until every run has ended and its world
// has closed: every server's goroutines, every tool handler (the ones that
// ignore their context are released when their world closes; a late
// commit is let finish, since whether it happens is what is counted), and
// every client's idle connection. They leave no goroutine behind. The
// runs of a cell run at once, at most [MaxParallel] ([DupParallel] for
// Duplicates), the first of a scenario that stalls [Stagger] apart; the
// caller may run cells at once too, at the cost of sharing the machine.
//
// # Errors
//
// Run and Duplicates return an error only when a world cannot be built,
// the arguments are unusable, or ctx ends; every way a run can end is a
// measure, not an error.
package battery
