package main

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/sim"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// The loop of agent.go runs against the simulated model over in-memory
// connections, inside a synctest bubble: the real openai-go client, the
// real Session, exact time.
func runAgent(t *testing.T, ctx context.Context, total time.Duration, sc *sim.Scenario) (landing.Result, *sim.Server) {
	t.Helper()
	b, err := budget.New(budget.Config{Total: total})
	if err != nil {
		t.Fatal(err)
	}
	srv := sim.NewPipeServer(sc)
	t.Cleanup(srv.Close)
	client := openai.NewClient(append([]option.RequestOption{option.WithBaseURL(srv.URL),
		option.WithHTTPClient(srv.Client())}, harness.ClientOptions()...)...)
	reg, err := searchTool()
	if err != nil {
		t.Fatal(err)
	}
	res, err := agent(ctx, b, client, reg, "What is a deadline budget?")
	if err != nil {
		t.Fatal(err)
	}
	return res, srv
}

func TestTheLoopAnswersWithEveryRequestLeasedAndTold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res, srv := runAgent(t, t.Context(), 20*time.Second, nil)

		if res.Status != landing.Complete || !strings.Contains(res.Answer, "search returned") || res.Steps != 2 || res.Attempts != 3 {
			t.Errorf("result %+v, want complete after two model turns and one tool call", res)
		}
		reqs := srv.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d requests, want 2", len(reqs))
		}
		for i, r := range reqs {
			ms, err := strconv.Atoi(r.Header.Get(budget.Header))
			// 20s, less the 5s reserve and the 50ms floor.
			if err != nil || ms != 14950 {
				t.Errorf("request %d sent %s %q, want the lease, 14950", i+1, budget.Header, r.Header.Get(budget.Header))
			}
			if !strings.HasPrefix(r.BudgetNote, "Budget: 20s left until the deadline") {
				t.Errorf("request %d: budget note %q", i+1, r.BudgetNote)
			}
		}
	})
}

func TestTheLoopLandsWithALabeledAnswerWhenTheTimeRunsOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		// B = 10s: the second turn hangs, sending nothing, until its lease
		// ends at 7.45s. The landing call is not sent to the endpoint that
		// just hung (SPEC §4): the run lands at once with the harness's
		// own summary, and the boundary names the silent model.
		res, srv := runAgent(t, t.Context(), 10*time.Second, &sim.Scenario{Rules: []sim.Rule{{Request: 2, Hang: true}}})

		if got := time.Since(start); got != 7450*time.Millisecond {
			t.Errorf("returned after %v, want 7.45s: the work time, then an instant landing", got)
		}
		if res.Status != landing.Partial || res.Cause != landing.CauseBudget || !strings.HasPrefix(res.Answer, "Partial answer, summarized by the harness") ||
			!strings.Contains(res.Boundary, "the model sent nothing for 7.4s") {
			t.Errorf("result %+v, want partial on the budget with the harness's summary, naming the silent model", res)
		}
		if !strings.HasPrefix(res.Text(), "PARTIAL RESULT.") {
			t.Errorf("text %q, want it to lead with its boundary", res.Text())
		}
		if reqs := srv.Requests(); len(reqs) != 2 {
			t.Errorf("%d requests; want the two turns and no landing call to the model that hung", len(reqs))
		}
	})
}

func TestTheLoopLandsCancelledWhenItsCallerGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stop := errors.New("the user left")
		ctx, cancel := context.WithCancelCause(t.Context())
		time.AfterFunc(3*time.Second, func() { cancel(stop) })

		res, _ := runAgent(t, ctx, time.Minute, &sim.Scenario{Rules: []sim.Rule{{Request: 1, Delay: time.Hour}}})

		if res.Status != landing.Partial || res.Cause != landing.CauseCancelled {
			t.Errorf("result %+v, want partial, cancelled", res)
		}
	})
}

func TestTheLoopLandsOnARefusedKeyWithTheServersWordsAndNoSecondRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res, srv := runAgent(t, t.Context(), time.Minute, &sim.Scenario{Rules: []sim.Rule{{Status: 401, Message: "Incorrect API key provided"}}})

		if want := "The model failed at step 1: 401 Incorrect API key provided."; res.Boundary != want {
			t.Errorf("boundary %q, want %q", res.Boundary, want)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("%d requests, want 1: no landing call to the server that refused the key", n)
		}
	})
}
