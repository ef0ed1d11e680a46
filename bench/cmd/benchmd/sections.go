package main

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/glidepath/glidepath/bench/battery"
	"github.com/glidepath/glidepath/bench/fleet"
)

// A section measures one part of the report.
type section struct {
	name, title string
	run         func(ctx context.Context, r *report) error
}

var sections = []section{
	{"micro", "Decisions and records (micro-benchmarks)", micro},
	{"runs", "Whole runs in process", wholeRuns},
	{"battery", "The fault battery", batterySection},
	{"duplicates", "Writes that commit after their lease ended", duplicatesSection},
	{"fleet", "A fleet whose budgets expire together", fleetSection},
	{"process", "The harness run process under hangs", processSection},
	{"hungcancel", "A tool whose POST and cancel both hang", hungCancelSection},
	{"starved", "A starved machine", starvedSection},
}

func sectionNames() []string {
	var n []string
	for _, s := range sections {
		n = append(n, s.name)
	}
	return n
}

func micro(ctx context.Context, r *report) error {
	bud, c1, err := goBench(ctx, nil, "-bench", "^(BenchmarkTimeNow|BenchmarkLease|BenchmarkLeaseContext|BenchmarkContextWithTimeout|BenchmarkGrant)$", "-benchmem", "./budget")
	if err != nil {
		return err
	}
	tr, c2, err := goBench(ctx, nil, "-bench", "^(BenchmarkAppendJSON|BenchmarkEncodingJSON|BenchmarkRecord)$", "-benchmem", "./trace")
	if err != nil {
		return err
	}
	wd, c3, err := goBench(ctx, nil, "-bench", "^BenchmarkStallLateness$", "-benchtime", "2000x", "./bench")
	if err != nil {
		return err
	}
	all := slices.Concat(bud, tr, wd)
	r.add("Decisions and records (micro-benchmarks)", []string{c1, c2, c3}, resultsTable(all))

	lease, now := find(bud, "Lease"), find(bud, "TimeNow")
	r.target("A lease decision: under 100ns, 0 allocations",
		fmt.Sprintf("%s ns, %s allocs", num(lease.get("ns/op")), num(lease.get("allocs/op"))),
		fmt.Sprintf("`time.Now` alone: %s ns", num(now.get("ns/op"))),
		lease.get("ns/op") < 100 && lease.get("allocs/op") == 0, "")
	// Each parent context against the same parent's WithTimeout.
	ratio := math.NaN()
	for _, lc := range bud {
		parent, ok := strings.CutPrefix(lc.Name, "BenchmarkLeaseContext")
		if !ok {
			continue
		}
		if q := lc.get("ns/op") / find(bud, "ContextWithTimeout"+parent).get("ns/op"); math.IsNaN(ratio) || q > ratio {
			ratio = q
		}
	}
	r.target("A lease with its context: at most 1.5× `context.WithTimeout`",
		fmt.Sprintf("%s ns (%s×, the worse parent)", num(worst(bud, "LeaseContext", "ns/op")), num(ratio)),
		fmt.Sprintf("`context.WithTimeout` + cancel: %s ns", num(worst(bud, "ContextWithTimeout", "ns/op"))),
		ratio <= 1.5, "")
	enc, js := worst(tr, "AppendJSON", "ns/op"), worst(tr, "EncodingJSON", "ns/op")
	r.target("A trace record encoded, without I/O: under 1µs",
		fmt.Sprintf("%s ns at most over record kinds, %s allocs", num(enc), num(worst(tr, "AppendJSON", "allocs/op"))),
		fmt.Sprintf("`json.Marshal`: %s ns at most", num(js)),
		enc < 1000, "")
	st := find(wd, "StallLateness")
	r.target("Stall detected within Q + 2ms (p99) of the last semantic event, keepalives streaming",
		fmt.Sprintf("Q + %s ms (p99); p50 %s ms, max %s ms of %d", num(st.get("watchdog-p99-us")/1000), num(st.get("watchdog-p50-us")/1000), num(st.get("watchdog-max-us")/1000), st.N),
		fmt.Sprintf("a bare context timer: Q + %s ms (p99); p50 %s ms, max %s ms", num(st.get("timer-p99-us")/1000), num(st.get("timer-p50-us")/1000), num(st.get("timer-max-us")/1000)),
		st.get("watchdog-p99-us") <= 2000, "")
	return nil
}

