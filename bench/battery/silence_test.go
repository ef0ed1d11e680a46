package battery_test

import (
	"testing"
	"time"

	"github.com/glidepath/glidepath/bench/battery"
)

// Issue 27's "done when", measured on Glidepath: b.N runs of each
// scenario with a silent part (healthy: a silent tool, a reasoning
// model) and of each that hangs, with the allowance E its quiet clock
// gave the silent call. A healthy call whose E is known must never be
// cut; a cold one is, and the metrics say how often (the cold start's
// cost). A hang's detection is reported against max(Q, E), the bound it
// must meet (+2ms p99 on an idle machine), and every run against B.
// Minutes, not part of go test's default run:
//
//	go test -run '^$' -bench BenchmarkSilence -benchtime 100x ./bench/battery/
func BenchmarkSilence(b *testing.B) {
	gp, _ := battery.SystemNamed(battery.Glidepath)
	for _, sc := range battery.Scenarios() {
		if sc.Stall == battery.StallNone && sc.Silent == battery.StallNone {
			continue
		}
		b.Run(sc.Name, func(b *testing.B) {
			r, err := battery.Run(b.Context(), sc, gp, b.N)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(0, "ns/op") // a run's wall time is its scenario's, not a cost
			b.ReportMetric(ms(r.Allowance.P50), "E-ms")
			b.ReportMetric(float64(r.OverBudget), "past-B")
			b.ReportMetric(ms(r.Wall.Max-r.Budget), "wall-max-minus-B-ms")
			if sc.Healthy {
				b.ReportMetric(float64(r.FalseStalls), "false-stalls")
				b.ReportMetric(float64(r.Complete), "complete")
				if r.Allowance.Source != "none" && r.FalseStalls > 0 {
					b.Errorf("%d false stalls in %d runs with E %v (%s) known; want none", r.FalseStalls, r.Runs, r.Allowance.P50, r.Allowance.Source)
				}
			}
			if r.Stall.Applies {
				b.ReportMetric(float64(r.Stall.Noticed), "noticed")
				b.ReportMetric(ms(r.Stall.P50), "detect-p50-ms")
				b.ReportMetric(ms(r.Stall.P99), "detect-p99-ms")
				b.ReportMetric(ms(r.Stall.Late.P99), "past-max(Q,E)-p99-ms")
			}
			if r.OverBudget > 0 {
				b.Errorf("%d of %d runs ended past B %v, the last %v past it", r.OverBudget, r.Runs, r.Budget, r.Wall.Max-r.Budget)
			}
		})
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
