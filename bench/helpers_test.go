package bench_test

import (
	"math"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
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
