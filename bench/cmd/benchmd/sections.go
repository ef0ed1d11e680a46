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
	"github.com/glidepath/glidepath/harness"
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
	{"silence", "Healthy silence and hangs, 100 runs each", silenceSection},
	{"duplicates", "Writes that commit after their lease ended", duplicatesSection},
	{"fleet", "A fleet whose budgets expire together", fleetSection},
	{"process", "The harness run process under hangs", processSection},
	{"hungcancel", "A tool whose POST and cancel both hang", hungCancelSection},
	{"starved", "A starved machine", starvedSection},
	{"temporal", "On Temporal", temporalSection},
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
	r.idle()
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
		cr <= 1.1, stepCPUWhy(c, cr <= 1.1))
	h := find(hang, "HangingRun/floor=1ms")
	r.target("In process, a run returns within B + 2ms (p99) when a tool ignores cancellation and the model hangs",
		fmt.Sprintf("%s (p99), labeled partial", relB(h.get("glidepath-p99-ms"))),
		fmt.Sprintf("a bare `context.WithTimeout` loop: %s (p99), an error and no answer", relB(h.get("naive-p99-ms"))),
		h.get("glidepath-p99-ms") <= 2, "")
	r.idle()
	a := find(ra, "RetryAfterOverBudget")
	r.target("A Retry-After longer than the budget costs under 1ms of waiting",
		fmt.Sprintf("%s ms of waiting", num(a.get("glidepath-wait-ms"))),
		fmt.Sprintf("openai-go defaults: the whole call takes %s ms", num(a.get("sdk-ms"))),
		a.get("glidepath-wait-ms") < 1, "")
	for _, res := range []result{find(idle, "IdleRuns"), find(idle10k, "IdleRuns (10,000 runs)")} {
		ratio := res.get("run/sdk-call")
		note := ""
		if ratio > memRatio {
			note = fmt.Sprintf("heap %s KB, goroutine stacks %s KB per run, against the bare call's heap %s KB, stacks %s KB; %s",
				num(res.get("heap-B/idle-run")/1024), num(res.get("stack-B/idle-run")/1024),
				num(res.get("heap-B/idle-sdk-call")/1024), num(res.get("stack-B/idle-sdk-call")/1024), idleHeapBreakdown(res))
		}
		r.target(fmt.Sprintf("%s concurrent idle runs: at most %s× a bare openai-go streaming call's memory per run, no goroutine left", num(res.get("runs")), num(memRatio)),
			fmt.Sprintf("%s KB per run (%s×), %s goroutines left", num(res.get("B/idle-run")/1024), num(ratio), num(res.get("goroutines-left"))),
			fmt.Sprintf("a bare openai-go stream: %s KB", num(res.get("B/idle-sdk-call")/1024)),
			ratio <= memRatio && res.get("goroutines-left") == 0, note)
	}
	return nil
}

// idleHeapBreakdown says what an idle run's heap is made of beside a bare
// call's, as BenchmarkIdleRuns's memory profile pass measured it (issue
// 20, item 5): each allocator's share per run, the run's against the
// call's.
func idleHeapBreakdown(res result) string {
	kb := func(m string) string { return num(res.get(m)/1024) + " KB" }
	other := ""
	// A share under a tenth of a KB per run is sampling's noise, not code.
	if max(res.get("other-heap-B/idle-run"), res.get("other-heap-B/idle-sdk-call")) >= 100 {
		other = fmt.Sprintf("; none of these %s against %s", kb("other-heap-B/idle-run"), kb("other-heap-B/idle-sdk-call"))
	}
	return fmt.Sprintf("by the code that allocated it (a pass of its own, sampling the heap profile), Glidepath's own objects — the session, its watchdog, budget, ladder and recorder, their contexts and timers, the conversation it keeps for the next turn — %s against the bare loop's own %s; openai-go's %s against %s; net/http's %s against %s; the free room of the spans they sit in %s against %s",
		kb("own-heap-B/idle-run"), kb("caller-heap-B/idle-sdk-call"),
		kb("sdk-heap-B/idle-run"), kb("sdk-heap-B/idle-sdk-call"),
		kb("http-heap-B/idle-run"), kb("http-heap-B/idle-sdk-call"),
		kb("slack-heap-B/idle-run"), kb("slack-heap-B/idle-sdk-call")) + other
}

// expiringBudget is the B of the fleet whose budgets expire during the
// outage: under the server's Retry-After of 1s plus any reserve.
const expiringBudget = time.Second

// memRatio is SPEC §7's bound on an idle run's memory against a bare
// openai-go streaming call's (issue 20 lowered it from 1.2×).
const memRatio = 1.1

