package bench_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/glidepath/glidepath/watchdog"
)

// stallQuiet is Q in BenchmarkStallLateness: short, so that many stalls
// fit in a benchmark, long against the timer resolution.
const stallQuiet = 5 * time.Millisecond

// BenchmarkStallLateness measures SPEC §7's "stall detected within Q + 2ms
// (p99) of the last semantic event, also when the stream keeps sending
// keepalives" as a distribution: each iteration marks a tool call on a
// watchdog of quiet period Q while a keepalive arrives every 100µs, and
// times, from outside, how long after the mark + Q the run's context is
// seen done with a stall; beside it, the same keepalive load under a bare
// context.WithTimeout(Q), what a timer alone costs on this machine. The
// arms alternate, so that both see the same machine. Metrics: p50, p99
// (nearest rank) and max of the lateness of each, in µs.
func BenchmarkStallLateness(b *testing.B) {
	var wd, timer []time.Duration
	for b.Loop() {
		wd = append(wd, watchdogLate(b))
		timer = append(timer, timerLate(b))
	}
	b.ReportMetric(0, "ns/op") // it would add the two arms together
	for _, arm := range []struct {
		name string
		late []time.Duration
	}{{"watchdog", wd}, {"timer", timer}} {
		b.ReportMetric(us(quantile(arm.late, 0.50)), arm.name+"-p50-us")
		b.ReportMetric(us(quantile(arm.late, 0.99)), arm.name+"-p99-us")
		b.ReportMetric(us(quantile(arm.late, 1)), arm.name+"-max-us")
	}
}

func watchdogLate(b *testing.B) time.Duration {
	w, ctx, err := watchdog.Start(b.Context(), watchdog.Config{Quiet: stallQuiet})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	w.Mark(watchdog.ToolCall)
	marked := time.Now()
	var wg sync.WaitGroup
	wg.Go(func() { keepalives(ctx, w.Keepalive) })
	<-ctx.Done()
	late := time.Since(marked) - stallQuiet
	wg.Wait()
	if _, ok := errors.AsType[*watchdog.StallError](context.Cause(ctx)); !ok {
		b.Fatalf("cause %v, want a stall", context.Cause(ctx))
	}
	return late
}

func timerLate(b *testing.B) time.Duration {
	start := time.Now()
	ctx, cancel := context.WithTimeout(b.Context(), stallQuiet)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { keepalives(ctx, func() {}) })
	<-ctx.Done()
	late := time.Since(start) - stallQuiet
	wg.Wait()
	return late
}

// keepalives calls f every 100µs until ctx ends: transport-only traffic,
// which must not keep a stalled run alive.
func keepalives(ctx context.Context, f func()) {
	t := time.NewTicker(100 * time.Microsecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
