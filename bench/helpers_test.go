package bench_test

import (
	"bytes"
	"math"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/trace"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// glidepathModel is Glidepath's model client for a sim at url: SDK retries
// off, every attempt on a lease of the run's budget.
func glidepathModel(b *testing.B, url string, hc *http.Client) *model.Client {
	b.Helper()
	c, err := model.New(model.Config{BaseURL: url, HTTPClient: hc, Model: sim.ModelID})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// sdkClient is the baseline: openai-go as it comes, with its default
// retries (2) and Retry-After handling, and no timeout of its own; only
// the caller's context bounds it.
func sdkClient(url string, hc *http.Client) openai.Client {
	return openai.NewClient(option.WithBaseURL(url), option.WithHTTPClient(hc), option.WithAPIKey("sim"))
}

// quantile returns the q-quantile (0 < q ≤ 1) of ds by the nearest-rank
// method, so that the p99 of fewer than 100 samples is their maximum.
func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(q * float64(len(s))))
	return s[max(0, min(rank, len(s))-1)]
}

// ms converts d to milliseconds for ReportMetric.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// runRecords keeps every record of one run as the JSONL trace has it:
// trace.JSONL is called on the run's path, in seq order, so that every
// record is in by the time the run returns and none is dropped, where a
// queued sink may be handed records later and lose some on a loaded
// machine (trace.FlushGrace). Its Sink is what a run's Config takes.
type runRecords struct {
	buf bytes.Buffer // written by j alone, under its lock
	j   *trace.JSONL
}

func newRunRecords() *runRecords {
	r := &runRecords{}
	r.j = trace.NewJSONL(&r.buf)
	return r
}

// Sink is the sink to give the run.
func (r *runRecords) Sink() trace.Sink { return r.j }

// wait returns the run's records, once it has returned, or fails b if
// they cannot be read or there is no run_end among them.
func (r *runRecords) wait(b testing.TB) []trace.Record {
	b.Helper()
	r.j.Flush() // takes the JSONL's lock: what it wrote is ours to read
	recs, err := trace.ReadRecords(&r.buf)
	if err != nil {
		b.Fatal(err)
	}
	if !slices.ContainsFunc(recs, func(r trace.Record) bool { return r.Event == trace.RunEnd }) {
		b.Fatal("the run's trace has no run_end record")
	}
	return recs
}

// stamp returns how long after start the first record of event was
// stamped, or -1 if there is none. A stamp read back from JSON has no
// monotonic reading: the two are compared on the wall clock.
func stamp(recs []trace.Record, event trace.Event, start time.Time) time.Duration {
	for _, r := range recs {
		if r.Event == event {
			return r.TS.Sub(start)
		}
	}
	return -1
}
