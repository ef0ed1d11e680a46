package main

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/glidepath/glidepath/bench/internal/hog"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/trace"
)

// starvedProcBudget is B of the starved section's process runs (issue 17:
// about a second), and starvedProcRuns how many it makes on each machine.
const (
	starvedProcBudget = time.Second
	starvedProcRuns   = 20
)

// starvedWarm is how long the hogs spin before the first run is timed.
const starvedWarm = 200 * time.Millisecond

// starvedSection measures SPEC §7's "on a starved machine (a CPU hog on
// every core beside the runs), the in-process run end and the harness run
// process end past B, p99": the in-process runs through
// BenchmarkStarvedRun, which starts its own hogs; the process runs here,
// beside hogs this binary starts (copies of itself, package
// bench/internal/hog), and beside none, one after the other.
func starvedSection(ctx context.Context, r *report) error {
	inproc, c1, err := goBench(ctx, nil, "-bench", "^BenchmarkStarvedRun$", "-benchtime", "100x", "./bench")
	if err != nil {
		return err
	}
	idle, err := starvedProc(ctx, r.harness, 0)
	if err != nil {
		return fmt.Errorf("idle machine: %w", err)
	}
	starved, err := starvedProc(ctx, r.harness, runtime.NumCPU())
	if err != nil {
		return fmt.Errorf("starved machine: %w", err)
	}
	var rows [][]string
	for _, p := range []starvedProcResult{idle, starved} {
		rows = append(rows, []string{p.machine, fmt.Sprint(len(p.late)),
			spread(p.late), spread(p.startup), spread(p.endLate), spread(p.exitAfter), spread(p.sleeper),
			fmt.Sprintf("%d of %d", p.partial, len(p.late)), p.exits, p.hogShare})
	}
	r.add("A starved machine", []string{c1, "make build && go run ./bench/cmd/benchmd -only starved"},
		resultsTable(inproc)+`
In process (BenchmarkStarvedRun, bench/doc.go): B = 300ms, a tool that ignores cancellation and a model that hangs;
*late* is return − B, *end-late* run_end's stamp − B, *after-end* return − run_end, *timer-late* a bare timer of
B beside each run, the machine's own lateness.

`+table([]string{"machine", "runs", "ended: p50 / p99 / max past B", "start-up: before the budget's clock", "run_end past B", "exit after run_end", "baseline: a Go process that sleeps B", "led with PARTIAL RESULT", "exit", "hogs' CPU share"}, rows)+fmt.Sprintf(`
The process: `+"`%s run --budget %v --trace FILE`"+`, default floor and reserve, against a sim whose first turn
calls a tool whose POST hangs (its cancel is accepted) and which hangs on every later request, the landing
call too, over loopback, timed from just before the process starts to when it has exited; each figure is
p50 / p99 / max over the runs. The run's own record splits each run: *start-up* is from the process's start to
its budget's start (run_end's stamp less its elapsed_ms), *run_end past B* when the result was recorded, *exit
after run_end* the rest. The baseline, run after each run under the same load, is this binary started as a Go
process that only sleeps B and exits. Starved: %d hog processes, one per core, spinning beside the runs; their CPU share is
the CPU they spent over their wall time × their number.
`, r.harness, starvedProcBudget, runtime.NumCPU()))

	ins, ini := find(inproc, "StarvedRun/floor=1ms/machine=starved"), find(inproc, "StarvedRun/floor=1ms/machine=idle")
	ind := find(inproc, "StarvedRun/floor=default/machine=starved")
	r.target("On a starved machine (a CPU hog on every core), the in-process run ends within B + 20ms (p99)",
		fmt.Sprintf("on a 1ms floor: %s (p99), max %s, of %s runs, %s labeled; on the default floor: %s (p99)",
			relB(ins.get("late-p99-ms")), relB(ins.get("late-max-ms")), num(ins.get("runs")), num(ins.get("labeled")), relB(ind.get("late-p99-ms"))),
		fmt.Sprintf("a bare timer of B beside each run: %s (p99), max %s; no hog: the run %s (p99)", relB(ins.get("timer-late-p99-ms")), relB(ins.get("timer-late-max-ms")), relB(ini.get("late-p99-ms"))),
		ins.get("late-p99-ms") <= 20, starvedNote(ins))
	p99 := quantileOf(starved.late, 0.99)
	r.target("On a starved machine, the `harness run` process ends within B + 100ms (p99)",
		fmt.Sprintf("%s (p99), max %s, of %d runs", relB(ms(p99)), relB(ms(quantileOf(starved.late, 1))), len(starved.late)),
		fmt.Sprintf("a Go process that only sleeps B, beside the same hogs: %s (p99); no hog: the run %s (p99)", relB(ms(quantileOf(starved.sleeper, 0.99))), relB(ms(quantileOf(idle.late, 0.99)))),
		p99 <= 100*time.Millisecond, starvedProcNote(starved, p99))
	return nil
}

