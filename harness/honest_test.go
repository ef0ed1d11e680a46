package harness_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
)

// The words a run ends with match what happened (issue 9).

func TestAModelThatRefusesTheRunSaysWhyAndGetsNoLandingCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{Status: 401, Message: "Incorrect API key provided"}}})
		defer srv.Close()
		var tr bytes.Buffer

		res, err := run(t, t.Context(), time.Minute, harness.Config{Task: "find cats", Model: newModel(t, srv)}, &tr)

		if err != nil {
			t.Fatal(err)
		}
		if res.Cause != landing.CauseUpstream || res.Boundary != "The model failed at step 1: 401 Incorrect API key provided." {
			t.Errorf("cause %s, boundary %q", res.Cause, res.Boundary)
		}
		if n := len(chatRequests(srv)); n != 1 {
			t.Errorf("%d requests, want 1: a 401 is not retried, and the landing call is not sent where the run was refused", n)
		}
		if l := only(records(t, &tr), trace.Landing, ""); len(l) != 1 || l[0].Result != "harness" {
			t.Errorf("landing records %+v, want the harness's summary", l)
		}
	})
}

func TestARetryAfterTheBudgetCannotAffordSaysWhatTheServerAsked(t *testing.T) {
	// B = 10s: R = 2.5s, so 7.5s are left for the retry's work lease.
	cases := []struct{ retryAfter, asked string }{
		{"30", "30s"},
		{"8", "8s"}, // less than the budget, more than its time for work
		{"99999999999", "longer than 7 days"},
	}
	for _, tc := range cases {
		t.Run("Retry-After "+tc.retryAfter, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{Request: 1, Status: 429, RetryAfter: tc.retryAfter}}})
				defer srv.Close()

				res, err := run(t, t.Context(), 10*time.Second, harness.Config{Task: "find cats", Model: newModel(t, srv)}, nil)

				if err != nil {
					t.Fatal(err)
				}
				want := "Stopped at step 1: the model's server asked to wait " + tc.asked +
					" before a retry, and the run had only 7.5s left before its reserve."
				if res.Cause != landing.CauseBudget || res.Boundary != want {
					t.Errorf("cause %s, boundary %q; want budget, %q", res.Cause, res.Boundary, want)
				}
			})
		})
	}
}

func TestAnUnreadableRetryAfterIsOnTheRecordAndJitterIsUsed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{Request: 1, Status: 503, RetryAfter: "soon-ish"}}})
		defer srv.Close()
		var tr bytes.Buffer

		res, err := run(t, t.Context(), time.Minute, harness.Config{Task: "find cats", Model: newModel(t, srv)}, &tr)

		if err != nil || res.Status != landing.Complete {
			t.Fatalf("result %+v, %v; want complete after a retry", res, err)
		}
		b := only(records(t, &tr), trace.Backoff, "model")
		if len(b) != 1 || b[0].RetryAfterInvalid != "soon-ish" || b[0].Source != "jitter" {
			t.Errorf("backoff records %+v, want one that names the unreadable value and sleeps the jitter", b)
		}
	})
}

// Q = 5s, the server asks for 8s: the wait is the run's own choice, not
// silence, so the run completes rather than stalls.
func TestARetryAfterLongerThanTheQuietPeriodIsNotAStall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{Request: 1, Status: 429, RetryAfter: "8"}}})
		defer srv.Close()
		start := time.Now()

		res, err := run(t, t.Context(), time.Minute, harness.Config{Task: "find cats", Quiet: 5 * time.Second, Model: newModel(t, srv)}, nil)

		if err != nil || res.Status != landing.Complete {
			t.Errorf("result %s (cause %s), %v; want complete", res.Status, res.Cause, err)
		}
		// The server's wait, then at most the first retry's spread.
		if got := time.Since(start); got < 8*time.Second || got > 8*time.Second+budget.DefaultBase {
			t.Errorf("returned after %v, want 8s to 8.25s: the wait, then the answer", got)
		}
	})
}

// B = 1m, R = 15s: the caller cancels at 10s, while the model hangs, and the
// landing call hangs too. Land now means an answer within R: the landing
// call is leased 15s − F at most, not the 50s the budget had left.
func TestALandingAfterACancelIsLeasedWithinTheReserve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{Hang: true}}})
		defer srv.Close()
		ctx, cancel := context.WithCancelCause(t.Context())
		time.AfterFunc(10*time.Second, func() { cancel(harness.ErrInterrupted) })
		var tr bytes.Buffer
		start := time.Now()

		res, err := run(t, ctx, time.Minute, harness.Config{Task: "find cats", Quiet: time.Hour, Model: newModel(t, srv)}, &tr)

		if err != nil || res.Cause != landing.CauseCancelled {
			t.Fatalf("result %+v, %v; want landed, cancelled", res, err)
		}
		if got := time.Since(start); got != 10*time.Second+14950*time.Millisecond {
			t.Errorf("returned after %v, want 10s + 14.95s: the landing call's lease within R", got)
		}
		starts := only(records(t, &tr), trace.AttemptStart, "model")
		if len(starts) != 2 || starts[1].StepIndex != 0 || starts[1].GrantedMs != 14950 {
			t.Errorf("model attempts %+v, want the landing call leased 14950ms", starts)
		}
		if !strings.HasPrefix(res.Boundary, "Cancelled at step 1") {
			t.Errorf("boundary %q", res.Boundary)
		}
	})
}

