package bench_test

import (
	"context"
	"encoding/json"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/glidepath/glidepath/bench/internal/hog"
	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
)

// starvedBudget is B in BenchmarkStarvedRun: short, for many runs.
const starvedBudget = 300 * time.Millisecond

// starvedWarm is how long the hogs run before the first run is timed, so
// that every one is at work by then.
const starvedWarm = 200 * time.Millisecond

// BenchmarkStarvedRun measures SPEC §7's "on a starved machine (a CPU hog
// on every core beside the runs), the in-process run end past B, p99":
// BenchmarkHangingRun's run — a first turn that calls a local tool that
// ignores its context, a model endpoint that hangs on every later request,
// the landing call included — on a 1ms floor, so that nothing of the
// margin hides lateness, beside machine=idle, the same runs with no hog,
// and beside floor=default, the runs as a user makes them, whose landing
// ends the 50ms floor before D. Under machine=starved a hog process per
// core (package bench/internal/hog) spins for the whole benchmark.
//
// late-p50-ms, -p99-ms and -max-ms are return time − B (negative: early);
// end-late-p99-ms is when run_end was recorded − B, the part of the
// lateness that comes before the result exists; after-end-p99-ms is
// return − run_end, what the return path costs once it does. labeled
// counts runs that returned a labeled partial result; hog-cpu-share is
// the CPU the hogs spent over their wall time × their number (near 1: the
// runs had to win their CPU from them). The baseline, timer-late-p50-ms,
// -p99-ms and -max-ms, is a bare timer of B started beside each run: how
// late this machine, so loaded, wakes anything at all; over-timer-p99-ms
// is the p99 of each run's lateness less its own timer's, the part that
// is the run's.
func BenchmarkStarvedRun(b *testing.B) {
	for _, bc := range []struct {
		name  string
		hogs  int
		floor time.Duration
	}{
		{"floor=1ms/machine=idle", -1, time.Millisecond},
		{"floor=1ms/machine=starved", runtime.NumCPU(), time.Millisecond},
		{"floor=default/machine=starved", runtime.NumCPU(), 0},
	} {
		b.Run(bc.name, func(b *testing.B) { benchmarkStarvedRun(b, bc.hogs, bc.floor) })
	}
}

func benchmarkStarvedRun(b *testing.B, hogs int, floor time.Duration) {
	srv := sim.NewServer(&sim.Scenario{Rules: []sim.Rule{{Turn: 2, Hang: true}}})
	defer srv.Close()
	gp := glidepathModel(b, srv.URL, srv.Client())

	release := make(chan struct{})
	stuck := func(context.Context, json.RawMessage, tools.Progress) (any, error) {
		<-release
		return "too late", nil
	}
	reg := tools.NewRegistry(nil)
	spec := tools.Spec{Name: "lookup", Description: "Looks things up.", Effect: tools.Read, Ceiling: hangToolCeiling}
	if err := reg.Register(tools.Func(spec, stuck)); err != nil {
		b.Fatal(err)
	}
	defer func() {
		close(release)
		reg.Wait()
	}()

	var h *hog.Hogs
	if hogs > 0 {
		// Bounded by the longest this benchmark can take, with room.
		var err error
		if h, err = hog.Start(hogs, time.Duration(b.N+10)*3*starvedBudget+time.Minute); err != nil {
			b.Fatal(err)
		}
		defer h.Stop()          // if the benchmark fails before its end
		time.Sleep(starvedWarm) // a real process: let every hog reach its loop
	}
	hogStart := time.Now()

	var late, endLate, afterEnd, timerLate, overTimer []time.Duration
	labeled := 0
	for b.Loop() {
		// The baseline runs beside each run, under the same load at the
		// same instants: a bare timer of B, how late this machine wakes
		// anything at all.
		var bare sync.WaitGroup
		bare.Go(func() {
			start := time.Now()
			<-time.After(starvedBudget)
			timerLate = append(timerLate, time.Since(start)-starvedBudget)
		})
		r := starvedRun(b, gp, reg, floor)
		bare.Wait()
		overTimer = append(overTimer, r.returned-starvedBudget-timerLate[len(timerLate)-1])
		late = append(late, r.returned-starvedBudget)
		endLate = append(endLate, r.runEnd-starvedBudget)
		afterEnd = append(afterEnd, r.returned-r.runEnd)
		if r.labeled {
			labeled++
		}
	}
	if h != nil {
		wall := time.Since(hogStart) + starvedWarm
		if err := h.Stop(); err != nil {
			b.Fatal(err)
		}
		// What the hogs got of the cores they were meant to fill: near 1
		// means the runs had to win their CPU from them.
		b.ReportMetric(float64(h.CPU())/float64(wall*time.Duration(h.Len())), "hog-cpu-share")
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(quantile(late, 0.50)), "late-p50-ms")
	b.ReportMetric(ms(quantile(late, 0.99)), "late-p99-ms")
	b.ReportMetric(ms(quantile(late, 1)), "late-max-ms")
	b.ReportMetric(ms(quantile(endLate, 0.99)), "end-late-p99-ms")
	b.ReportMetric(ms(quantile(afterEnd, 0.99)), "after-end-p99-ms")
	b.ReportMetric(ms(quantile(timerLate, 0.50)), "timer-late-p50-ms")
	b.ReportMetric(ms(quantile(timerLate, 0.99)), "timer-late-p99-ms")
	b.ReportMetric(ms(quantile(timerLate, 1)), "timer-late-max-ms")
	b.ReportMetric(ms(quantile(overTimer, 0.99)), "over-timer-p99-ms")
	b.ReportMetric(float64(labeled), "labeled")
	b.ReportMetric(float64(len(late)), "runs")
}

