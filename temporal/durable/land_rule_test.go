package durable_test

import (
	"testing"
	"time"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/temporal/durable"
	"github.com/glidepath/glidepath/trace"
)

// chatRequests counts the chat completion requests a sim received.
func chatRequests(s *sim.Server) int {
	n := 0
	for _, r := range s.Requests() {
		if r.Completion > 0 {
			n++
		}
	}
	return n
}

// Issue 25: whether a landing run sends the landing call is
// landing.ModelEnd.Call on both hosts. A model that sends nothing until
// the quiet clock cuts it got a landing call to the same silent endpoint
// on Temporal (2 requests; 1 in process); and a server whose Retry-After
// the run cannot afford is not asked again for the landing either
// (issue 25, item 6): the harness summarizes from the run's record.
func TestALandingCallIsNotSentToAModelThatWillNotAnswer(t *testing.T) {
	cases := []struct {
		name  string
		rule  sim.Rule
		in    durable.Input
		cause landing.Cause
	}{
		{
			name: "a model that sends nothing until the quiet clock fires",
			rule: sim.Rule{Hang: true},
			in:   durable.Input{Task: "a mute model", Budget: 20 * time.Second, Quiet: 1500 * time.Millisecond},
		},
		{
			name: "a model whose Retry-After the run cannot afford",
			rule: sim.Rule{Status: 503, RetryAfter: "30"},
			in:   durable.Input{Task: "a busy model", Budget: 6 * time.Second},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvWith(t, "", nil, &sim.Scenario{Rules: []sim.Rule{tc.rule}})
			out, _ := e.run(t, tc.in)
			res := out.Result
			if res.Status != landing.Partial {
				t.Fatalf("status %s cause %q, want partial: %s\n%s", res.Status, res.Cause, res.Boundary, dump(out))
			}
			if n := chatRequests(e.sim); n != 1 {
				t.Errorf("%d chat requests, want 1: no landing call to a model that will not answer\n%s", n, dump(out))
			}
			if l := records(out, trace.Landing, ""); len(l) != 1 || l[0].Result != "harness" {
				t.Errorf("landing records %+v, want the harness's summary", l)
			}
			t.Logf("cause %s: %s", res.Cause, res.Boundary)
		})
	}
}
