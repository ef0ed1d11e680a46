package fleet_test

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/glidepath/glidepath/bench/fleet"
)

// BenchmarkFirstSpread is a fleet's start cost as make bench measures it
// (issue 20, item 4): GLIDEPATH_BENCH_RUNS runs (default 1000) started at
// one instant against a sim that turns their first requests away, and how
// long those first requests took to all go out, Glidepath beside the
// streaming SDK sending the same messages. Run it with -cpuprofile to see
// where a fleet's start goes.
func BenchmarkFirstSpread(b *testing.B) {
	runs := 1000
	if v := os.Getenv("GLIDEPATH_BENCH_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("GLIDEPATH_BENCH_RUNS=%q: want a positive integer", v)
		}
		runs = n
	}
	for _, sys := range []struct {
		name string
		run  func(context.Context, fleet.Config) (fleet.Result, error)
	}{{"glidepath", fleet.Glidepath}, {"sdk-stream", fleet.SDKStreaming}} {
		b.Run("system="+sys.name, func(b *testing.B) {
			var spread, cpu, away, bytes, allocs float64
			for b.Loop() {
				res, err := sys.run(b.Context(), fleet.Config{Runs: runs})
				if err != nil {
					b.Fatal(err)
				}
				if res.GoroutinesLeft != 0 {
					b.Fatalf("%d goroutines left after the fleet", res.GoroutinesLeft)
				}
				spread += float64(res.FirstSpread) / 1e6
				cpu += float64(res.StartCPUPerRun) / 1e3
				away += float64(res.AwayCPUPerRun) / 1e3
				bytes += res.StartBytesPerRun
				allocs += res.StartAllocsPerRun
			}
			n := float64(b.N)
			b.ReportMetric(0, "ns/op") // a fleet's wall time is mostly its wait for the server's Retry-After
			b.ReportMetric(spread/n, "first-spread-ms")
			b.ReportMetric(cpu/n, "start-cpu-us/run")
			b.ReportMetric(away/n, "away-cpu-us/run")
			b.ReportMetric(bytes/n, "start-B/run")
			b.ReportMetric(allocs/n, "start-allocs/run")
		})
	}
}
