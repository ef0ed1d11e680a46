// Package tools calls the tools of an agent run: local Go functions,
// subprocesses and remote tool servers, each call on a lease of the run's
// budget, observable, cancellable, and safe to time out.
//
// Tools are where agent runs hang, where a timeout abandons work that keeps
// running, and where a retry sends the same payment twice. So every call
// here is leased ([budget.Budget.Lease]), reports what it does to an
// [Observer], is cancelled where its tool can be, and a write that timed out
// is never sent again blindly but reconciled by its idempotency key
// (SPEC §5).
//
// # Tools
//
// A [Registry] holds tools by name; it is a value, like an http.ServeMux,
// and registering a name twice is an error ([ErrDuplicate]). A tool is
// described by a [Spec] (name, description, JSON Schema parameters, effect
// [Read] or [Write], ceiling, p50/p95 hints, speculative, cancellable, max
// attempts) and is one of three kinds:
//
//   - [Func]: a Go function that gets its lease as its context, the
//     arguments, and a [Progress] reporter;
//   - [Command]: a subprocess in its own process group, the arguments JSON
//     on its standard input and its standard output the result, killed as a
//     group when its lease ends;
//   - [Remote]: a tool server speaking SPEC §5 over HTTP, answering JSON or
//     a finite event stream read with github.com/tmaxmax/go-sse.
//
// [Registry.Register] checks the spec, compiles the schema once and
// declares the p50 and p95 on the tool's step kind ("tool:NAME", see
// [KindPrefix]) in the registry's estimates; [Registry.Specs] lists what to
// offer the model.
//
//	reg := tools.NewRegistry(nil)
//	err := reg.Register(tools.Func(tools.Spec{Name: "add", Effect: tools.Read, Parameters: params}, add))
//	res := reg.Call(ctx, &tools.Run{Budget: b}, "add", json.RawMessage(`{"a":2,"b":3}`))
//
// # Config
//
// [ParseConfig] and [LoadConfig] read the tool config file of SPEC §5, JSON
// or the same shape in YAML: {"tools":[ENTRY…]}, each entry with name,
// description, parameters, effect, ceiling, p50, p95, speculative,
// cancellable, max_attempts and exactly one of url, command or builtin (a
// tool from the map the caller passes). Every mistake that can be found
// without a request is found there and reported as a [*ConfigError] naming
// the field and the line. [Config.Resolve] then fills what url entries left
// out from their servers' manifests (GET U/tools), within a timeout, or on
// a lease of the run's budget when its context carries one; the entry wins
// where both speak. [Config.Tools] builds the tools.
//
// # Calls
//
// [Registry.Call] makes one logical call and returns a [Result]; it never
// panics on the model's input. Arguments are checked against the schema
// first: malformed ones (not JSON, or not matching) end the call with
// outcome [trace.Invalid] and an error the model can read and correct, and no
// attempt is made. Then one idempotency key is minted ([cancel.NewKey]),
// the same for every attempt. Each attempt runs on a work lease of the
// run's budget, bounded by the tool's ceiling; a refused lease starts
// nothing, and the result says "not started: not enough time". A remote
// attempt sends Idempotency-Key and Budget-Remaining-Ms (the lease). Each
// attempt ends with a [trace.Outcome] of SPEC §6, the vocabulary the model
// client shares, so that a trace reads both alike. Durations of successful
// attempts are observed into the kind's estimate. Call blocks; a Registry is
// safe for concurrent use, so parallel calls are the caller's goroutines.
//
// # Retries and writes
//
// Only reads are retried ([Read] tools of every kind), at most MaxAttempts
// times (default 3), on what SPEC §2 retries ([trace.Retryable]): transport
// errors, 408, 429, 500, 502, 503, 504, a stream that ended without a
// result, and an attempt cut by its own lease ([budget.ErrLeaseExpired]);
// and on an error event marked retryable. Never after the run's context
// ended. The sleep between attempts is decided by
// [budget.Budget.NextDelay], honouring Retry-After; a sleep that would
// outlast the budget ends the call at once with a [*trace.GaveUpError].
//
// A remote write whose attempt was cut, or whose connection broke after the
// request went out, may or may not have happened. It is not sent again: its
// status is asked ([cancel.Reconcile]). Done: its output is the result.
// Failed: the call failed. Never received: it is sent again with the same
// key, as an attempt under MaxAttempts. Still running when the budget says
// stop, or the status unreachable: an orphan, appended to [Run.Journal]
// (fsync'd) before Call returns, with [Result.State] [StateOrphaned]. A
// write cut by the end of the run itself is orphaned without asking, since
// the run must land.
//
// # Cancellation
//
// When an attempt's lease ends, or the run's context does (the quiet clock,
// the wall, a cancellation: the context's cause names the outcome, see
// [Run.Quiet] and [trace.OutcomeOfContext]), a remote call that went out and whose tool is Cancellable is
// cancelled at its cancel endpoint with [cancel.Send], on its own short
// lease, and the Observer hears it. A call that did not finish is left in
// a [State]: [StateCancelled] (its cancel was accepted, or its local
// context ended: a local function's context, a subprocess group killed with
// SIGKILL), [StateAbandoned] (a read that could not be cancelled) or
// [StateOrphaned]. A subprocess's output so far is kept and the result
// marked CutShort. A local function that ignores its context is left
// running when its lease ends, owned by the Registry until it returns
// ([Registry.Wait]).
//
// # Progress
//
// The Observer hears events for the run's watchdog: [CallIssued] at a
// call's first attempt, [ResultReturned] at its end, [Heartbeat] for a
// progress report whose units strictly increased over the call's highest
// so far (which start at zero), [StaleHeartbeat] for one that repeated or
// lowered them, and [Keepalive] for an SSE comment. Only the first three
// are semantic ([EventKind.Semantic]): keepalives and stale heartbeats are
// counted, in the events and in [Attempt].Keepalives, and reset nothing.
// go-sse drops comments, so they are counted below it, as bytes arrive.
// Events are bounded ([MaxAnswer] per event and per JSON answer).
//
// # Errors
//
// [Result.Err] is the failure written for the model; [Result.Cause] is the
// same as a Go error: an [*ArgumentsError] ([ErrInvalidArguments]), a
// [*budget.RefusedError], a [*trace.AttemptError] of step "tool:NAME"
// matching [trace.ErrGaveUp] (we stopped it) or [trace.ErrFailed] (the tool
// failed), wrapping a [*ToolError], a transport error or a cause,
// [ErrIncomplete] or [ErrBadAnswer]; a [*trace.GaveUpError]; an
// [*OrphanError] ([ErrOrphaned]); a [*PanicError] for a
// local function's recovered panic, with its stack. Register fails with a
// [*SpecError] ([ErrBadSpec]); config parsing with every [*ConfigError]
// found ([ErrConfig]), joined; Resolve with every [*ManifestError]
// ([ErrManifest]), joined.
package tools
