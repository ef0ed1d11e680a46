package battery_test

import (
	"strings"
	"testing"

	"github.com/glidepath/glidepath/bench/battery"
	"github.com/glidepath/glidepath/model"
)

// runBoth runs the scenario named name twice on Glidepath and twice on
// the per-call baseline, against real sims speaking /v1/responses.
func runBoth(t *testing.T, name string) (battery.Scenario, battery.Result, battery.Result) {
	t.Helper()
	sc, ok := battery.Lookup(name)
	if !ok || sc.API != model.APIResponses {
		t.Fatalf("no Responses API scenario %q", name)
	}
	g, p := glidepathAndPerCall(t, sc)
	return sc, g, p
}

// glidepathAndPerCall runs sc twice on Glidepath and twice on the
// per-call baseline.
func glidepathAndPerCall(t *testing.T, sc battery.Scenario) (battery.Result, battery.Result) {
	t.Helper()
	gp, _ := battery.SystemNamed(battery.Glidepath)
	pc, _ := battery.SystemNamed(battery.PerCall)
	g, err := battery.Run(t.Context(), sc, gp, 2)
	if err != nil {
		t.Fatal(err)
	}
	p, err := battery.Run(t.Context(), sc, pc, 2)
	if err != nil {
		t.Fatal(err)
	}
	return g, p
}

// Every responses- scenario is the Responses API's, and only those are;
// each twin it names is a Chat Completions scenario of the same kind.
func TestTheResponsesScenariosSpeakTheResponsesAPI(t *testing.T) {
	n := 0
	for _, sc := range battery.Scenarios() {
		if got, want := sc.API == model.APIResponses, strings.HasPrefix(sc.Name, "responses-"); got != want {
			t.Errorf("%s: API %q", sc.Name, sc.API)
		}
		if sc.API == model.APIResponses {
			n++
		}
		if sc.Twin == "" {
			continue
		}
		if twin, ok := battery.Lookup(sc.Twin); !ok || twin.API != "" || twin.Stall != sc.Stall || twin.Healthy != sc.Healthy {
			t.Errorf("%s: twin %q (found %v, API %q, stall %q, healthy %v); want a Chat scenario of the same kind", sc.Name, sc.Twin, ok, twin.API, twin.Stall, twin.Healthy)
		}
	}
	if n != 9 {
		t.Errorf("%d Responses API scenarios, want 9", n)
	}
}

// A reasoning model on the Responses API is silent after its opening
// events (response.created, in_progress, the reasoning item's
// output_item.added), which are not semantic: as on Chat Completions, it
// is held for its allowance when its p95 is known and cut at Q when it is
// cold, while a baseline waits; nothing wrong, every request reached
// /v1/responses (ModelRequests counts only those), two turns a run.
func TestAReasoningModelOnTheResponsesAPIIsHeldForItsAllowance(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		check    func(t *testing.T, g, p battery.Result)
	}{
		{"responses-healthy", func(t *testing.T, g, p battery.Result) {
			if g.Complete != g.Runs || g.FalseStalls != 0 {
				t.Errorf("glidepath: %d of %d complete, %d false stalls; want every run complete", g.Complete, g.Runs, g.FalseStalls)
			}
			waitedAndAnswered(t, p)
		}},
		{"responses-reasoning-warm", heldForItsAllowance("profile")},
		{"responses-reasoning-cold", cutCold},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			t.Parallel()
			_, g, p := runBoth(t, tc.scenario)
			tc.check(t, g, p)
			if p.ModelRequests != 2*p.Runs {
				t.Errorf("per-call: %d requests to /v1/responses in %d runs; want two turns each", p.ModelRequests, p.Runs)
			}
		})
	}
}

// A model that hangs on the Responses API is caught as on Chat
// Completions: before its headers at Q, named as a server that never
// answered, whatever its allowance; after response.created and
// in_progress at max(Q, E), named as silent past its usual time; a stream
// of keepalives alone, with nothing known of the model, at Q. Ordering
// and words, bounded generously: the timings are make bench's.
func TestAModelHangOnTheResponsesAPIIsCaughtAtItsBoundAndNamed(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		source   string // where E came from
		held     bool   // whether E, not Q, bounds it
		words    string
	}{
		{"responses-hang-headers", "profile", false, "the model's server never answered"},
		{"responses-hang-after-headers", "profile", true, "the model was silent past its usual time after its server answered"},
		{"responses-keepalive", "none", false, "the model sent only keepalives"},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			t.Parallel()
			sc, g, p := runBoth(t, tc.scenario)
			if g.Allowance.Runs != g.Runs || g.Allowance.Source != tc.source {
				t.Fatalf("E %v from %q in %d of %d runs; want one from %q in each", g.Allowance.P50, g.Allowance.Source, g.Allowance.Runs, g.Runs, tc.source)
			}
			checkCaught(t, g, sc.Quiet, tc.held, tc.words)
			if p.Stall.Noticed != p.Runs || p.Stall.P50 < sc.ModelTimeout-margin {
				t.Errorf("per-call: noticed in %d of %d runs at %v p50; want each at its timeout %v", p.Stall.Noticed, p.Runs, p.Stall.P50, sc.ModelTimeout)
			}
		})
	}
}

// A Responses stream that fails inside itself, after a 200 and its
// opening events — an error event rate_limit_exceeded (a 429), a
// response.failed server_error (a 500), or a connection cut after the
// opening events — is retried by Glidepath as the same failure is on Chat
// Completions, and the run completes; the per-call baseline's own
// retries get there too, while openai-go's defaults, which retry only an
// error status, fail the run at the first.
func TestAFailureInsideAResponsesStreamIsRetried(t *testing.T) {
	df, _ := battery.SystemNamed(battery.Defaults)
	for _, tc := range []struct {
		scenario string
		failures int // streams that fail, per run
	}{
		{"responses-error-429", 2},
		{"responses-failed-500", 1},
		{"responses-midstream", 2},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			t.Parallel()
			sc, g, p := runBoth(t, tc.scenario)
			want := g.Runs * (2 + tc.failures) // two turns, and the failed streams again
			if g.Complete != g.Runs || g.ModelRequests != want {
				t.Errorf("glidepath: %d of %d complete in %d requests; want every run complete in %d. Told: %q", g.Complete, g.Runs, g.ModelRequests, want, g.Told)
			}
			if p.Answered != p.Runs {
				t.Errorf("per-call: %d of %d answered; want its retries to get there. Told: %q", p.Answered, p.Runs, p.Told)
			}
			d, err := battery.Run(t.Context(), sc, df, 1)
			if err != nil {
				t.Fatal(err)
			}
			if d.Errored != d.Runs || d.ModelRequests != d.Runs {
				t.Errorf("defaults: %d of %d errors in %d requests; want the first failure to end the run, unretried", d.Errored, d.Runs, d.ModelRequests)
			}
		})
	}
}
