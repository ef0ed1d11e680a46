package harness_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
)

// hungCrawl serves a remote read tool whose POST hangs until the client
// leaves, and whose DELETE answers 202 after answerIn, or hangs when
// answerIn is negative.
func hungCrawl(answerIn time.Duration) *handlerServer {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tools/crawl", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	})
	mux.HandleFunc("DELETE /tools/crawl/calls/{key}", func(w http.ResponseWriter, r *http.Request) {
		if answerIn < 0 {
			<-r.Context().Done()
			return
		}
		select {
		case <-time.After(answerIn): // the tool's own latency, in the bubble's time
			w.WriteHeader(http.StatusAccepted)
		case <-r.Context().Done():
		}
	})
	return serveHandler(mux)
}

// B = 2s, Q = 500ms (R = 500ms): the model asks for crawl at once; crawl
// says nothing, so the quiet clock fires at 500ms, crawl's cancel goes out
// and the run lands at once, the landing call answered at once. The result
// exists at 500ms; the cancel then has its grace, 100ms, and no more
// (SPEC §3: cancels never hold the answer).
func TestACancelGetsAGraceOfAHundredMillisecondsOnceTheResultExists(t *testing.T) {
	cases := []struct {
		name      string
		answerIn  time.Duration // the DELETE's answer; negative: never
		wantAt    time.Duration
		wantState string   // crawl's in_flight state
		wantSent  []string // the states of its cancel_sent records
	}{
		{"a cancel that never answers is left sent", -1, 600 * time.Millisecond, landing.StateAbandoned, []string{"sent"}},
		{"a cancel answered within the grace is accepted", 60 * time.Millisecond, 560 * time.Millisecond, landing.StateCancelled, []string{"sent", "accepted"}},
		{"a cancel answered after the grace is not waited for", 150 * time.Millisecond, 600 * time.Millisecond, landing.StateAbandoned, []string{"sent"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := sim.NewPipeServer(nil)
				defer srv.Close()
				tool := hungCrawl(tc.answerIn)
				defer tool.close()
				reg := registry(t, tools.Remote(tools.Spec{Name: "crawl", Effect: tools.Read, Cancellable: true, MaxAttempts: 1},
					"http://tools.invalid", tool.client()))
				var tr bytes.Buffer
				start := time.Now()

				res, err := run(t, t.Context(), 2*time.Second, harness.Config{Task: "find cats", Quiet: 500 * time.Millisecond,
					Model: newModel(t, srv), Tools: reg}, &tr)

				if err != nil {
					t.Fatal(err)
				}
				if got := time.Since(start); got != tc.wantAt {
					t.Errorf("returned after %v, want %v", got, tc.wantAt)
				}
				if res.Cause != landing.CauseQuiet || len(res.InFlight) != 1 || res.InFlight[0].State != tc.wantState {
					t.Errorf("result %+v; want quiet, crawl %s", res, tc.wantState)
				}
				recs := records(t, &tr)
				var states []string
				for _, r := range only(recs, trace.CancelSent, "tool:crawl") {
					states = append(states, r.State)
				}
				if strings.Join(states, ",") != strings.Join(tc.wantSent, ",") {
					t.Errorf("cancel_sent states %v, want %v", states, tc.wantSent)
				}
				l := only(recs, trace.Landing, "")
				end := recs[len(recs)-1]
				if len(l) != 1 || l[0].ElapsedMs != 500 || end.Event != trace.RunEnd || end.ElapsedMs != tc.wantAt.Milliseconds() {
					t.Errorf("landing %+v, last record %+v; want the landing at 500ms and run_end at %v", l, end, tc.wantAt)
				}
			})
		})
	}
}

// B = 2s, R = 500ms, Q = 1h: crawl hangs until its work lease ends at
// 1.45s; its cancel goes out on a landing lease, which ends at D − F,
// 1.95s, and hangs; the landing call hangs until its landing lease ends
// at 1.95s too. The cancel's grace, 100ms from then, would end past D: the
// run returns at 1.95s, when the cancel's lease ended it, inside D.
func TestACancelsGraceNeverPassesTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{Request: 2, Hang: true}}})
		defer srv.Close()
		tool := hungCrawl(-1)
		defer tool.close()
		reg := registry(t, tools.Remote(tools.Spec{Name: "crawl", Effect: tools.Read, Cancellable: true, MaxAttempts: 1},
			"http://tools.invalid", tool.client()))
		start := time.Now()

		res, err := run(t, t.Context(), 2*time.Second, harness.Config{Task: "find cats", Quiet: time.Hour,
			Model: newModel(t, srv), Tools: reg}, nil)

		if err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 1950*time.Millisecond {
			t.Errorf("returned after %v, want 1.95s: the cancel's lease, never past D", got)
		}
		if res.Cause != landing.CauseBudget || res.Budget.SpentMs != 1950 || res.InFlight[0].State != landing.StateAbandoned {
			t.Errorf("result %+v, want budget, 1950ms spent, crawl abandoned", res)
		}
	})
}
