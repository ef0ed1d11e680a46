// Package durable runs a Glidepath run as a Temporal workflow (SPEC §9),
// with the guarantees of a run in one process: one deadline, leases out of
// it, retries decided by our rules, keys minted once, and a labeled
// landing inside the budget. It is the foundation of issue 19; what is not
// here yet is listed under # Not yet.
//
// # Budget
//
// The budget is workflow state, written once at the first workflow task:
// start = workflow.Now, D = start + B, R ([budget.DefaultReserve] unless
// given) and F ([budget.DefaultFloor] unless given). It is never
// recomputed: a replay, or a worker that takes the run over after a crash,
// reads the same start from the history and gets no fresh budget.
// Workflow code never reads the wall clock; every duration is
// workflow.Now against D.
//
// # Attempts
//
// Each model attempt and each tool attempt is one activity whose
// ScheduleToCloseTimeout is the lease granted when it is scheduled, by the
// core's own rule ([budget.Grant]: min(ceiling, remaining − R − F), refused
// below the floor or the tool's p50; landing: remaining − F), and whose
// RetryPolicy allows one attempt: the workflow is the one retry layer. An
// activity runs on what is left of its ScheduleToClose when the worker
// starts it and sends that as Budget-Remaining-Ms, never more. Reads and
// model turns are retried on retryable failures up to their max attempts,
// after a sleep [budget.Decide] allows, drawn with [budget.Backoff]'s full
// jitter from a source seeded once through a SideEffect (so a replay draws
// the same sleeps); a server's Retry-After replaces it. HeartbeatTimeout
// ([DeadWorker]) is set on attempts long enough for it to matter and only
// detects dead workers: a read whose worker died is retried, a write's is
// reconciled.
//
// # Keys
//
// The idempotency key of a logical tool call is minted in workflow code by
// a SideEffect, once, before its first attempt, so every attempt of it, on
// any worker and after any crash, sends the same key. A write whose
// attempt was cut (its lease, a dead worker) is never sent again blindly:
// when its tool is a [cancel.StatusReader] the workflow asks its status by
// key ([StatusActivity]) — done takes the output, failed fails the call,
// never received sends it again with the same key, running asks again
// after a backoff on the budget — and otherwise, or when the budget says
// stop, it is an orphan, appended to the worker's orphan journal
// ([Activities.Journal], [OrphanActivity]) with its tool's URL and tools
// file, so that `harness reconcile` can settle it later; the model is told
// it is recorded only when the journal holds it. A cut call whose tool is
// a [cancel.Canceller] is cancelled ([CancelActivity]) on a lease of its
// own.
//
// # Dead workers
//
// A worker killed mid-call stops heartbeating; after [DeadWorker] the
// attempt ends with a heartbeat timeout, and the run goes on on another
// worker from its history, with its original deadline: a read (or a model
// turn) is made again with the same key, a write is reconciled by its key
// (crash_test.go SIGKILLs a worker process with a payment and a read in
// flight). A write's tool must then be reachable from the other worker: a
// remote tool is; the demo's in-memory builtins are per process.
//
// # Cancellation
//
// A cancelled workflow (harness-temporal run's first Ctrl-C) lands now
// with cause cancelled: the attempts in flight end with the cancellation
// (a write among them is an orphan, journaled), cut calls are cancelled,
// and the landing call's lease is at most the reserve R (SPEC §3). The
// cleanup — cancels, the journal, the landing — runs on disconnected
// contexts, and the workflow returns its labeled result.
//
// # Ladder and landing
//
// The phase is [landing.PhaseAt] of the workflow time spent; the model is
// told [landing.NoteFor] at every turn; explore runs a turn's tool calls
// side by side (Input.Parallel at a time), later phases one by one;
// speculative calls are gated from narrow on, calls whose p95 does not fit
// in fit. In land, or out of steps, the run lands: one model attempt with
// no tools on a landing lease, and when that cannot be had or fails, the
// deterministic summary [landing.Summarize] builds in workflow code. A
// model answer is settled by [landing.Settle]. The result is a
// [landing.Result], the `--json` object of `harness run`.
//
// # Trace
//
// The workflow keeps the run's records ([trace.Record], stamped in
// workflow time: ts is workflow.Now, elapsed_ms and remaining_ms against
// D), at most [MaxRecords], and returns them in [Output]; the caller
// writes them with [trace.AppendJSON] (harness-temporal run --trace does),
// so `harness report` reads a Temporal run's trace as any other. Records
// in workflow state replay with the workflow and cost no activity; the
// price is that a run's trace is written when it ends, not as it goes.
//
// # Repeated from the core
//
// Some rules live unexported in the core and are repeated here until the
// core exports them: the tool call's next-step decision (tools/decide.go;
// see decide.go), argument checking against the tool's schema
// (tools.Registry's validate), the system and landing prompts
// (harness/loop.go, harness/land.go), and the answer of a cut attempt.
//
// # Not yet
//
// The quiet clock (semantic events from activities as coalesced signals),
// sub-agents as child workflows on a slice, MCP servers, observed tool
// latencies feeding the p50 refusals and the fit gate (the workflow uses
// the tools' declared p50 and p95; for the model, the median of the run's
// own attempts), progress of a tool reaching the run (a [tools.Call] no
// Registry made drops it), the final ask of a reconciliation before it
// gives up (cancel.Reconcile's FinalAsk), and `make temporal-demo` are
// issue 19's next steps.
package durable
