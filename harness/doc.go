// Package harness runs an agent under one deadline: the loop of model
// turns and tool calls that ties the budget, the watchdog, the landing
// ladder, the model client, the tools and the trace together (SPEC §3,
// §4). Whatever happens, a run ends inside its budget with a labeled
// answer, complete or partial.
//
//	res, err := harness.Run(ctx, harness.Config{
//		Task:   "find cats",
//		Budget: 2 * time.Minute,
//		Model:  client, // a *model.Client
//		Tools:  reg,    // a *tools.Registry
//	})
//	if err != nil {
//		return err // an invalid config: nothing was sent
//	}
//	fmt.Println(res.Text()) // a partial answer leads with its boundary
//
// # Run
//
// [Run] validates its [Config] first: a bad field is a [*ConfigError]
// (matching [ErrConfig]) and nothing is sent. It then starts the run's
// [budget.Budget] (B, reserve, floor), the [watchdog.Watchdog] (the quiet
// clock, and the wall at the budget's deadline D) and the
// [landing.Ladder].
//
// The conversation opens with a system message that explains the job and
// that the answer must come within the budget, and the task as the user
// message. Every request adds, as its last message, a fresh budget note
// from [landing.Ladder.Note] ("Budget: 1m12s left until the deadline, …"):
// the note is never kept in the conversation, so each turn's replaces the
// last and the conversation's prefix stays the same from turn to turn.
//
// A step is one model turn plus the tool calls it asked for. A turn is a
// [model.Client.Complete] on work leases of the budget, offered the
// registry's tools, with parallel tool calls allowed only in the explore
// phase. An answer without tool calls ends the run: complete. A reply
// without tool calls that is not a whole answer (empty, or cut by the
// token limit or a content filter: finish reason "length" or
// "content_filter") lands the run with [landing.CauseUpstream]. Otherwise
// every call gets a tool message back, refused and failed ones included,
// since the API rejects a conversation that leaves one unanswered. In the
// explore phase the calls of a step run at once, at most
// [Config.Parallel]; from narrow on one by one (a call that waited for a
// slot while the run narrowed then waits for the calls in flight and runs
// alone: it would be a new branch), and a speculative tool is
// refused; in fit a call runs only if the ladder admits its p95
// ([landing.Ladder.Admit]); in land none runs. A refused call's message
// tells the model why, in the gate's words.
//
// # Landing
//
// A run lands early when, before a turn, the ladder says the reserve is
// reached ([landing.CauseBudget]), the watchdog's quiet clock has fired
// ([landing.CauseQuiet]), ctx was cancelled ([landing.CauseCancelled];
// the CLI cancels with [ErrInterrupted] on the first Ctrl-C), or
// [Config.MaxSteps] turns were made without an answer
// ([landing.CauseMaxSteps]); or when a turn fails: refused by the budget,
// a backoff that would outlast it or an attempt cut at the reserve are the
// budget's doing, anything else after the client's retries is
// [landing.CauseUpstream].
//
// Landing moves the ladder to land and makes one [model.Client.Land] call,
// with no tools field at all, on the conversation so far plus the budget
// note and a user message asking for a summary of what is established,
// what is not, and what was in flight. The run's context may be dead by
// then, so the call runs on ctx without its cancellation, bounded by the
// deadline, the landing lease (which may spend the reserve), and a quiet
// clock of its own, so that a landing that streams only keepalives ends as
// a stall does rather than at the deadline. When it fails, is refused or
// answers nothing, the answer is [landing.Summarize]'s, built from the
// run's own record. Either way the result is partial, with its cause, a
// [landing.Boundary] ("Ran out of allotted time at step 3: search done;
// fetch was in flight and is not included."), and the established, not
// established and in-flight lists of the record.
//
// Result.Steps counts model turns (a turn the budget refused before
// sending anything is not one), Result.Attempts every physical request:
// model attempts, the landing call and tool attempts; Result.Orphans the
// writes whose outcome is unknown.
//
// # Trace
//
// With [Config.Trace], the run writes its JSONL trace (SPEC §6) with a
// [trace.Writer]: run_start; a phase record at every change of the ladder
// (reason "forced" when the run landed early); attempt_start and
// attempt_end for every physical request (step "model" or "tool:NAME",
// step_index the turn, granted_ms the Budget-Remaining-Ms sent), backoff,
// refused (reason the lease rule, or "gated" when the ladder refused a
// call), progress, cancel_sent, reconcile and orphan records; then, when
// the run landed, its landing call's attempts and one landing record
// (cause; result "model" or "harness", who summarized); and run_end. The
// landing call's attempt records have step_index 0: it is not one of the
// run's steps, and its phase is land.
//
// A trace that cannot be written does not stop the run: Run returns its
// result and an error matching [ErrTrace] that wraps the first write
// failure.
//
// # Goroutines
//
// Run blocks until the run has ended. The only goroutines it starts are
// those of a step's parallel tool calls, which it waits for before the
// next turn; every one has ended when Run returns. A local tool
// function that ignores its context is not waited for: its call returns
// when its lease ends, and the function belongs to the [tools.Registry]
// until it returns ([tools.Registry.Wait]), so that Run returns within its
// budget even then (SPEC §7). [Config.Status] is called from the
// goroutine that saw the change; calls are serialized.
//
// # Errors
//
// Run returns an error only for an invalid config, a [*ConfigError] that
// names the field as the flag of `harness run` that sets it, with no
// result, or, beside a valid result, a trace write failure ([ErrTrace]).
// Every way a run can end, complete or early, is a result, not an error.
package harness
