package battery

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/glidepath/glidepath/watchdog"
)

// System names.
const (
	Defaults     = "defaults"
	PerCall      = "per-call"
	PerCallKeyed = "per-call-keyed"
	Glidepath    = "glidepath"
)

// A System is one way of running an agent: three baselines written as
// people write agent loops today, and Glidepath.
type System struct {
	// Name is Defaults, PerCall, PerCallKeyed or Glidepath.
	Name string
	// Summary says how the system runs a call, for a person.
	Summary string

	run func(ctx context.Context, w *world, log *runLog) outcome
}

// Systems returns the four systems, baselines first.
func Systems() []System {
	return []System{
		{Name: Defaults, Summary: "openai-go with its defaults (2 silent retries, no overall timeout); " +
			"each tool call under context.WithTimeout(its ceiling), plain HTTP POST, no tool retries", run: runDefaults},
		{Name: PerCall, Summary: "per-request timeouts on model calls (B/2) and tool calls (their ceiling), " +
			"and 3 attempts with cenkalti/backoff/v5 around every call, writes retried like reads; no shared budget", run: runPerCall},
		{Name: PerCallKeyed, Summary: "per-call, and a stable Idempotency-Key per logical tool call sent on every attempt " +
			"(the best loop people write without a budget)", run: runPerCallKeyed},
		{Name: Glidepath, Summary: "harness.Run on one budget B: leases, the quiet clock, landing; tools over the remote " +
			"protocol (tools.Remote) or MCP (tools/mcp)", run: runGlidepath},
	}
}

// SystemNamed returns the system named name.
func SystemNamed(name string) (System, bool) {
	for _, s := range Systems() {
		if s.Name == name {
			return s, true
		}
	}
	return System{}, false
}

// MaxParallel bounds the runs of one cell that [Run] runs at once.
const MaxParallel = 10

// Stagger is how far apart [Run] starts the first runs of a cell whose
// scenario stalls: each run's stall then fires at an instant of its own,
// and a run's detection is measured, not ten runs' cuts queued on two
// cores behind one another (that is a load, which a starved machine and
// the fleet measure). Later runs start as earlier ones end, and stay
// apart.
const Stagger = 20 * time.Millisecond

// Quantiles are durations by the nearest-rank method, so that the p99 of
// fewer than 100 runs is their maximum.
type Quantiles struct {
	P50, P99, Max time.Duration
}

// Stall is how soon a system noticed a stall: from the last time the
// stalled part did real work (a tool call's arrival or its last progress
// report, a model request's arrival, as its server saw them) to the first
// attempt of the stalled part the system cut (Glidepath: an attempt_end
// gave_up or quiet; a baseline: a call that ended by its timeout).
type Stall struct {
	// Applies reports whether the scenario stalls; when it does not, the
	// other fields are zero.
	Applies bool
	// Noticed counts the runs that cut the stalled call; P50, P99 and
	// Max are over those.
	Noticed       int
	P50, P99, Max time.Duration
	// Late is, for a system with a quiet clock (Glidepath), how long
	// after max(Q, E) each run noticed the stall, E the stalled call's
	// allowance ([Result.Allowance]): the bound issue 27 sets a hang
	// (negative when sooner, as a lease or a ceiling can be). Bounded
	// counts the runs it is over; zero for a baseline.
	Bounded int
	Late    Quantiles
	// Never counts the runs that noticed nothing and returned only at the
	// cap; Unnoticed those that returned earlier without cutting it.
	Never, Unnoticed int
}

