package battery_test

import (
	"bytes"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/bench/battery"
	"github.com/glidepath/glidepath/harness"
)

// smallRuns is how many runs the small battery makes of each scenario.
const smallRuns = 3

// margin is how late after B a run may return in these tests: the race
// detector, and every scenario at once on two cores, slow things down.
// The bound SPEC §7 sets in process (B + 2ms) is make bench's to measure.
const margin = 250 * time.Millisecond

// The small battery: Glidepath against every scenario, a few runs each,
// and a few late-commit writes. Every run must return a labeled answer
// within B, commit no write twice, start no doomed attempt below its
// kind's p50, notice every stall within max(Q, E) of its last work (E the
// stalled call's allowance of silence, issue 27), and leave no goroutine
// behind.
func TestGlidepathSmallBattery(t *testing.T) {
	sys, ok := battery.SystemNamed(battery.Glidepath)
	if !ok {
		t.Fatal("no glidepath system")
	}
	before := runtime.NumGoroutine()
	t.Run("group", func(t *testing.T) {
		for _, sc := range battery.Scenarios() {
			t.Run(sc.Name, func(t *testing.T) {
				t.Parallel() // each run has servers of its own
				r, err := battery.Run(t.Context(), sc, sys, smallRuns)
				if err != nil {
					t.Fatal(err)
				}
				checkGlidepath(t, sc, r)
			})
		}
	})
	// After the scenarios, not beside them: beside thirty runs on two cores
	// under the race detector, 2 and then 10 of 20 writes were never
	// committed (issue 27's seven new scenarios), which is the machine's
	// load, not what this counts.
	t.Run("duplicates", func(t *testing.T) {
		d, err := battery.Duplicates(t.Context(), sys, 20)
		if err != nil {
			t.Fatal(err)
		}
		if d.Duplicates != 0 || d.Commits != d.Committed {
			t.Errorf("%d commits of %d writes, %d duplicates; want each committed once", d.Commits, d.Committed, d.Duplicates)
		}
		if d.Committed != d.Writes {
			t.Errorf("%d of %d writes committed; a late commit always commits (told %d times: %s)", d.Committed, d.Writes, d.ToldRuns, d.Told)
		}
		if d.Labeled != d.Writes || d.Misreported != 0 {
			t.Errorf("%d of %d labeled, %d told it failed; want all labeled, none misreported", d.Labeled, d.Writes, d.Misreported)
		}
	})
	if left := goroutinesLeft(before); left > 0 {
		var buf bytes.Buffer
		pprof.Lookup("goroutine").WriteTo(&buf, 1)
		t.Errorf("%d goroutines left after the battery:\n%s", left, buf.String())
	}
}

func checkGlidepath(t *testing.T, sc battery.Scenario, r battery.Result) {
	t.Helper()
	if r.Runs != smallRuns {
		t.Fatalf("%d runs, want %d", r.Runs, smallRuns)
	}
	if r.Labeled != r.Runs || r.Capped != 0 || r.Errored != 0 {
		t.Errorf("%d of %d labeled (%d errors, %d capped); want every run labeled. Told: %q", r.Labeled, r.Runs, r.Errored, r.Capped, r.Told)
	}
	if r.Wall.Max > sc.Budget+margin {
		t.Errorf("the slowest run returned after %v, want by B + %v = %v", r.Wall.Max, margin, sc.Budget+margin)
	}
	if r.Duplicates != 0 || r.Misreported != 0 {
		t.Errorf("%d duplicate writes, %d told failed though committed; want none", r.Duplicates, r.Misreported)
	}
	if sc.Write && r.Writes+r.Orphans < r.Runs {
		t.Errorf("%d writes committed and %d orphaned of %d runs: a write went missing unsaid", r.Writes, r.Orphans, r.Runs)
	}
	if r.DoomedBelowP50 != 0 {
		t.Errorf("%d doomed attempts were granted less than their kind's p50", r.DoomedBelowP50)
	}
	if r.Stall.Applies {
		if r.Stall.Noticed != r.Runs {
			t.Errorf("stall noticed in %d of %d runs (%d never, %d returned without)", r.Stall.Noticed, r.Runs, r.Stall.Never, r.Stall.Unnoticed)
		}
		// Each run against its own bound: E is the battery's reading of
		// the rule (watchdog.Expected.Allowance) with the run's lease.
		if r.Stall.Bounded != r.Stall.Noticed || r.Stall.Late.Max > margin {
			t.Errorf("stall noticed after %v at most, %v past max(Q, E) (Q %v, E %v to %v, %s; %d of %d runs bounded); want within %v of it",
				r.Stall.Max, r.Stall.Late.Max, sc.Quiet, r.Allowance.P50, r.Allowance.Max, r.Allowance.Source, r.Stall.Bounded, r.Stall.Noticed, margin)
		}
	}
	if r.ModelRequests < r.Runs {
		t.Errorf("%d model requests for %d runs: the runs did not reach the sim", r.ModelRequests, r.Runs)
	}
}

