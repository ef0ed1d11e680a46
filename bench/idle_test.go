package bench_test

import (
	"context"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glidepath/glidepath/bench/fleet"
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
// bare openai-go streaming call of the same messages under
// context.WithTimeout, against a fresh sim of the same kind. A second pass
// of both, with the heap profile sampled finely, tells each one's heap by
// the code that allocated it (heapBy).
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
	// Once more, sampling every 512th byte allocated with its stack, so
	// that the heap in use can be told by the code that allocated it
	// (heapBy). Apart from the figures above: sampling that often deepens
	// the stacks of the goroutines that allocate, and so grows them.
	rate := runtime.MemProfileRate
	runtime.MemProfileRate = idleProfileRate
	runBy, _ := idleRuns(b, k)
	callBy := idleSDKCalls(b, k)
	runtime.MemProfileRate = rate
	n = float64(k)
	for _, arm := range []struct {
		name string
		u    inUse
	}{{"run", runBy}, {"sdk-call", callBy}} {
		for _, c := range arm.u.by.categories() {
			b.ReportMetric(float64(c.bytes)/n, c.name+"-heap-B/idle-"+arm.name)
		}
		// What the profile does not hold: the free room of the spans the
		// objects are in, which HeapInuse counts whole.
		b.ReportMetric(float64(arm.u.heap-arm.u.by.total())/n, "slack-heap-B/idle-"+arm.name)
	}
}

// idleProfileRate is runtime.MemProfileRate while the idle runs are
// measured: fine enough that a thousand runs' objects are told apart by
// the code that allocated them, coarse enough not to slow them much.
const idleProfileRate = 512

// heapBy is the heap in use, as the memory profile estimates it, by the
// code that allocated it: the innermost frame of an allocation's stack
// that is Glidepath's (own: harness, model, budget, watchdog, trace,
// landing and the internal packages), the caller's (bench: the
// benchmark's own code, a bare loop's), openai-go's with the JSON
// libraries it uses (sdk), or the standard library's HTTP client and
// connections (http); other is none of them (issue 20, item 5: where an
// idle run's heap goes, beside a bare call's).
type heapBy struct{ own, caller, sdk, http, other int64 }

type category struct {
	name  string
	bytes int64
}

func (h heapBy) categories() []category {
	return []category{{"own", h.own}, {"caller", h.caller}, {"sdk", h.sdk}, {"http", h.http}, {"other", h.other}}
}

func (h heapBy) total() int64 { return h.own + h.caller + h.sdk + h.http + h.other }

func (h heapBy) minus(g heapBy) heapBy {
	return heapBy{h.own - g.own, h.caller - g.caller, h.sdk - g.sdk, h.http - g.http, h.other - g.other}
}

// profiledHeap reads the memory profile's objects in use, by allocator,
// when the profile samples finely enough to tell (idleProfileRate).
func profiledHeap() heapBy {
	if runtime.MemProfileRate != idleProfileRate {
		return heapBy{}
	}
	// The profile is as of the last GC cycle but one: two make it now's.
	runtime.GC()
	runtime.GC()
	var recs []runtime.MemProfileRecord
	for {
		n, ok := runtime.MemProfile(recs, false)
		if ok {
			recs = recs[:n]
			break
		}
		recs = make([]runtime.MemProfileRecord, n+64)
	}
	var h heapBy
	for i := range recs {
		r := &recs[i]
		bytes := scaledBytes(r.InUseObjects(), r.InUseBytes(), runtime.MemProfileRate)
		switch allocator(r.Stack()) {
		case "own":
			h.own += bytes
		case "caller":
			h.caller += bytes
		case "sdk":
			h.sdk += bytes
		case "http":
			h.http += bytes
		default:
			h.other += bytes
		}
	}
	return h
}

// scaledBytes estimates the bytes that count sampled objects of size
// bytes in all stand for, as pprof does: an object of s bytes is sampled
// with probability 1 − e^(−s/rate).
func scaledBytes(count, size int64, rate int) int64 {
	if count <= 0 || size <= 0 {
		return 0
	}
	if rate <= 1 {
		return size
	}
	avg := float64(size) / float64(count)
	return int64(float64(size) / (1 - math.Exp(-avg/float64(rate))))
}

// allocator names whose code made an allocation: the innermost frame of
// its stack that is Glidepath's, the benchmark's, openai-go's or the HTTP
// client's.
func allocator(stack []uintptr) string {
	frames := runtime.CallersFrames(stack)
	for {
		f, more := frames.Next()
		fn := f.Function
		switch {
		case strings.HasPrefix(fn, "github.com/glidepath/glidepath/bench"):
			return "caller"
		case strings.HasPrefix(fn, "github.com/glidepath/glidepath/"):
			return "own"
		case strings.HasPrefix(fn, "github.com/openai/"), strings.HasPrefix(fn, "github.com/tidwall/"):
			return "sdk"
		case strings.HasPrefix(fn, "net/http."), strings.HasPrefix(fn, "net/http/"),
			strings.HasPrefix(fn, "net/textproto."), strings.HasPrefix(fn, "net."):
			return "http"
		}
		if !more {
			return "other"
		}
	}
}

// inUse is the memory goroutines' state lives in: the heap and the
// goroutine stacks; and the heap's objects by the code that allocated
// them.
type inUse struct {
	heap, stack int64
	by          heapBy
}

// measure collects garbage and reads what is in use.
func measure() inUse {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return inUse{int64(m.HeapInuse), int64(m.StackInuse), profiledHeap()}
}

func (u inUse) add(v inUse) inUse {
	by := heapBy{u.by.own + v.by.own, u.by.caller + v.by.caller, u.by.sdk + v.by.sdk, u.by.http + v.by.http, u.by.other + v.by.other}
	return inUse{u.heap + v.heap, u.stack + v.stack, by}
}
func (u inUse) minus(v inUse) inUse {
	return inUse{u.heap - v.heap, u.stack - v.stack, u.by.minus(v.by)}
}
func (u inUse) total() int64 { return u.heap + u.stack }

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
			bud, err := budget.New(budget.Config{Total: idleBudget})
			if err != nil {
				failed.Add(1)
				return
			}
			_, err = harness.Run(ctx, bud, harness.Config{
				Task:  idleTask,
				Quiet: idleQuiet,
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
// them while they are idle. Each sends what an idle run sends first
// (fleet.FirstMessages: the harness's system prompt, the task, the budget
// note), built anew for each call: the same call on both sides (SPEC §7;
// issue 20: the task alone made a smaller request, which the SDK keeps
// for the whole stream).
func idleSDKCalls(b *testing.B, k int) inUse {
	msgs, err := fleet.FirstMessages(b.Context(), idleTask, idleBudget, idleQuiet)
	if err != nil {
		b.Fatal(err)
	}
	s := startChildSim(b, k)
	c := sdkClient(s.url, s.client())
	base := measure()

	parent, cancel := context.WithCancel(context.Background())
	var calls sync.WaitGroup
	for range k {
		calls.Go(func() {
			ctx, stop := context.WithTimeout(parent, idleBudget)
			defer stop()
			stream := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
				Model:         sim.ModelID,
				Messages:      fleet.Params(msgs),
				StreamOptions: fleet.IncludeUsage,
			})
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

// An idle run: its task, budget and quiet period, which its first request,
// and so the baseline's, carries.
const (
	idleTask   = "wait for a slow model"
	idleBudget = 10 * time.Minute
	idleQuiet  = 5 * time.Minute
)
