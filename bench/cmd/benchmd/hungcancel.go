package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/trace"
)

// hungCancelBudget and hungCancelQuiet are B and Q of the hung-cancel
// figure's process runs, as in BenchmarkHungCancel (issue 17); and
// hungCancelRuns how many it makes.
const (
	hungCancelBudget = 2 * time.Second
	hungCancelQuiet  = 500 * time.Millisecond
	hungCancelRuns   = 5
)

// hungCancelSection measures SPEC §7's "when a tool's POST and cancel both
// hang, the run returns within its landing time + 150ms, not at D": in
// process through BenchmarkHungCancel, and for the `harness run` process
// here, from its trace's landing record to the process's exit.
func hungCancelSection(ctx context.Context, r *report) error {
	inproc, c1, err := goBench(ctx, nil, "-bench", "^BenchmarkHungCancel$", "-benchtime", "10x", "./bench")
	if err != nil {
		return err
	}
	proc, err := hungCancelProc(ctx, r.harness)
	if err != nil {
		return fmt.Errorf("process: %w", err)
	}
	h := find(inproc, "HungCancel")
	rows := [][]string{
		{"in process (`harness.Run`)", num(h.get("runs")), dur(msDur(h.get("landing-p50-ms"))),
			fmt.Sprintf("%s / %s / %s", dur(msDur(h.get("after-landing-p50-ms"))), dur(msDur(h.get("after-landing-p99-ms"))), dur(msDur(h.get("after-landing-max-ms")))),
			"D − " + num(h.get("before-d-min-ms")) + "ms", fmt.Sprintf("%s of %s", num(h.get("cancel-sent")), num(h.get("runs")))},
		{"`harness run` process, to its exit", fmt.Sprint(len(proc.after)), dur(quantileOf(proc.landing, 0.5)),
			spread(proc.after), "D − " + dur(-quantileOf(negated(proc.beforeD), 1)), fmt.Sprintf("%d of %d", proc.sent, len(proc.after))},
	}
	r.add("A tool whose POST and cancel both hang", []string{c1, "make build && go run ./bench/cmd/benchmd -only hungcancel"},
		table([]string{"run", "runs", "landing record at (p50)", "returned after it: p50 / p99 / max", "returned at the latest", "cancel left as sent"}, rows)+fmt.Sprintf(`
B = %v, Q = %v; the sim's first turn calls a tool whose POST and DELETE (its cancel) never answer until their
client leaves. The quiet clock stalls the call, the harness cancels it, the landing call makes the summary; the
landing record's stamp is when the result exists. The process runs `+"`%s run --budget %v --quiet %v --trace FILE`"+`,
timed to its exit, its landing time read from its trace against the budget's start (its run_end stamp less
elapsed_ms). *cancel left as sent*: the run's last cancel_sent record has state sent (unanswered).
`, hungCancelBudget, hungCancelQuiet, r.harness, hungCancelBudget, hungCancelQuiet))
	worst := max(msDur(h.get("after-landing-p99-ms")), quantileOf(proc.after, 0.99))
	r.target("When a tool's POST and cancel both hang, the run returns within its landing time + 150ms, not at D",
		fmt.Sprintf("in process: landing + %s (p99), D − %s at the latest; the process exits at landing + %s (p99)",
			dur(msDur(h.get("after-landing-p99-ms"))), dur(msDur(h.get("before-d-min-ms"))), dur(quantileOf(proc.after, 0.99))),
		fmt.Sprintf("D: landing + %s", dur(hungCancelBudget-msDur(h.get("landing-p50-ms")))),
		worst <= 150*time.Millisecond, "")
	r.idle()
	return nil
}

func msDur(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

func negated(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = -d
	}
	return out
}

type hungCancelProcResult struct {
	landing, after, beforeD []time.Duration
	sent                    int
}

func hungCancelProc(ctx context.Context, harness string) (hungCancelProcResult, error) {
	var res hungCancelProcResult
	if _, err := os.Stat(harness); err != nil {
		return res, fmt.Errorf("%w (make build makes it)", err)
	}
	dir, err := os.MkdirTemp("", "benchmd-hungcancel-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	model := sim.NewServer(&sim.Scenario{})
	defer model.Close()
	done := make(chan struct{})
	tool := httptest.NewServer(stuckTool("hang-cancel-hangs", done))
	defer tool.Close()
	defer close(done)
	cfg, err := writeToolsFile(dir, tool.URL)
	if err != nil {
		return res, err
	}
	tracePath := filepath.Join(dir, "trace.jsonl")
	args := append(procArgs(hungCancelBudget, model.URL, dir), "--quiet", hungCancelQuiet.String(),
		"--tools", cfg, "--trace", tracePath, "look up cats")
	for range hungCancelRuns {
		p, recs, clock, _, err := tracedRun(ctx, harness, dir, tracePath, args)
		if err != nil {
			return res, err
		}
		land, ok := recs.first(trace.Landing)
		if !ok {
			return res, fmt.Errorf("%s: no landing record", tracePath)
		}
		exited := p.started.Add(p.took)
		res.landing = append(res.landing, land.TS.Sub(clock))
		res.after = append(res.after, exited.Sub(land.TS))
		res.beforeD = append(res.beforeD, clock.Add(hungCancelBudget).Sub(exited))
		if recs.last(trace.CancelSent).State == string(trace.CancelStateSent) {
			res.sent++
		}
	}
	return res, nil
}
