package bench_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
)

// hungCancelBudget and hungCancelQuiet are B and Q of
// BenchmarkHungCancel, as in issue 17.
const (
	hungCancelBudget = 2 * time.Second
	hungCancelQuiet  = 500 * time.Millisecond
)

// BenchmarkHungCancel measures SPEC §7's "when a tool's POST and cancel
// both hang, the run returns within its landing time + 150ms, not at D".
// The sim's first turn calls a remote tool, "lookup", served over loopback
// by a server whose POST never answers and whose DELETE (the cancel) never
// answers either, each until its client leaves. The quiet clock (Q =
// 500ms) stalls the call, the harness cancels it, the landing call (the
// sim answers it) makes the landing summary, and then the run returns.
//
// The landing time is when the landing record was recorded, its own
// stamp: from then on the run's result exists (SPEC §3). Per iteration:
// landing-p50-ms is that time since the run began; after-landing-p50/p99/
// max-ms is return − landing (target: at most 150ms); before-d-min-ms is
// D − return at its least, how far from the deadline the run returned.
// cancel-sent counts the runs whose trace leaves the cancel as sent, its
// last cancel_sent record of state sent: unanswered, as SPEC §3 records a
// cancel the run stopped waiting for.
func BenchmarkHungCancel(b *testing.B) {
	release := make(chan struct{})
	tool := httptest.NewServer(hungCancelTool(release))
	defer tool.Close()
	defer close(release)                  // before tool.Close, which waits for the handlers
	srv := sim.NewServer(&sim.Scenario{}) // the default policy: call the tool, then answer
	defer srv.Close()
	gp := glidepathModel(b, srv.URL, srv.Client())

	var landed, after, beforeD []time.Duration
	sent := 0
	for b.Loop() {
		r := hungCancelRun(b, gp, tool.URL, tool.Client())
		landed = append(landed, r.landing)
		after = append(after, r.returned-r.landing)
		beforeD = append(beforeD, hungCancelBudget-r.returned)
		if r.cancelSent {
			sent++
		}
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(quantile(landed, 0.50)), "landing-p50-ms")
	b.ReportMetric(ms(quantile(after, 0.50)), "after-landing-p50-ms")
	b.ReportMetric(ms(quantile(after, 0.99)), "after-landing-p99-ms")
	b.ReportMetric(ms(quantile(after, 1)), "after-landing-max-ms")
	b.ReportMetric(ms(-quantile(negate(beforeD), 1)), "before-d-min-ms")
	b.ReportMetric(float64(sent), "cancel-sent")
	b.ReportMetric(float64(len(after)), "runs")
}

func negate(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = -d
	}
	return out
}

type hungCancelTimes struct {
	landing, returned time.Duration // since just before the budget was made
	cancelSent        bool
}

// hungCancelRun runs harness.Run once against the hung tool at url.
func hungCancelRun(b *testing.B, c *model.Client, url string, hc *http.Client) hungCancelTimes {
	reg := tools.NewRegistry(nil)
	spec := tools.Spec{Name: "lookup", Description: "Looks things up.", Effect: tools.Read,
		Parameters: stepTool.Parameters, Cancellable: true, Ceiling: 5 * time.Second}
	if err := reg.Register(tools.Remote(spec, url, hc)); err != nil {
		b.Fatal(err)
	}
	rec := newRunRecords()
	start := time.Now()
	bud, err := budget.New(budget.Config{Total: hungCancelBudget})
	if err != nil {
		b.Fatal(err)
	}
	res, err := harness.Run(context.Background(), bud, harness.Config{
		Task:  "look up cats",
		Quiet: hungCancelQuiet,
		Model: c,
		Tools: reg,
		Sinks: []trace.Sink{rec.Sink()},
	})
	returned := time.Since(start)
	if err != nil {
		b.Fatal(err)
	}
	if res.Status != landing.Partial || res.Boundary == "" {
		b.Fatalf("got status %q with boundary %q, want a labeled partial result", res.Status, res.Boundary)
	}
	// The tool's calls hang until the benchmark ends: they are not waited
	// for here, only released with the server.
	cctx, stop := context.WithTimeout(context.Background(), 10*time.Millisecond)
	reg.Close(cctx)
	stop()
	recs := rec.wait(b)
	t := hungCancelTimes{returned: returned, landing: stamp(recs, trace.Landing, start)}
	// A cancel_sent record goes out with the cancel (state sent) and
	// another when it is answered; the last one the run recorded is what
	// its trace says of the cancel.
	last := ""
	for _, r := range recs {
		if r.Event == trace.CancelSent {
			last = r.State
		}
	}
	t.cancelSent = last == string(trace.CancelStateSent)
	if t.landing < 0 {
		b.Fatal("the run's trace has no landing record")
	}
	return t
}

// hungCancelTool serves the one tool "lookup" over SPEC §5's protocol, its
// POST and its cancel both hanging until their client leaves or release
// is closed.
func hungCancelTool(release <-chan struct{}) http.Handler {
	hang := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tools/lookup", hang)
	mux.HandleFunc("DELETE /tools/lookup/calls/{key}", hang)
	mux.HandleFunc("GET /tools/lookup/calls/{key}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"state":"running","units":0}`)
	})
	return mux
}