// starvedTimes is one run of BenchmarkStarvedRun, each time since just
// before its budget was made.
type starvedTimes struct {
	runEnd, returned time.Duration
	labeled          bool
}

// starvedRun runs harness.Run once and times it.
func starvedRun(b *testing.B, c *model.Client, reg *tools.Registry, floor time.Duration) starvedTimes {
	rec := newRunRecords()
	start := time.Now()
	bud, err := budget.New(budget.Config{Total: starvedBudget, Floor: floor})
	if err != nil {
		b.Fatal(err)
	}
	res, err := harness.Run(context.Background(), bud, harness.Config{
		Task:  "look up cats",
		Model: c,
		Tools: reg,
		Sinks: []trace.Sink{rec.Sink()},
	})
	returned := time.Since(start)
	if err != nil {
		b.Fatal(err)
	}
	return starvedTimes{
		runEnd:   stamp(rec.wait(b), trace.RunEnd, start),
		returned: returned,
		labeled:  res.Status == landing.Partial && res.Boundary != "",
	}
}

// A run beside a hog still lands labeled, its result made before it
// returns: the order of its records and its return, not their timing,
// which a loaded machine decides (BenchmarkStarvedRun measures it, with a
// hog on every core). One hog, for a third of a second: make test runs
// other packages' tests beside this one.
func TestARunBesideAHogStillLandsLabeled(t *testing.T) {
	srv := sim.NewServer(&sim.Scenario{Rules: []sim.Rule{{Turn: 2, Hang: true}}})
	defer srv.Close()
	c, err := model.New(model.Config{BaseURL: srv.URL, HTTPClient: srv.Client(), Model: sim.ModelID})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	reg := tools.NewRegistry(nil)
	spec := tools.Spec{Name: "lookup", Description: "Looks things up.", Effect: tools.Read, Ceiling: hangToolCeiling}
	if err := reg.Register(tools.Func(spec, func(context.Context, json.RawMessage, tools.Progress) (any, error) {
		<-release
		return "too late", nil
	})); err != nil {
		t.Fatal(err)
	}
	defer func() {
		close(release)
		reg.Wait()
	}()
	h, err := hog.Start(1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Stop()

	rec := newRunRecords()
	start := time.Now()
	bud, err := budget.New(budget.Config{Total: starvedBudget})
	if err != nil {
		t.Fatal(err)
	}
	res, err := harness.Run(context.Background(), bud, harness.Config{Task: "look up cats", Model: c, Tools: reg, Sinks: []trace.Sink{rec.Sink()}})
	returned := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != landing.Partial || res.Boundary == "" {
		t.Errorf("got status %q with boundary %q, want a labeled partial result", res.Status, res.Boundary)
	}
	recs := rec.wait(t)
	landed, ended := stamp(recs, trace.Landing, start), stamp(recs, trace.RunEnd, start)
	if landed < 0 || ended < landed || returned < ended {
		t.Errorf("landing at %v, run_end at %v, returned at %v: want the landing, then run_end, then the return", landed, ended, returned)
	}
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	if h.CPU() <= 0 {
		t.Errorf("the hogs spent no CPU")
	}
}