// Result is one cell of the battery: a scenario against a system.
type Result struct {
	Scenario string
	System   string
	Budget   time.Duration // B
	Cap      time.Duration // the outer safety cap of each run
	Runs     int

	// Wall is the time each run took to return, from its start; a run
	// stopped at the cap counts the cap. OverBudget counts the runs that
	// returned after B, the cap's included.
	Wall       Quantiles
	OverBudget int

	// Labeled counts the runs that returned a labeled answer: Glidepath's
	// complete ones and its partial ones with a boundary. A baseline never
	// labels: it answers (Answered) or fails (Errored).
	Labeled, Complete, Partial int
	// Answered counts the runs that returned any answer, labeled or not;
	// Errored those that returned an error instead; Capped those that did
	// not return by the cap. They add up to Runs.
	Answered, Errored, Capped int

	// Doomed counts attempts started and then ended by a timeout, a
	// deadline or the quiet clock, whoever set it: for Glidepath its
	// attempt_end records with outcome gave_up (a lease or the deadline D)
	// or quiet (its quiet clock); for a baseline, its calls that ended by
	// their own timeout or by the battery's cap. DoomedBelowP50 counts
	// those of Glidepath's that were granted less than their kind's p50 as
	// known when they started.
	Doomed, DoomedBelowP50 int
	// Attempts counts Glidepath's work attempts (attempt_start records,
	// setup and landing leases left out) and BelowP50 those of them, cut
	// or not, granted less than their kind's p50 as known when they
	// started (SPEC §7 wants none). A baseline knows no p50: both are zero.
	Attempts, BelowP50 int
	// FalseStalls counts, in a scenario whose calls are all healthy
	// ([Scenario.Healthy]), the attempts a system cut: every cut there is
	// a healthy call cut.
	FalseStalls int
	// Refused counts the calls Glidepath refused before any I/O (budget
	// rules: floor, p50); RefusedWouldFit those of them that would have
	// fit, found by replaying the refused call against the same tool
	// server after the run, under the lease the budget would have granted
	// (min(ceiling, remaining − R − F) when it refused): a replay that
	// answered within it would have fit. Only read tools are replayed; a
	// refused model turn is counted in Refused only.
	Refused, RefusedWouldFit int
	// ModelRequests and ToolRequests count what the servers received;
	// ModelRequests only those in the scenario's API ([Scenario.API]).
	ModelRequests, ToolRequests int

	// Writes counts the logical writes (order ids) that committed at
	// least once; Commits every commit; Duplicates the commits beyond one
	// per logical write. Misreported counts runs whose answer said the
	// write failed although it had committed. Orphans counts the writes
	// Glidepath left as orphans, their outcome unknown when the run had to
	// land, and said so in a partial result.
	Writes, Commits, Duplicates, Misreported, Orphans int

	// Stall is the time to detect the stall, for a scenario that stalls.
	Stall Stall
	// Allowance is E, the allowance of silence Glidepath's quiet clock
	// gave the silent or stalled part ([Scenario.Silent], [Scenario.Stall])
	// at its first attempt; zero for a baseline.
	Allowance Allowance
	// Stuck counts the runs Glidepath landed stuck: they repeated a call
	// (same tool, arguments and result) as often as a run may (issue 27).
	Stuck int

	// Told is what the user was told, the first line of the answer or
	// the error, trimmed: the most common one of the cell, said ToldRuns
	// times.
	Told     string
	ToldRuns int
}

// An Allowance is E as Glidepath's runs of a cell computed it, by the
// rule its quiet clock holds calls by ([watchdog.Expected.Allowance]):
// 2 × the p95 its kind knew when the call started (declared, or from a
// profile), at most the call's ceiling, its lease and the default
// --max-silence. The lease differs from run to run by a few ms, and so
// may E.
type Allowance struct {
	// Runs counts the runs whose silent part started an attempt; P50 and
	// Max are over those, zero when nothing was known of the part.
	Runs     int
	P50, Max time.Duration
	// Source says where it came from in the most runs: "declared",
	// "profile", or "none" when nothing was known and Q alone applied.
	Source string
}

// Share returns n as a fraction of the cell's runs.
func (r Result) Share(n int) float64 {
	if r.Runs == 0 {
		return 0
	}
	return float64(n) / float64(r.Runs)
}

// errCap is the cause of a run stopped by the battery's safety cap.
var errCap = errors.New("battery: did not return by the cap")

// outcome is how one run ended, as its system saw it.
type outcome struct {
	answer   string // the answer as the user reads it
	err      error  // a failure instead of an answer
	labeled  bool
	complete bool
	stuck    bool // Glidepath landed it stuck, repeating a call
	orphans  int  // writes whose outcome the run left unknown, and said so
}