func wholeRuns(ctx context.Context, r *report) error {
	ra, c1, err := goBench(ctx, nil, "-bench", "^BenchmarkRetryAfterOverBudget$", "-benchtime", "5x", "./bench")
	if err != nil {
		return err
	}
	hang, c2, err := goBench(ctx, nil, "-bench", "^BenchmarkHangingRun$", "-benchtime", "50x", "./bench")
	if err != nil {
		return err
	}
	cpu, c3, err := goBench(ctx, nil, "-bench", "^BenchmarkStepCPU$", "-benchtime", "3000x", "./bench")
	if err != nil {
		return err
	}
	idle, c4, err := goBench(ctx, nil, "-bench", "^BenchmarkIdleRuns$", "-benchtime", "1x", "./bench")
	if err != nil {
		return err
	}
	idle10k, c5, err := goBench(ctx, []string{"GLIDEPATH_BENCH_RUNS=10000"}, "-bench", "^BenchmarkIdleRuns$", "-benchtime", "1x", "./bench")
	if err != nil {
		return err
	}
	for i := range idle10k {
		idle10k[i].Name += " (10,000 runs)"
	}
	r.add("Whole runs in process", []string{c1, c2, c3, c4, c5}, resultsTable(slices.Concat(ra, hang, cpu, idle, idle10k))+`
Read with bench/doc.go, which says what each figure is. The hanging run's figures are return time − B.
`)

	c := find(cpu, "StepCPU")
	cr := c.get("glidepath/bare")
	r.target("The harness's own CPU per step: at most 1.1× a bare openai-go loop making the same requests",
		fmt.Sprintf("%s µs per step (%s×)", num(c.get("cpu-us/step-glidepath")), num(cr)),
		fmt.Sprintf("bare openai-go loop: %s µs", num(c.get("cpu-us/step-bare"))),
		cr <= 1.1, "")
	h := find(hang, "HangingRun/floor=1ms")
	r.target("In process, a run returns within B + 2ms (p99) when a tool ignores cancellation and the model hangs",
		fmt.Sprintf("%s (p99), labeled partial", relB(h.get("glidepath-p99-ms"))),
		fmt.Sprintf("a bare `context.WithTimeout` loop: %s (p99), an error and no answer", relB(h.get("naive-p99-ms"))),
		h.get("glidepath-p99-ms") <= 2, "")
	a := find(ra, "RetryAfterOverBudget")
	r.target("A Retry-After longer than the budget costs under 1ms of waiting",
		fmt.Sprintf("%s ms of waiting", num(a.get("glidepath-wait-ms"))),
		fmt.Sprintf("openai-go defaults: the whole call takes %s ms", num(a.get("sdk-ms"))),
		a.get("glidepath-wait-ms") < 1, "")
	for _, res := range []result{find(idle, "IdleRuns"), find(idle10k, "IdleRuns (10,000 runs)")} {
		ratio := res.get("run/sdk-call")
		note := ""
		if ratio > 1.2 {
			note = fmt.Sprintf("heap %s KB, goroutine stacks %s KB per run", num(res.get("heap-B/idle-run")/1024), num(res.get("stack-B/idle-run")/1024))
		}
		r.target(fmt.Sprintf("%s concurrent idle runs: at most 1.2× a bare openai-go streaming call's memory per run, no goroutine left", num(res.get("runs"))),
			fmt.Sprintf("%s KB per run (%s×), %s goroutines left", num(res.get("B/idle-run")/1024), num(ratio), num(res.get("goroutines-left"))),
			fmt.Sprintf("a bare openai-go stream: %s KB", num(res.get("B/idle-sdk-call")/1024)),
			ratio <= 1.2 && res.get("goroutines-left") == 0, note)
	}
	return nil
}