func fleetSection(ctx context.Context, r *report) error {
	msgs, err := fleet.FirstMessages(ctx, fleet.Task, fleet.DefaultBudget, 0)
	if err != nil {
		return fmt.Errorf("a run's first request: %w", err)
	}
	var roles []string
	text := 0
	for _, m := range msgs {
		roles = append(roles, m.Role)
		text += len(m.Content)
	}
	firstRequest := fmt.Sprintf("%d messages (%s), %d bytes of text", len(msgs), strings.Join(roles, ", "), text)
	// One run's start alone, one at a time: what a fleet's start costs
	// beyond it is what many at once cost together.
	alone, aloneCmd, err := goBench(ctx, nil, "-bench", "^BenchmarkToFirstRetry$", "-benchtime", "2000x", "./bench/fleet")
	if err != nil {
		return err
	}
	aloneGP, aloneSDK := find(alone, "ToFirstRetry/system=glidepath"), find(alone, "ToFirstRetry/system=sdk-stream")
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
		sdkStream, err := fleet.SDKStreaming(ctx, cfg)
		if err != nil {
			return fmt.Errorf("openai-go defaults streaming, %d runs: %w", n, err)
		}
		for _, x := range []struct {
			system string
			res    fleet.Result
		}{{"Glidepath", gp}, {"openai-go defaults, streaming", sdkStream}, {"openai-go defaults, non-streaming", sdk}} {
			rows = append(rows, []string{fmt.Sprint(n), x.system,
				fmt.Sprintf("%d of %d (%d complete, %d errors)", x.res.Labeled, x.res.Runs, x.res.Complete, x.res.Errors),
				dur(x.res.FirstSpread), startCost(x.res), fmt.Sprint(x.res.Retries), fmt.Sprint(x.res.PeakWindow), num(x.res.MeanWindow), num(x.res.PeakOverMean()),
				fmt.Sprintf("%d / %s", x.res.DuePeakWindow, num(x.res.DueMeanWindow)),
				fmt.Sprintf("%s / %s / %s of %s", dur(x.res.EndP50), dur(x.res.EndP99), dur(x.res.EndMax), dur(x.res.Budget)),
				fmt.Sprintf("%s (heap %s, stacks %s)", num(x.res.BytesPerRun/1024), num(x.res.HeapPerRun/1024), num(x.res.StackPerRun/1024)),
				num(x.res.GoroutinesPerRun), fmt.Sprint(x.res.GoroutinesLeft)})
		}
		// SPEC §7: the busiest 50ms window of retries as sent at most a
		// third of the bare SDK's; starting the fleet at most 1.5× what
		// the SDK takes to send the same first requests.
		peakOK := 3*gp.PeakWindow <= sdkStream.PeakWindow
		r.target(fmt.Sprintf("A fleet of %s runs whose budgets expire together, turned away with 503 + Retry-After at one instant: every run labeled, the busiest 50ms window of retries as sent at most a third of the bare SDK's", num(float64(n))),
			fmt.Sprintf("%d of %d labeled; busiest 50ms window %d retries (%s× the SDK's), %s× its own mean; p99 end %s of %s; %d goroutines left", gp.Labeled, gp.Runs, gp.PeakWindow, num(float64(gp.PeakWindow)/float64(sdkStream.PeakWindow)), num(gp.PeakOverMean()), dur(gp.EndP99), dur(gp.Budget), gp.GoroutinesLeft),
			fmt.Sprintf("openai-go defaults, streaming: %d answered; busiest window %d retries", sdkStream.Labeled, sdkStream.PeakWindow),
			gp.Labeled == gp.Runs && peakOK && gp.GoroutinesLeft == 0, fleetShortfall(gp, peakOK))
		r.idle()
		// A fleet whose budgets really expire in the outage: B = 1s
		// leaves less than the server's Retry-After of 1s before the
		// reserve, so no run can wait it out.
		short := fleet.Config{Runs: n, Budget: expiringBudget}
		gpShort, err := fleet.Glidepath(ctx, short)
		if err != nil {
			return fmt.Errorf("glidepath, %d runs, B %v: %w", n, expiringBudget, err)
		}
		sdkShort, err := fleet.SDKStreaming(ctx, short)
		if err != nil {
			return fmt.Errorf("openai-go defaults streaming, %d runs, B %v: %w", n, expiringBudget, err)
		}
		for _, x := range []struct {
			system string
			res    fleet.Result
		}{{"Glidepath, B = 1s", gpShort}, {"openai-go defaults, streaming, timeout 1s", sdkShort}} {
			// No memory sample: these runs do not wait, so the moment it is
			// taken finds some landing and some gone.
			rows = append(rows, []string{fmt.Sprint(n), x.system,
				fmt.Sprintf("%d of %d (%d complete, %d errors)", x.res.Labeled, x.res.Runs, x.res.Complete, x.res.Errors),
				dur(x.res.FirstSpread), startCost(x.res), fmt.Sprint(x.res.Retries), fmt.Sprint(x.res.PeakWindow), num(x.res.MeanWindow), num(x.res.PeakOverMean()),
				fmt.Sprintf("%d / %s", x.res.DuePeakWindow, num(x.res.DueMeanWindow)),
				fmt.Sprintf("%s / %s / %s of %s", dur(x.res.EndP50), dur(x.res.EndP99), dur(x.res.EndMax), dur(x.res.Budget)),
				"— (not waiting)", "—", fmt.Sprint(x.res.GoroutinesLeft)})
		}
		r.target(fmt.Sprintf("A fleet of %s runs whose budgets expire during the outage (B = 1s, Retry-After: 1): every run labeled, by B", num(float64(n))),
			fmt.Sprintf("%d of %d labeled (%d errors); end p99 %s, max %s of %s; %d goroutines left", gpShort.Labeled, gpShort.Runs, gpShort.Errors, dur(gpShort.EndP99), dur(gpShort.EndMax), dur(gpShort.Budget), gpShort.GoroutinesLeft),
			fmt.Sprintf("openai-go defaults, streaming, under a 1s timeout: %d answered of %d", sdkShort.Labeled, sdkShort.Runs),
			gpShort.Labeled == gpShort.Runs && gpShort.EndMax <= gpShort.Budget && gpShort.GoroutinesLeft == 0, expiringShortfall(gpShort))
		r.idle()
		if n == admitRuns {
			if err := admitRows(ctx, r, &rows, n); err != nil {
				return err
			}
		}
		// The same call on both sides: Glidepath's runs stream.
		startRatio := float64(gp.FirstSpread) / float64(sdkStream.FirstSpread)
		startNote := ""
		if startRatio > 1.5 {
			startNote = startShortfall(gp, sdkStream, sdk) + "; " + aloneNote(aloneGP, aloneSDK)
		}
		r.target(fmt.Sprintf("Starting %s runs costs at most 1.5× what the bare SDK takes to send the same first requests", num(float64(n))),
			fmt.Sprintf("first requests sent over %s (%s×)", dur(gp.FirstSpread), num(startRatio)),
			fmt.Sprintf("openai-go defaults, streaming: %s", dur(sdkStream.FirstSpread)),
			startRatio <= 1.5, startNote)
		r.idle()
	}
	r.add("A fleet whose budgets expire together", []string{"go run ./bench/cmd/benchmd -only fleet", aloneCmd},
		table([]string{"runs", "system", "labeled", "first requests sent over", "until then, per run: CPU / KB allocated / objects; CPU until all were turned away", "retries", "busiest 50ms", "mean 50ms", "busiest/mean", "as due, computed from the planned sleeps (not measured): busiest / mean", "end p50 / p99 / max", "KB per waiting run", "goroutines per waiting run", "goroutines left"}, rows)+`
Every run starts at one instant on B = 5s against one sim (in memory) that answers the first request of each run 503
with Retry-After: 1. The mean is over the 50ms windows from the first retry to the last. openai-go waits exactly
what the server said, so its fleet comes back in one burst; Glidepath waits at least that, then a spread of full
jitter (budget.Backoff.Spread). A Glidepath run's retry is its model client's second attempt; the SDK's is a
request it marked with X-Stainless-Retry-Count. Glidepath's runs stream, so the streaming SDK is the baseline its
start cost and busiest window are judged against; the non-streaming one is shown for scale. Both send what a run's
first request carries, read off the wire of a real run (fleet.FirstMessages): `+firstRequest+`, built anew for
each call; until issue 20 they sent the task alone (`+fmt.Sprint(len(fleet.Task))+` bytes of text), for which the sim's side and
openai-go's encoder paid less. A run's first request is its first attempt, not the landing call of a run whose retry
came too late. *Until then, per run* is measured from the fleet's start to its last first request out: the process's
CPU (the sim's side of every request included, for each system alike) and the heap allocated; and the CPU until
the last run was turned away and had decided its sleep, the whole of every run's start. The B = 1s fleets
are the same outage with budgets that expire in it: no run can wait out the server's second. Every run's budget
starts when the fleet is released, its submission, not when its goroutine first gets the CPU (issue 25); the
rows *with admission* share one admit.Limiter: a run that comes when 1,000 are running, or (B = 1s) that waited
more than 100ms from its submission to start, is refused at once with its labeled result, cause at_capacity; their
ends are the admitted runs'. *As due* is computed
from each retry's planned sleep, not measured. Every time here depends on an idle machine (load average `+loadAverage()+`
at the end of this section): a fleet on 2 cores is CPU-bound, and under load its runs end past B; see `+starvedLink+`.

One run's start alone, one run at a time against a sim that answers 503 (BenchmarkToFirstRetry), until it has decided
its sleep (Glidepath) or has its 503 back (the SDK): `+aloneNote(aloneGP, aloneSDK)+`.

`+resultsTable(alone))
	return nil
}