// runLog is what a system reports while one run goes on. It is safe for
// concurrent use.
type runLog struct {
	mu             sync.Mutex
	stall          string
	silent         string // the part whose allowance is stated: the stalled one, or a healthy silent one
	allowance      time.Duration
	source         watchdog.Source
	allowed        bool // the silent part's first attempt began, and allowance is its E
	doomed         int
	doomedBelowP50 int
	attempts       int
	belowP50       int
	refusals       []refusal
	noticed        time.Time // the first cut of the stalled part
}

// A refusal is a call Glidepath refused, with the lease the budget would
// have granted it: what its replay is given.
type refusal struct {
	step  string
	grant time.Duration
}

// cut records an attempt of step that ended by a deadline, a timeout or
// the quiet clock at t: doomed, and belowP50 when it was granted less than
// its kind's p50. notice says whether the system itself cut it (its
// lease, timeout or quiet clock), so that it may count as the stall
// noticed; the battery's cap is not the system noticing.
func (l *runLog) cut(step string, belowP50, notice bool, t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.doomed++
	if belowP50 {
		l.doomedBelowP50++
	}
	if notice {
		l.notice(step, t)
	}
}

// started records a work attempt Glidepath started, and whether it was
// granted less than its kind's p50.
func (l *runLog) started(belowP50 bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.attempts++
	if belowP50 {
		l.belowP50++
	}
}

// allow records E, the allowance of silence of an attempt of step that
// began, with its source, if step is the run's silent part and its first
// attempt.
func (l *runLog) allow(step string, e time.Duration, src watchdog.Source) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.allowed && stalledStep(l.silent, step) {
		l.allowance, l.source, l.allowed = e, src, true
	}
}

// refused records a call Glidepath refused, and what it would have been
// granted.
func (l *runLog) refused(step string, grant time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refusals = append(l.refusals, refusal{step, grant})
}

// notice records that the system stopped waiting for an attempt of step
// at t: its stall noticed if step is the stalled part's and nothing was
// noticed before. l.mu is held.
func (l *runLog) notice(step string, t time.Time) {
	if l.noticed.IsZero() && stalledStep(l.stall, step) {
		l.noticed = t
	}
}

// stalledStep reports whether step ("model", "tool:NAME") is the part a
// scenario of stall kind stalls.
func stalledStep(stall, step string) bool {
	switch stall {
	case StallModel:
		return step == "model"
	case StallTool:
		return strings.HasPrefix(step, "tool:")
	}
	return false
}

// one is the record of one run.
type one struct {
	wall      time.Duration
	capped    bool
	out       outcome
	told      string
	tally     tally
	doomed    int
	doomedLow int
	attempts  int
	belowP50  int
	refused   int
	wouldFit  int
	detect    time.Duration
	noticed   bool
	committed bool
	allowance time.Duration
	source    watchdog.Source
	allowed   bool
}

// runOne runs sc once on sys in a world of its own.
func runOne(ctx context.Context, sc *Scenario, sys System) (one, error) {
	w, err := newWorld(sc)
	if err != nil {
		return one{}, err
	}
	log := &runLog{stall: sc.Stall, silent: cmp.Or(sc.Stall, sc.Silent)}
	cctx, stop := context.WithTimeoutCause(ctx, sc.Cap, errCap)
	start := time.Now()
	out := sys.run(cctx, w, log)
	wall := time.Since(start)
	capped := errors.Is(context.Cause(cctx), errCap)
	stop()
	log.mu.Lock()
	refusals := slices.Clone(log.refusals)
	log.mu.Unlock()
	wouldFit := w.replay(ctx, refusals) // outside the run's wall time, before its world closes
	w.close()
	if err := ctx.Err(); err != nil {
		return one{}, context.Cause(ctx)
	}

	o := one{wall: wall, capped: capped, out: out, tally: w.tally()}
	log.mu.Lock()
	o.doomed, o.doomedLow = log.doomed, log.doomedBelowP50
	o.attempts, o.belowP50 = log.attempts, log.belowP50
	o.refused, o.wouldFit = len(refusals), wouldFit
	noticed := log.noticed
	o.allowance, o.source, o.allowed = log.allowance, log.source, log.allowed
	log.mu.Unlock()
	if !noticed.IsZero() {
		if from, ok := w.stallFrom(noticed); ok {
			o.noticed, o.detect = true, noticed.Sub(from)
		}
	}
	switch {
	case capped:
		o.told = "(nothing: did not return by the cap)"
	case out.err != nil:
		o.told = "error: " + firstLine(out.err.Error())
	default:
		o.told = firstLine(out.answer)
	}
	o.committed = o.tally.commits > 0
	return o, nil
}

