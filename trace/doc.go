// Package trace is the vocabulary of a run's record: the words in which
// every attempt of an agent run, a model turn or a tool call, says how it
// ended (SPEC §6). The model client and the tools speak it alike, so an
// attempt reads the same whatever its step. It also writes a run's trace,
// one record per line, and sums up many traces in a report.
//
// # Outcomes
//
// Every attempt ends with an [Outcome]: [OK]; [GaveUp] (our lease or the
// run's deadline ended it); [UpstreamError] (a 5xx, a transport error, a
// stream cut short, a failure the other side reported); [RateLimited]
// (429); [Invalid] (another 4xx, an answer that cannot be used); [Quiet]
// (the run's quiet clock fired); [Cancelled] (the run was cancelled). The
// record keeps "we gave up" apart from "they failed": [Outcome.Ours]
// reports which side an outcome is on, since a budget that ran out says
// something else about a run than a server that failed it.
//
// The outcome is read off what ended the attempt. [OutcomeOfStatus] maps an
// HTTP status; [OutcomeOfContext] reads an attempt context's cause, as
// package budget and the watchdog set it (a lease, the deadline, the quiet
// clock, the wall, a cancellation):
//
//	actx, stop := lease.Context(ctx)
//	defer stop()
//	if err := send(actx); err != nil && actx.Err() != nil {
//		return &trace.AttemptError{Step: "model", Attempt: n,
//			Outcome: trace.OutcomeOfContext(actx, watchdog.ErrQuiet), Err: context.Cause(actx)}
//	}
//
// [Retryable] says whether SPEC §2 lets a failed attempt be tried again:
// transport errors, 408, 429, 500, 502, 503, 504 ([RetryableStatus]) and
// per-attempt timeouts; never an attempt cut by the run's own end.
//
// # Observing
//
// The model client and the tools report what their calls do to an
// [Observer], in one vocabulary: every physical request is an [Attempt]
// (its step kind, key, number, lease, times, outcome, keepalives, chunks,
// tokens), every retry decision a backoff, every refusal, cancel,
// reconciliation and orphan a callback of its own, and every sign of life
// a [Signal], named as the watchdog names it (a tool call issued, a result
// returned, a model message completed, a progress heartbeat with its
// units, a keepalive, a token). The run turns them into records and
// watchdog events, in one place: one [Listener] per turn and call, a
// value whose methods are the callbacks, rather than a closure each.
//
// # Records
//
// A run's trace is JSONL, one [Record] per line (SPEC §6). A [Recorder]
// stamps one run's records once — the time (RFC 3339 with nanoseconds,
// UTC), the run's ID, a seq that counts up from 1, the budget spent and
// remaining in whole milliseconds, read from the run's [budget.Budget] in
// one reading, and the phase of that instant — and hands each to any
// number of [Sink]s, each in seq order: [JSONL] writes the trace file,
// and a live status line, spans or logs are sinks too. The caller sets the [Event]
// and the fields that event carries. Attempt records carry the granted
// lease, the Budget-Remaining-Ms the attempt sent:
//
//	rec := trace.NewRecorder(runID, b, func(spent time.Duration) string { return ladder.Peek(spent).String() },
//		trace.NewJSONL(file)) // each record in the file before the next one
//	rec.Record(trace.Record{Event: trace.AttemptStart, Step: "tool:search", StepIndex: 3,
//		Attempt: 1, GrantedMs: lease.Granted.Milliseconds(), Key: key})
//	err := rec.Flush() // the first error of any sink
//
// A Recorder is safe for concurrent use. [Recorder.Record] stamps a record
// and hands it to the sinks in seq order (see # Sinks): seq, ts and
// elapsed_ms all increase down every sink. [Stamp] is that stamp as a pure
// function of the instant given; a run's frame (landing.Frame), which
// both harness run and a Temporal workflow stamp their records with,
// stamps by it and hands each record on with [Recorder.Write]. A sink's error does not stop
// the records; the Recorder keeps each sink's first ([Recorder.Err]).
// JSONL is safe to share between recorders (a
// child run's records go to its parent's trace), and its encoder,
// [AppendJSON], uses no reflection and allocates nothing into a buffer
// with room: a record costs a fraction of the microsecond SPEC §7 allows.
// A sub-agent's records carry its parent's run id (parent_run_id), and
// its run_start the idempotency key of the call that ran it, in-process or
// in another process: that is how a report finds a child inside its
// parent's step. A backoff record marked reconciling is a wait between
// two status asks of a write being reconciled: time spent, no retry.
// A model attempt's end carries the tokens its answer reported:
// input_tokens and output_tokens and, within them, cached_tokens (input
// read from the provider's cache) and reasoning_tokens, where the server
// said them ([Usage]; [Usage.Cost] is what package cost prices).
// It leaves out zero fields
// except those every record carries (ts, run_id, seq, event, elapsed_ms,
// remaining_ms, phase), those of attempt records (step, step_index,
// attempt, granted_ms, resend_count) and those that make an event what it
// is, such as a backoff's sleep_ms and source; it escapes strings exactly
// as encoding/json does. [ReadRecords] reads a trace back, skipping and
// naming the lines that are not records (a torn last line among them).
//
// # Time
//
// elapsed_ms is the time that really passed since the budget began, even
// past the deadline (a stopped process, a starved machine, a sink or an
// exporter that blocked): it is never capped at the budget; remaining_ms
// stays at zero then. A run_end stamped after the deadline carries
// late_ms, the whole milliseconds it is late ([Record.LateMs]), and the
// report counts such runs ([Report.Late]). Time is never rounded in the
// run's favour (SPEC §3).
//
// # Sinks
//
// What a user plugs in cannot move the end of a run (SPEC §3). The rules:
//
//   - A [Sink] is never called under the Recorder's lock, nor on the
//     run's path: each has a queue of [QueueLen] records and a goroutine
//     of the Recorder's that hands it the records, in seq order. A record
//     that finds the queue full is dropped and counted, so a slow or
//     blocked sink costs the run nothing.
//   - A sink that panics is recovered where it is called, switched off
//     (never called again) and reported with its panic and stack: a
//     [*SinkError] matching [ErrSinkPanicked]. One that fell behind is a
//     [*SinkError] matching [ErrSinkBehind], with the count of records it
//     did not get. Both are in [Recorder.Err] and [Recorder.Flush];
//     `harness run` prints them on stderr and exits 1, since the run's
//     record is not whole.
//   - [Recorder.Flush] waits for the queued sinks at most [FlushGrace]
//     after run_end (the instant the run's result exists) and not past
//     the deadline — but at least 5ms, so that a sink that keeps up gets
//     the last records of a run that ended late — then drops and counts
//     what they have not taken. A result is held by the sinks for no more
//     than that grace.
//   - No goroutine outlives the run: a queue's goroutine runs only while
//     it has records and ends when it is empty; after Flush's bound, the
//     only one left is one whose sink has a record in hand, and it ends
//     when that call returns, handing over nothing more. [Recorder.Wait]
//     waits for them.
//   - The trace file loses nothing: a [*JSONL] is called on the run's
//     path, in order, and hands each record to the file in one write, which
//     a regular file's page cache takes without waiting on a disk or a
//     peer: every record is in the file before the run's next step, so a
//     process killed at any instant leaves the trace up to that instant
//     (issue 24; records are not fsync'd, see [JSONL]). So
//     is a [ContextSink], which must give the run an attempt's context
//     before the attempt is sent; it must not block (spans.Sink starts
//     and ends spans, and the SDK's batch processor exports them off the
//     path, from a bounded queue). These, too, are recovered if they
//     panic and switched off.
//
// # Zero values
//
// Every exported type's zero value is safe. A zero [Recorder] stamps run
// "" with zeros for time and has no sinks. A zero [JSONL] has no writer:
// its Record returns [ErrNoWriter] (make one with [NewJSONL]). A zero or
// nil [*Observer] hears nothing. A zero [Record] is a record with no
// event; a zero [Outcome] is none of the vocabulary, counted apart by the
// report. A zero [Report] is the report of nothing, and [Summarize] of no
// records is one. A zero [AttemptError] or [GaveUpError] formats and
// unwraps to nil.
//
// # Report
//
// [Summarize] turns the records of many runs, from one trace or many, into
// the [Report] that `harness report` prints. Records are grouped by run ID
// and ordered by seq, so a run may be spread over files:
//
//	recs, err := trace.ReadRecords(file)
//	if _, skipped := errors.AsType[*trace.SkippedError](err); err != nil && !skipped {
//		return err // the file could not be read; a bad line only costs itself
//	}
//	rep := trace.Summarize(recs)
//	for _, e := range rep.Exhausted {
//		fmt.Printf("%s ran out: step %d (%s) spent %dms\n", e.RunID, e.StepIndex, e.Step, e.Ms)
//	}
//
// Utilization is spent/total per finished run, as p50, p90 and p99 by the
// nearest-rank method. Time by step kind ("model", "tool:NAME",
// "agent:NAME") is the duration of each attempt, from its attempt_start to
// its attempt_end, plus each backoff sleep, counted for the step its
// record names or else for the attempt before it; a backoff that gave up
// slept nothing, and an attempt the trace never ended runs until the run's
// last record. A run that ran out of budget is pinned on the step, one
// model turn and the calls it asked for, that spent the most of its clock
// (calls that ran in parallel spend it once), not on the one that happened
// to hold the budget when it ran out; landing spends the reserve and
// counts for neither. Outcomes keep "we gave up" apart from
// "they failed", as [Outcome.Ours] does.
//
// A sub-agent's run is not a run of its own in the report: its time is
// its parent's agent step, already counted, so it is summed up apart, by
// that step ([Report.SubAgents]: how the children ended, the slices they
// got, what they spent them on), while its attempts, cancels,
// reconciliations and orphans count with every other.
//
// # Errors
//
// A failed attempt is an [*AttemptError] naming its step ("model",
// "tool:search"), its number, outcome and HTTP status, with the answer's
// headers for Retry-After; it matches [ErrGaveUp] for our outcomes and
// [ErrFailed] for theirs, and unwraps to the underlying error or the cause
// that ended it. Retries stopped because the next backoff sleep would
// outlast the budget end with a [*GaveUpError], which matches [ErrGaveUp]
// and unwraps to the last attempt's error. So a caller asks one question
// of any failure of a step:
//
//	if errors.Is(err, trace.ErrGaveUp) {
//		// our time, the quiet clock or a cancellation ended it
//	}
//
// A line of a trace that is not a record is skipped by [ReadRecords],
// which reads the rest and returns a [*SkippedError] with a [*LineError]
// for each line skipped, naming it and why; both match [ErrBadRecord].
package trace