// A payment whose outcome is unknown: its attempt is cut at its 500ms
// ceiling and its status cannot be had, so it is an orphan; the model then
// answers. The answer is kept, but the run is not complete.
func TestAnAnswerWhileAWriteIsUnknownIsUnsettled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(nil)
		defer srv.Close()
		mux := http.NewServeMux()
		mux.HandleFunc("POST /tools/pay", func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
		})
		mux.HandleFunc("GET /tools/pay/calls/{key}", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"error":{"message":"status store down"}}`, http.StatusServiceUnavailable)
		})
		tool := serveHandler(mux)
		defer tool.close()
		reg := registry(t, tools.Remote(tools.Spec{Name: "pay", Effect: tools.Write, Ceiling: 500 * time.Millisecond},
			"http://tools.invalid", tool.client()))
		// Journaled, so that harness reconcile can settle it: an orphan
		// in no journal is to be checked by hand (issue 17). The boundary
		// names that journal in the command (issue 24).
		journal := filepath.Join(t.TempDir(), "orphans.jsonl")
		j, err := cancel.OpenJournal(journal)
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()

		res, err := run(t, t.Context(), time.Minute, harness.Config{Task: "pay 5", Model: newModel(t, srv), Tools: reg, Journal: j}, nil)

		if err != nil {
			t.Fatal(err)
		}
		if res.Status != landing.Partial || res.Cause != landing.CauseUnsettled || !strings.HasPrefix(res.Answer, "[sim] Answer") {
			t.Errorf("result %s, cause %s, answer %q; want partial, unsettled, with the model's answer", res.Status, res.Cause, res.Answer)
		}
		if len(res.InFlight) != 1 || res.InFlight[0].State != landing.StateOrphaned || res.Orphans != 1 {
			t.Fatalf("in flight %+v, orphans %d; want the payment orphaned", res.InFlight, res.Orphans)
		}
		want := "Answered at step 2. The outcome of pay (key " + res.InFlight[0].IdempotencyKey +
			") is unknown: it may or may not have happened; run `harness reconcile --journal " + journal + "` to settle it."
		if res.Boundary != want {
			t.Errorf("boundary %q\nwant     %q", res.Boundary, want)
		}
	})
}

// A write cut at its ceiling whose tool says running for 4s, with a quiet
// period of 2s: the asks between sleeps are the run's own wait, not
// silence, so reconciliation settles the write and the run completes.
func TestReconcilingAWriteLongerThanTheQuietPeriodIsNotAStall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(nil)
		defer srv.Close()
		start := time.Now()
		mux := http.NewServeMux()
		mux.HandleFunc("POST /tools/pay", func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
		})
		mux.HandleFunc("GET /tools/pay/calls/{key}", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if time.Since(start) < 4*time.Second {
				io.WriteString(w, `{"state":"running"}`)
				return
			}
			io.WriteString(w, `{"state":"done","output":"paid"}`)
		})
		tool := serveHandler(mux)
		defer tool.close()
		reg := registry(t, tools.Remote(tools.Spec{Name: "pay", Effect: tools.Write, Ceiling: 500 * time.Millisecond},
			"http://tools.invalid", tool.client()))
		var tr bytes.Buffer

		res, err := run(t, t.Context(), time.Minute, harness.Config{Task: "pay 5", Quiet: 2 * time.Second, Model: newModel(t, srv), Tools: reg}, &tr)

		if err != nil || res.Status != landing.Complete {
			t.Fatalf("result %+v, %v; want complete, the write reconciled done", res, err)
		}
		recs := records(t, &tr)
		sleeps := 0
		for _, r := range only(recs, trace.Backoff, "tool:pay") {
			if r.Reconciling && !r.GaveUp && r.SleepMs > 0 {
				sleeps++
			}
		}
		if sleeps == 0 {
			t.Error("no backoff record, marked reconciling, for the sleeps between status asks")
		}
		if r := only(recs, trace.Reconcile, "tool:pay"); len(r) != 1 || r[0].State != "done" {
			t.Errorf("reconcile records %+v, want one, done", r)
		}
	})
}

// B = 4s, R = 1s; a tool whose call and cancel both hang; the run is
// cancelled at 1s. Land now means within R: the wait for the cancel's
// answer is bounded by the landing's end, not by the cancel's own 2s
// lease.
func TestAHangingCancelDoesNotHoldACancelledRunPastItsReserve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(nil)
		defer srv.Close()
		hang := func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
		}
		mux := http.NewServeMux()
		mux.HandleFunc("POST /tools/fetch", hang)
		mux.HandleFunc("DELETE /tools/fetch/calls/{key}", hang)
		tool := serveHandler(mux)
		defer tool.close()
		reg := registry(t, tools.Remote(tools.Spec{Name: "fetch", Effect: tools.Read, Cancellable: true},
			"http://tools.invalid", tool.client()))
		ctx, cancel := context.WithCancelCause(t.Context())
		time.AfterFunc(time.Second, func() { cancel(harness.ErrInterrupted) })
		start := time.Now()

		res, err := run(t, ctx, 4*time.Second, harness.Config{Task: "find cats", Quiet: time.Hour, Model: newModel(t, srv), Tools: reg}, nil)

		if err != nil || res.Cause != landing.CauseCancelled {
			t.Fatalf("result %+v, %v; want landed, cancelled", res, err)
		}
		if got := time.Since(start); got > 2*time.Second {
			t.Errorf("returned %v after the start, want within 1s + R = 2s: a hung cancel costs the landing nothing", got)
		}
	})
}