// startCost is a fleet's start as measured: the process's CPU, the heap
// allocated and the objects, per run, from its start until its last
// first request went out.
func startCost(r fleet.Result) string {
	if r.StartCPUPerRun == 0 {
		return "—"
	}
	away := "—"
	if r.AwayCPUPerRun > 0 {
		away = num(float64(r.AwayCPUPerRun)/float64(time.Microsecond)) + " µs"
	}
	return fmt.Sprintf("%s µs / %s / %s; %s", num(float64(r.StartCPUPerRun)/float64(time.Microsecond)), num(r.StartBytesPerRun/1024), num(r.StartAllocsPerRun), away)
}

// startShortfall says, as measured, what a fleet's start cost is made of
// beside the SDK's sending the same messages (issue 20, item 4): the
// CPU and the heap each spent per run until its last first request went
// out, on a process CPU-bound on its cores.
func startShortfall(gp, sdkStream, sdk fleet.Result) string {
	why := fmt.Sprintf("until its last first request went out, Glidepath spent %s µs of CPU and allocated %s KB in %s objects per run, the streaming SDK sending the same messages %s µs, %s KB in %s objects",
		num(float64(gp.StartCPUPerRun)/float64(time.Microsecond)), num(gp.StartBytesPerRun/1024), num(gp.StartAllocsPerRun),
		num(float64(sdkStream.StartCPUPerRun)/float64(time.Microsecond)), num(sdkStream.StartBytesPerRun/1024), num(sdkStream.StartAllocsPerRun))
	if gp.AwayCPUPerRun > 0 && sdkStream.AwayCPUPerRun > 0 {
		why += fmt.Sprintf("; until every run was turned away, %s µs against %s µs (%s×)",
			num(float64(gp.AwayCPUPerRun)/float64(time.Microsecond)), num(float64(sdkStream.AwayCPUPerRun)/float64(time.Microsecond)),
			num(float64(gp.AwayCPUPerRun)/float64(sdkStream.AwayCPUPerRun)))
	}
	if gp.FirstSpread > time.Second {
		why += "; past the server's Retry-After of 1s the first requests still going out compete with the retries of those turned away"
	}
	return why + fmt.Sprintf(" (the process is CPU-bound on %d cores, the sim's side included for both); for scale, the non-streaming SDK sent them over %s", runtime.NumCPU(), dur(sdk.FirstSpread))
}

