package durable

import "go.temporal.io/sdk/workflow"

// RulesVersion is the version of the run's rules — the commands a run's
// workflow makes for what it sees: which attempts, on which leases, which
// timers, when it lands — that this build's [Workflow] runs. Every run
// records it in its history at its first workflow task (a marker of
// workflow.GetVersion under [RulesChange], Temporal's patching API; the
// server also keeps it in the TemporalChangeVersion search attribute).
//
// Bump it with every change that alters those commands, and record the
// histories of testdata again (make temporal-histories): the replay tests
// fail on a history of another version, and on a history of this version
// that no longer replays, with a message that says so (issue 25, item 5).
//
// It lives here, not in a package of the core, because the workflow is
// what records and checks it: a rule changed in the core (budget,
// landing, tools, watchdog) changes the workflow's commands, and the
// replay tests of this package are what see it.
//
// Versions: 1, the rules as this package repeated them; 2, the core's own
// rules driven from here (issue 25: the tool call's machine, the quiet
// clock, the model's estimate, the fit gate, the landing choice, the
// boundary's words, the cancels' grace), with the activities' new replies;
// 3, the run driven by the core's machines (issue 25: the run machine, the
// model turn's, the frame, the call's gate and ending, the sub-agent's
// rules): a model attempt cut by its lease is not tried again, a refused
// turn is no step, a cancelled run lands within R of its cancel, a
// backoff of zero pauses nothing, a child's last signal is bounded;
// 4, the host reads a Temporal error once and the core words it (issue
// 25): the waits for an attempt and for the cancels' grace are awaits,
// not selectors, a sub-agent's task is read before any I/O
// (landing.ChildTask), the records are trace's builders';
// 5, a tool call is driven by tools.DriveCall (issue 25): a reconciliation's
// give-up is numbered by its asks, and a tool's p50 and p95 are learned
// from its calls that end ok, as in process, so a call the declared
// figures admitted may be refused;
// 6, a sub-agent's call teaches its kind, a tool whose p50 is above its
// ceiling is not offered (tools.Usable, issue 25), Input.Profile warms
// the estimates, the setup records the worker's toolset and refuses a
// worker that states none, a request that Temporal could not carry is
// not sent, Input.Spent starts the budget before the run's start, an
// orphan is journaled whatever the time left, and a land
// signal ends the run's work as a cancellation does (issue 26);
// 7, a run reads once whether its namespace has Glidepath's search
// attributes (a local activity) and upserts them at its start, at each
// change of phase and at its end, and its leases, backoffs and landing
// count Input.TimerResolution (issue 26);
// 8, a run continues as new at a turn's start when Temporal suggests it
// or its history passes Input.ContinueAt, carrying its state (Input.Carry,
// carry.go), and the contexts a cancellation ends together (the run's
// watch, sub-agents side by side) are cancelled in a fixed order
// (cancel.go, issue 26); a tool call repeating an earlier turn's with the
// same result is no semantic event, and MaxRepeats of them land the run
// stuck (the run machine's rule, issue 27);
// 9, each call in flight holds the quiet clock for its allowance of
// silence (2 × its kind's p95, Input.MaxSilence, Input.Learned; the
// watchdog's holds), so that the clock's timer is armed for a hold's end
// and again, earlier, when the hold ends; a model turn whose allowance
// holds (or a warning could name) asks its worker to signal its server's
// headers; Input.QuietMode warn records a quiet_warning and goes on; a
// model's reasoning summaries on the Responses API are progress (issue
// 27);
// 10, a model call's allowance counts from its start, not from its
// headers, and again from each reasoning summary; the headers signal
// names its turn, and another turn's is dropped (issue 27).
const RulesVersion workflow.Version = 10

// RulesChange is the change ID under which a run's history records
// [RulesVersion].
const RulesChange = "glidepath.rules"

// recordRules records the rules version of a new run, and checks it on a
// replay: a run started under other rules (or before they had a version)
// fails its workflow task rather than go on under rules it was not
// started with.
//
// In a fleet that check is a last guard, not the way runs meet builds:
// every run is pinned to the build that started it (Temporal's Worker
// Versioning, deploy.go), a build being its rules ([BuildID], "rules-10"),
// so that a worker of other rules is never handed the run at all. Worker
// Versioning was chosen over failing such a run at once (issue 26, item
// 4) because it keeps the run: a run whose build has no worker left waits
// for one rather than end, lands by its deadline if one comes back, and
// is ended by its execution timeout (D + [Overrun]) if none does, with no
// task retried meanwhile; new runs go to the build made current, so a
// deploy is starting workers of the new build, and a drain is keeping one
// of the old build for the longest budget. It is on by default in the
// server this module builds (1.32), temporaltest and harness-temporal dev
// included, and the tests of deploy.go run two builds on one queue. A
// worker built without [Deployment] is unversioned; meeting a
// run of other rules it fails the task, which Temporal retries until the
// execution timeout ends the run.
func recordRules(ctx workflow.Context) {
	workflow.GetVersion(ctx, RulesChange, RulesVersion, RulesVersion)
}