// loopback matches the address of a world's server, which differs from
// run to run, so that the same message reads the same.
var loopback = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)

// firstLine is s's first non-empty line, trimmed, cut to 200 bytes, with
// loopback ports elided.
func firstLine(s string) string {
	s = loopback.ReplaceAllString(s, "127.0.0.1:…")
	for line := range strings.SplitSeq(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			if len(line) > 200 {
				line = strings.ToValidUTF8(line[:200], "") + "…"
			}
			return line
		}
	}
	return "(empty)"
}

// Run runs sc against sys runs times, at most [MaxParallel] at once, each
// run in a world of its own (a sim and a tool server on loopback), and
// returns the cell's measures. A run that does not return by sc.Cap is
// stopped there and counted in Result.Capped, never dropped. It returns an
// error only when a world cannot be built or ctx ends.
func Run(ctx context.Context, sc Scenario, sys System, runs int) (Result, error) {
	return run(ctx, sc, sys, runs, MaxParallel)
}

func run(ctx context.Context, sc Scenario, sys System, runs, parallel int) (Result, error) {
	if runs <= 0 {
		return Result{}, fmt.Errorf("battery: %d runs: want at least one", runs)
	}
	if sys.run == nil {
		return Result{}, fmt.Errorf("battery: unknown system %q", sys.Name)
	}
	ones := make([]one, runs)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(min(runs, parallel))
	for i := range runs {
		g.Go(func() error {
			if err := stagger(gctx, &sc, i, parallel); err != nil {
				return err
			}
			o, err := runOne(gctx, &sc, sys)
			ones[i] = o
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return Result{}, fmt.Errorf("battery: %s on %s: %w", sc.Name, sys.Name, err)
	}
	return summarize(&sc, sys, ones), nil
}

// stagger waits, for the i-th run of a cell that runs parallel at once,
// until its start: [Stagger] apart for the first runs of a scenario that
// stalls, at once otherwise.
func stagger(ctx context.Context, sc *Scenario, i, parallel int) error {
	if sc.Stall == StallNone || i >= parallel || i == 0 {
		return nil
	}
	t := time.NewTimer(time.Duration(i) * Stagger)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// summarize makes the cell's Result from its runs.
func summarize(sc *Scenario, sys System, ones []one) Result {
	r := Result{Scenario: sc.Name, System: sys.Name, Budget: sc.Budget, Cap: sc.Cap, Runs: len(ones)}
	r.Stall.Applies = sc.Stall != StallNone
	var walls, detects, lates, allowances []time.Duration
	told := map[string]int{}
	sources := map[watchdog.Source]int{}
	for _, o := range ones {
		walls = append(walls, o.wall)
		if o.wall > sc.Budget {
			r.OverBudget++
		}
		switch {
		case o.capped:
			r.Capped++
		case o.out.err != nil:
			r.Errored++
		default:
			r.Answered++
			if o.out.labeled {
				r.Labeled++
				if o.out.complete {
					r.Complete++
				} else {
					r.Partial++
				}
			}
		}
		told[o.told]++
		r.Doomed += o.doomed
		r.DoomedBelowP50 += o.doomedLow
		r.Attempts += o.attempts
		r.BelowP50 += o.belowP50
		if sc.Healthy {
			r.FalseStalls += o.doomed
		}
		if o.out.stuck {
			r.Stuck++
		}
		if o.allowed {
			allowances = append(allowances, o.allowance)
			sources[o.source]++
		}
		r.Refused += o.refused
		r.RefusedWouldFit += o.wouldFit
		r.ModelRequests += o.tally.modelReqs
		r.ToolRequests += o.tally.toolReqs
		r.Writes += o.tally.writes
		r.Commits += o.tally.commits
		r.Duplicates += o.tally.duplicates
		r.Orphans += o.out.orphans
		if o.committed && !o.capped && saysFailed(sc, o.out) {
			r.Misreported++
		}
		if r.Stall.Applies {
			switch {
			case o.noticed:
				r.Stall.Noticed++
				detects = append(detects, o.detect)
				if o.allowed {
					lates = append(lates, o.detect-max(sc.Quiet, o.allowance))
				}
			case o.capped:
				r.Stall.Never++
			default:
				r.Stall.Unnoticed++
			}
		}
	}
	r.Wall = quantiles(walls)
	if len(detects) > 0 {
		q := quantiles(detects)
		r.Stall.P50, r.Stall.P99, r.Stall.Max = q.P50, q.P99, q.Max
	}
	r.Stall.Bounded, r.Stall.Late = len(lates), quantiles(lates)
	if len(allowances) > 0 {
		q := quantiles(allowances)
		r.Allowance = Allowance{Runs: len(allowances), P50: q.P50, Max: q.Max, Source: mostCommon(sources).String()}
	}
	// The most common message, ties broken by the first run's order.
	for _, o := range ones {
		if n := told[o.told]; n > r.ToldRuns {
			r.Told, r.ToldRuns = o.told, n
		}
	}
	return r
}

// mostCommon is the source counted most, ties broken by the lower.
func mostCommon(n map[watchdog.Source]int) watchdog.Source {
	var best watchdog.Source
	for src, k := range n {
		if k > n[best] || (k == n[best] && src < best) {
			best = src
		}
	}
	return best
}

// saysFailed reports whether out told the user that the scenario's write
// failed: an answer, not labeled partial, in which the sim names the call
// as failed ("pay failed"). A partial result whose boundary says the
// write's outcome is unknown does not say it failed.
func saysFailed(sc *Scenario, out outcome) bool {
	if !sc.Write || out.err != nil || (out.labeled && !out.complete) {
		return false
	}
	return strings.Contains(out.answer, sc.tool.name+" failed")
}

// quantiles returns the p50, p99 and max of ds by the nearest-rank method.
func quantiles(ds []time.Duration) Quantiles {
	if len(ds) == 0 {
		return Quantiles{}
	}
	s := slices.Clone(ds)
	slices.SortFunc(s, cmp.Compare)
	at := func(q float64) time.Duration {
		rank := int(math.Ceil(q * float64(len(s))))
		return s[max(0, min(rank, len(s))-1)]
	}
	return Quantiles{P50: at(0.50), P99: at(0.99), Max: s[len(s)-1]}
}

// DupResult is what a system did with many writes that commit after
// their lease ended.
type DupResult struct {
	System string
	// Writes is how many late-commit writes were made, each in a run of
	// its own; Committed how many committed at least once.
	Writes, Committed int
	// Commits counts every commit; Duplicates those beyond one per
	// logical write.
	Commits, Duplicates int
	// Misreported counts the runs whose answer said the write failed
	// although it had committed; Orphans the writes Glidepath left with
	// their outcome unknown, said so in a partial result.
	Misreported, Orphans int
	// Labeled, Answered, Errored and Capped are as in [Result].
	Labeled, Answered, Errored, Capped int
	// Wall is each run's return time; Took the whole of Duplicates.
	Wall Quantiles
	Took time.Duration
	// Told is the most common first line the user was told.
	Told     string
	ToldRuns int
}

// DupParallel bounds the runs [Duplicates] runs at once.
const DupParallel = 200

// Duplicates makes n late-commit writes with sys: n runs of the
// late-commit scenario (pay commits 1.5s after it arrives, its ceiling is
// 500ms, B is 3s), at most [DupParallel] at once, and counts the commits
// per logical write on the tool server.
func Duplicates(ctx context.Context, sys System, n int) (DupResult, error) {
	sc, _ := Lookup("late-commit")
	start := time.Now()
	r, err := run(ctx, sc, sys, n, DupParallel)
	if err != nil {
		return DupResult{}, err
	}
	return DupResult{
		System: sys.Name, Writes: n, Committed: r.Writes, Commits: r.Commits, Duplicates: r.Duplicates,
		Misreported: r.Misreported, Orphans: r.Orphans, Labeled: r.Labeled, Answered: r.Answered, Errored: r.Errored, Capped: r.Capped,
		Wall: r.Wall, Took: time.Since(start), Told: r.Told, ToldRuns: r.ToldRuns,
	}, nil
}
