// Package durable runs a Glidepath run as a Temporal workflow (SPEC §9),
// with the guarantees of a run in one process: one deadline, leases out
// of it, retries decided by the run's rules, keys minted once, a quiet
// clock, sub-agents on slices, and a labeled landing inside the budget.
// `harness-temporal worker | run | dev` is its command line.
//
// It is a host, not a second program (issue 25): every rule — the frame
// and its phases, the model turn, the tool call and its gate, the quiet
// clock, a sub-agent's slice, the landing — is the core's own state
// machine or pure function (packages budget, landing, model, tools,
// watchdog), fed workflow time; this package performs what they ask for
// with activities, timers, signals and child workflows, and records what
// they say. docs/temporal.md is the reference: how each rule is hosted,
// and where Temporal makes a run differ from one in one process.
//
// # Worker
//
// A worker registers [Workflow] under [WorkflowName] and [Activities] with
// [Activities.Register], and is built with [WorkerOptions]; its tools are
// a tools file loaded by [LoadTools] (a file with MCP servers, or a
// sub-agent on another model, is refused: [ErrUnsupported]). A caller
// starts a run with [StartOptions] and an [Input], and writes the
// records of its [Output] with trace.AppendJSON.
//
// # What Temporal adds
//
// The budget is workflow state written once at the first workflow task;
// a replay, or a worker that takes the run over, reads the same start
// from the history and gets no fresh budget. Workflow code never reads
// the wall clock: every duration is workflow.Now against the deadline.
//
// Each attempt is one activity whose ScheduleToCloseTimeout is its lease
// and whose RetryPolicy allows one attempt: the workflow is the one retry
// layer. Its heartbeat ([DeadWorker]) only finds a dead worker, and
// brings a running attempt its cancellation within [CancelWithin].
//
// What a replay must draw the same — an idempotency key, the backoff's
// seed — is drawn once, in a SideEffect.
//
// Progress heard on a worker reaches the workflow's quiet clock as a
// [SignalProgress] signal, coalesced to one per [ProgressEvery], so the
// clock can fire that much later than in process, never sooner.
//
// A run's trace is workflow state, bounded by [MaxRecords] and
// [MaxTraceBytes], and returned when it ends, not written as it goes.
// What a run carries stays under Temporal's payload limit
// ([MaxToolOutputBytes], [MaxRequestBytes], [MaxHistoryBytes]); a run
// whose history grows long continues as new between two turns, its state
// carried ([Carry], [DefaultContinueAt]); and its leases count the
// server's timer resolution ([Input].TimerResolution).
//
// # Operating runs
//
// A worker states its toolset ([Identity]) and its build ([Deployment]):
// every step of a run checks the toolset the run was set up with, and a
// run stays on the build whose rules started it ([Promote]). A run
// answers [QueryStatus], lands on [SignalLand], keeps the search
// attributes of [SearchAttributes] when its namespace has them, and is
// ended by the server at [Overrun] past its deadline. Its payloads may be
// sealed by a codec (package codec).
//
// # Rules version
//
// Every run records [RulesVersion] in its history, and a worker runs
// only runs of its own version; the histories of testdata replay in the
// tests, and a change to the commands a run makes fails them with a
// message that says to bump it (make temporal-histories).
package durable