// The baselines run end to end, so that they do not rot; their numbers
// are the report's, not asserted here.
func TestBaselinesRunEndToEnd(t *testing.T) {
	for _, name := range []string{battery.Defaults, battery.PerCall, battery.PerCallKeyed} {
		for _, scName := range []string{"lost-write", "mcp-progress-stops"} {
			t.Run(name+"/"+scName, func(t *testing.T) {
				t.Parallel()
				sys, _ := battery.SystemNamed(name)
				sc, ok := battery.Lookup(scName)
				if !ok {
					t.Fatalf("no scenario %q", scName)
				}
				r, err := battery.Run(t.Context(), sc, sys, 1)
				if err != nil {
					t.Fatal(err)
				}
				if r.Runs != 1 || r.Answered+r.Errored+r.Capped != 1 || r.Labeled != 0 {
					t.Errorf("%+v: want one run, answered, errored or capped, never labeled", r)
				}
				if r.ModelRequests == 0 || r.ToolRequests == 0 || r.Told == "" {
					t.Errorf("%d model and %d tool requests, told %q: want the loop to have run", r.ModelRequests, r.ToolRequests, r.Told)
				}
			})
		}
	}
}

func TestScenariosAreWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, sc := range battery.Scenarios() {
		if seen[sc.Name] {
			t.Errorf("scenario %q twice", sc.Name)
		}
		seen[sc.Name] = true
		if sc.Budget <= 0 || sc.Cap < sc.Budget || sc.Quiet <= 0 || sc.Quiet >= sc.Budget || sc.ToolCeiling <= 0 {
			t.Errorf("%s: B %v, cap %v, Q %v, ceiling %v", sc.Name, sc.Budget, sc.Cap, sc.Quiet, sc.ToolCeiling)
		}
		if got, ok := battery.Lookup(sc.Name); !ok || got.Name != sc.Name {
			t.Errorf("Lookup(%q) = %q, %v", sc.Name, got.Name, ok)
		}
	}
	if len(seen) != 36 {
		t.Errorf("%d scenarios, want the 12 of issue 13, the 8 of issue 20, the 7 of issue 27 and its 9 on the Responses API", len(seen))
	}
	var names []string
	for _, s := range battery.Systems() {
		names = append(names, s.Name)
	}
	if want := []string{battery.Defaults, battery.PerCall, battery.PerCallKeyed, battery.Glidepath}; !slices.Equal(names, want) {
		t.Errorf("systems %v, want %v", names, want)
	}
}

