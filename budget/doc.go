// Package budget is the time of one agent run: a single deadline on the
// monotonic clock, out of which every attempt's timeout and every backoff
// sleep is leased.
//
// Durations do not compose; an instant does. Two calls with five-second
// timeouts can take eleven seconds together without either breaking its
// contract, but every step that asks "how much is left before D?" gets an
// answer that already counts what the earlier steps spent. So a run decides
// its deadline once, in [New], and everything downstream derives its limits
// from what remains. All of Glidepath's time arithmetic lives here; other
// packages ask this one how long they may wait.
//
// # Budget
//
// A [Budget] has a total B, a deadline D = start + B written once, a reserve
// R kept for landing ([DefaultReserve]: max(10%·B, min(20s, 25%·B))) and a
// floor F (default 50ms) below which nothing starts. [WithBudget] puts it in
// a context that ends at D with cause [ErrDeadline].
//
// # Leases
//
// An attempt's configured timeout is a ceiling, not a value. [Budget.Lease]
// grants min(ceiling, remaining − R − F) and refuses, before any I/O, when
// that is not positive or is below the p50 latency known for the step's
// [Kind]: a call that cannot finish is not worth starting, since it still
// costs a connection, a rate-limit slot and often money. The refusal is a
// [*RefusedError] matching [ErrRefused] that names the rule and the time
// left. [Budget.LandingLease] may spend the reserve: min(ceiling,
// remaining − F). [Lease.Context] bounds the attempt; its [context.Cause] is
// [ErrLeaseExpired] when the ceiling ended it and [ErrDeadline] when the
// run's time did. [Grant] is the same policy as a pure function.
//
// # Latency estimates
//
// [Estimates] keeps, per step kind, the p50 and p95 a step declares and,
// once there are enough, those of its last 64 observed durations, in fixed
// memory. Reading an estimate is one atomic load. The rule itself is
// [Latency], a pure value with no lock, which a [Kind] hosts for a process
// and a Temporal workflow keeps in its state, so that both refuse a lease
// below the same p50 (issue 25).
//
// # Backoff
//
// Sleeping is spending. [Backoff] is full jitter: uniform(0, min(cap,
// base·2^(n−1))), 250ms and 8s by default. A server's retry-after-ms or
// Retry-After ([ParseRetryAfter]) replaces it as the earliest retry, with a
// spread of full jitter after it ([Backoff.Spread]: at most the server's
// wait, the backoff's ceiling and what the budget has left), so that a
// fleet turned away at one instant does not come back at the next in one
// burst. [Budget.NextDelay] decides
// before sleeping: when the sleep would reach past available − F, the retry
// could not get a lease anyway, so it gives up now, without sleeping, with
// reason [BackoffExceedsBudget] or [RetryAfterExceedsBudget]. [Decide] is the
// same rule as a pure function.
//
// # Across processes
//
// A monotonic instant means nothing in another process. The deadline travels
// as remaining milliseconds in the [Header] Budget-Remaining-Ms, set to the
// attempt's granted lease ([FormatRemaining]); the receiver turns it back
// into a local deadline on arrival with [Receive], clamped to its own limit,
// and rejects a malformed value with a [*HeaderError].
//
// # A caller's deadline
//
// A run embedded under a caller's context whose deadline comes before
// start + B must land inside it: [Budget.Shorten] returns the budget that
// started with b and ends at that deadline, its reserve taken from the
// time it really has, written once like any other.
//
// # Arithmetic
//
// Sums of durations that must never wrap, such as a worst case added up
// from many ceilings and sleeps, use [AddSat] and [MulSat], which saturate
// instead. [Budget.Read] gives spent and remaining from one reading of the
// clock, and [Budget.Until] how long until a point of the run: other
// packages ask these rather than do arithmetic on instants themselves.
// Spent is the time that really passed, even past the deadline (a stopped
// process, a starved machine): it is never capped at Total, so a late run
// reads as late (SPEC §3); remaining never goes below zero.
//
// # Setup
//
// The work a run does before its first model turn — a tool server's
// manifest, an MCP server's connect — is leased like any other, with one
// ceiling for every piece: [SetupCeiling], what the piece asks for of its
// own, else the smaller of [DefaultSetupCeiling] (5s) and a quarter of the
// work time B − R ([Budget.SetupCeiling]). The pieces go at once, so one
// mute server, or several, cost a run a quarter of its work time at most.
//
// # Sub-agents
//
// [Budget.Slice] carves a child budget out of the parent's available time,
// never a fresh one, leaving the parent what it keeps to use the answer:
// min(want, remaining − reserve − keep). It is two steps, which a caller
// that records its attempts takes apart: [Budget.SliceLease] grants the
// slice as a [Lease], the attempt that runs the child, and [Budget.Child]
// makes the child's budget from it, ending when the lease does, with a
// reserve of its own. The arithmetic is [SliceGrant] (and [SliceKeep]), a
// pure function of durations that a Temporal workflow applies too.
//
// # Timers
//
// A host's timers may fire late: a Temporal server holds a new timer back
// by up to its timer resolution (timerProcessorMaxTimeShift, 1s by
// default; issue 26). The rules count that resolution once, as data the
// host passes: a lease that must end by the deadline is granted from
// [Armable] time (remaining − resolution), so that its timeout, late by
// the resolution, still fires in time; and a backoff sleep shorter than
// the resolution costs the resolution ([Backoff.Cost]), which the give-up
// test counts. In process the resolution is zero and nothing changes.
//
// # Errors
//
// Refusals match [ErrRefused], bad headers [ErrBadHeader], bad Retry-After
// values [ErrBadRetryAfter], bad configuration [*ConfigError]. Parsers never
// panic on any input.
package budget
