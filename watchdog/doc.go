// Package watchdog watches one agent run with two clocks: a quiet clock
// that only semantic events reset, and the hard wall.
//
// A read timeout asks "did any bytes arrive lately?". For an agent that
// stopped being a fair proxy for "is it still getting somewhere?": an SSE
// stream that sends a comment every fifteen seconds never trips it, however
// dead the work behind it, and a model can stream tokens at full speed while
// the run goes nowhere. So the watchdog listens to what a reader of the
// trace would call an event, and to the wall, which no amount of activity
// moves.
//
//	w, ctx, err := watchdog.Start(parent, watchdog.Config{
//		Quiet:      60 * time.Second,
//		QuietAfter: map[watchdog.Event]time.Duration{watchdog.ModelCall: 3 * time.Minute},
//		Wall:       b.Deadline(),
//	})
//	if err != nil {
//		return err
//	}
//	defer w.Stop()
//	w.Mark(watchdog.ToolCall)
//	w.Progress(key, 3) // true: the call's units went up
//	w.Keepalive()      // counted, resets nothing
//
// # Quiet clock
//
// The quiet clock is reset by the semantic events of SPEC §3, marked with
// [Watchdog.Mark] or [Watchdog.Progress]: a tool call issued ([ToolCall]),
// a tool result returned ([ToolResult]), a model message completed
// ([ModelMessage]), a checkpoint written ([Checkpoint]) and a progress
// heartbeat whose units strictly increased ([Progress]), plus a model
// request sent ([ModelCall]), the model's counterpart of a tool call issued.
// Keepalives and pings ([Watchdog.Keepalive]), streamed tokens
// ([Watchdog.Token]) and heartbeats that repeat or lower their units
// ([StaleProgress]) are counted, with the time of the last one, and never
// reset it. Mark a call once per logical call, not per attempt, so that
// retries against a dead endpoint do not pass for progress.
//
// Each semantic event of kind k at time t opens a quiet window [t, t+Q(k)),
// where Q(k) is [Config.QuietAfter][k], or [Config.Quiet] (60s by default)
// when it has none; [Start] opens the first window, of Quiet. The run has
// stalled when every window has closed: the one quiet deadline is the
// latest end of any window opened so far. With a single Q this is the usual
// "last semantic event + Q". With several, a longer wait for a model's reply
// (QuietAfter[ModelCall]) is not cut short by a tool result that arrives
// meanwhile from a parallel call: a short window never shortens a long one.
// Detection is exact: the clock fires at the deadline, on a timer, and not
// at the next poll. An event at or after the deadline is too late; it is
// counted, but the run has stalled, whether or not the timer has run yet.
//
// A wait the run itself chose — a backoff sleep, a server's Retry-After —
// is not silence: [Watchdog.Pause] stops the quiet clock for its length,
// and the clock resumes with the quiet time it had left. An event during
// the pause opens its window at the event: the resume keeps whichever ends
// later. The wall still runs.
//
// # Holds
//
// A call the run knows to be slow is not silence either (issue 27): a
// reasoning model thinks for a while before its first token, a tool works
// silently for as long as it usually takes. [Watchdog.Begin] tells the
// clock of a call in flight with its allowance E ([Call]): 2 × the p95 of
// its kind at its place, or a silence its entry states, at most its
// ceiling, its lease and [Expected.Max] ([Expected.Allowance]). While the
// call is in flight the clock does not fire before E has passed since the
// call's start (or a model call's last progress): a tool is held until
// its first progress whose units grew; a model call only once its
// server's headers came ([Watchdog.Headers]), so that a server that
// never answers is still caught at Q. [Watchdog.End] ends the call and
// its hold. A hold resets
// nothing and opens no window: a hang is caught within max(Q, E) of the
// later of the last semantic event and the call's start, and never past
// the wall. The stall names the silent call ([StallError.Call]).
//
// [Config.Mode] says what a stall does: [Enforce] ends the run; [Warn]
// hands it to [Config.Warn] and runs on, warning again only after an
// event or a hold moves its deadline; [Off] never fires.
//
// # Clock
//
// The rules above are [Clock]'s, a pure value: no goroutine, no timer, no
// lock, no reading of the time. A host tells it what happened and when
// ([Clock.Heard], [Clock.Progress], [Clock.Pause], [Clock.Resume]), arms
// one timer for [Clock.Next] and calls [Clock.Fire] when it rings. The
// [Watchdog] is the in-process host; package temporal/durable's workflow
// is the other, with one workflow timer, so that a run stalls at the same
// instant on both (issue 25).
//
//	c, err := watchdog.NewClock(watchdog.Config{Quiet: time.Minute}, now)
//	c.Heard(watchdog.ToolCall, now)
//	next, ok := c.Next() // arm one timer for next, if ok
//	// … when it rings, at now:
//	if stall, fired := c.Fire(now); fired {
//		// the run has stalled: stall says after what
//	}
//
// # Progress
//
// Heartbeats are tracked per source, the call's idempotency key, so that
// "units increased" means this call's units. A source's units start at
// zero, so its first heartbeat counts once it says some work is done, and a
// retry that counts again from the start is not progress until it passes
// what the call reached before. This is the one check of "units strictly
// increase" in Glidepath: tools report every heartbeat they hear, and the
// run asks the watchdog. [Watchdog.End] forgets a source when its call ends, which
// keeps the state as small as the set of calls in flight; [Watchdog.Stop]
// forgets them all. Every recording method is O(1), takes one short lock
// that is never held across a wait, and does not allocate, except
// [Watchdog.Progress] meeting a source for the first time.
//
// # Hard wall
//
// [Config.Wall] is the run's deadline D, computed by package budget and
// passed in as a value (budget.Budget.Deadline): the watchdog does no
// deadline arithmetic of its own and never moves the wall. The run context
// ends at the wall with [context.DeadlineExceeded] and cause [ErrWall],
// however many events keep coming. When the parent context's deadline comes
// at or before the wall, as it does under budget.WithBudget, which carries
// the same deadline, the watchdog arms no wall of its own: the parent ends
// the run context then, with its cause (budget.ErrDeadline), which names
// the wall too.
//
// # Hosts
//
// [Start] makes the run's context. A host that makes it itself, from its
// caller's, and has a clock of its own to wake — the harness, whose
// ladder changes phase at set points of the budget — uses [Watch]
// instead: the watchdog ends the host's context through [Host.End], and
// its one timer rings for the quiet clock, for the wall and for
// [Host.Wake], so that a run holds one context and one timer, not a
// context and a timer per clock (issue 25 item 6). At the wall the cause
// is [ErrWall], which the host may name in its own words.
//
// # Ties
//
// When the quiet deadline and the wall are the same instant, the wall wins:
// the cause is [ErrWall]. This is decided in code, not left to the order in
// which two timers due together happen to run (which is random, in
// production and under testing/synctest alike): no quiet timer is armed for
// a deadline at or past the wall. A quiet deadline one nanosecond before the
// wall fires as a stall.
//
// # Goroutines
//
// The watchdog starts no goroutine of its own. The quiet clock is one
// [time.AfterFunc] timer, armed for [Clock.Next] and, since events only
// push the deadline later, re-armed lazily when it fires early rather than
// reset by every event; under [Start] the wall is the timer of a
// [context.WithDeadlineCause] context, or the parent's own, and under
// [Watch] the same one timer, armed for the earliest of the three.
// [Watchdog.Stop] stops them and ends the run context; a timer callback
// that had already started then returns without effect. Call Stop when the
// run ends, as with a CancelFunc.
//
// # Errors
//
// The run context's cause says why it ended: a [*StallError] matching
// [ErrQuiet] (which reports the last semantic event, how long before the
// stall it happened, and the window that ran out), [ErrWall], [ErrStopped],
// or the parent's cause. Read it with [context.Cause]; ctx.Err() stays
// standard. [Start] and [Config.Validate] reject a negative quiet period,
// or a QuietAfter entry for a kind that is not semantic, with a
// [*ConfigError] naming the field.
package watchdog