// aloneNote says what one run's start costs alone beside the SDK's, as
// BenchmarkToFirstRetry measured it.
func aloneNote(gp, sdk result) string {
	return fmt.Sprintf("alone, one run at a time, Glidepath reaches its first retry in %s µs of CPU, %s KB, %s objects, the SDK its 503 in %s µs, %s KB, %s objects",
		num(gp.get("cpu-us-to-retry")), num(gp.get("B-to-retry")/1024), num(gp.get("allocs-to-retry")),
		num(sdk.get("cpu-us-to-retry")), num(sdk.get("B-to-retry")/1024), num(sdk.get("allocs-to-retry")))
}

// admitRuns is the fleet measured with admission (issue 25), and
// admitLimit its limit: the 1,000 runs the process serves on time.
const (
	admitRuns  = 10000
	admitLimit = 1000
	admitLate  = 100 * time.Millisecond
)

// admitRows measures the fleet of n runs with the process's admission at
// admitLimit: on B = 5s, and on B = 1s with a run refused past admitLate
// from its submission too, since those runs end too fast for the limit to
// be reached. It adds their rows, and the target of issue 25: every
// admitted run ends by B, every refused one labeled at once.
func admitRows(ctx context.Context, r *report, rows *[][]string, n int) error {
	gp, err := fleet.Glidepath(ctx, fleet.Config{Runs: n, Admit: admitLimit})
	if err != nil {
		return fmt.Errorf("glidepath, %d runs, admission at %d: %w", n, admitLimit, err)
	}
	short, err := fleet.Glidepath(ctx, fleet.Config{Runs: n, Budget: expiringBudget, Admit: admitLimit, Late: admitLate})
	if err != nil {
		return fmt.Errorf("glidepath, %d runs, B %v, admission at %d, %v: %w", n, expiringBudget, admitLimit, admitLate, err)
	}
	for _, x := range []struct {
		system string
		res    fleet.Result
	}{{fmt.Sprintf("Glidepath, admission at %s", num(admitLimit)), gp},
		{fmt.Sprintf("Glidepath, B = 1s, admission at %s or %s late", num(admitLimit), dur(admitLate)), short}} {
		*rows = append(*rows, []string{fmt.Sprint(n), x.system,
			fmt.Sprintf("%d of %d (%d complete, %d refused at_capacity, the last at %s, %d errors)", x.res.Labeled, x.res.Runs, x.res.Complete, x.res.Refused, dur(x.res.RefusedEndMax), x.res.Errors),
			dur(x.res.FirstSpread), startCost(x.res), fmt.Sprint(x.res.Retries), fmt.Sprint(x.res.PeakWindow), num(x.res.MeanWindow), num(x.res.PeakOverMean()),
			fmt.Sprintf("%d / %s", x.res.DuePeakWindow, num(x.res.DueMeanWindow)),
			fmt.Sprintf("admitted: %s / %s / %s of %s, %d late", dur(x.res.EndP50), dur(x.res.EndP99), dur(x.res.EndMax), dur(x.res.Budget), x.res.Late),
			"— (not sampled)", "—", fmt.Sprint(x.res.GoroutinesLeft)})
	}
	for _, x := range []struct {
		what string
		res  fleet.Result
	}{{fmt.Sprintf("admission at %s (B = 5s)", num(admitLimit)), gp}, {fmt.Sprintf("admission at %s or %s late (B = 1s)", num(admitLimit), dur(admitLate)), short}} {
		res := x.res
		// At once: before any admitted run could have waited out the
		// server's Retry-After of 1s.
		met := res.Labeled == res.Runs && res.Late == 0 && res.EndMax <= res.Budget && res.RefusedEndMax < time.Second && res.GoroutinesLeft == 0
		note := ""
		if !met {
			note = fmt.Sprintf("%d admitted runs ended after B; the last refusal came at %s; %d errors; %d goroutines left", res.Late, dur(res.RefusedEndMax), res.Errors, res.GoroutinesLeft)
		}
		r.target(fmt.Sprintf("A fleet of %s runs with %s: every admitted run ends by B (p100), every refused one labeled at once", num(float64(n)), x.what),
			fmt.Sprintf("%d admitted, %d late, the last at %s of %s; %d refused, labeled at_capacity, the last at %s", res.Runs-res.Refused, res.Late, dur(res.EndMax), dur(res.Budget), res.Refused, dur(res.RefusedEndMax)),
			"—", met, note)
		r.idle()
	}
	return nil
}

