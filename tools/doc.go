// Package tools calls the tools of an agent run: local Go functions,
// subprocesses and remote tool servers, each call on a lease of the run's
// budget, observable, cancellable, and safe to time out.
//
// Tools are where agent runs hang, where a timeout abandons work that keeps
// running, and where a retry sends the same payment twice. So every call
// here is leased ([budget.Budget.Lease]), reports what it does to an
// [trace.Observer], is cancelled where its tool can be, and a write that timed out
// is never sent again blindly but reconciled by its idempotency key
// (SPEC §5).
//
// # Tools
//
// A [Registry] holds tools by name; it is a value, like an http.ServeMux,
// and registering a name twice is an error ([ErrDuplicate]). A tool is
// described by a [Spec] (name, step kind, description, JSON Schema
// parameters, effect [Read] or [Write], ceiling, p50/p95 hints,
// speculative, cancellable, max attempts) and is anything that implements
// [Tool]: its Attempt gets the [Call] — key, arguments, lease, the run's
// budget, and Progress and Keepalive to report what it hears — and returns
// an [Answer] that says what it knows: the output, or how it failed,
// whether the call may have reached the tool, whether its work stopped.
// Three kinds come with the package:
//
//   - [Func]: a Go function that gets its lease as its context, the
//     arguments, and a [Progress] reporter;
//   - [Command]: a subprocess in its own process group, the arguments JSON
//     on its standard input and its standard output the result, its lease
//     and key in its environment (GLIDEPATH_BUDGET_REMAINING_MS,
//     GLIDEPATH_IDEMPOTENCY_KEY), which holds of the harness's own only
//     what a program needs to run, never a key ([Environ]), progress as JSON lines on file descriptor
//     3, killed as a group when its lease ends; [CommandWithStatus] adds a
//     status command that says how a call went by its key (the entry's
//     status field), so that its writes can be reconciled;
//   - [Remote]: a tool server speaking SPEC §5 over HTTP, answering JSON or
//     a finite event stream read with github.com/tmaxmax/go-sse.
//
// Other kinds (an MCP server's tools, sub-agents) are written outside the
// package. What a tool can do beyond an attempt is found by type
// assertion: a [cancel.Canceller] stops a call by its key, a
// [cancel.StatusReader] says how a call went by its key (so that a write
// whose attempt was cut can be reconciled rather than sent again), a
// [Closer] releases what the tool holds when [Registry.Close] is called.
// The remote tool is a Canceller and a StatusReader: its DELETE and GET of
// U/tools/{name}/calls/{key}.
//
// A tool has a capability when its type implements it: no spec field is
// needed. A spec may only turn cancelling off ([Spec.NotCancellable]);
// [Spec.Cancellable] claims the capability, and Register refuses a claim
// the type cannot honour ([ErrNoCapability]). The remote tool is the one
// kind whose cancellability is its server's word, not its type's: a
// remote spec without Cancellable (its manifest and entry said nothing, or
// false) is made NotCancellable by [Remote]. [Registry.Specs] reports
// Cancellable as it is used.
//
// [Registry.Register] checks the spec, compiles the schema once and
// declares the p50 and p95 on the tool's step kind ([Spec.Kind], by
// default "tool:NAME", see [KindPrefix]) in the registry's estimates;
// [Registry.Specs] lists what to offer the model.
//
//	reg := tools.NewRegistry(nil)
//	err := reg.Register(tools.Func(tools.Spec{Name: "add", Effect: tools.Read, Parameters: params}, add))
//	res := reg.Call(ctx, &tools.Run{Budget: b}, "add", json.RawMessage(`{"a":2,"b":3}`))
//
// # Config
//
// [ParseConfig] and [LoadConfig] read the tool config file of SPEC §5, JSON
// or the same shape in YAML: {"tools":[ENTRY…]}, each entry with name,
// description, parameters, effect, ceiling, p50, p95, silence, speculative,
// cancellable, max_attempts and exactly one of url, command, builtin (a
// tool from the map the caller passes) or agent (a sub-agent, SPEC §5b:
// instructions, tools, model, api, max_steps); a command entry may add status,
// the argv of its status command ([CommandWithStatus]). cancellable: true
// is bad config where the tool cannot be cancelled by key (a command, a
// builtin that is no [cancel.Canceller]); cancellable: false turns
// cancelling off. [LoadConfig] loads each agent's
// tools file, relative to the file that names it, and refuses a file that
// names itself through its agents. An agent entry is not built here: it
// runs a child harness, which package harness builds (harness.Toolset);
// [Config.Configs] lists every config a run may use. mcpServers beside
// tools are MCP servers ([MCPServer], in the shape other MCP clients use,
// with Glidepath's per-tool overrides, allowed_tools, trust_hints and
// connect_timeout), which package tools/mcp connects to. Every mistake that can be found
// without a request is found there and reported as a [*ConfigError] naming
// the field and the line. [Config.ResolveServer] then fills what the url
// entries of one server ([Config.Servers]) left out from its manifest (GET
// U/tools), on a context the caller bounds — inside a run, a setup lease
// of its budget — and [Config.Resolve] does it for every server at once
// within a timeout, before any run; the entry wins where both speak.
// [Config.Tools] builds the tools.
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
// attempt ends with a [trace.Outcome] of SPEC §6 and is reported to
// [Run.Observer] as a [trace.Attempt], in the vocabulary the model client
// shares, so that a trace reads both alike. Durations of successful
// attempts are observed into the kind's estimate. Call blocks; a Registry is
// safe for concurrent use, so parallel calls are the caller's goroutines.
//
// # Retries and writes
//
// What follows an attempt is decided by the call machine (see # The call
// machine below) from what the attempt said — whether it was cut, whether
// the call may have reached the tool, whether its work stopped, whether
// the tool said how it failed — and what the call knows: the effect, what
// the tool can do, the attempts left, whether the run has ended; it is
// tested for every combination, and Call only performs it. Only reads are retried — and a write whose tool knows it
// never reached it ([Answer.NotSent]: nothing of it can have happened, as
// for one whose status says never received), with its key — at most
// MaxAttempts times (default 3), on what SPEC §2 retries ([trace.Retryable]): transport errors, 408,
// 429, 500, 502, 503, 504, a stream that ended without a result, and an
// attempt cut by its own lease ([budget.ErrLeaseExpired]); and on an error
// event marked retryable. Never after the run's context ended. The sleep
// between attempts is [budget.Backoff.Next]'s: full jitter, or a server's
// Retry-After as a floor spread by a little jitter of [Run.Backoff]'s
// source; a sleep that would outlast the budget, or a Retry-After too
// large to be meaningful, ends the call at once with a
// [*trace.GaveUpError] whose cause is the budget
// (retry_after_exceeds_budget, backoff_exceeds_budget).
//
// A write whose attempt was cut, or whose connection broke after the
// request went out, may or may not have happened. It is never sent again
// blindly. When its tool can say how it went ([cancel.StatusReader]), its
// status is asked, by [cancel.Reconcile]'s rule: done, its output is the result;
// failed, the call failed; never received, it is sent again with the same
// key, as an attempt under MaxAttempts; still running when the budget says
// stop, or the status unreachable, an orphan. A write whose tool cannot be
// asked, or cut by the end of the run itself (which must land), is an
// orphan at once. An orphan is appended to [Run.Journal] (fsync'd) before
// Call returns, with [Result.State] [StateOrphaned]: never "cancelled",
// since nobody knows whether it happened.
//
// The journal entry records how to reach the tool again from outside the
// run ([cancel.Entry]): the URL of a remote tool; for any tool a tools
// file built ([ToolsFiler]: command, builtin, url and MCP tools), that
// file's absolute path beside the entry's name, so that `harness reconcile
// --tools FILE` can build it again and ask it; and always the step kind,
// by which an embedder finds the status reader of a kind of its own
// ([cancel.ReconcileJournal]). The model is told the write "is recorded
// for reconciliation" only when the journal holds it; with no journal, or
// an append that failed, it is told the outcome is unknown, that it was
// NOT recorded, and not to repeat it.
//
// # The call machine
//
// The rules of one logical call are a pure state machine, [CallMachine],
// which both hosts of a run drive: [Registry.Call] here, with goroutines
// and timers, and the Temporal workflow of temporal/durable, with
// activities and one workflow timer (issue 25: the two had drifted apart).
// It reads no clock, starts no goroutine, takes no lock and does no I/O:
// the host gives it [CallEvent]s — started, an attempt ended as its
// Answer said ([Attempted]), a status answered, a sleep over — each with
// the run's budget [budget.Figures] at that moment, and does what the
// [CallCommand] each [CallMachine.Step] returns says: attempt N with its
// lease ([budget.LeaseAt], a sub-agent's [budget.SliceLeaseAt]) and the
// call's key, sleep (the quiet clock paused), ask the status by key, and
// finally done, with how it ended ([CallEnd]) and the [State] it is left
// in; any command may first ask for the cut attempt's cancel, which is
// sent and never waited for. Its only randomness is
// [CallRules].Backoff.Rand, which a workflow seeds once so that a replay
// draws the same sleeps. Events and commands are plain structs that
// encode as JSON; a step allocates nothing unless the budget refuses.
// [Registry.Validate] is the argument check a host that makes attempts
// elsewhere uses.
//
// What lies around the machine is written once too, as pure functions
// both hosts call: the gate before a call ([Gate]: nothing once the run
// stops, a speculative call or a sub-agent only in explore, and the
// phase's admission by p95 or ceiling), how many of a turn's slots a call
// takes ([Slots]: one in explore, all of them after, so that it runs
// alone), the model's words for a failed attempt ([Describe]), and the
// ending of a call the machine ended ([Ending], from what its attempts,
// asks and cancels said, [Said]): the tool message ([Result.Content]) and
// the landing's record of it ([Result.Landing]). A cancel of a cut attempt
// is never waited for, not even before a retry under the same key; each
// cancel's answer speaks for its own attempt only.
//
//	m := tools.NewCallMachine(tools.CallRules{Kind: "tool:fetch", Effect: tools.Read, Ceiling: 2 * time.Second})
//	cmd := m.Step(tools.CallEvent{Kind: tools.CallStarted, Figures: figures()})
//	for cmd.Kind != tools.CallDone {
//		// perform cmd, then m.Step the event it ended with
//	}
//
// # Cancellation
//
// When an attempt's lease ends, or the run's context does (the quiet clock,
// the wall, a cancellation: the context's cause names the outcome, see
// [trace.OutcomeOfContext]), a call whose work may still be running is
// cancelled, if its tool is a [cancel.Canceller] whose spec did not turn
// that off:
// through [Run.Cancels], a [cancel.Group] the run owns, on the cancel's
// own short lease, without waiting for the answer. Call returns at once;
// the Observer hears the cancel go out (CancelSent) and, later, how it
// settled (CancelSettled), and the run waits for the outstanding ones once
// it has landed. With no Run.Cancels, Call waits for its own cancel's
// answer before it returns.
//
// A call that did not finish is left in a [State]: [StateCancelled] (its
// work stopped with the attempt — a local function's context ended, a
// subprocess group killed with SIGKILL — or its cancel was accepted),
// [StateAbandoned] (a read we stopped waiting for that nothing could stop,
// or whose cancel is not answered yet: [Result.Cancelling]) or
// [StateOrphaned]. A subprocess's output so far is kept and the result
// marked CutShort. A local function that ignores its context is left
// running when its lease ends, owned by the Registry until it returns
// ([Registry.Close]).
//
// What the model reads of a call that did not finish ([Result.Err],
// [Result.Content]) is what the record says (issue 18). A call that gave
// up names what ended it, as its lease's context cause says: "no answer
// within its ceiling of 800ms" ([budget.ErrLeaseExpired], also when the
// tool itself answered that the Budget-Remaining-Ms it was sent ran out,
// which its attempt_end then records as our cause first), "the run's time
// for work ran out" ([budget.ErrDeadline]), "the run stalled" (the quiet
// clock), "the run was cancelled". Its cancel is named by how it stood
// when the result was built: "it was cancelled" (accepted), "the tool did
// not know the call" (unknown), "its cancel failed", "which its tool does
// not answer" (sent, MCP), "with no answer yet" (its answer comes later,
// and the Observer, the trace and the run's in_flight follow it). The
// error is a sentence of its own before any output that came before the
// cut; an empty output is not shown.
//
// # Progress
//
// The Observer hears the call's signals, named in the watchdog's words: a
// tool call issued ([watchdog.ToolCall]) at a call's first attempt, a
// result returned ([watchdog.ToolResult]) at its end, each progress
// heartbeat ([watchdog.Progress]) with its units, and each keepalive, an
// SSE comment ([watchdog.Keepalive]), counted also in
// [trace.Attempt].Keepalives. Every heartbeat is reported as heard, late
// ones of an attempt that has ended excepted: whether its units grew is
// the run's watchdog's to decide ([watchdog.Watchdog.Progress]), once for
// all kinds of tools. go-sse drops comments, so they are counted below it,
// as bytes arrive. Events are bounded ([MaxAnswer] per event and per JSON
// answer).
//
// # Zero values
//
// The zero value is the safe one: a field a tool writer or an embedder
// forgets defaults to the answer that keeps the promises.
//
//   - [Answer]: Answer{Err: err} may have reached the tool (NotSent false)
//     and may still be running (Stopped false): a cut write is reconciled
//     or orphaned, never called failed, and the call is cancelled where its
//     tool can be. Outcome empty lets the Registry read the outcome off
//     what ended the attempt: its context's end, or a transport error (a
//     network or URL error, a stream cut short, a [*NoAnswerError]); any
//     other error is the tool's own failure, retried only when the tool
//     says so (Retry, or a Retryable [*ToolError]; issue 25). CutShort
//     false says Output is whole, which only the tool can know. An answer
//     that is neither output nor error, both, or output that is not JSON
//     is a bad answer ([RunAttempt]).
//   - [Spec]: every field but Name selects its default: Effect empty is
//     [Write] (never retried blindly), Kind "tool:NAME", Parameters any
//     object, MaxAttempts [DefaultMaxAttempts], Ceiling and P50/P95 zero
//     leave it to the budget; Cancellable false claims nothing and
//     NotCancellable false keeps what the type can do.
//   - [Registry]: ready to use, with no estimates of its own.
//   - [Run]: Budget is required; without it (or with a nil Run) a call
//     starts nothing and its Result's Cause is [ErrNoBudget]. Journal nil
//     records orphans nowhere, and the model is told so; Observer nil
//     hears nothing; Cancels nil makes each call wait for its own
//     cancel's answer; Backoff and Keep zero use their defaults.
//   - [Call]: one not made by a Registry (a test driving a tool's Attempt,
//     a durable run's activity) is valid; Progress and Keepalive go to its
//     Heard when set, and else, like Pause, do nothing.
//   - [Config], [Entry], [MCPServer]: a zero Config has no tools; a field
//     an entry leaves out is filled by a manifest or its default.
//   - [Result]: State empty is a call that finished; it is made by Call,
//     not by users.
//
// # Errors
//
// [Result.Err] is the failure written for the model; [Result.Cause] is the
// same as a Go error: an [*ArgumentsError] ([ErrInvalidArguments]), a
// [*budget.RefusedError], a [*trace.AttemptError] of step "tool:NAME"
// matching [trace.ErrGaveUp] (we stopped it) or [trace.ErrFailed] (the tool
// failed), wrapping a [*ToolError], a transport error or a cause,
// [ErrIncomplete] or [ErrBadAnswer]; a [*trace.GaveUpError]; an
// [*OrphanError] ([ErrOrphaned]); [ErrNoBudget]; a [*PanicError] for a
// local function's recovered panic, with its stack. Register fails with a
// [*SpecError] ([ErrBadSpec]; [ErrNoCapability] for a claimed capability
// the type lacks); config parsing with every [*ConfigError]
// found ([ErrConfig]), joined; Resolve with every [*ManifestError]
// ([ErrManifest]), joined: one that matches [ErrNoManifest] is a server
// that answered GET U/tools with an HTTP error (it serves no manifest);
// one that matches [ErrNotListed] is a tool its server's manifest does not
// list (issue 24: package harness makes such a tool unavailable).
package tools