func fleetSection(ctx context.Context, r *report) error {
	var rows [][]string
	for _, n := range []int{1000, 10000} {
		cfg := fleet.Config{Runs: n}
		gp, err := fleet.Glidepath(ctx, cfg)
		if err != nil {
			return fmt.Errorf("glidepath, %d runs: %w", n, err)
		}
		sdk, err := fleet.SDKDefaults(ctx, cfg)
		if err != nil {
			return fmt.Errorf("openai-go defaults, %d runs: %w", n, err)
		}
		for _, x := range []struct {
			system string
			res    fleet.Result
		}{{"Glidepath", gp}, {"openai-go defaults", sdk}} {
			rows = append(rows, []string{fmt.Sprint(n), x.system,
				fmt.Sprintf("%d of %d (%d complete, %d errors)", x.res.Labeled, x.res.Runs, x.res.Complete, x.res.Errors),
				dur(x.res.FirstSpread), fmt.Sprint(x.res.Retries), fmt.Sprint(x.res.PeakWindow), num(x.res.MeanWindow), num(x.res.PeakOverMean()),
				fmt.Sprintf("%d / %s", x.res.DuePeakWindow, num(x.res.DueMeanWindow)),
				fmt.Sprintf("%s / %s / %s of %s", dur(x.res.EndP50), dur(x.res.EndP99), dur(x.res.EndMax), dur(x.res.Budget)),
				num(x.res.BytesPerRun / 1024), fmt.Sprint(x.res.GoroutinesLeft)})
		}
		r.target(fmt.Sprintf("A fleet of %s runs whose budgets expire together, turned away with 503 + Retry-After at one instant: every run labeled, the retries of any 50ms window under 2× the mean", num(float64(n))),
			fmt.Sprintf("%d of %d labeled; busiest 50ms window %d retries, %s× the mean; p99 end %s of %s; %d goroutines left", gp.Labeled, gp.Runs, gp.PeakWindow, num(gp.PeakOverMean()), dur(gp.EndP99), dur(gp.Budget), gp.GoroutinesLeft),
			fmt.Sprintf("openai-go defaults: %d answered; busiest window %d retries", sdk.Labeled, sdk.PeakWindow),
			gp.Labeled == gp.Runs && gp.PeakOverMean() < 2 && gp.GoroutinesLeft == 0, fleetShortfall(gp))
	}
	r.add("A fleet whose budgets expire together", []string{"go run ./bench/cmd/benchmd -only fleet"},
		table([]string{"runs", "system", "labeled", "first requests sent over", "retries", "busiest 50ms", "mean 50ms", "busiest/mean", "as due: busiest / mean", "end p50 / p99 / max", "KB per waiting run", "goroutines left"}, rows)+`
Every run starts at one instant on B = 5s against one sim (in memory) that answers the first request of each run 503
with Retry-After: 1. The mean is over the 50ms windows from the first retry to the last. openai-go waits exactly
what the server said, so its fleet comes back in one burst; Glidepath waits at least that, then a spread of full
jitter (budget.Backoff.Spread). A Glidepath run's retry is its model client's second attempt; the SDK's is a
request it marked with X-Stainless-Retry-Count.
`)
	return nil
}

// fleetShortfall says what kept a fleet from its numbers, as measured:
// a fleet whose own first requests take longer than the outage to go out
// is CPU-bound, and sends its retries as the process can, not as they fell
// due.
func fleetShortfall(r fleet.Result) string {
	var why []string
	if r.PeakOverMean() >= 2 {
		why = append(why, fmt.Sprintf("the process is CPU-bound on %d cores: its %d runs' first requests took %s to go out, so %d were turned away and their retries came back as the CPU allowed; as they fell due, the busiest window held %s× the mean",
			runtime.NumCPU(), r.Runs, dur(r.FirstSpread), r.Retries, num(float64(r.DuePeakWindow)/r.DueMeanWindow)))
	}
	if r.Labeled < r.Runs {
		why = append(why, fmt.Sprintf("%d runs returned an error", r.Errors))
	}
	if r.GoroutinesLeft > 0 {
		why = append(why, fmt.Sprintf("%d goroutines left", r.GoroutinesLeft))
	}
	return strings.Join(why, "; ")
}

