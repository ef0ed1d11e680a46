package harness_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
)

// Tools that are really there, and a model that never answers, named
// (issue 18, SPEC §4).

func TestAModelThatSendsNothingIsNamedAndIsNotAskedToLand(t *testing.T) {
	cases := []struct {
		name     string
		quiet    time.Duration
		rule     sim.Rule
		cause    landing.Cause
		boundary string
		requests int // chat requests: the landing call is not sent to a model that sent nothing
	}{
		{
			// B = 5s: R = 1.25s, so the work lease is 5s − 1.25s − 50ms.
			name: "its lease ends it", rule: sim.Rule{Hang: true},
			cause: landing.CauseBudget, boundary: "Stopped at step 1: the model sent nothing for 3.7s.", requests: 1,
		},
		{
			name: "the quiet clock ends it", quiet: 2 * time.Second, rule: sim.Rule{Hang: true},
			cause: landing.CauseQuiet, boundary: "Stopped at step 1: no progress for 2s: the model's server never answered: no response headers in 2s.", requests: 1,
		},
		// Issue 24: keepalives, or an answer that never finishes, are no
		// more an answer than silence: named, and not asked to land.
		{
			name: "it sent only keepalives until its lease ended", rule: sim.Rule{Keepalive: sim.Forever},
			cause: landing.CauseBudget, boundary: "Stopped at step 1: the model sent only keepalives for 3.7s.", requests: 1,
		},
		{
			name: "it sent only keepalives until the quiet clock fired", quiet: 2 * time.Second, rule: sim.Rule{Keepalive: sim.Forever},
			cause: landing.CauseQuiet, boundary: "Stopped at step 1: no progress for 2s: the model sent only keepalives for 2s (nothing is known of how long it usually takes: the quiet period alone applied).", requests: 1,
		},
		{
			name: "its answer streamed until its lease ended", rule: sim.Rule{ChunkGap: 100 * time.Millisecond, Answer: strings.Repeat("and so on ", 200)},
			cause:    landing.CauseBudget,
			boundary: "Stopped at step 1: the model's answer was still streaming after 3.7s; it never finished.", requests: 1,
		},
		{
			name: "its answer stalled halfway until its lease ended", rule: sim.Rule{HangAfterChunks: new(2)},
			cause:    landing.CauseBudget,
			boundary: "Stopped at step 1: the model's answer was still streaming after 3.7s; it never finished.", requests: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{tc.rule}})
				defer srv.Close()
				var tr bytes.Buffer

				res, err := run(t, t.Context(), 5*time.Second, harness.Config{Task: "q", Model: newModel(t, srv), Quiet: tc.quiet}, &tr)

				if err != nil {
					t.Fatal(err)
				}
				if res.Cause != tc.cause || res.Boundary != tc.boundary {
					t.Errorf("cause %s, boundary %q; want %s, %q", res.Cause, res.Boundary, tc.cause, tc.boundary)
				}
				if n := len(chatRequests(srv)); n != tc.requests {
					t.Errorf("%d chat requests, want %d", n, tc.requests)
				}
				wantBy := "harness"
				if tc.requests == 2 {
					wantBy = "model" // asked, though the model then kept it waiting too
				}
				if l := only(records(t, &tr), trace.Landing, ""); len(l) != 1 || (tc.requests == 1 && l[0].Result != wantBy) {
					t.Errorf("landing records %+v, want one by the %s", l, wantBy)
				}
			})
		})
	}
}

// A model attempt that sent nothing and a later one that answered: the
// answer clears the silence, and a run that lands later asks the model.
func TestAModelThatAnsweredAfterASilentAttemptIsAskedToLand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{Request: 1, Hang: true}}})
		defer srv.Close()
		var tr bytes.Buffer
		oa := harnessClient(srv)

		b, err := budget.New(budget.Config{Total: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		s, ctx, err := harness.Start(t.Context(), b, harness.Config{Task: "q", Sinks: []trace.Sink{trace.NewJSONL(&tr)}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		// The first turn's one attempt is cut by a lease of the caller's
		// own: silent; the second is answered.
		short, cancel := context.WithTimeout(ctx, time.Second)
		_, err = ask(s, short, oa)
		cancel()
		if err == nil {
			t.Fatal("the hung turn answered")
		}
		if _, err := ask(s, ctx, oa); err != nil {
			t.Fatal(err)
		}
		res := s.Land(ctx, &harness.MustLandError{Cause: landing.CauseBudget}, func(ctx context.Context, prompt string) (string, error) {
			return ask(s, ctx, oa)
		})
		if strings.Contains(res.Boundary, "sent nothing") {
			t.Errorf("boundary %q names a silence an answer ended", res.Boundary)
		}
		if l := only(records(t, &tr), trace.Landing, ""); len(l) != 1 || l[0].Result != "model" {
			t.Errorf("landing records %+v, want the model's", l)
		}
	})
}

func TestAToolWhoseCeilingIsBelowItsP50IsUnavailableAndNotOffered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(&sim.Scenario{})
		defer srv.Close()
		c := newCalls()
		slow := c.sleeperSpec(tools.Spec{Name: "slow", Effect: tools.Read, Ceiling: time.Second, P50: 100 * time.Millisecond}, 0, "ok")
		fine := c.sleeper("fine", 0, "ok")
		b, err := budget.New(budget.Config{Total: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		// What the machine's profile says of it: 3s, five times over.
		b.Estimates().Kind("tool:slow").Warm([]time.Duration{3 * time.Second, 3 * time.Second, 3 * time.Second, 3 * time.Second, 3 * time.Second})

		res, err := harness.Run(t.Context(), b, harness.Config{Task: "q", Model: newModel(t, srv), Tools: registry(t, slow, fine)})

		if err != nil {
			t.Fatal(err)
		}
		want := []landing.Unavailable{{Tool: "slow", Why: "its ceiling 1s is below its p50 3s on this machine, so every call would be refused"}}
		if len(res.Unavailable) != 1 || res.Unavailable[0] != want[0] {
			t.Errorf("unavailable %+v, want %+v", res.Unavailable, want)
		}
		if reqs := chatRequests(srv); len(reqs) == 0 || reqs[0].Tools != 1 {
			t.Errorf("requests %+v: want the first to offer only the tool that can run", reqs)
		}
		if _, ok := c.at(c.starts, "slow"); ok {
			t.Error("the tool that cannot fit its p50 was called")
		}
	})
}

// What the first Ctrl-C's line promises (SPEC §3): R from the cancel for
// a run still working, never past the deadline.
func TestLandsBySaysWhenALandingNowWouldHaveItsResult(t *testing.T) {
	cases := []struct {
		name             string
		cancelAt, landBy time.Duration
	}{
		{"cancelled at 10s: R after", 10 * time.Second, 25 * time.Second},
		{"cancelled at 50s: the deadline, before R after", 50 * time.Second, time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				b, err := budget.New(budget.Config{Total: time.Minute}) // R = 15s
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				s, _, err := harness.Start(ctx, b, harness.Config{Task: "q"})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				if got := s.LandsBy().Sub(start); got != 15*time.Second {
					t.Errorf("before a cancel: lands by %v, want R from now", got)
				}
				time.Sleep(tc.cancelAt)
				cancel()
				synctest.Wait()
				if got := s.LandsBy().Sub(start); got != tc.landBy {
					t.Errorf("lands by %v, want %v", got, tc.landBy)
				}
			})
		})
	}
	var zero harness.Session
	if !zero.LandsBy().IsZero() {
		t.Error("a zero Session lands by a time")
	}
}
