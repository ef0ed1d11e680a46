package fleet_test

import (
	"context"
	"net/http"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/glidepath/glidepath/bench/fleet"
	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/trace"
)

// BenchmarkToFirstRetry is one fleet run's start, alone (issue 20, item
// 4): from before the run until it has been turned away and decided its
// sleep — a Glidepath run until its backoff record, the bare SDK until its
// 503 is back — the time, the process's CPU, the heap allocated and the
// objects, per run, one run at a time against an in-memory sim that
// answers every request 503.
// Beside BenchmarkFirstSpread it tells a run's own start cost from what a
// thousand of them at once cost together (the collector, the scheduler).
func BenchmarkToFirstRetry(b *testing.B) {
	srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{Status: http.StatusServiceUnavailable, RetryAfter: "30", Message: "[sim] overloaded: try again later."}}})
	defer srv.Close()
	msgs, err := fleet.FirstMessages(b.Context(), fleet.Task, time.Minute, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("system=glidepath", func(b *testing.B) {
		c, err := model.New(model.Config{BaseURL: srv.URL, HTTPClient: srv.Client(), Model: sim.ModelID})
		if err != nil {
			b.Fatal(err)
		}
		var p point
		for b.Loop() {
			ctx, cancel := context.WithCancel(b.Context())
			p.start()
			bud, err := budget.New(budget.Config{Total: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			harness.Run(ctx, bud, harness.Config{Task: fleet.Task, Model: c,
				Sinks: []trace.Sink{&onBackoff{func() { p.reached(); cancel() }}}})
			cancel()
		}
		p.report(b)
	})
	b.Run("system=sdk-stream", func(b *testing.B) {
		var p point
		hc := &http.Client{Transport: on503{srv.Client().Transport, func() { p.reached() }}}
		sdk := openai.NewClient(option.WithBaseURL(srv.URL), option.WithHTTPClient(hc), option.WithAPIKey("sim"))
		for b.Loop() {
			ctx, cancel := context.WithCancel(b.Context())
			p.cancel = cancel // the SDK would wait out the server's 30s: it is cut once its 503 is back
			p.start()
			ctx, stop := context.WithTimeout(ctx, time.Minute)
			stream := sdk.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
				Model: sim.ModelID, Messages: fleet.Params(msgs), StreamOptions: fleet.IncludeUsage})
			for stream.Next() {
			}
			stream.Close()
			stop()
			cancel()
		}
		p.report(b)
	})
}

// point sums, over runs, the time and the heap from each run's start to
// the point it reached.
type point struct {
	t0            time.Time
	cpu0          time.Duration
	m0            runtime.MemStats
	took, cpu     time.Duration
	bytes, allocs uint64
	n             int
	cancel        context.CancelFunc
}

func (p *point) start() {
	runtime.ReadMemStats(&p.m0)
	p.t0, p.cpu0 = time.Now(), cpuTime()
}

// cpuTime is the process's CPU time so far, user and system: the sim's
// side of each request is in it too, for both systems alike.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (p *point) reached() {
	took, cpu := time.Since(p.t0), cpuTime()-p.cpu0
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	p.took += took
	p.cpu += cpu
	p.bytes += m.TotalAlloc - p.m0.TotalAlloc
	p.allocs += m.Mallocs - p.m0.Mallocs
	p.n++
	if p.cancel != nil {
		p.cancel()
	}
}

func (p *point) report(b *testing.B) {
	if p.n == 0 {
		b.Fatal("no run reached its first retry")
	}
	n := float64(p.n)
	b.ReportMetric(0, "ns/op") // a Glidepath op goes on to land: the figures are to the point
	b.ReportMetric(float64(p.took.Microseconds())/n, "us-to-retry")
	b.ReportMetric(float64(p.cpu.Microseconds())/n, "cpu-us-to-retry")
	b.ReportMetric(float64(p.bytes)/n, "B-to-retry")
	b.ReportMetric(float64(p.allocs)/n, "allocs-to-retry")
}

// onBackoff calls at when the run records its first backoff.
type onBackoff struct{ at func() }

func (o *onBackoff) AttemptContext(ctx context.Context, _ trace.Record) context.Context { return ctx }

func (o *onBackoff) Record(r trace.Record) error {
	if r.Event == trace.Backoff && r.Attempt == 1 {
		o.at()
	}
	return nil
}

// on503 calls at when a 503 comes back.
type on503 struct {
	next http.RoundTripper
	at   func()
}

func (o on503) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := o.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusServiceUnavailable {
		o.at()
	}
	return resp, err
}
