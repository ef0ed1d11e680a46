package bench_test

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/sim"
	"github.com/openai/openai-go/v3"
)

// defaultIdleRuns is K when GLIDEPATH_BENCH_RUNS is not set. SPEC §7 names
// 10,000; a thousand keeps `make bench` quick and gives much the same
// per-run figure.
const defaultIdleRuns = 1000

// BenchmarkIdleRuns measures SPEC §7's "10,000 concurrent runs in one
// process, at most 1.1× a bare openai-go streaming call's memory per idle
// run, no goroutine left behind when they end": run/sdk-call is that
// ratio. Each iteration starts K runs (GLIDEPATH_BENCH_RUNS, default 1000)
// against a sim in a process of its own whose first K chat requests
// stream only keepalives; once every stream is open it measures the heap
// and goroutine stacks in use, cancels the runs (their landing calls,
// past the first K, are answered at once), waits for them and counts the
// goroutines left over. The baseline is K goroutines each blocked in a
// bare openai-go streaming call under context.WithTimeout, against a
// fresh sim of the same kind.
func BenchmarkIdleRuns(b *testing.B) {
	k := defaultIdleRuns
	if v := os.Getenv("GLIDEPATH_BENCH_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("GLIDEPATH_BENCH_RUNS=%q: want a positive integer", v)
		}
		k = n
	}
	var run, call inUse
	var left int
	for b.Loop() {
		r, l := idleRuns(b, k)
		run = run.add(r)
		left += l
		call = call.add(idleSDKCalls(b, k))
	}
	n := float64(b.N) * float64(k)
	b.ReportMetric(0, "ns/op") // it would add the two arms together
	b.ReportMetric(float64(k), "runs")
	b.ReportMetric(float64(run.total())/n, "B/idle-run")
	b.ReportMetric(float64(run.heap)/n, "heap-B/idle-run")
	b.ReportMetric(float64(run.stack)/n, "stack-B/idle-run")
	b.ReportMetric(float64(call.total())/n, "B/idle-sdk-call")
	b.ReportMetric(float64(call.heap)/n, "heap-B/idle-sdk-call")
	b.ReportMetric(float64(call.stack)/n, "stack-B/idle-sdk-call")
	b.ReportMetric(float64(run.total())/float64(call.total()), "run/sdk-call")
	b.ReportMetric(float64(left)/float64(b.N), "goroutines-left")
}

// inUse is the memory goroutines' state lives in: the heap and the
// goroutine stacks.
type inUse struct{ heap, stack int64 }

// measure collects garbage and reads what is in use.
func measure() inUse {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return inUse{int64(m.HeapInuse), int64(m.StackInuse)}
}

func (u inUse) add(v inUse) inUse   { return inUse{u.heap + v.heap, u.stack + v.stack} }
func (u inUse) minus(v inUse) inUse { return inUse{u.heap - v.heap, u.stack - v.stack} }
func (u inUse) total() int64        { return u.heap + u.stack }

// idleRuns runs k idle Glidepath runs and returns the memory in use for
// them while they are idle, and the goroutines left after they ended.
func idleRuns(b *testing.B, k int) (inUse, int) {
	before := runtime.NumGoroutine()
	s := startChildSim(b, k)
	c := glidepathModel(b, s.url, s.client())
	base := measure()

	ctx, cancel := context.WithCancel(context.Background())
	var runs sync.WaitGroup
	var failed atomic.Int64
	for range k {
		runs.Go(func() {
			bud, err := budget.New(budget.Config{Total: 10 * time.Minute})
			if err != nil {
				failed.Add(1)
				return
			}
			_, err = harness.Run(ctx, bud, harness.Config{
				Task:  "wait for a slow model",
				Quiet: 5 * time.Minute,
				Model: c,
			})
			if err != nil {
				failed.Add(1)
			}
		})
	}
	s.waitOpen(b, k)
	used := measure().minus(base)
	heapProfile(b, "")
	cancel()
	runs.Wait()
	s.stop()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d runs failed", n)
	}
	return used, goroutinesLeft(before)
}

// heapProfile writes the heap profile of the runs while they are idle to
// the file GLIDEPATH_BENCH_IDLE_HEAPPROFILE names, with suffix, if it
// names one (the SDK arm's gets ".sdk"): what
// -memprofile cannot show, since it is written after the runs ended
// (issue 20, item 5: where an idle run's heap goes).
func heapProfile(b *testing.B, suffix string) {
	name := os.Getenv("GLIDEPATH_BENCH_IDLE_HEAPPROFILE")
	if name == "" {
		return
	}
	f, err := os.Create(name + suffix)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	runtime.GC() // up to date as of now, as measure's figures are
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

// goroutinesLeft waits a little for goroutines that are already ending,
// such as connections' read loops, and returns how many more there are
// than before.
func goroutinesLeft(before int) int {
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return max(0, runtime.NumGoroutine()-before)
}

// idleSDKCalls blocks k goroutines in bare openai-go streaming calls, each
// under its own context.WithTimeout, and returns the memory in use for
// them while they are idle.
func idleSDKCalls(b *testing.B, k int) inUse {
	s := startChildSim(b, k)
	c := sdkClient(s.url, s.client())
	params := openai.ChatCompletionNewParams{
		Model:    sim.ModelID,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("wait for a slow model")},
	}
	base := measure()

	parent, cancel := context.WithCancel(context.Background())
	var calls sync.WaitGroup
	for range k {
		calls.Go(func() {
			ctx, stop := context.WithTimeout(parent, 10*time.Minute)
			defer stop()
			stream := c.Chat.Completions.NewStreaming(ctx, params)
			for stream.Next() {
			}
			stream.Close()
		})
	}
	s.waitOpen(b, k)
	used := measure().minus(base)
	heapProfile(b, ".sdk")
	cancel()
	calls.Wait()
	s.stop()
	return used
}
