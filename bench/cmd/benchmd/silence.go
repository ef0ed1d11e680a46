package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/glidepath/glidepath/bench/battery"
)

// silenceRuns is how many runs the silence section makes of each
// scenario: SPEC §7 asks for 100 per healthy-silent scenario.
const silenceRuns = 100

// silenceSection measures issue 27's trade on Glidepath alone, 100 runs
// of each battery scenario with a silent part (a healthy silent tool, a
// reasoning model, cold and with E known; on Chat Completions and on the
// Responses API) and of each that hangs: false
// stalls, and how soon each hang was caught against max(Q, E). The
// baselines' side of the same scenarios is the battery's.
func silenceSection(ctx context.Context, r *report) error {
	gp, _ := battery.SystemNamed(battery.Glidepath)
	var rows [][]string
	var known, cold []string
	cutKnown, callsKnown := 0, 0
	worst, worstAt := time.Duration(-1<<63), ""
	var headerless []string // how soon each server that never sent headers was caught
	headersMet := true
	pastB, runs := 0, 0
	for _, sc := range r.scenarios() {
		if sc.Stall == battery.StallNone && sc.Silent == battery.StallNone {
			continue
		}
		res, err := battery.Run(ctx, sc, gp, silenceRuns)
		if err != nil {
			return fmt.Errorf("%s: %w", sc.Name, err)
		}
		pastB, runs = pastB+res.OverBudget, runs+res.Runs
		fs, caught := "—", "—"
		switch {
		case sc.Healthy:
			fs = fmt.Sprintf("%d of %d (%d complete)", res.FalseStalls, res.Runs, res.Complete)
			line := fmt.Sprintf("%s %d of %d (E %s)", sc.Name, res.FalseStalls, res.Runs, allowanceCell(res))
			if res.Allowance.Source == "none" {
				cold = append(cold, line)
			} else {
				known = append(known, line)
				cutKnown += res.FalseStalls
				callsKnown += res.Runs
			}
		case res.Stall.Applies:
			caught = stallCell(res.Stall)
			if res.Stall.Bounded > 0 && res.Stall.Late.P99 > worst {
				worst, worstAt = res.Stall.Late.P99, sc.Name
			}
			if sc.Name == "model-hang-headers" || sc.Name == "responses-hang-headers" {
				hdr := res.Stall
				headersMet = headersMet && hdr.Noticed == res.Runs && hdr.P99 <= sc.Quiet+2*time.Millisecond
				headerless = append(headerless, fmt.Sprintf("%s at %s p99 (Q %s, E %s)", sc.Name, dur(hdr.P99), dur(sc.Quiet), allowanceCell(res)))
			}
		}
		rows = append(rows, []string{sc.Name, fmt.Sprintf("%s / %s", dur(sc.Budget), dur(sc.Quiet)), allowanceCell(res), fs, caught,
			fmt.Sprintf("%s / %s", dur(res.Wall.P99), dur(res.Wall.Max)), fmt.Sprint(res.OverBudget), res.Told})
	}
	r.add("Healthy silence and hangs, 100 runs each", []string{
		"go run ./bench/cmd/benchmd -only silence",
		"go test -run '^$' -bench BenchmarkSilence -benchtime 100x ./bench/battery/"},
		table([]string{"scenario", "B / Q", "E (allowance, source)", "false stalls (healthy calls cut)", "hang caught p50 / p99 / max; p99 against max(Q, E)", "wall p99 / max", "runs past B", "what the user was told (most runs)"}, rows)+fmt.Sprintf(`
Glidepath only, %d runs per scenario, each in a world of its own (package bench/battery; the baselines'
side of the same scenarios is the battery's table above). The quiet clock holds a call in flight for its
allowance E = 2 × the p95 of its kind (declared by the tool, or from a latency profile of the model's earlier
turns), at most its ceiling, its lease and --max-silence; a tool's hold ends at its first progress, a model
call's takes effect at its response headers, counted from its start. *E* is computed per run by that rule (watchdog.Expected.Allowance)
from what the run knew and the lease it granted. A cold call (E none) is cut at Q: that is the cold start's
cost, until a profile or a declared p95 gives it an allowance. Detection is timed from the last work the
servers saw (a call's arrival or its last progress, a model request's arrival). The responses- rows are
the same faults on the Responses API, whose opening events (response.created, response.in_progress, the
reasoning item's output_item.added) are not semantic: the silence after them is the model reasoning, or a hang.
Ten runs go at once, the first ten started 20ms apart (battery.Stagger), so that each run's stall fires at an
instant of its own: started together, ten stalls fired at one instant and their cuts queued on two cores, which
put 25ms on the p99 in one run at load average 2.2 (a load; see [A starved machine](#a-starved-machine)). Load average %s at the end.
`, silenceRuns, loadAverage()))

	r.target("Healthy silence: over 100 runs per healthy-silent scenario with the allowance known, 0 healthy calls cut; the cold-start cost stated",
		fmt.Sprintf("%d of %d cut with E known: %s; cold, cut: %s", cutKnown, callsKnown, strings.Join(known, "; "), strings.Join(cold, "; ")),
		"the baselines wait: none cut (the battery's table)", cutKnown == 0 && callsKnown > 0, "")
	met := worst <= 2*time.Millisecond && headersMet && len(headerless) > 0 && pastB == 0
	r.target("Every hang still caught within `max(Q, E) + 2ms` (p99), `E` stated per scenario; a hang before headers caught at `Q`; no run past `B`",
		fmt.Sprintf("at worst %s p99 (%s); a server that never sends headers caught: %s; %d of %d runs past B",
			pastBound(worst), worstAt, strings.Join(headerless, "; "), pastB, runs),
		"per-call: its timeout (B/2), then retries past B; defaults: never (the battery's table)", met, "")
	r.idle()
	return nil
}
