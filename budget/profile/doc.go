// Package profile is a machine's latency profile: per step kind ("model",
// "tool:search", "agent:researcher") and the place it ran against (the
// model's name and server, the tool's URL, command or MCP server), the
// durations of its recent attempts and the date of each, kept in a file, so
// that a new run starts from this machine's own p50 and p95 instead of
// cold (SPEC §5b); and, apart, the attempts a quiet clock cut, so that a
// new run does not cut again, at the same silence, a call it now knows
// takes longer (issue 27).
//
// A kind's history is kept apart for each place because it says nothing
// of another: a model whose p50 is 2s on a real API must not refuse the
// calls a run makes to the simulated one, nor a tool server's latency
// another server's.
//
// Without it every run starts with no estimate for the model, so the p50
// refusal and the p95 fit gate of package budget and package landing never
// apply to its first calls: a run admits a call its predecessors could have
// told it cannot finish.
//
// # Seeding
//
// A run [Load]s the profile once, at start, and [Profile.Seed]s its
// [budget.Estimates] with it, saying where it will call each kind: for
// each kind with observations at that place less than [MaxAge] (7 days)
// old, their nearest-rank p50 and p95 are declared on the kind
// ([budget.Kind.Declare]). They stand until the run has observed
// enough attempts of its own, as any declared estimate does; a later
// Declare of the same kind replaces them. [Profile.Summary] gives the same
// numbers, with the count and dates, for printing.
//
// For each kind with cuts at that place as fresh, Seed also teaches the
// kind the longest ([budget.Kind.Learn]): the run allows each call of the
// kind at least twice that silence on its quiet clock, capped by its
// maximum silence (watchdog.Expected.Allowance). A cut says only that the
// call takes at least that long, so it never counts in the p50 and p95:
// those rest on the attempts that finished alone, as the run's own
// estimates do ([budget.Kind.Observe]).
//
//	p, err := profile.Load(path)
//	if err != nil {
//		log.Print(err) // reported, never fatal: p is then empty
//	}
//	p.Seed(est, func(kind string) string { return where[kind] }, time.Now())
//
// A run whose estimates live elsewhere (a Temporal workflow's, which its
// caller hands them in its input) takes the same durations as a map by
// kind from [Profile.Durations], and the longest cuts from
// [Profile.Learned].
//
// # Recording
//
// At its end the run [Record]s what it observed: one [Observation] per
// attempt that finished, made with [Attempt] from the attempt's kind,
// place, start and end, or as a literal; and one per attempt a quiet clock
// cut, made with [CutAttempt] ([Observation.Cut] set).
//
//	obs := []profile.Observation{profile.Attempt("model", "gpt-5 @ api.openai.com", start, end)}
//	err := profile.Record(ctx, path, obs, time.Now())
//
// A [Sink] makes them from the run's trace records, as they are recorded
// or all at once from a finished run's trace.
//
// Record merges the observations into the file, drops those not less than
// MaxAge old (a provider's latency drifts), and keeps the file bounded: the
// [MaxPerKind] most recent observations and the [MaxCutsPerKind] most
// recent cuts of each place, and the [MaxKinds] places observed or cut
// most recently, under 3 MiB. Observations and cuts already in the file
// are not added twice.
//
// # Concurrent runs
//
// Runs that record into one profile at once, in one process or in many,
// lose none of each other's observations and never corrupt the file.
// Record holds an exclusive advisory lock (flock) on path + ".lock", a file
// that is never replaced, across its read, merge and write, and waits for
// it until its context ends. The kernel drops the lock of a process that
// dies. Readers take no lock: they see the old profile or the new one.
// On systems without flock (Windows), the lock excludes only the other
// goroutines of the process.
//
// # Atomic writes
//
// Record writes the merged profile to a temporary file in the same folder
// (path's name + ".tmp-" + a random suffix), syncs it, renames it onto
// path and syncs the folder. A crash at any point leaves the old profile or
// the new one; the temporary file it leaves behind is never read, and the
// next Record removes it (where its lock excludes other processes, which
// could otherwise be about to rename theirs).
//
// # File
//
// The profile is one JSON object, version 2, with one line per place, per
// observation and per cut: places in order of kind, then place, each one's
// observations ("obs") and then its cuts ("cuts", left out when there are
// none) oldest first, "at" the date in RFC 3339 (UTC, nanoseconds) and
// "ns" the duration in nanoseconds.
//
//	{"version":2,"places":[
//	{"kind":"model","where":"sim (embedded)","obs":[
//	{"at":"2026-05-04T09:12:44.5Z","ns":812000000},
//	{"at":"2026-05-04T09:12:47Z","ns":1430000000}],"cuts":[
//	{"at":"2026-05-04T09:10:02Z","ns":1000000000}]},
//	{"kind":"tool:search","where":"builtin search","obs":[
//	{"at":"2026-05-04T09:12:45.9Z","ns":120000000}]}
//	]}
//
// A missing or empty file is an empty profile. Fields other than these are
// ignored: a file written before cuts were kept loads as it is, and an
// older version of this package reads a newer file, without its cuts. A version 1 file (one pool per kind, "kinds" instead of
// "places") is read as placed nowhere: it seeds no run, [Profile.Summary]
// shows it with an empty place, and the next Record drops it.
//
// # Errors
//
// A file that is not a profile (not JSON, another version, an observation
// or a cut without a date or with a negative duration, more than 16 MiB) is a
// [*CorruptError] that names the file and what is wrong, matching
// [ErrCorrupt]. [Load] returns an empty profile with it, so that the caller
// reports the error and goes on cold: a broken profile is never fatal.
// Record keeps a corrupt file as path + ".corrupt" and replaces it.
//
// # Goroutines
//
// The package starts none. Record blocks until the profile is written or
// its context ends; a [Profile] does not change once loaded and is safe
// for concurrent use. Time is passed in, never read: every call that asks
// what is fresh takes now.
package profile
