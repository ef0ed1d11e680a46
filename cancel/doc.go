// Package cancel makes a remote tool call safe to time out: idempotency
// keys, the cancel and status endpoints of SPEC §5, the reconciliation of a
// write whose attempt timed out, and the durable journal of orphans, the
// calls whose outcome stays unknown.
//
// A timeout abandons work; it does not cancel it. A write that timed out may
// still be running, or may have committed a second after the client gave
// up, and sending it again may do it twice. So a timed-out write is not
// retried: it is cancelled if it can be, and then reconciled by its key,
// and what cannot be learned in time is written down, so that repairing it
// later is a lookup and not archaeology.
//
// # Keys
//
// [NewKey] mints a [Key] once per logical call, before its first attempt,
// and every attempt sends the same one in the Idempotency-Key header, so
// that a tool that already did the work answers with its first outcome.
// Keys are "gp_" and 26 lowercase base32 characters of crypto/rand: unique
// across runs and processes without coordination. [ArgsSHA256] fingerprints
// a call's arguments for the journal without keeping them.
//
// # Cancelling
//
// A tool that can stop a call by its key is a [Canceller]; one that can say
// how a call went is a [StatusReader]. An [Endpoint], a remote tool's base
// URL and name, is both: [Endpoint.Cancel] sends DELETE
// U/tools/{name}/calls/{key} and [Endpoint.Status] reads GET
// U/tools/{name}/calls/{key}. Tools of other kinds bring their own.
//
// [Send] cancels on its own short lease ([CancelLease], a landing lease of
// the run's budget) under context.WithoutCancel, because a cancel is sent
// exactly when the call's own context has ended. Cancelling is not waiting:
// Send returns with the tool's answer to the cancel, not when the call has
// stopped, and a [Group] does not even wait for that answer: [Group.Go]
// returns at once, and the run that owns the group waits for the
// outstanding answers with [Group.Wait] once it has landed, bounded by its
// deadline, so that a hung cancel endpoint costs the landing nothing.
//
// # Reconciliation
//
// [Reconcile] asks a [StatusReader] and turns its answers into a
// [Resolution] by the rules of SPEC §5: done → its output; failed → a failed
// call; 404 → never received, so the caller may send it again with the same
// key; running → ask again after a backoff sleep decided by package budget,
// until it settles; still running when the budget says stop, or the status
// endpoint unreachable → an orphan. Every ask runs on its own work lease
// ([StatusLease]); no sleep is taken that would outlast the budget.
// Reconcile only reads: it never sends the call again.
//
// # Journal
//
// Orphans go to a [Journal], a JSONL file of [Entry] lines that is only
// ever appended to: an entry with state "open" when the run gives up on a
// call, and later one with the settled state for the same key when
// "harness reconcile" learns it. [Journal.Append] writes one line and
// fsyncs it before returning, so a run reports an orphan only once it would
// survive a crash; appends are safe from many goroutines and processes.
// [ReadJournal] reads it back, skipping any line that is not an entry — a
// torn last line that a crash left, a bad line in the middle — and reading
// on, so that one bad line never hides the other orphans; the lines it
// skipped are named in a [*SkippedError] (issue 24). [OpenOrphans] keeps
// the keys whose latest entry is open.
// [DefaultJournalPath] is $XDG_STATE_HOME/glidepath/orphans.jsonl, or
// ~/.local/state/glidepath/orphans.jsonl.
//
// An entry records how to reach the tool again: its URL (a remote tool),
// the tools file that built it (ToolsFile, with Tool its entry's name),
// and its step Kind. [ReconcileJournal] settles what it can of a journal's
// open orphans with the [StatusReader] a caller finds for each entry —
// the way an embedder reconciles the orphans of a tool kind of its own,
// and the way `harness reconcile` does it for the kinds a tools file
// builds: it asks each once, on a lease of one budget, and appends the
// settled state of each that settled. An orphan whose tool no program can
// ask is settled by a person, who checks by hand and appends the state
// they found, marked ByHand. [ReconcileCommand] and [SettleCommand] are
// the harness commands that do either for a journal: a run's boundary,
// `harness orphans` and `harness reconcile` name an orphan's next step
// with them, so that the three name the same one.
//
//	j, err := cancel.OpenJournal(path)
//	if err != nil {
//		return err
//	}
//	defer j.Close()
//	err = j.Append(cancel.Entry{RunID: runID, Tool: "pay", URL: u,
//		IdempotencyKey: key, ArgsSHA256: cancel.ArgsSHA256(args), State: cancel.Open})
//
// # Zero values
//
// A zero value either works or returns an error; none panics, and none
// reads as a settled call.
//
//   - [Group]: ready to use.
//   - [Journal]: the zero Journal has no file; its methods, and
//     [ReconcileJournal] on it, return an error.
//   - [Endpoint]: Client nil is [http.DefaultClient]; an empty URL, Tool
//     or [Key] makes every request a [*RequestError] (unreachable), never
//     a request to another resource whose 404 would read as "never
//     received".
//   - [Status]: the zero Status (State empty) says nothing: [Reconcile]
//     and [ReconcileJournal] take it for an unusable answer, and the call
//     stays an orphan.
//   - [Entry]: [Journal.Append] refuses one without IdempotencyKey or
//     State; a zero TS is stamped now. Fields an old line lacks are empty.
//   - [Settlement]: Recorded false is an orphan still open.
//   - [Resolution]: made by Reconcile; State empty means no ask was
//     answered.
//
// # Goroutines
//
// The package starts none but those of a [Group], one per cancel in flight,
// each ended by its answer or its lease, which never outlasts the run's
// deadline, and those of [ReconcileJournal], at most [SettleParallel]
// status asks, which it waits for before it returns. Every other call blocks until it is done, bounded by its
// context and lease; the caller owns any concurrency. A [Journal] is
// safe for concurrent use.
//
// # Errors
//
// A status or cancel request that got no usable answer is a
// [*RequestError] matching [ErrUnreachable]: a transport error, the end of
// its lease, a 5xx or other unexpected status, or a malformed answer. A
// cancel answered 404 matches [ErrUnknownCall] instead. A call still running
// when reconciliation had to stop has a [Resolution.Err] wrapping
// [ErrStillRunning]. A lease the budget refused is a
// [*budget.RefusedError]. A journal line that is not an entry is a
// [*LineError] matching [ErrBadJournal], naming the file and line; the
// lines [ReadJournal] and [ReconcileJournal] skipped are a [*SkippedError]
// of them, returned beside whole results. An
// orphan [ReconcileJournal] found no way to ask has a [Settlement.Err]
// matching [ErrNoStatusReader]. Error
// messages never carry a URL's password.
package cancel