// fleetShortfall says what kept a fleet from its numbers, as measured:
// a fleet whose own first requests take longer than the outage to go out
// is CPU-bound, and sends its retries as the process can, not as they fell
// due.
func fleetShortfall(r fleet.Result, peakOK bool) string {
	var why []string
	if !peakOK {
		why = append(why, fmt.Sprintf("the process is CPU-bound on %d cores: its %d runs' first requests took %s to go out, so %d were turned away and their retries came back as the CPU allowed; as they fell due (computed from the planned sleeps, not measured), the busiest window held %s× the mean",
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

// expiringShortfall says, as measured, what kept a fleet whose budgets
// expire in the outage from ending labeled by B.
func expiringShortfall(r fleet.Result) string {
	var why []string
	if r.EndMax > r.Budget {
		why = append(why, fmt.Sprintf("runs ended up to %s past B: the process is CPU-bound on %d cores, its first requests took %s to go out",
			dur(r.EndMax-r.Budget), runtime.NumCPU(), dur(r.FirstSpread)))
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
	r.idle()
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
	var rows, costRows [][]string
	type total struct{ runs, labeled, answered, errored, capped, doomed, attempts, belowP50, dups int }
	totals := map[string]*total{}
	for _, sys := range battery.Systems() {
		totals[sys.Name] = &total{}
	}
	loops := map[string]battery.Result{} // Glidepath's cells, by scenario: the loops' and the Responses API's rows read them
	scs := r.scenarios()
	for _, sc := range scs {
		var cell []battery.Result
		for _, sys := range battery.Systems() {
			res, err := battery.Run(ctx, sc, sys, batteryRuns)
			if err != nil {
				return fmt.Errorf("%s on %s: %w", sc.Name, sys.Name, err)
			}
			cell = append(cell, res)
			if sys.Name == battery.Glidepath {
				loops[sc.Name] = res
			}
			t := totals[sys.Name]
			t.runs += res.Runs
			t.labeled += res.Labeled
			t.answered += res.Answered
			t.errored += res.Errored
			t.capped += res.Capped
			t.doomed += res.Doomed
			t.attempts += res.Attempts
			t.belowP50 += res.BelowP50
			t.dups += res.Duplicates
		}
		if sc.Healthy {
			costRows = append(costRows, costCells(sc, cell, r)...)
			continue
		}
		for _, res := range cell {
			labeled, below := "—", "— (no p50)"
			if res.System == battery.Glidepath {
				labeled = fmt.Sprintf("%d of %d (%d partial)", res.Labeled, res.Runs, res.Partial)
				if res.Stuck > 0 {
					labeled = fmt.Sprintf("%d of %d (%d partial, %d stuck)", res.Labeled, res.Runs, res.Partial, res.Stuck)
				}
				below = fmt.Sprintf("%d of %d", res.BelowP50, res.Attempts)
			}
			rows = append(rows, []string{sc.Name, res.System, fmt.Sprintf("%s / %s", dur(res.Budget), dur(sc.Quiet)),
				fmt.Sprintf("%s / %s / %s", dur(res.Wall.P50), dur(res.Wall.P99), dur(res.Wall.Max)),
				labeled, fmt.Sprintf("%d / %d / %d", res.Answered, res.Errored, res.Capped),
				fmt.Sprint(res.Doomed), below, fmt.Sprint(res.Duplicates), fmt.Sprint(res.Misreported), fmt.Sprint(res.Orphans),
				allowanceCell(res), stallCell(res.Stall), res.Told})
		}
	}
	r.add("The fault battery", []string{"go run ./bench/cmd/benchmd -only battery"},
		table([]string{"scenario", "system", "B / Q", "wall p50 / p99 / max", "labeled", "answer / error / cap", "doomed", "attempts below p50", "dup writes", "told failed, was done", "orphans", "E (Glidepath's allowance)", "stall seen p50 / p99 / max", "what the user was told (most runs)"}, rows)+fmt.Sprintf(`
%d runs per cell; package bench/battery says what each scenario and system is and how each column is
counted. *doomed*, the same for every system: attempts started and then ended by a timeout, a deadline or
the quiet clock, whoever set it (Glidepath's lease, its deadline or its quiet clock; a baseline's own timeout,
or the battery's cap). *attempts below p50*: of all the work attempts Glidepath started, cut or not, those
granted less than their kind's p50 as known when they started; a baseline knows no p50. *cap*: the battery's
own safety cap (3·B), reached by a run that had no bound of its own. *stall seen*: from the last work the
servers saw to when the system itself cut the stalled part (the cap does not count; "never": it returned only
at the cap); for Glidepath, also its p99 past max(Q, E), the bound a hang must meet. *E*: the allowance of
silence Glidepath's quiet clock gave the stalled call, 2 × the p95 its kind knew (declared by the tool, or from
a latency profile of the model's earlier turns) at most its ceiling and its lease, with where it came from;
"none": nothing was known, Q alone applied. A model call is held only from its response headers, so a server
that never sends them is caught at Q whatever E is. *stuck*: runs Glidepath landed because the model repeated
the same call (same tool, arguments and result) 3 times; a baseline's loop stops at 10 turns. A baseline never
labels its answer; *answer / error / cap* says what it returned. The
per-call-keyed baseline is per-call with a stable Idempotency-Key per logical tool call; the tool server
dedupes keyed requests, so it should commit no write twice. Wall times depend on an idle machine (load
average %s at the end of this section); under load see %s.

### Where the defences cost

Cases where nothing goes wrong: a system that cuts a healthy call, or refuses one that would have fit, loses to
one that waits. Same runs per cell, same servers.

`, batteryRuns, loadAverage(), starvedLink)+
			table([]string{"scenario", "system", "B / Q", "wall p50 / max", "added p50 (computed: − the fastest system's that did the work)", "E (Glidepath's allowance)", "false stalls (healthy calls cut)", "refused / would have fit (replayed)", "tool calls that reached the tool", "complete / partial / answer / error", "what the user was told (most runs)"}, costRows)+`
*false stalls*: every attempt a system cut in these scenarios, since every call in them is healthy. *E*: as
above, for the part that works in silence; "none" is a cold start, where nothing is known of the call and the
quiet clock cuts it at Q (its cost is the rows that say so).
*would have fit*: each call Glidepath refused is made again after the run against the same tool server,
under the lease the budget would have granted it when it refused (min(ceiling, remaining − R − F)); one that
answers within it would have fit. *added p50* is computed from the wall p50s of the row's scenario, against the
fastest system that did the work (every run reached the tool and answered, Glidepath's complete, nothing cut or
refused); a system that returned early without doing it is not counted faster. The
sub-agent pair is the same work, once called by the run itself and once through a sub-agent on a slice of
the budget (the baselines have no sub-agents and call the tool directly both times).
`)
	gp := totals[battery.Glidepath]
	var base []string
	for _, name := range []string{battery.Defaults, battery.PerCall, battery.PerCallKeyed} {
		t := totals[name]
		base = append(base, fmt.Sprintf("%s: %d answered, %d errors, %d at the cap", name, t.answered, t.errored, t.capped))
	}
	r.target("Under every fault scenario, 100% of runs return a labeled result (complete or partial)",
		fmt.Sprintf("%d of %d runs over %d scenarios", gp.labeled, gp.runs, len(scs)),
		strings.Join(base, "; "), gp.labeled == gp.runs, "")
	r.target("No attempt is started with a granted lease below the kind's known p50",
		fmt.Sprintf("%d of %d attempts started (cut or not) had a lease below their kind's p50; %d attempts doomed", gp.belowP50, gp.attempts, gp.doomed),
		fmt.Sprintf("per-call: %d attempts doomed; per-call-keyed: %d", totals[battery.PerCall].doomed, totals[battery.PerCallKeyed].doomed),
		gp.belowP50 == 0, "")
	rep, ok1 := loops["repeated-call"]
	distinct, ok2 := loops["distinct-calls"]
	if ok1 && ok2 { // both run, unless -scenarios left one out
		loopTarget(r, rep, distinct)
	}
	responsesBeside(r, scs, loops)
	return nil
}

// loopTarget is SPEC §7's row of repeated calls (issue 27): every run of
// a model that repeats one call lands stuck within the bounded repeats,
// and no run of distinct calls does.
func loopTarget(r *report, rep, distinct battery.Result) {
	limit := rep.Runs * (1 + harness.DefaultMaxRepeats)
	met := rep.Stuck == rep.Runs && rep.ToolRequests <= limit && distinct.Stuck == 0 && distinct.Complete == distinct.Runs
	r.target(fmt.Sprintf("A loop repeating an identical call lands `stuck` within `--max-repeats` (%d); distinct calls are never taken for one", harness.DefaultMaxRepeats),
		fmt.Sprintf("repeated-call: %d of %d runs stuck, %d tool calls in all (at most %d); distinct-calls: %d of %d stuck, %d complete",
			rep.Stuck, rep.Runs, rep.ToolRequests, limit, distinct.Stuck, distinct.Runs, distinct.Complete),
		"the baselines repeat the call until their loop's limit of 10 turns", met, "")
}

// costCells are the rows of one scenario where the defences cost, one per
// system, and it records each way Glidepath did worse than the best
// baseline as a loss.
func costCells(sc battery.Scenario, cell []battery.Result, r *report) [][]string {
	// Added latency is against the fastest system that did the work: every
	// run reached the tool and answered (Glidepath: complete), nothing cut
	// or refused. A system that returned early without it is not faster.
	didWork := func(res battery.Result) bool {
		ok := res.Answered == res.Runs && res.ToolRequests >= res.Runs && res.FalseStalls == 0 && res.Refused == 0
		if res.System == battery.Glidepath {
			ok = ok && res.Complete == res.Runs
		}
		return ok
	}
	fastest := time.Duration(-1)
	for _, res := range cell {
		if didWork(res) && (fastest < 0 || res.Wall.P50 < fastest) {
			fastest = res.Wall.P50
		}
	}
	var rows [][]string
	var gp battery.Result
	var baselines []string
	best := cell[0] // the baseline that did the work, then the fastest
	for _, res := range cell {
		if res.System == battery.Glidepath {
			gp = res
			continue
		}
		baselines = append(baselines, fmt.Sprintf("%s %s", res.System, dur(res.Wall.P50)))
		if (didWork(res) && !didWork(best)) || (didWork(res) == didWork(best) && res.Wall.P50 < best.Wall.P50) {
			best = res
		}
	}
	for _, res := range cell {
		refused, outcome := "—", fmt.Sprintf("— / — / %d / %d", res.Answered, res.Errored)
		if res.System == battery.Glidepath {
			refused = fmt.Sprintf("%d / %d", res.Refused, res.RefusedWouldFit)
			outcome = fmt.Sprintf("%d / %d / — / %d", res.Complete, res.Partial, res.Errored)
		}
		added := "— (did not do the work)"
		if didWork(res) {
			added = "+" + dur(res.Wall.P50-fastest) // fastest is the least of these: never negative
		}
		rows = append(rows, []string{sc.Name, res.System, fmt.Sprintf("%s / %s", dur(res.Budget), dur(sc.Quiet)),
			fmt.Sprintf("%s / %s", dur(res.Wall.P50), dur(res.Wall.Max)), added, allowanceCell(res),
			fmt.Sprint(res.FalseStalls), refused, fmt.Sprint(res.ToolRequests), outcome, res.Told})
	}
	var why []string
	if gp.FalseStalls > 0 {
		why = append(why, fmt.Sprintf("cut %d healthy calls%s and landed %d of %d runs partial", gp.FalseStalls, cutWhy(gp.Allowance), gp.Partial, gp.Runs))
	}
	if gp.Refused > 0 {
		why = append(why, fmt.Sprintf("refused %d calls, %d of which would have fit (replayed)", gp.Refused, gp.RefusedWouldFit))
	}
	if gp.ToolRequests < best.ToolRequests {
		why = append(why, fmt.Sprintf("reached the tool %d times against %s's %d", gp.ToolRequests, best.System, best.ToolRequests))
	}
	// Below 20ms or 5% of the fastest, a difference is this machine's
	// noise between cells, not a cost.
	if d := gp.Wall.P50 - fastest; didWork(gp) && d > max(20*time.Millisecond, fastest/20) {
		why = append(why, fmt.Sprintf("took %s longer at p50 than the fastest system that did the work (%s; baselines: %s)",
			dur(d), dur(gp.Wall.P50), strings.Join(baselines, ", ")))
	}
	if len(why) > 0 {
		r.lose(fmt.Sprintf("%s (%s): Glidepath %s; %s answered %d of %d in %s p50", sc.Name, sc.Summary, strings.Join(why, ", "),
			best.System, best.Answered, best.Runs, dur(best.Wall.P50)))
	}
	return rows
}

func stallCell(s battery.Stall) string {
	if !s.Applies {
		return "—"
	}
	out := "never"
	if s.Noticed > 0 {
		out = fmt.Sprintf("%s / %s / %s", dur(s.P50), dur(s.P99), dur(s.Max))
	}
	if s.Bounded > 0 {
		out += "; " + pastBound(s.Late.P99) + " p99"
	}
	if s.Never > 0 {
		out += fmt.Sprintf(" (%d never)", s.Never)
	}
	return out
}

// pastBound prints a time d after max(Q, E), or before it.
func pastBound(d time.Duration) string {
	if d < 0 {
		return "max(Q, E) − " + dur(-d)
	}
	return "max(Q, E) + " + dur(d)
}

// allowanceCell states E as Glidepath's runs of a cell computed it, and
// its source: "—" for a baseline, or where no silent call began.
func allowanceCell(res battery.Result) string {
	a := res.Allowance
	switch {
	case a.Runs == 0:
		return "—"
	case a.Source == "none":
		return "none (Q alone)"
	case a.P50 == a.Max:
		return fmt.Sprintf("%s (%s)", dur(a.P50), a.Source)
	}
	return fmt.Sprintf("%s, at most %s (%s)", dur(a.P50), dur(a.Max), a.Source)
}

// cutWhy says, in parentheses, why Glidepath's quiet clock cut a healthy
// silent call: nothing was known of it (a cold start), or its allowance
// was too short; "" for a scenario with no silent part, whose cuts are
// its leases'.
func cutWhy(a battery.Allowance) string {
	switch {
	case a.Runs == 0:
		return ""
	case a.Source == "none":
		return " (nothing known of it, no E: the quiet period alone applied, the cold start's cost)"
	}
	return fmt.Sprintf(" (E %s, %s, too short for it)", dur(a.P50), a.Source)
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
with one). The tool server dedupes keyed requests, so per-call's duplicates measure "no idempotency key", not "no
Glidepath": per-call-keyed, the same loop with a stable key per logical call, made %d. The orphan and wall
figures hold on an idle machine (load average %s at the end of this section); under load see %s.
`, duplicateWrites, got[battery.PerCallKeyed].Duplicates, loadAverage(), starvedLink))
	gp, pc := got[battery.Glidepath], got[battery.PerCall]
	r.target("A write that commits after its lease ended is never sent twice: 0 duplicates in 1,000",
		fmt.Sprintf("%d duplicates in %d; %d orphans journaled with their keys", gp.Duplicates, gp.Writes, gp.Orphans),
		fmt.Sprintf("per-call timeouts + retries, no key: %d duplicates in %d; with a stable key: %d duplicates, %d told failed though done",
			pc.Duplicates, pc.Writes, got[battery.PerCallKeyed].Duplicates, got[battery.PerCallKeyed].Misreported),
		gp.Duplicates == 0, "")
	r.idle()
	for _, sys := range battery.Systems() {
		b := got[sys.Name]
		if sys.Name != battery.Glidepath && b.Duplicates == 0 && b.Misreported == 0 && b.Answered == b.Writes && b.Wall.P50 < gp.Wall.P50 {
			r.lose(fmt.Sprintf("duplicates: %s made no duplicate and told no committed write failed, as Glidepath, and returned sooner: %s p50 against Glidepath's %s",
				sys.Name, dur(b.Wall.P50), dur(gp.Wall.P50)))
		}
	}
	if gp.Orphans > 0 {
		r.lose(fmt.Sprintf("duplicates: Glidepath left %d of %d late writes as orphans, their outcome unknown when the run landed (load average %s)", gp.Orphans, gp.Writes, loadAverage()))
	}
	return nil
}

// stepCPUWhy says where a step's CPU beyond the bare loop's goes, as
// BenchmarkStepCPU's third arm tells it: the same loop with Glidepath's
// model client in place of the bare streaming call. A row met needs no
// why.
func stepCPUWhy(c result, met bool) string {
	gp, bare, client := c.get("cpu-us/step-glidepath"), c.get("cpu-us/step-bare"), c.get("cpu-us/step-client")
	if met || math.IsNaN(client) {
		return ""
	}
	return fmt.Sprintf("of the %s µs a step costs over the bare loop, Glidepath's model client, run alone in the bare loop's "+
		"place, accounts for %s µs (%s× the bare loop: the stream's chunk and keepalive counting, the lease, the turn "+
		"machine) and the harness around it for the other %s µs (the session, the tool call with its argument check "+
		"against the schema, the watchdog, the records); the step allocates %s objects (%s KB) against the bare "+
		"loop's %s (%s KB), and the garbage collector took %s%% of the process's CPU",
		num(gp-bare), num(client-bare), num(client/bare), num(gp-client),
		num(c.get("allocs/step-glidepath")), num(c.get("B/step-glidepath")/1024),
		num(c.get("allocs/step-bare")), num(c.get("B/step-bare")/1024), num(100*c.get("gc-cpu-share")))
}