func processSection(ctx context.Context, r *report) error {
	const n = 10
	res, err := procEnd(ctx, r.harness, n)
	if err != nil {
		return err
	}
	var rows [][]string
	worst := time.Duration(math.MinInt64)
	for _, p := range res {
		slices.Sort(p.late)
		worst = max(worst, p.late[len(p.late)-1])
		var exits []string
		for code, k := range p.exits {
			exits = append(exits, fmt.Sprintf("exit %d ×%d", code, k))
		}
		slices.Sort(exits)
		rows = append(rows, []string{p.scenario, fmt.Sprint(len(p.late)),
			fmt.Sprintf("%s / %s / %s", relB(ms(p.late[len(p.late)/2])), relB(ms(p.late[(len(p.late)*99+99)/100-1])), relB(ms(p.late[len(p.late)-1]))),
			strings.Join(exits, ", "), fmt.Sprintf("%d of %d", p.partial, len(p.late))})
	}
	r.add("The harness run process under hangs", []string{"make build && go run ./bench/cmd/benchmd -only process"},
		table([]string{"scenario", "runs", "ended at: p50 / p99 / max", "exit", "led with PARTIAL RESULT"}, rows)+fmt.Sprintf(`
Each run is `+"`%s run --budget %v`"+` against a sim over loopback, timed from just before the process starts to
when it has exited, so its own start-up counts against it.
`, r.harness, procBudget))
	r.target("The `harness run` process ends within B + 50ms, also when a tool's cancel endpoint hangs",
		fmt.Sprintf("at worst %s over %d runs of %d hang scenarios", relB(ms(worst)), n*len(res), len(res)), "—",
		worst <= 50*time.Millisecond, "")
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// relB prints a time v ms after the budget B (before it, when negative).
func relB(v float64) string {
	if v < 0 {
		return "B − " + num(-v) + "ms"
	}
	return "B + " + num(v) + "ms"
}

// batteryRuns is the runs per cell of the full battery: ten make every
// cell's p99 its worst run, and the battery about two minutes.
const batteryRuns = 10

func batterySection(ctx context.Context, r *report) error {
	var rows [][]string
	type total struct{ runs, labeled, answered, errored, capped, doomed, belowP50, dups int }
	totals := map[string]*total{}
	for _, sys := range battery.Systems() {
		totals[sys.Name] = &total{}
	}
	for _, sc := range battery.Scenarios() {
		for _, sys := range battery.Systems() {
			res, err := battery.Run(ctx, sc, sys, batteryRuns)
			if err != nil {
				return fmt.Errorf("%s on %s: %w", sc.Name, sys.Name, err)
			}
			t := totals[sys.Name]
			t.runs += res.Runs
			t.labeled += res.Labeled
			t.answered += res.Answered
			t.errored += res.Errored
			t.capped += res.Capped
			t.doomed += res.Doomed
			t.belowP50 += res.DoomedBelowP50
			t.dups += res.Duplicates
			labeled := "—"
			if sys.Name == battery.Glidepath {
				labeled = fmt.Sprintf("%d of %d (%d partial)", res.Labeled, res.Runs, res.Partial)
			}
			rows = append(rows, []string{sc.Name, sys.Name, dur(res.Budget),
				fmt.Sprintf("%s / %s / %s", dur(res.Wall.P50), dur(res.Wall.P99), dur(res.Wall.Max)),
				labeled, fmt.Sprintf("%d / %d / %d", res.Answered, res.Errored, res.Capped),
				fmt.Sprint(res.Doomed), fmt.Sprint(res.Duplicates), fmt.Sprint(res.Misreported), fmt.Sprint(res.Orphans),
				stallCell(res.Stall), res.Told})
		}
	}
	r.add("The fault battery", []string{"go run ./bench/cmd/benchmd -only battery"},
		table([]string{"scenario", "system", "B", "wall p50 / p99 / max", "labeled", "answer / error / cap", "doomed", "dup writes", "told failed, was done", "orphans", "stall seen p50 / max", "what the user was told (most runs)"}, rows)+fmt.Sprintf(`
%d runs per cell; package bench/battery says what each scenario and system is and how each column is
counted. *doomed*: attempts started and then cut by a deadline or timeout. *cap*: the battery's own safety
cap (3·B), reached by a run that had no bound of its own. *stall seen*: from the last work the servers saw to
when the system cut the stalled part ("never": it returned only at the cap). A baseline never labels its
answer; *answer / error / cap* says what it returned.
`, batteryRuns))
	gp := totals[battery.Glidepath]
	var base []string
	for _, name := range []string{battery.Defaults, battery.PerCall} {
		t := totals[name]
		base = append(base, fmt.Sprintf("%s: %d answered, %d errors, %d at the cap", name, t.answered, t.errored, t.capped))
	}
	r.target("Under every fault scenario, 100% of runs return a labeled result (complete or partial)",
		fmt.Sprintf("%d of %d runs over %d scenarios", gp.labeled, gp.runs, len(battery.Scenarios())),
		strings.Join(base, "; "), gp.labeled == gp.runs, "")
	r.target("No attempt is started with a granted lease below the kind's known p50",
		fmt.Sprintf("%d of %d cut attempts had a lease below their kind's p50", gp.belowP50, gp.doomed),
		fmt.Sprintf("per-call: %d attempts cut by their timeouts", totals[battery.PerCall].doomed),
		gp.belowP50 == 0, "")
	return nil
}

func stallCell(s battery.Stall) string {
	if !s.Applies {
		return "—"
	}
	out := "never"
	if s.Noticed > 0 {
		out = fmt.Sprintf("%s / %s", dur(s.P50), dur(s.Max))
	}
	if s.Never > 0 {
		out += fmt.Sprintf(" (%d never)", s.Never)
	}
	return out
}

// duplicateWrites is SPEC §7's count of late-commit writes.
const duplicateWrites = 1000

func duplicatesSection(ctx context.Context, r *report) error {
	var rows [][]string
	got := map[string]battery.DupResult{}
	for _, sys := range battery.Systems() {
		d, err := battery.Duplicates(ctx, sys, duplicateWrites)
		if err != nil {
			return fmt.Errorf("%s: %w", sys.Name, err)
		}
		got[sys.Name] = d
		rows = append(rows, []string{sys.Name, fmt.Sprint(d.Writes), fmt.Sprint(d.Commits), fmt.Sprint(d.Duplicates),
			fmt.Sprint(d.Misreported), fmt.Sprint(d.Orphans), fmt.Sprintf("%s / %s", dur(d.Wall.P50), dur(d.Wall.Max)), d.Told})
	}
	r.add("Writes that commit after their lease ended", []string{"go run ./bench/cmd/benchmd -only duplicates"},
		table([]string{"system", "writes", "commits", "duplicates", "told failed, was done", "orphans (outcome unknown, journaled)", "wall p50 / max", "what the user was told (most runs)"}, rows)+fmt.Sprintf(`
%d payments, each committing 1.5s after it arrives under a 500ms ceiling; the tool server counts commits per
order, whatever key a request carries (a published anchor: 209 of 209 refunds duplicated without a key, 0 of 209
with one).
`, duplicateWrites))
	gp, pc := got[battery.Glidepath], got[battery.PerCall]
	r.target("A write that commits after its lease ended is never sent twice: 0 duplicates in 1,000",
		fmt.Sprintf("%d duplicates in %d; %d orphans journaled with their keys", gp.Duplicates, gp.Writes, gp.Orphans),
		fmt.Sprintf("per-call timeouts + retries: %d duplicates in %d", pc.Duplicates, pc.Writes),
		gp.Duplicates == 0, "")
	return nil
}