// spread prints p50 / p99 / max of ds, in ms.
func spread(ds []time.Duration) string {
	return fmt.Sprintf("%s / %s / %s", dur(quantileOf(ds, 0.5)), dur(quantileOf(ds, 0.99)), dur(quantileOf(ds, 1)))
}

// quantileOf returns the q-quantile (0 < q ≤ 1) of ds by the nearest-rank
// method, so that the p99 of fewer than 100 samples is their maximum.
func quantileOf(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(q*float64(len(s)) + 0.999999)
	return s[max(0, min(rank, len(s))-1)]
}

type starvedProcResult struct {
	machine                           string
	late, startup, endLate, exitAfter []time.Duration
	sleeper                           []time.Duration // the baseline's end past B
	partial                           int
	exits                             string
	hogShare                          string
}

// starvedProc runs the process starvedProcRuns times beside hogs hog
// processes (0: none).
func starvedProc(ctx context.Context, harness string, hogs int) (starvedProcResult, error) {
	res := starvedProcResult{machine: "idle", hogShare: "—"}
	if _, err := os.Stat(harness); err != nil {
		return res, fmt.Errorf("%w (make build makes it)", err)
	}
	dir, err := os.MkdirTemp("", "benchmd-starved-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	// The first turn calls the tool; every later request hangs, the
	// landing call too, so that the run lasts until its deadline.
	model := sim.NewServer(&sim.Scenario{Rules: []sim.Rule{{Turn: 2, Hang: true}}})
	defer model.Close()
	done := make(chan struct{})
	tool := httptest.NewServer(stuckTool("", done))
	defer tool.Close()
	defer close(done) // before tool.Close, which waits for the handlers
	cfg, err := writeToolsFile(dir, tool.URL)
	if err != nil {
		return res, err
	}
	tracePath := filepath.Join(dir, "trace.jsonl")
	args := append(procArgs(starvedProcBudget, model.URL, dir), "--tools", cfg, "--trace", tracePath, "look up cats")

	var h *hog.Hogs
	var hogStart time.Time
	if hogs > 0 {
		res.machine = fmt.Sprintf("starved (%d hogs)", hogs)
		// Bounded by the longest the runs can take, with room.
		if h, err = hog.Start(hogs, starvedProcRuns*3*starvedProcBudget+time.Minute); err != nil {
			return res, err
		}
		hogStart = time.Now()
		defer h.Stop()
		time.Sleep(starvedWarm) // real processes: let every hog reach its loop
	}
	exits := map[int]int{}
	for range starvedProcRuns {
		p, _, clock, runEnd, err := tracedRun(ctx, harness, dir, tracePath, args)
		if err != nil {
			return res, err
		}
		res.late = append(res.late, p.took-starvedProcBudget)
		res.startup = append(res.startup, clock.Sub(p.started))
		res.endLate = append(res.endLate, runEnd.Sub(clock)-starvedProcBudget)
		res.exitAfter = append(res.exitAfter, p.started.Add(p.took).Sub(runEnd))
		exits[p.exit]++
		if p.partial {
			res.partial++
		}
		bare, err := sleeperOnce(ctx, starvedProcBudget)
		if err != nil {
			return res, err
		}
		res.sleeper = append(res.sleeper, bare-starvedProcBudget)
	}
	var ex []string
	for code, k := range exits {
		ex = append(ex, fmt.Sprintf("exit %d ×%d", code, k))
	}
	slices.Sort(ex)
	res.exits = strings.Join(ex, ", ")
	if h != nil {
		wall := time.Since(hogStart)
		if err := h.Stop(); err != nil {
			return res, err
		}
		res.hogShare = fmt.Sprintf("%.0f%%", 100*float64(h.CPU())/float64(wall*time.Duration(h.Len())))
	}
	return res, nil
}

// tracedRun runs harness once with args, whose --trace is tracePath
// (removed first, so that the records read are this run's), and returns
// the process's run, its records, and when its budget started and its
// run_end was stamped.
func tracedRun(ctx context.Context, harness, dir, tracePath string, args []string) (procRun, records, time.Time, time.Time, error) {
	os.Remove(tracePath)
	p, err := procOnce(ctx, harness, dir, args)
	if err != nil {
		return p, nil, time.Time{}, time.Time{}, err
	}
	recs, err := traceOf(tracePath)
	if err != nil {
		return p, nil, time.Time{}, time.Time{}, err
	}
	start, end, err := recs.clock()
	if err != nil {
		return p, nil, time.Time{}, time.Time{}, fmt.Errorf("%s: %w", tracePath, err)
	}
	return p, recs, start, end, nil
}

// traceOf reads the JSONL trace at path.
func traceOf(path string) (records, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := trace.ReadRecords(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return recs, nil
}

// records are a run's trace.
type records []trace.Record

// first returns the first record of event.
func (rs records) first(event trace.Event) (trace.Record, bool) {
	for _, r := range rs {
		if r.Event == event {
			return r, true
		}
	}
	return trace.Record{}, false
}

// last returns the last record of event, or a zero one.
func (rs records) last(event trace.Event) trace.Record {
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].Event == event {
			return rs[i]
		}
	}
	return trace.Record{}
}