// The two-sided battery (issue 20) labels what a defence costs. These
// cases assert labels and counts, never timings: a call silent for 1.5·Q
// whose p95 is known (declared, or from a profile) is held for its
// allowance E and answers, no false stall (issue 27); the same call with
// nothing known of it is still cut at Q, the run partial — the cold
// start's cost — while a baseline waits and answers either way; a loop
// of distinct calls is no repeat; a declared p50 far above the truth
// refuses a call that, replayed, fits; a sub-agent's slice refuses work
// its parent would have done.
func TestTheBatteryCountsWhatTheDefencesCost(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		check    func(t *testing.T, g, p battery.Result)
	}{
		{"silent-1.5Q", heldForItsAllowance("declared")},
		{"reasoning-warm", heldForItsAllowance("profile")},
		{"silent-1.5Q-cold", cutCold},
		{"reasoning-cold", cutCold},
		{"distinct-calls", func(t *testing.T, g, p battery.Result) {
			if g.Stuck != 0 || g.Complete != g.Runs || g.ToolRequests != p.ToolRequests {
				t.Errorf("glidepath: %d stuck, %d of %d complete, %d tool calls against per-call's %d; want every distinct call made and the runs complete",
					g.Stuck, g.Complete, g.Runs, g.ToolRequests, p.ToolRequests)
			}
		}},
		{"p50-too-high", func(t *testing.T, g, p battery.Result) {
			if g.Refused != g.Runs || g.RefusedWouldFit != g.Runs {
				t.Errorf("glidepath: %d refused, %d would have fit, of %d runs; want every call refused and every replay to fit", g.Refused, g.RefusedWouldFit, g.Runs)
			}
			if g.ToolRequests != 0 || p.ToolRequests != p.Runs {
				t.Errorf("tool requests: glidepath %d, per-call %d; want 0 and one per run (replays are not counted)", g.ToolRequests, p.ToolRequests)
			}
		}},
		{"subagent-slice", func(t *testing.T, g, p battery.Result) {
			// The child's slice, less its own reserve, is below the tool's
			// p50: the work the run would do itself is refused in the child.
			if g.Refused < g.Runs || g.ToolRequests != 0 || g.Labeled != g.Runs {
				t.Errorf("glidepath: %d refused, %d tool requests, %d of %d labeled; want the child to refuse the work, labeled", g.Refused, g.ToolRequests, g.Labeled, g.Runs)
			}
			if p.ToolRequests != p.Runs {
				t.Errorf("per-call: %d tool requests in %d runs; want it to do the work", p.ToolRequests, p.Runs)
			}
		}},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			t.Parallel()
			sc, ok := battery.Lookup(tc.scenario)
			if !ok || !sc.Healthy {
				t.Fatalf("no healthy scenario %q", tc.scenario)
			}
			g, p := glidepathAndPerCall(t, sc)
			tc.check(t, g, p)
		})
	}
}

// heldForItsAllowance checks a healthy silent call whose E came from
// source: held past Q, cut by no one, the run complete, as the baseline.
func heldForItsAllowance(source string) func(t *testing.T, g, p battery.Result) {
	return func(t *testing.T, g, p battery.Result) {
		t.Helper()
		if g.Allowance.Runs != g.Runs || g.Allowance.Source != source {
			t.Errorf("glidepath: E %v known in %d of %d runs, from %q; want it in every run, from %q", g.Allowance.P50, g.Allowance.Runs, g.Runs, g.Allowance.Source, source)
		}
		if g.FalseStalls != 0 || g.Complete != g.Runs {
			t.Errorf("glidepath: %d false stalls, %d of %d complete; want the call held for E and every run complete. Told: %q", g.FalseStalls, g.Complete, g.Runs, g.Told)
		}
		waitedAndAnswered(t, p)
	}
}

// cutCold checks a healthy silent call of which nothing is known: no E,
// cut at Q, every run partial; the baseline waits and answers.
func cutCold(t *testing.T, g, p battery.Result) {
	t.Helper()
	if g.Allowance.Source != "none" || g.FalseStalls != g.Runs || g.Partial != g.Runs {
		t.Errorf("glidepath: E from %q, %d false stalls, %d of %d partial; want no E and every healthy call cut at Q", g.Allowance.Source, g.FalseStalls, g.Partial, g.Runs)
	}
	waitedAndAnswered(t, p)
}

func waitedAndAnswered(t *testing.T, p battery.Result) {
	t.Helper()
	if p.FalseStalls != 0 || p.Answered != p.Runs {
		t.Errorf("per-call: %d false stalls, %d of %d answered; want it to wait and answer", p.FalseStalls, p.Answered, p.Runs)
	}
}

// A model that hangs, its p95 known (issue 27): before its headers the
// quiet period alone applies, so a server that never answers is caught
// at Q and named so; after them its allowance holds the quiet clock, so
// it is caught past Q, at max(Q, E), and named as silent past its usual
// time. Ordering and words, bounded generously: the timings are make
// bench's.
func TestAModelHangIsCaughtAtItsBoundAndNamed(t *testing.T) {
	gp, _ := battery.SystemNamed(battery.Glidepath)
	for _, tc := range []struct {
		scenario string
		held     bool
		words    string
	}{
		{"model-hang-headers", false, "the model's server never answered"},
		{"model-hang-after-headers", true, "the model was silent past its usual time after its server answered"},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			t.Parallel()
			sc, _ := battery.Lookup(tc.scenario)
			r, err := battery.Run(t.Context(), sc, gp, 2)
			if err != nil {
				t.Fatal(err)
			}
			if r.Allowance.Runs != r.Runs || r.Allowance.Source != "profile" || r.Allowance.P50 <= sc.Quiet+margin {
				t.Fatalf("E %v from %q in %d of %d runs; want one from the profile in each, well above Q %v", r.Allowance.P50, r.Allowance.Source, r.Allowance.Runs, r.Runs, sc.Quiet)
			}
			checkCaught(t, r, sc.Quiet, tc.held, tc.words)
		})
	}
}

