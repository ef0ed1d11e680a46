// Package landing turns a budget running out into a labeled answer instead
// of an error.
//
// The most wasteful failure of a run with a deadline spends 100% of its
// budget working and 0% answering: the deadline arrives in the middle of a
// tool call and nearly finished work comes back as an error. So the run's
// last stretch is treated as a funded step, and the rest is spent on a
// ladder rather than up to a cliff.
//
// # Ladder
//
// A [Ladder] reads a [budget.Budget] and is in one [Phase], by the fraction
// of the total spent: [Explore] below 60%, [Narrow] from 60% (no new
// parallel branches, sub-agents or speculative calls), [Fit] from 80% (a
// call is admitted only if its p95 is below remaining − reserve) and [Land]
// from B − R, the start of the reserve (no more work). When the reserve is
// more than 20% of the budget, as the default rule makes it for budgets under
// 100s, landing begins before 80% and fit never comes. Phases only move
// forward; [Ladder.Advance] moves the ladder at once, for a run that stalled,
// was cancelled or ran out of steps. Every change is reported to
// [Config.OnChange]. [PhaseAt] is the ladder as a pure function.
//
// The ladder moves when asked, and never on its own: [Ladder.Next] says
// which phase comes next and at what instant, so that a caller can arm a
// timer and see the change when it happens, and [Ladder.Peek] reads the
// phase of any instant without moving the ladder or reporting a change,
// so that a record stamped between two polls carries the phase of its own
// instant.
//
// # Gates
//
// Before doing work the harness asks [Ladder.MayWiden] and [Ladder.Admit];
// [Ladder.MustLand] says when to stop. A refusal is a [*GateError] matching
// [ErrGated] and [budget.ErrRefused], whose Reason is written to be shown to
// the model. The fit gate is [AdmitAt], a pure function of the phase, the
// call's p95 and ceiling and the time left, which a Temporal workflow
// applies as Ladder.Admit does (issue 25).
//
// # The model's note
//
// [Ladder.Note] is the line the model reads at every turn: the time left
// until the deadline and until landing begins, the phase, and what the phase
// forbids. Durations are truncated, never rounded up.
//
// # Results
//
// A run returns a [Result], complete or partial, encoded as the `--json`
// object of `harness run`. Landing is one model call with no tools asking
// for a summary; when that fails or there is no time for it, [Summarize]
// builds a deterministic summary from the run's own [Record]. Every partial
// result carries a [Boundary] such as "Ran out of allotted time at step 14:
// reconciliation done; supplier lookup was in flight and is not included.",
// and [Result.Text] leads with it, so a partial result never reads as
// complete.
//
// A result lists in [Result.Unavailable] the tools the run's config named
// that it could not use, each with why ([Unavailable]): `[]` in JSON when
// there are none. They do not make a result partial; `harness run
// --require-tools` refuses to run with any.
//
// A run whose model answered is complete ([Settle]) unless a write's
// outcome is unknown ([CauseUnsettled]) or it made tool calls none of
// which brought a result ([CauseToolsFailed]): then the answer is kept,
// and the result is partial. A boundary with no call to list says where
// the run was ([Record.Doing]), or that nothing was established.
//
// A sub-agent's call that brought back a partial result is done, but the
// boundary names it by what it brought ([Call.Landed]): "Cancelled at
// step 1: child_a partial (budget), child_b cancelled." The child's
// orphans are its parent's ([Adopt]).
//
// A sub-agent's other rules are here too, as pure functions both hosts
// run (issue 25): its slice and how long its parent waits for it
// ([SliceOf]), what it takes from its parent ([Inherit]), the tool
// message and the parent's call of its result ([ChildMessage],
// [ChildCall]) or of a
// child lost to its parent ([ChildLost]), and which of its records are
// its parent's progress ([ChildWork]).
//
// # Prompts and the landing call
//
// [SystemPrompt] (with a run's instructions first: [System]) and the
// landing call's [Prompt] are the words both hosts send. Whether a landing
// run sends the landing call at all is [ModelEnd.Call]: not to a model's
// server that refused the run, that was mute until its lease or the quiet
// clock cut it, or that asked for a wait the run could not afford; the
// harness then summarizes from the run's record ([Summarize]).
//
// # The run's frame
//
// A [Frame] is a run's time as plain data, built once from its start, B,
// R and F, and the stamp of its records: both hosts, the process's
// Session and the Temporal workflow, perform it and hold no copy of its
// rules (issue 25). [Frame.Clock] reads spent, remaining and available at
// an instant given to it; [Frame.Stamp] stamps a record (ts, run_id,
// parent_run_id, seq, elapsed_ms, remaining_ms, phase, and late_ms on
// run_end) and returns first the phase record of a change the clock made;
// [Frame.MoveTo] records a phase forced ahead of the clock; and
// [Frame.NextWake] is when the host's one phase timer fires. [Backoff] is
// a backoff's record and whether its sleep pauses the quiet clock, and
// the setup step's rules are [Frame.SetupLease], [SetupRefused],
// [SetupEnd] and [SetupAgain]. A Frame reads no clock and starts nothing:
// time is an argument.
//
// # When to land, and how
//
// The landing is a pure part, time given as figures, that both hosts
// perform (issue 25): before each model turn a loop asks [MustLand] (its
// work ended, the ladder is in [Land], or the steps ran out); a turn that
// did not answer lands on [TurnCause] (budget when the time ran out,
// upstream when the model failed); [Plan] says whether the landing call
// is sent — [ModelEnd.Call], and a landing lease of remaining − floor at
// or above the model's p50, within what the caller gives it (a cancelled run
// lands within R of its cancel: the run machine's figures) — with its
// prompt and note, or what the landing record says instead ("no time for
// a landing call: below p50"); [LandCommand.Landed] makes the landing
// record of how the call went; [SummarizeWith] and [Finish] make the
// result and its totals. A reply that is neither a tool call nor says
// anything is [EmptyAnswer].
//
// # Zero values
//
// The zero value of each type is safe. A [Ladder] that [New] did not make
// (zero, or nil) has no budget: it is in [Land], its gates refuse all work
// with a [*GateError], its note has no time left, and no method panics.
// The zero [Config] is valid. The zero [Phase] is [Explore], the rung a
// run starts on; what may be done is asked of a Ladder, never read from a
// Phase alone. The zero [Cause] means the run did not land early, and the
// zero [Result] is not [Complete]: its [Result.Text] reads as partial. A
// zero [Call] has no outcome and appears in no list; a zero [Record]
// summarizes as partial with cause budget. [GateError], [Change],
// [InFlight] and [BudgetReport] are plain data.
//
// # Goroutines
//
// The package starts none. A Ladder reads the clock when asked and is safe
// for concurrent use.
package landing
