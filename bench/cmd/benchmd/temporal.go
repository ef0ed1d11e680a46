package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The Temporal benchmarks live in the nested module temporal/ (package
// temporal/bench), which this command must not import: the root go.mod
// has no go.temporal.io requirement (SPEC §9). The section builds their
// test binary there, once, runs it twice and reads its `go test -bench`
// output like any other.
const (
	temporalDir       = "temporal"
	temporalStepTimes = "30x"  // runs per arm of BenchmarkStepOverhead
	temporalRuns      = "1000" // the fleet's runs (SPEC §7)

	// temporalLagNote is the start request's wait for a run's first
	// workflow task past which the report names it as a loss: the wait
	// is spent from the run's budget (its B counts from the start
	// request), time its work does not get.
	temporalLagNote = 50 * time.Millisecond
)

// temporalSection measures SPEC §7's last bullet: the harness's overhead
// per step against a plain Temporal workflow making the same activity
// calls, and a fleet of 1,000 runs over two worker processes, one
// SIGKILLed mid-run and replaced by a worker of the next build
// (temporal/bench's doc says how).
func temporalSection(ctx context.Context, r *report) error {
	dir, err := os.MkdirTemp("", "benchmd-temporal-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "bench.test")
	build := exec.CommandContext(ctx, "go", "test", "-c", "-o", bin, "./bench")
	build.Dir = temporalDir
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("cd %s && go test -c ./bench: %v\n%s", temporalDir, err, out)
	}
	step, c1, err := temporalBench(ctx, bin, nil, "^BenchmarkStepOverhead$", temporalStepTimes)
	if err != nil {
		return err
	}
	fl, c2, err := temporalBench(ctx, bin, []string{"GLIDEPATH_BENCH_RUNS=" + temporalRuns}, "^BenchmarkFleet$", "1x")
	if err != nil {
		return err
	}
	s, f := find(step, "StepOverhead"), find(fl, "Fleet")

	row := func(what, unit string) []string {
		return []string{what, num(s.get(unit + "-glidepath")), num(s.get(unit + "-plain")), num(s.get(unit+"-glidepath") / s.get(unit+"-plain"))}
	}
	cost := table([]string{"per", "Glidepath", "plain Temporal", "Glidepath/plain"}, [][]string{
		row("step, CPU µs", "cpu-us/step"),
		row("step, wall µs", "us/step"),
		row("run's fixed part, CPU µs", "cpu-us/run-fixed"),
		row("run's fixed part, wall µs", "us/run-fixed"),
		row(fmt.Sprintf("whole run of %s steps, CPU µs", num(s.get("steps/run"))), "cpu-us/run"),
		row("whole run, wall µs", "us/run"),
	})
	shapeRow := func(what, unit string) []string {
		return []string{what, num(s.get(unit + "/step-glidepath")), num(s.get(unit + "/step-plain")),
			num(s.get(unit + "/run-glidepath")), num(s.get(unit + "/run-plain"))}
	}
	shape := table([]string{"in the history", "per step: Glidepath", "plain", "per run: Glidepath", "plain"}, [][]string{
		shapeRow("events", "events"),
		shapeRow("activities", "activities"),
		shapeRow("activities with a HeartbeatTimeout", "heartbeating"),
		shapeRow("markers (SideEffects: keys, the jitter seed)", "markers"),
		shapeRow("workflow tasks", "tasks"),
	})
	var partial []string
	for _, u := range f.Units {
		if cause, ok := strings.CutPrefix(u, "partial-"); ok {
			partial = append(partial, fmt.Sprintf("%s %s", num(f.get(u)), cause))
		}
	}
	partials := "none"
	if len(partial) > 0 {
		partials = strings.Join(partial, ", ")
	}
	fleetRows := table([]string{"figure", "measured"}, [][]string{
		{"runs (at most this many at once)", fmt.Sprintf("%s (%s)", num(f.get("runs")), num(f.get("in-flight")))},
		{"labeled: complete / partial (by cause)", fmt.Sprintf("%s of %s: %s / %s (%s)", num(f.get("labeled")), num(f.get("runs")), num(f.get("complete")), num(f.get("partial")), partials)},
		{"end − start request: p50 / p99 / max, against B", fmt.Sprintf("%s / %s / %s of %s", dur(msDur(f.get("end-p50-ms"))), dur(msDur(f.get("end-p99-ms"))), dur(msDur(f.get("end-max-ms"))), dur(msDur(f.get("budget-ms"))))},
		{"runs ended past start request + B / past B + the stated bound (durable.Overrun) / past their own D", fmt.Sprintf("%s / %s (%s) / %s", num(f.get("past-B")), num(f.get("past-bound")), dur(msDur(f.get("bound-ms"))), num(f.get("past-D")))},
		{"start request to its first workflow task (spent from B), p99", dur(msDur(f.get("start-lag-p99-ms")))},
		{"worker SIGKILLed at / the next build current at (since the first start)", fmt.Sprintf("%s / %s", dur(msDur(f.get("killed-at-ms"))), dur(msDur(f.get("replaced-at-ms"))))},
		{"runs served by this build / the next / more than one / none (never taken by a worker)", fmt.Sprintf("%s / %s / %s / %s", num(f.get("runs-old-build")), num(f.get("runs-next-build")), num(f.get("runs-unpinned")), num(f.get("runs-not-taken")))},
		{"runs started once the next build was current / of them served by this build", fmt.Sprintf("%s / %s", num(f.get("runs-after-replaced")), num(f.get("runs-new-on-old-build")))},
		{"runs of the killed worker carried on by the other worker of its build", num(f.get("runs-carried-by-w1"))},
		{"workflow tasks failed / of them nondeterministic / timed out (the killed worker's)", fmt.Sprintf("%s / %s / %s", num(f.get("wf-tasks-failed")), num(f.get("wf-tasks-nondeterministic")), num(f.get("wf-tasks-timed-out")))},
		{"runs with an attempt cut by the dead worker / reconciled by key / with an orphan journaled", fmt.Sprintf("%s / %s / %s", num(f.get("runs-cut-by-kill")), num(f.get("runs-reconciled")), num(f.get("runs-orphaned")))},
		{"writes (keys) / sent twice / committed twice", fmt.Sprintf("%s / %s / %s", num(f.get("writes")), num(f.get("writes-sent-twice")), num(f.get("writes-committed-twice")))},
		{"the whole fleet took", fmt.Sprintf("%ss", num(f.get("fleet-s")))},
		{"load average (1 min) at the fleet's start / end", fmt.Sprintf("%s / %s", num(f.get("load-avg-start")), num(f.get("load-avg-end")))},
	})
	r.add("On Temporal", []string{c1, c2}, fmt.Sprintf(`Read with temporal/bench/doc.go. Both on temporaltest's server (SQLite in memory) in the bench's process.

**Overhead per step.** durable.Workflow against a plain Temporal workflow that makes the same activity calls
(durable's own model and tool activities, the same messages but the budget note, the same tool calls): a sim in
memory, a tool on loopback, one worker in process. A step is one model turn asking for the tool and the tool's
call; runs of 1 and of 5 steps, interleaved, tell a step's cost (the difference over 4 steps) from a run's fixed
part. CPU is the process's (server, worker and sim included, the same for both).

%s
%s
**The fleet.** %s runs of B = %s over two worker processes of this build (copies of the test binary, each
`+"`harness-temporal worker --model sim`"+` in effect: its worker options, versioned and made current as it does, runs
pinned to their build, a sim in memory each), tools on loopback in the bench's process: a read and a write that
works 1s and counts its POSTs and commits per idempotency key. The first worker is SIGKILLed once half the writes
have reached the tool, and a worker of the next build (durable.Workflow after one SideEffect: it cannot replay
this build's runs) starts at once and makes itself current. Builds and workers are read off each run's history.
*end* is the server's close time − start time of each run; D is the run's own deadline (its first workflow
task's workflow time + B), checked in its budget report and run_end record.

%s`, cost, shape, num(f.get("runs")), dur(msDur(f.get("budget-ms"))), fleetRows))

	// The row's figure is a step of the 5-step run, its fixed part
	// included: the conservative one. A step alone is the difference of
	// two runs' measurements, which on a shared machine moves by more than
	// the difference it measures.
	ratio := s.get("cpu-run-glidepath/plain")
	note := ""
	if ratio > 1.2 {
		note = fmt.Sprintf("per step the harness's history has %s events beyond plain's (%s activities with a HeartbeatTimeout, %s markers), per run %s (%s activities, %s workflow tasks)",
			num(s.get("events/step-glidepath")-s.get("events/step-plain")), num(s.get("heartbeating/step-glidepath")-s.get("heartbeating/step-plain")),
			num(s.get("markers/step-glidepath")-s.get("markers/step-plain")), num(s.get("events/run-glidepath")-s.get("events/run-plain")),
			num(s.get("activities/run-glidepath")-s.get("activities/run-plain")), num(s.get("tasks/run-glidepath")-s.get("tasks/run-plain")))
	}
	steps := s.get("steps/run")
	r.target("On Temporal: the harness's overhead per step at most 1.2× a plain Temporal workflow making the same activity calls",
		fmt.Sprintf("%s µs CPU per step of a %s-step run, its fixed part included (%s×), wall %s×; a step alone (the 1- and %s-step runs' difference) %s× CPU, %s× wall",
			num(s.get("cpu-us/run-glidepath")/steps), num(steps), num(ratio), num(s.get("wall-run-glidepath/plain")),
			num(steps), num(s.get("cpu-step-glidepath/plain")), num(s.get("wall-step-glidepath/plain"))),
		fmt.Sprintf("plain Temporal workflow: %s µs CPU per step of the same run", num(s.get("cpu-us/run-plain")/steps)),
		ratio <= 1.2, note)
	r.idle()
	// What a run holds beyond plain's that its steps do not explain.
	fixedMore := func(unit string) float64 {
		return s.get(unit+"/run-glidepath") - s.get(unit+"/run-plain") - (s.get(unit+"/step-glidepath")-s.get(unit+"/step-plain"))*s.get("steps/run")
	}
	cpuFixed := s.get("cpu-us/run-fixed-glidepath") / s.get("cpu-us/run-fixed-plain")
	wallFixed := s.get("us/run-fixed-glidepath") / s.get("us/run-fixed-plain")
	if cpuFixed > 1.2 || wallFixed > 1.2 {
		r.lose(fmt.Sprintf("on Temporal, a run's fixed part costs %s× a plain workflow's CPU and %s× its wall time (%s against %s ms): the setup activity that lists the worker's tools (%s activity, %s workflow task more per run)",
			num(cpuFixed), num(wallFixed), num(s.get("us/run-fixed-glidepath")/1000), num(s.get("us/run-fixed-plain")/1000),
			num(fixedMore("activities")), num(fixedMore("tasks"))))
	}
	if lag := msDur(f.get("start-lag-p99-ms")); lag > temporalLagNote {
		r.lose(fmt.Sprintf("on Temporal, a run waits for a worker to take it, and its budget counts from its start request: in the fleet, with a worker killed, %s passed before a run's first workflow task (p99), spent from B before any work", dur(lag)))
	}
	if n := f.get("partial"); n > 0 {
		// Labeled, so the row is met; but a fleet whose p99 end is far
		// inside B should complete every run, and a partial one is most
		// likely a run the kill cost its answer (`go test -v` logs its
		// trace).
		r.lose(fmt.Sprintf("on Temporal, %s of %s fleet runs landed partial (by cause: %s) with a worker killed, their p99 end %s of B = %s",
			num(n), num(f.get("runs")), partials, dur(msDur(f.get("end-p99-ms"))), dur(msDur(f.get("budget-ms")))))
	}
	ok := f.get("labeled") == f.get("runs") && f.get("past-D") == 0 && f.get("past-B") == 0 && f.get("past-bound") == 0 && f.get("writes-sent-twice") == 0 &&
		f.get("writes-committed-twice") == 0 && f.get("killed-at-ms") > 0 && f.get("replaced-at-ms") > 0 && f.get("runs-next-build") > 0 &&
		f.get("wf-tasks-failed") == 0 && f.get("runs-unpinned") == 0 && f.get("runs-not-taken") == 0 && f.get("runs-new-on-old-build") == 0
	r.target(fmt.Sprintf("On Temporal: a fleet of %s runs over two worker processes, one SIGKILLed mid-run and replaced by a worker of the next build: every run labeled, inside its original deadline, 0 writes sent twice, 0 workflow tasks failed", num(f.get("runs"))),
		fmt.Sprintf("%s of %s labeled (%s complete); %s past start + B, %s past B + %s, %s past their own D; p99 end %s of %s; %s of %s writes sent twice; the kill cut attempts of %s runs, %s reconciled by key; %s runs on this build, %s on the next, %s on both; %s workflow tasks failed; load average %s to %s",
			num(f.get("labeled")), num(f.get("runs")), num(f.get("complete")), num(f.get("past-B")), num(f.get("past-bound")), dur(msDur(f.get("bound-ms"))), num(f.get("past-D")),
			dur(msDur(f.get("end-p99-ms"))), dur(msDur(f.get("budget-ms"))), num(f.get("writes-sent-twice")), num(f.get("writes")),
			num(f.get("runs-cut-by-kill")), num(f.get("runs-reconciled")), num(f.get("runs-old-build")), num(f.get("runs-next-build")), num(f.get("runs-unpinned")),
			num(f.get("wf-tasks-failed")), num(f.get("load-avg-start")), num(f.get("load-avg-end"))),
		"no baseline: SPEC §7 states counts, not a ratio",
		ok, "")
	r.idle()
	return nil
}

// temporalBench runs the test binary bin of temporal/bench on one
// benchmark and returns its results and the command a reader would type
// in the repository's root to run it.
func temporalBench(ctx context.Context, bin string, env []string, bench, benchtime string) ([]result, string, error) {
	cmd := exec.CommandContext(ctx, bin, "-test.run", "^$", "-test.bench", bench, "-test.benchtime", benchtime)
	cmd.Dir = temporalDir
	cmd.Env = append(os.Environ(), env...)
	shown := strings.Join(append(append([]string{"cd", temporalDir, "&&"}, env...), "go", quoteArgs([]string{"test", "-run", "^$", "-bench", bench, "-benchtime", benchtime, "./bench"})), " ")
	res, err := runBench(cmd, shown)
	return res, shown, err
}