// Activity is not progress (issue 27): a model that asks for the same
// call every turn lands stuck within the bounded repeats, and its
// boundary names the call; a baseline goes on to its loop limit.
func TestARepeatedCallLandsStuck(t *testing.T) {
	sc, _ := battery.Lookup("repeated-call")
	g, p := glidepathAndPerCall(t, sc)
	if calls := g.Runs * (1 + harness.DefaultMaxRepeats); g.Stuck != g.Runs || g.ToolRequests > calls {
		t.Errorf("glidepath: %d of %d stuck after %d tool calls; want every run stuck within %d", g.Stuck, g.Runs, g.ToolRequests, calls)
	}
	if !strings.Contains(g.Told, `stuck repeating a call: lookup {"query":"order 7"}`) {
		t.Errorf("glidepath told %q; want the repeated call named", g.Told)
	}
	if p.Stuck != 0 || p.ToolRequests <= g.ToolRequests {
		t.Errorf("per-call: %d stuck, %d tool calls against Glidepath's %d; want it to go on repeating", p.Stuck, p.ToolRequests, g.ToolRequests)
	}
}

// Doomed has one definition for every system: an attempt Glidepath's
// quiet clock cut counts, as a baseline's timeout does.
func TestAQuietClockCutIsDoomed(t *testing.T) {
	sc, _ := battery.Lookup("model-keepalive")
	gp, _ := battery.SystemNamed(battery.Glidepath)
	r, err := battery.Run(t.Context(), sc, gp, 2)
	if err != nil {
		t.Fatal(err)
	}
	if r.Doomed < r.Runs || r.Attempts < r.Doomed || r.BelowP50 != 0 {
		t.Errorf("%d doomed of %d attempts (%d below p50) in %d runs; want each run's quiet cut counted, none below p50", r.Doomed, r.Attempts, r.BelowP50, r.Runs)
	}
}

// The best loop without a budget: a stable key per logical call, so the
// tool server, which dedupes keyed requests, commits each late write
// once, where the same loop without a key commits it on every attempt.
func TestAStableKeyStopsTheBaselinesDuplicates(t *testing.T) {
	for _, tc := range []struct {
		system string
		dups   bool
	}{{battery.PerCallKeyed, false}, {battery.PerCall, true}} {
		t.Run(tc.system, func(t *testing.T) {
			t.Parallel()
			sys, _ := battery.SystemNamed(tc.system)
			d, err := battery.Duplicates(t.Context(), sys, 4)
			if err != nil {
				t.Fatal(err)
			}
			if got := d.Duplicates > 0; got != tc.dups {
				t.Errorf("%d duplicates in %d writes (%d commits); want duplicates: %v", d.Duplicates, d.Writes, d.Commits, tc.dups)
			}
		})
	}
}

// goroutinesLeft waits, boundedly, for goroutines that are already ending
// (connections' read loops) and returns how many more there are than
// before.
func goroutinesLeft(before int) int {
	deadline := time.Now().Add(5 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		<-tick.C
	}
	return max(0, runtime.NumGoroutine()-before)
}

// checkCaught checks that each of r's runs noticed its hang within its
// bound — Q, or max(Q, E) for a call its allowance held, and then not
// before E — and landed partial, told words.
func checkCaught(t *testing.T, r battery.Result, q time.Duration, held bool, words string) {
	t.Helper()
	bound := q
	if held {
		bound = max(q, r.Allowance.P50)
		if r.Stall.P50 < bound-margin {
			t.Errorf("noticed at %v p50, before its allowance %v: the hold did not hold", r.Stall.P50, bound)
		}
	}
	if r.Stall.Noticed != r.Runs || r.Stall.Max > bound+margin {
		t.Errorf("noticed in %d of %d runs, at %v at most; want each within %v + %v", r.Stall.Noticed, r.Runs, r.Stall.Max, bound, margin)
	}
	if r.Partial != r.Runs || !strings.Contains(r.Told, words) {
		t.Errorf("%d of %d partial, told %q; want each partial, told %q", r.Partial, r.Runs, r.Told, words)
	}
}