// clock returns when the run's budget started, to the ms: its run_end
// stamp less the elapsed_ms it records, and run_end's stamp.
func (rs records) clock() (start, end time.Time, err error) {
	e, ok := rs.first(trace.RunEnd)
	if !ok {
		return time.Time{}, time.Time{}, errors.New("the trace has no run_end record")
	}
	return e.TS.Add(-time.Duration(e.ElapsedMs) * time.Millisecond), e.TS, nil
}

// sleeperEnv, when set, makes this binary the starved section's baseline
// process: a Go process that sleeps the duration it names and exits.
const sleeperEnv = "GLIDEPATH_BENCHMD_SLEEP"

// sleeperMain makes the binary a sleeper, if it was started as one, and
// exits; otherwise it returns at once.
func sleeperMain() {
	v, ok := os.LookupEnv(sleeperEnv)
	if !ok {
		return
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s=%q: %v\n", sleeperEnv, v, err)
		os.Exit(2)
	}
	time.Sleep(d)
	os.Exit(0)
}

// sleeperOnce runs the baseline process once, sleeping b, and returns how
// long it took from just before it started to when it had exited: the
// least any Go process that must end at B takes on this machine.
func sleeperOnce(ctx context.Context, b time.Duration) (time.Duration, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(os.Environ(), sleeperEnv+"="+b.String())
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("sleeper: %w", err)
	}
	return time.Since(start), nil
}

// starvedNote says, as measured, what kept the in-process run from its
// goal: the machine's own lateness, when the bare timer beside each run was
// as late, and the run's part past it.
func starvedNote(r result) string {
	if r.get("late-p99-ms") <= 20 {
		return ""
	}
	return fmt.Sprintf("a bare timer of B beside each run was itself %s late (p99): the kernel's wake-up latency on a loaded machine; each run past its own timer: %s ms (p99), return − run_end %s ms (p99)",
		dur(msDur(r.get("timer-late-p99-ms"))), num(r.get("over-timer-p99-ms")), num(r.get("after-end-p99-ms")))
}

// starvedProcNote says, as measured, where a starved process's lateness
// was: before its budget's clock could start (the exec and the runtime's
// start, which no code of ours can see), in the run, or after run_end;
// beside the baseline process's.
func starvedProcNote(p starvedProcResult, p99 time.Duration) string {
	if p99 <= 100*time.Millisecond {
		return ""
	}
	return fmt.Sprintf("p99 of %d runs is their worst; start-up before the budget's clock could start (exec, the runtime's start) %s (p99), run_end past B %s, exit after run_end %s; a Go process that only sleeps B: %s (p99)",
		len(p.late), dur(quantileOf(p.startup, 0.99)), dur(quantileOf(p.endLate, 0.99)), dur(quantileOf(p.exitAfter, 0.99)), relB(ms(quantileOf(p.sleeper, 0.99))))
}
