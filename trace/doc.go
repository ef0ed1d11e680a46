// Package trace is the vocabulary of a run's record: the words in which
// every attempt of an agent run, a model turn or a tool call, says how it
// ended (SPEC §6). The model client and the tools speak it alike, so an
// attempt reads the same whatever its step.
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
package trace
