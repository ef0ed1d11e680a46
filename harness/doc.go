// Package harness runs an agent under one deadline: the model turns and
// tool calls of a run, on one budget, watched by the two clocks, walked
// down the landing ladder, and always ending with a labeled answer,
// complete or partial, inside the budget (SPEC §3, §4).
//
// The embedder's contract, for a loop of your own (issue 25):
//
//  1. [Start] a [Session] on a budget you started; defer [Session.Close].
//  2. Make your openai-go client with [ClientOptions]: a request sent on a
//     turn's context is that turn's attempt — leased, retried per SPEC §2,
//     read and recorded —; one on any other context is refused ([ErrNoTurn]).
//  3. Each turn: [Session.BeginTurn]; send on its context with [Session.Note]
//     and [Session.Tools], read the answer, and use [Turn.End]'s error.
//  4. Tool calls: [Session.Call]. Any tool runs on its own goroutine, its
//     panic is its attempt's failure, and it is abandoned when its lease ends.
//  5. End with [Session.Answer], or hand any error of BeginTurn or End —
//     [*MustLandError] when the run must land — to [Session.Land].
//  6. The run ends by its deadline whatever a tool, a sink or summarize does.
//
// Or let the harness run the loop:
//
//	b, err := budget.New(budget.Config{Total: 2 * time.Minute}) // the run's clock starts here
//	if err != nil {
//		return err
//	}
//	res, err := harness.Run(ctx, b, harness.Config{
//		Task:  "find cats",
//		Model: client, // a *model.Client
//		Tools: reg,    // a *tools.Registry
//	})
//	if err != nil {
//		return err // an invalid config: nothing was sent
//	}
//	fmt.Println(res.Text()) // a partial answer leads with its boundary
//
// # One budget
//
// A run is given its [budget.Budget]; it does not make one. The caller
// starts the budget when the run starts for the user, so that everything
// it does before the first model turn — reading a config, fetching
// manifests, starting servers — is spent from it too, and appears in the
// trace as step "setup" ([Session.Setup]): `harness run --budget 20s`
// reports a total of 20s whatever came first. The budget's numbers are
// judged once, by [budget.New]; the run's own, by [Config.Validate] and the
// watchdog. When the caller's context has a deadline before the budget's,
// the run's budget is shortened to it ([budget.Budget.Shorten]): an
// embedded run under a shorter deadline lands inside it, on cause budget,
// with its reserve and ladder taken from the time it really has.
//
// Make the budget when the run is submitted, not once its goroutine runs:
// on a loaded process the two are seconds apart, and a budget started
// late is a run answered after its deadline (issue 25). A process that
// runs many runs at once shares one [admit.Limiter] as [Config.Admit]:
// Start refuses a run it cannot serve at once — the limit of runs reached,
// or a run that waited too long from its budget's start to the door —
// with a [*admit.AtCapacityError], and [Run] returns that run's labeled
// result at once, cause [landing.CauseAtCapacity] ([AtCapacity]).
//
// # Session
//
// [Start] starts a run and returns its [Session] and the run's context,
// which ends when the quiet clock fires, the wall comes, or the caller's
// context ends. A Session is the run as a value an agent loop drives step
// by step: the harness's own loop ([Session.Run], which [Run] calls), or
// one the caller already has, which keeps its own model client and uses
// the Session for time, gates, tool calls and landing:
//
//   - [Session.Note] is the budget note the model reads at every turn: the
//     time left, the ladder's phase and what it forbids;
//   - [Session.Tools] offers the run's tools in openai-go's terms ([Offer]);
//   - [Session.BeginTurn] begins a model turn the caller sends with its own
//     client, made with [ClientOptions], whose middleware leases, retries
//     and records each physical request of the turn (SPEC §2) and reads
//     what the answer carries as the client reads it (tokens, chunks, the
//     finish reason); it refuses a turn the run must not make — the run
//     must land ([*MustLandError]), no lease is left
//     ([*budget.RefusedError]), the run has ended ([ErrEnded]) —, and
//     [Turn.End] records the turn and says whether it is an answer
//     ([model.CheckFinish]): nothing read ([ErrNoAnswer]) or a request the
//     middleware never saw ([ErrNotLeased]) is not one;
//   - [Session.Call] makes tool calls through the ladder's gates, each on
//     leases of the budget, with progress, cancel and reconciliation,
//     several at once under the ladder's width;
//   - [Session.Setup] runs the work before the first turn on a lease;
//   - [Session.Answer] ends the run complete (an empty answer is not one,
//     nor one given while a turn is open: [ErrTurnOpen]); [Session.Land]
//     ends it early for whatever stopped the loop, with the words that fit
//     — a refusal of the model's server gets no landing call —, or for a
//     cause the caller names with a [*MustLandError] of its own, with the
//     landing call or the harness's own summary: one landing call
//     ([ErrLandingCallMade]), offered no tools, bounded by the landing's
//     deadline even if summarize ignores its context;
//   - [Session.Unavailable] lists the tools the config names that the run
//     cannot use, and why — marked by a [Toolset] whose server is down,
//     or a tool whose ceiling is below its
//     p50, which the run leaves off its offer — so that a caller may refuse
//     to go on without them before the first turn; the result lists them
//     too ([landing.Result.Unavailable], SPEC §4);
//   - [Session.LandsBy] says by when a landing begun now has its result
//     (R after a cancel, never past the deadline): what the CLI's first
//     Ctrl-C line tells the user;
//   - [Session.Close] stops the watchdog, gives the run's cancels their
//     grace and flushes its sinks.
//
// # Contexts
//
// Every call of a Session keeps the run's quiet clock and deadline
// whatever context it is passed: a context derived from the run's (the
// one [Start] returned) is used as it is, and any other is bound to the
// run's, so that the call ends when either ends, with the cause of the
// first — the quiet clock ([watchdog.ErrQuiet]), the wall, or the
// caller's own cancellation, which still cancels the call. A context of
// the caller's may shorten a call, never lengthen it. While the run makes
// its landing call the calls are bound to the landing call's context
// instead, whose quiet clock and lease are its own.
//
// Why a context ended is its cause: read it with [context.Cause]. At the
// wall, the run's context says [context.DeadlineExceeded], with cause
// [budget.ErrDeadline]; a context derived from it ends at the same moment
// with the same cause, but its Err is [context.Canceled], since the run
// keeps one context and one timer, not a deadline context of Go's (issue
// 25). An attempt's context is its lease's, whose own deadline ends it
// first, with [context.DeadlineExceeded].
//
// # Zero values
//
// The zero value of each exported type is safe. A zero [Session] (or a nil
// *Session), which [Start] did not make, is not a run: every method that
// returns an error returns [ErrNoSession]; a tool call's result is refused
// with it as the cause; [Session.Answer], [Session.Land] and
// [Session.Run] return a partial result whose boundary is its text, so
// that it cannot be read as an answer; [Session.Note] is its text, and
// [Session.Tools] offers nothing: nothing may start. A zero
// or nil [Turn] sends nothing and records nothing; its End returns the
// error it is given, or an error when given nil. Every field of [Config]
// has a documented default for its zero value but Task (and Model, for
// [Run] and [Session.Run]), which [Config.Validate] requires. A zero
// [Toolset] has no config: it resolves and registers nothing. A zero
// [Agent] has no model: its calls fail before anything is sent, with
// [ErrNoModel]. [ToolCall], [ChildCall] and [ConfigError] are plain data.
//
// [Config.Model] and [Config.Tools] are small interfaces, [Model] and
// [Tools]; a [*model.Client] and a [*tools.Registry] satisfy them, and
// tests and embedders may bring their own. The API a run's model is
// spoken to in is the client's: one made with [model.Config] API
// [model.APIResponses] speaks the Responses API, the run being the same.
// A loop of its own whose client is made with [ClientOptions] speaks Chat
// Completions ([ErrResponsesAPI]).
//
// # The loop
//
// [Session.Run]'s conversation opens with a system message that explains
// the job and that the answer must come within the budget, and the task as
// the user message. Every request adds, as its last message, a fresh
// budget note from [landing.Ladder.Note] ("Budget: 1m12s left until the
// deadline, …"): the note is never kept in the conversation, so each
// turn's replaces the last and the conversation's prefix stays the same
// from turn to turn.
//
// The loop's sequence — when to make a turn, what a reply asks for, when
// and why to land, and the words of the boundary — is the run machine's
// that the Temporal workflow of temporal/durable drives too (internal/run,
// issue 25); the loop performs what it asks with the Session.
//
// A step is one model turn plus the tool calls it asked for. An answer
// without tool calls ends the run: complete, unless the run made tool
// calls and none of them brought a result — each failed, was not started
// or was cut —: then the answer is kept but the result is partial with
// [landing.CauseToolsFailed] (issue 24; [landing.Settle]). A reply without tool calls
// that is not a whole answer (empty, or cut by the token limit or a
// content filter: finish reason "length" or "content_filter") lands the
// run with [landing.CauseUpstream]. Otherwise every call gets a tool
// message back, refused and failed ones included, since the API rejects a
// conversation that leaves one unanswered. In the explore phase the calls
// of a step run at once, at most [Config.Parallel]; from narrow on one by
// one (a call that waited for a slot while the run narrowed then waits for
// the calls in flight and runs alone: it would be a new branch), and a
// speculative tool is refused; in fit a call runs only if the ladder
// admits its p95 ([landing.Ladder.Admit]); in land none runs. A refused
// call's message tells the model why, in the gate's words.
//
// # Landing
//
// A run lands early when, before a turn, the ladder says the reserve is
// reached ([landing.CauseBudget]), the watchdog's quiet clock has fired
// ([landing.CauseQuiet]), ctx was cancelled ([landing.CauseCancelled]; the
// CLI cancels with [ErrInterrupted] on the first Ctrl-C),
// [Config.MaxSteps] turns were made without an answer
// ([landing.CauseMaxSteps]), or the model made [Config.MaxRepeats]
// repeated tool calls ([landing.CauseStuck]: a call of an earlier step's
// tool and arguments that got that call's result, which is no semantic
// event for the quiet clock either, SPEC §3); or when a turn fails
// ([CauseOf]): refused by
// the budget, a backoff that would outlast it or an attempt cut at the
// reserve are the budget's doing, anything else after the client's
// retries is [landing.CauseUpstream].
//
// Landing moves the ladder to land and makes one landing call: the
// conversation so far plus the budget note and a user message asking for
// a summary of what is established, what is not, and what was in flight,
// sent with no tools field at all on a landing lease that may spend the
// reserve. The run's context may be dead by then, so the call runs on ctx
// without its cancellation, bounded by the deadline and a quiet clock of
// its own, so that a landing that streams only keepalives ends as a stall
// does rather than at the deadline. When it fails, is refused or answers
// nothing, the answer is [landing.Summarize]'s, built from the run's own
// record. Either way the result is partial, with its cause, a
// [landing.Boundary] ("Ran out of allotted time at step 3: search done;
// fetch was in flight and is not included."), and the established, not
// established and in-flight lists of the record.
//
// A model that never answered is not asked to land (SPEC §4, issue 24):
// when the last model attempt of a step received nothing — no status, no
// chunk, not even a keepalive —, only keepalives, or chunks of an answer
// it never finished before its lease or the quiet clock ended it, the
// boundary names it ("Stopped at step 1: the model sent nothing for
// 3.6s.", "… the model sent only keepalives for 3.7s.", "… the model's
// answer was still streaming after 3.7s; it never finished.") and the
// landing call is not sent to that same server, which would most likely
// keep it waiting as long: the answer is [landing.Summarize]'s. An attempt
// that was answered in any way clears this; one cancelled by the caller is
// named the same way ("Cancelled at step 1: the model sent nothing for
// 2s.") but still asked to land (after a Ctrl-C the landing call is sent,
// leased within the reserve). Nor is the landing call sent to a server
// that refused the run ([model.Refused]), which includes a base URL that
// is not a model server ([model.ErrNotModelServer]), nor made when no
// landing lease at or above the model's p50 is left: the landing record
// says "no time for a landing call: below p50". Whether it is sent is
// [landing.Plan]'s to say, the rule the Temporal workflow applies too
// (issue 25).
//
// A boundary never falls back on words about tool calls a run may not
// have had: with no call to list and no failure to name, it says where
// the run was ([landing.Record.Doing]): "no model turn had started",
// "there was no time for a model turn: …" (the budget's refusal, in
// words), or "the model had not answered yet".
//
// # Cancelling is not waiting
//
// The cancels of calls cut short go out through the run's own
// [cancel.Group]: sending returns at once, so a tool whose cancel endpoint
// hangs costs the landing nothing. Nor does it hold the answer (SPEC §3):
// once the run's result exists — the model's answer, the landing call's
// summary or the harness's own — the outstanding cancels get a grace of
// [CancelGrace], 100ms, never past the deadline, and then the run builds
// its result and returns. A call is "cancelled" when its tool accepted the
// cancel within that grace, "abandoned" when nothing could stop it or its
// cancel went unanswered; an unanswered cancel's record stays cancel_sent
// state "sent". The cancels still unanswered are cut ([cancel.Group.Cut]),
// so that their goroutines end, and [Session.Close] waits for them.
//
// Result.Steps counts model turns (a turn the budget refused before
// sending anything is not one), Result.Attempts every physical request:
// model attempts, the landing call, tool attempts and setup; Result.Orphans
// the writes whose outcome is unknown.
//
// # Sub-agents
//
// An [Agent] is a sub-agent as a tool (SPEC §5b): a call runs a child
// Session on a slice of the parent's budget, min(ceiling, available −
// [Keep]), never a fresh one ([budget.Budget.SliceLease], which the
// registry takes for any tool of kind "agent:NAME", a sub-agent that
// harness serve serves included). Its step kind is "agent:NAME"; the ladder refuses it
// from narrow on. The child's labeled result is the call's output. Inside
// the parent's call the child is the parent's: its records go to the
// parent's sinks with parent_run_id and its run_start carries the call's
// key; each of its attempts is a heartbeat of the call, whose units grow,
// so a working child keeps its parent's quiet clock from firing and a
// stalled one does not; its orphans, journaled once in the parent's
// journal, are listed in the parent's in_flight (named agent/tool); and
// the parent's end — its context, its quiet clock, [Session.Land] —
// cancels it ([ErrParentEnded]), so that it lands at once with cause
// cancelled. What the child takes from its parent, its tool message and
// which of its records are the parent's progress are package landing's
// rules ([landing.Inherit], [landing.ChildMessage], [landing.ChildWork]),
// the ones a Temporal workflow runs too. [Agent.Run] runs a child on a budget the caller made, which is
// how `harness serve` runs one on a remote caller's Budget-Remaining-Ms.
// A [Toolset] builds a run's tools from a tools file: its entries' tools,
// an Agent for each agent entry with the tools of the entry's own file,
// and the manifests of their servers fetched as setup steps, all at once,
// each on a lease of the run's setup share ([budget.Budget.SetupCeiling]:
// the smaller of 5s and a quarter of the work time B − R, unless an MCP
// server's connect_timeout asks for its own), so that mute servers cost a
// run one share, never all of it (issue 24). A tool that cannot serve its
// calls is unavailable, by one rule: its tool server is down or sends no
// usable manifest (an HTML page, garbage, the wrong shape; an HTTP error
// is a server with no manifest, a warning),
// its manifest or its MCP server does not list it, its ceiling is below
// the p50 its builtin or manifest declares, or its sub-agent cannot be
// made. It is marked unavailable on the Session and not registered, and
// [Toolset.Warn] hears an [*UnavailableError] for it. A run that lands
// before its first model turn names the setup that did not finish in its
// boundary ("Ran out of allotted time at step 0: in setup, mcp server fs:
// connect and tools/list did not finish in 4.4s."); a piece of setup its
// lease ended returns a [*SetupError].
//
// # Trace
//
// The run's records (SPEC §6) are stamped once by the run's frame
// ([landing.Frame], the one a Temporal workflow stamps with too) — seq,
// ts, elapsed, remaining, and the phase of that instant — and go to
// [Config.Sinks] through one [trace.Recorder], so that every sink reads
// the same values: a [trace.JSONL] for the trace
// file, the CLI's live status line, and the spans and logs of other sinks.
// The records are run_start; a phase record at every change of the
// ladder, when it happens (a timer is armed for the next one; reason
// "forced" when the run landed early); attempt_start and attempt_end for
// every physical request (step "setup", "model" or the tool's kind, such as
// "tool:NAME"; step_index the turn; granted_ms the Budget-Remaining-Ms
// sent), backoff, refused (reason the lease rule, or "gated" when the
// ladder refused a call), progress (only heartbeats whose units grew, as
// the watchdog decides), cancel_sent (state "sent" when it goes out, then
// accepted, unknown or failed when it settles), reconcile and orphan
// records; then, when the run landed, its landing call's attempts and one
// landing record (cause; result "model" or "harness", who summarized); and
// run_end. The landing call's attempt records have step_index 0: it is not
// one of the run's steps.
//
// A sink that fails does not stop the run: [Session.Close] and [Run]
// return an error matching [ErrTrace] beside the result. Nor can a slow,
// blocked or panicking sink move the run's end: the Recorder feeds each
// from a bounded queue off the run's path, waits for them at most
// [trace.FlushGrace] after run_end, and reports what they missed (see the
// sink rules of package trace).
//
// # Goroutines
//
// Starting a run starts no goroutine: its deadline, quiet clock and phase
// changes are timers and context callbacks, so that a fleet of runs holds
// the goroutines of its callers and their connections and nothing more
// (BenchmarkStart reports goroutines/run; issue 20). A Session's methods
// block until their work is done. The goroutines it starts are those of a
// step's parallel tool calls, which Call waits
// for (a sub-agent's child runs on its call's goroutine, and has closed
// when the call returns); the cancels it sends, which Land, Answer and
// Close wait for during their grace and then cut, and Close waits for
// until they have returned (a [cancel.Canceller] returns when its context
// ends; bounded by the deadline all the same): no cancel of a run outlives
// its Close; and the timer of the next phase change, which Close stops.
// A tool whose attempt ignores its context — a local function, or any
// [tools.Tool] of another package ([tools.RunAttempt]) — is not waited for:
// its call returns when its lease ends, and the attempt belongs to the
// [tools.Registry] until it returns ([tools.Registry.Close]), so that a run
// returns within its budget even then (SPEC §7); a sub-agent cut short is
// waited for until its slice's deadline, inside which it lands. A
// summarize function that ignores its context is left the same way at the
// landing's deadline.
//
// # Errors
//
// [Start] and [Run] return an error only for an invalid config, a
// refusal at the door (Start's [*admit.AtCapacityError]; Run's is a
// result), a
// [*ConfigError] that names the field as the flag of `harness run` that
// sets it, with no result, or, beside a valid result, a sink failure
// ([ErrTrace]). Every way a run can end, complete or early, is a result,
// not an error. A tool the run cannot use is not an error either: it is an
// [*UnavailableError] (matching [ErrUnavailable]) for [Toolset.Warn], and
// an entry of the result's Unavailable.
package harness
