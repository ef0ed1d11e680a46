// Package durable runs a Glidepath run as a Temporal workflow (SPEC §9),
// with the guarantees of a run in one process: one deadline, leases out of
// it, retries decided by our rules, keys minted once, a quiet clock,
// sub-agents on slices, and a labeled landing inside the budget. A worker
// serves it with [Activities] (register both, and build the worker with
// [WorkerOptions]); `harness-temporal worker | run | dev` is the command
// line.
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
// the same sleeps); a server's Retry-After is a floor, spread by the same
// source, and one too large to be meaningful gives up at once
// (retry_after_exceeds_budget), as in process. HeartbeatTimeout
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
// a [cancel.Canceller] is cancelled ([CancelActivity]) on a landing lease
// of its own (cancel.CancelLease), without waiting for the answer: a
// second cancel_sent record says how it settled, and an accepted cancel
// makes the call cancelled in the landing record.
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
// # Quiet clock
//
// The quiet clock Q (Input.Quiet, default 60s) is a [watchdog.Clock] in
// workflow state: its rules are the process's, not a copy (issue 25). It
// is reset by the semantic events the workflow sees: a tool call issued, a tool's
// answer, a model message completed, and progress from a running attempt
// whose units grew. An attempt hears its tool's progress on the worker
// ([tools.Call.Heard]) and sends it to its workflow as a [SignalProgress]
// signal, coalesced to one per [ProgressEvery]; keepalives, tokens and a
// count that does not grow send nothing. The clock is paused while the
// run waits by its own choice (a backoff sleep, a server's Retry-After)
// and during setup, and resumes with the quiet time it had left, or runs
// to the end of the window an event inside the pause opened if that is
// later. The workflow sleeps on one timer at a time, armed for the clock's
// next wake-up ([watchdog.Clock.Next]), not one per event. When Q passes
// with no event, the run's work context is cancelled: the attempts in
// flight end with outcome quiet (the running activity learns it in its
// next heartbeat's answer, within [CancelWithin] on a worker built with
// [WorkerOptions]; a cancellable tool is also cancelled by key), and the
// run lands with cause quiet. A cut model attempt's own answer is waited
// for as a cut tool attempt's is, since it says what the stream carried
// (nothing, keepalives, an unfinished answer), which the boundary names
// by [landing.Unanswered] (issue 25). HeartbeatTimeout finds dead workers
// only.
// Progress reaches the workflow up to ProgressEvery and a signal's
// delivery late, never early, so the clock can fire that much later than
// in one process, never sooner than Q after the last event.
//
// # Sub-agents
//
// An agent entry of the worker's tools file (SPEC §5b) is offered to the
// model as a tool; a call runs the child as a child workflow of the same
// [Workflow], on a slice of the parent's budget: min(ceiling, available −
// keep), keep being the parent's p95 for one model turn and at least 2·F,
// refused below the floor and, like any new branch, from narrow on. The
// child's Input.Deadline is the slice's end in the parent's workflow
// time, so the child's start is spent from its slice; its tools are its
// entry's tools file, loaded by the worker with the parent's
// (Input.Toolset names them); it runs on the worker's model (an entry
// naming another is refused, [ErrUnsupported]). The child's records of
// work (an attempt's start or end, a progress, its landing:
// [harness.ChildWork]) are sent to the parent as coalesced
// [SignalProgress] signals, the rest when it has landed, so that they
// count for the parent's quiet clock and the parent records each as a
// progress record in the words harness run's parent records. Its labeled result is the tool
// message's content, exactly the `--json` object of `harness run`, and
// its records join the parent's trace with their own run_id and the
// parent's as parent_run_id. A cancelled or stalled parent cancels its
// child and waits for it to land (within the child's reserve); a child
// with no answer by its slice's end and half of keep is given up and
// cancelled, and the call is interrupted. The child workflow's ID is the
// entry's name and the call's key, minted once, so a replay or a worker
// that takes the run over starts the same child. A child's backoff
// sleeps pause its parent's quiet clock as its own (a [Progress] whose
// Wait is pause, then resume), as one process's harness does. The
// child's orphans are its parent's ([landing.Adopt]): they are in the
// parent's in_flight, and its answer is not complete.
//
// # MCP servers
//
// A tools file with mcpServers is refused ([ErrUnsupported]): an MCP
// session lives in one process, while a durable run's calls go to
// whichever worker takes them; serve such tools from a tool server of
// their own (package kit, or `harness serve`) and name it by url.
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
// no tools on a landing lease, and when that cannot be had, fails, or
// would go to a model that will not answer ([landing.ModelEnd.Call]), the
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
// A record is stamped by the workflow task that saw what it records: an
// attempt's end when its completion reached the workflow, which after a
// worker died holding the run is up to the sticky timeout of
// [WorkerOptions] (1s) or the [WorkflowTaskTimeout] after it happened.
//
// The records say what harness run's say, in its words (issue 25): a
// failed attempt's message is [trace.AttemptError]'s ("tool:pay: attempt
// 1: gave_up: budget: lease expired"), with the error the worker saw or
// what cut the attempt (the lease, the quiet clock's
// [watchdog.StallError], a cancellation as [harness.ErrInterrupted]); a
// model attempt's end carries finish_reason and response_model; a phase
// record's reason is [landing.PhaseReason]'s. The setup step is the
// ToolInfos activity, a round trip on the run's time and budget: it is an
// attempt on the record, as a setup that does I/O is in process (a
// manifest fetched, an MCP server started), where builtins need no setup
// and have no such record. Result.Attempts counts every attempt on the
// record, setup's included, as in process.
//
// # Deploying a new build
//
// Every run records the version of the rules it runs, [RulesVersion], in
// its history (workflow.GetVersion under [RulesChange]), and a worker runs
// only runs of its own version: one of other rules fails its workflow
// task, which Temporal retries, rather than go on under rules it was not
// started with. The histories in testdata replay against the workflow
// code (the replay tests): a change that alters the commands a run makes
// fails there, with a message that says to bump RulesVersion and record
// them again (make temporal-histories). Such a change also breaks the runs
// in flight on the old build: drain the task queue before a worker on the
// new build joins (no run outlives its budget B, so the wait is bounded);
// versioned deploys are the next issue's (issue 25). A run's history
// grows by about one event per second of reported progress per running
// call, besides its attempts; Temporal's limit of 51,200 events bounds a
// run at hours of it.
//
// # Repeated from the core
//
// Some rules live unexported in the core and are repeated here until the
// core exports them: the answer of a cut attempt. A tool call's rules
// are not among them: the workflow drives package tools' call machine
// (tools.CallMachine, issue 25) — the lease of each attempt, the choice
// after it, backoff and Retry-After, reconciliation by key with its final
// ask, the cancel of a cut attempt (sent, never waited for; the run waits
// for its cancels once it has landed), the orphan — and a worker checks
// the arguments with the toolset's own registry (tools.Registry.Validate).
// Explore's calls run as a sliding window of Input.Parallel, as in
// process. The quiet clock ([watchdog.Clock]), the model's latency
// estimate ([budget.Latency]), a sub-agent's slice ([budget.SliceGrant]),
// the fit gate ([landing.AdmitAt]), the landing call or the harness's
// summary ([landing.ModelEnd]), the prompts ([landing.System],
// [landing.Prompt]) and the adoption of a child's orphans
// ([landing.Adopt]) are the core's own, called here (issue 25).
//
// # Not yet
//
// Observed tool latencies feeding the p50 refusals and the fit gate (the
// workflow uses the tools' declared p50 and p95; for the model, the
// run's own attempts, by the core's rule).
package durable
