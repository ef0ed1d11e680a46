package tools

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/glidepath/glidepath/watchdog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/trace"
)

// Real-socket tests: a tool server on loopback. They assert order and
// outcome, with generous bounds on time; exact times are in synctest_test.go.

func remoteRun(t *testing.T, rec *recorder, j *cancel.Journal) *Run {
	return &Run{ID: "run-1", Budget: newBudget(t, 30*time.Second), Journal: j, Backoff: fastBackoff, Observer: rec.observer()}
}

func TestEveryAttemptOfACallCarriesTheSameKeyAndAnotherCallANewOne(t *testing.T) {
	s := &toolServer{post: func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 2 || n == 3 {
			writeJSON(w, http.StatusServiceUnavailable, `{"error":{"message":"busy"}}`)
			return
		}
		writeJSON(w, http.StatusOK, `{"output":{"hits":2}}`)
	}}
	srv := startServer(t, s)
	reg := mustRegister(t, Remote(Spec{Name: "search", Effect: Read, Ceiling: 5 * time.Second}, srv.URL, srv.Client()))
	rec := newRecorder(t)
	run := remoteRun(t, rec, nil)

	first := reg.Call(t.Context(), run, "search", json.RawMessage(`{"q":"a"}`))
	second := reg.Call(t.Context(), run, "search", json.RawMessage(`{"q":"b"}`))

	if first.Err != "" || second.Err != "" {
		t.Fatalf("calls failed: %q, %q", first.Err, second.Err)
	}
	posts, _, _ := s.got()
	if len(posts) != 4 {
		t.Fatalf("%d POSTs, want 4 (1 for the first call, 3 for the second)", len(posts))
	}
	if first.Attempts != 1 || second.Attempts != 3 {
		t.Errorf("attempts = %d, %d; want 1, 3", first.Attempts, second.Attempts)
	}
	if posts[0].Key != string(first.Key) {
		t.Errorf("first call sent key %q, result says %q", posts[0].Key, first.Key)
	}
	for i, p := range posts[1:] {
		if p.Key != string(second.Key) {
			t.Errorf("second call's attempt %d sent key %q, want %q", i+1, p.Key, second.Key)
		}
	}
	if first.Key == second.Key || first.Key == "" {
		t.Errorf("two calls share key %q", first.Key)
	}
	for i, p := range posts {
		if ms := millis(p.Budget); p.Budget == "" || ms <= 0 || ms > 5*time.Second {
			t.Errorf("POST %d: Budget-Remaining-Ms %q, want the lease, at most the 5s ceiling", i, p.Budget)
		}
		if p.Accept != "text/event-stream, application/json" {
			t.Errorf("POST %d: Accept %q", i, p.Accept)
		}
	}
	if posts[1].Body != `{"arguments":{"q":"b"}}` {
		t.Errorf("body %s", posts[1].Body)
	}
	if string(second.Output) != `{"hits":2}` {
		t.Errorf("output %s", second.Output)
	}
	if len(rec.backoffs) != 2 {
		t.Errorf("%d backoffs, want 2", len(rec.backoffs))
	}
}

func TestRetriesFollowTheStatusOfAFailedRead(t *testing.T) {
	cases := []struct {
		name      string
		code      int
		wantPosts int
		want      trace.Outcome
	}{
		{"429 is retried", http.StatusTooManyRequests, 3, trace.RateLimited},
		{"408 is retried", http.StatusRequestTimeout, 3, trace.UpstreamError},
		{"500 is retried", http.StatusInternalServerError, 3, trace.UpstreamError},
		{"504 is retried", http.StatusGatewayTimeout, 3, trace.UpstreamError},
		{"501 is not retried", http.StatusNotImplemented, 1, trace.UpstreamError},
		{"400 is not retried", http.StatusBadRequest, 1, trace.Invalid},
		{"404 is not retried", http.StatusNotFound, 1, trace.Invalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &toolServer{post: func(w http.ResponseWriter, r *http.Request, n int) {
				writeJSON(w, tc.code, `{"error":{"message":"no luck"}}`)
			}}
			srv := startServer(t, s)
			reg := mustRegister(t, Remote(Spec{Name: "search", Effect: Read}, srv.URL, srv.Client()))
			res := reg.Call(t.Context(), remoteRun(t, newRecorder(t), nil), "search", nil)
			posts, _, _ := s.got()
			if len(posts) != tc.wantPosts || res.Attempts != tc.wantPosts {
				t.Errorf("%d POSTs, %d attempts; want %d", len(posts), res.Attempts, tc.wantPosts)
			}
			if res.Outcome != tc.want {
				t.Errorf("outcome %s, want %s", res.Outcome, tc.want)
			}
			if !strings.Contains(res.Err, "no luck") {
				t.Errorf("Err %q does not carry the tool's message", res.Err)
			}
			if !errors.Is(res.Cause, trace.ErrFailed) {
				t.Errorf("cause %v does not match ErrFailed", res.Cause)
			}
		})
	}
}

func TestAFailedWriteIsNotRetried(t *testing.T) {
	s := &toolServer{post: func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, http.StatusServiceUnavailable, `{"error":{"message":"busy"}}`)
	}}
	srv := startServer(t, s)
	reg := mustRegister(t, Remote(Spec{Name: "pay", Effect: Write}, srv.URL, srv.Client()))
	res := reg.Call(t.Context(), remoteRun(t, newRecorder(t), nil), "pay", nil)
	posts, asks, _ := s.got()
	if len(posts) != 1 || len(asks) != 0 {
		t.Errorf("%d POSTs and %d status asks; want 1 and 0: the tool answered", len(posts), len(asks))
	}
	if res.Outcome != trace.UpstreamError || res.State != "" {
		t.Errorf("outcome %s, state %q", res.Outcome, res.State)
	}
}

// TestATimedOutWriteIsReconciledNotResent covers SPEC §5's reconciliation
// of a write whose attempt ran out of its lease.
func TestATimedOutWriteIsReconciledNotResent(t *testing.T) {
	cases := []struct {
		name      string
		status    func(w http.ResponseWriter, r *http.Request, n int)
		post2     func(w http.ResponseWriter, r *http.Request, n int)
		wantPosts int
		wantState State
		wantOut   string
		wantOrph  bool
		want      trace.Outcome
	}{{
		name: "a late commit's output is used",
		status: func(w http.ResponseWriter, r *http.Request, n int) {
			if n == 1 {
				writeJSON(w, http.StatusOK, `{"state":"running","units":1}`)
				return
			}
			writeJSON(w, http.StatusOK, `{"state":"done","output":{"paid":true}}`)
		},
		wantPosts: 1, wantOut: `{"paid":true}`, want: trace.OK,
	}, {
		name: "a failed status is a failed call",
		status: func(w http.ResponseWriter, r *http.Request, n int) {
			writeJSON(w, http.StatusOK, `{"state":"failed"}`)
		},
		wantPosts: 1, want: trace.UpstreamError,
	}, {
		name: "a status never received is sent again with the same key",
		status: func(w http.ResponseWriter, r *http.Request, n int) {
			http.NotFound(w, r)
		},
		post2:     func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, http.StatusOK, `{"output":"paid"}`) },
		wantPosts: 2, wantOut: `"paid"`, want: trace.OK,
	}, {
		name: "an unreachable status makes an orphan",
		status: func(w http.ResponseWriter, r *http.Request, n int) {
			writeJSON(w, http.StatusInternalServerError, `{"error":{"message":"down"}}`)
		},
		wantPosts: 1, wantState: StateOrphaned, wantOrph: true, want: trace.GaveUp,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &toolServer{status: tc.status, post: func(w http.ResponseWriter, r *http.Request, n int) {
				if n > 1 && tc.post2 != nil {
					tc.post2(w, r, n)
					return
				}
				hang(w, r, n)
			}}
			srv := startServer(t, s)
			journal := filepath.Join(t.TempDir(), "orphans.jsonl")
			j, err := cancel.OpenJournal(journal)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			reg := mustRegister(t, Remote(Spec{Name: "pay", Effect: Write, Ceiling: 200 * time.Millisecond}, srv.URL, srv.Client()))
			rec := newRecorder(t)
			args := json.RawMessage(`{"amount": 5}`)

			res := reg.Call(t.Context(), remoteRun(t, rec, j), "pay", args)

			posts, asks, _ := s.got()
			if len(posts) != tc.wantPosts {
				t.Fatalf("%d POSTs, want %d", len(posts), tc.wantPosts)
			}
			for i, p := range posts {
				if p.Key != string(res.Key) {
					t.Errorf("POST %d sent key %q, want %q", i, p.Key, res.Key)
				}
			}
			if len(asks) == 0 || asks[0].Key != string(res.Key) {
				t.Fatalf("status asks %v; want the call's key %s asked", asks, res.Key)
			}
			if asks[0].At.Before(posts[0].At) {
				t.Error("status asked before the POST")
			}
			if res.State != tc.wantState || res.Outcome != tc.want {
				t.Errorf("state %q outcome %s; want %q %s (err %q)", res.State, res.Outcome, tc.wantState, tc.want, res.Err)
			}
			if tc.wantOut != "" && !jsonEqual(res.Output, []byte(tc.wantOut)) {
				t.Errorf("output %s, want %s", res.Output, tc.wantOut)
			}
			entries, err := cancel.ReadJournal(journal)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.wantOrph {
				if len(entries) != 0 {
					t.Errorf("journal has %v, want nothing", entries)
				}
				return
			}
			if len(entries) != 1 {
				t.Fatalf("journal has %d entries, want 1", len(entries))
			}
			e := entries[0]
			if e.IdempotencyKey != res.Key || e.State != "open" || e.Tool != "pay" || e.RunID != "run-1" || e.URL != srv.URL {
				t.Errorf("journal entry %+v", e)
			}
			if e.ArgsSHA256 != cancel.ArgsSHA256(json.RawMessage(`{"amount":5}`)) {
				t.Errorf("args sha256 %s is not of the arguments as sent", e.ArgsSHA256)
			}
			if !errors.Is(res.Cause, ErrOrphaned) || len(rec.orphans) != 1 {
				t.Errorf("cause %v, %d orphans observed", res.Cause, len(rec.orphans))
			}
			if open := cancel.OpenOrphans(entries); len(open) != 1 {
				t.Errorf("open orphans %v", open)
			}
		})
	}
}

func TestAWriteInFlightWhenTheRunEndsIsOrphanedWithoutAsking(t *testing.T) {
	s := &toolServer{post: hang, status: func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, http.StatusOK, `{"state":"done","output":1}`)
	}}
	srv := startServer(t, s)
	reg := mustRegister(t, Remote(Spec{Name: "pay", Effect: Write, Cancellable: true}, srv.URL, srv.Client()))
	rec := newRecorder(t)
	ctx, stop := context.WithCancelCause(t.Context())
	s.post = func(w http.ResponseWriter, r *http.Request, n int) {
		stop(errors.New("user pressed Ctrl-C"))
		hang(w, r, n)
	}

	res := reg.Call(ctx, remoteRun(t, rec, nil), "pay", nil)

	_, asks, cancels := s.got()
	if len(asks) != 0 {
		t.Errorf("%d status asks after the run ended; want none, the run must land", len(asks))
	}
	if len(cancels) != 1 {
		t.Errorf("%d cancels, want 1", len(cancels))
	}
	if res.State != StateOrphaned || res.Outcome != trace.Cancelled {
		t.Errorf("state %q outcome %s; want orphaned, cancelled", res.State, res.Outcome)
	}
	if len(rec.orphans) != 1 {
		t.Errorf("%d orphans observed, want 1 (reported even without a journal)", len(rec.orphans))
	}
}

func TestALeaseEndSendsTheCancel(t *testing.T) {
	cases := []struct {
		name        string
		cancellable bool
		cancelCode  int
		wantState   State
		wantCancels int
	}{
		{"a cancellable read is cancelled", true, 0, StateCancelled, 1},
		{"a refused cancel leaves it abandoned", true, http.StatusNotFound, StateAbandoned, 1},
		{"a read without a cancel endpoint is abandoned", false, 0, StateAbandoned, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &toolServer{post: hang, cancelCode: tc.cancelCode}
			srv := startServer(t, s)
			const ceiling = 200 * time.Millisecond
			spec := Spec{Name: "fetch", Effect: Read, Ceiling: ceiling, Cancellable: tc.cancellable, MaxAttempts: 1}
			reg := mustRegister(t, Remote(spec, srv.URL, srv.Client()))
			rec := newRecorder(t)

			res := reg.Call(t.Context(), remoteRun(t, rec, nil), "fetch", nil)

			posts, _, cancels := s.got()
			if len(cancels) != tc.wantCancels || len(rec.cancels) != tc.wantCancels {
				t.Fatalf("%d cancels received, %d observed; want %d", len(cancels), len(rec.cancels), tc.wantCancels)
			}
			if res.State != tc.wantState || res.Outcome != trace.GaveUp {
				t.Errorf("state %q outcome %s; want %q gave_up", res.State, res.Outcome, tc.wantState)
			}
			if !errors.Is(res.Cause, budget.ErrLeaseExpired) {
				t.Errorf("cause %v, want the lease's", res.Cause)
			}
			if tc.wantCancels == 0 {
				return
			}
			if cancels[0].Key != string(res.Key) {
				t.Errorf("cancel for %q, want %q", cancels[0].Key, res.Key)
			}
			// The DELETE comes after the lease ended and within the cancel's
			// own lease.
			end := rec.starts[0].Lease.Deadline
			if at := cancels[0].At; at.Before(end) || at.After(end.Add(cancel.CancelLease)) {
				t.Errorf("cancel received %v after the lease ended; want within [0, %v]", at.Sub(end), cancel.CancelLease)
			}
			if cancels[0].At.Before(posts[0].At) {
				t.Error("cancel received before the POST")
			}
			if (rec.cancels[0] == nil) != (tc.wantState == StateCancelled) {
				t.Errorf("observed cancel error %v", rec.cancels[0])
			}
		})
	}
}

func TestHeartbeatsCountOnlyWhenUnitsIncrease(t *testing.T) {
	cases := []struct {
		name           string
		items          []string
		wantHeartbeats int
		wantStale      int
		wantKeepalives int64
	}{
		{"keepalives only", []string{": ping", ": ping", ": ping", `result {"output":1}`}, 0, 0, 3},
		{"repeated units of nothing done", []string{`progress {"units":0}`, `progress {"units":0}`, `result {"output":1}`}, 0, 2, 0},
		{"repeated units", []string{`progress {"units":5,"total":9}`, `progress {"units":5}`, `progress {"units":5}`, `result {"output":1}`}, 1, 2, 0},
		{"lower units", []string{`progress {"units":5}`, `progress {"units":3}`, `result {"output":1}`}, 1, 1, 0},
		{"increasing units", []string{`progress {"units":1}`, ": ping", `progress {"units":2}`, `progress {"units":3}`, `result {"output":1}`}, 3, 0, 1},
		{"a heartbeat without units is none", []string{`progress {"message":"hi"}`, `result {"output":1}`}, 0, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &toolServer{post: stream(tc.items...)}
			srv := startServer(t, s)
			reg := mustRegister(t, Remote(Spec{Name: "job", Effect: Read}, srv.URL, srv.Client()))
			rec := newRecorder(t)

			res := reg.Call(t.Context(), remoteRun(t, rec, nil), "job", nil)

			if res.Err != "" || string(res.Output) != "1" {
				t.Fatalf("result %+v", res)
			}
			if got := rec.count(watchdog.Progress); got != tc.wantHeartbeats {
				t.Errorf("%d heartbeats, want %d (events %v)", got, tc.wantHeartbeats, rec.kinds())
			}
			if got := rec.count(watchdog.StaleProgress); got != tc.wantStale {
				t.Errorf("%d stale heartbeats, want %d", got, tc.wantStale)
			}
			if got := rec.count(watchdog.Keepalive); got != int(tc.wantKeepalives) {
				t.Errorf("%d keepalive events, want %d", got, tc.wantKeepalives)
			}
			if a := rec.ends[0]; a.Keepalives != tc.wantKeepalives {
				t.Errorf("attempt counted %d keepalives, want %d", a.Keepalives, tc.wantKeepalives)
			}
			kinds := rec.kinds()
			if kinds[0] != watchdog.ToolCall || kinds[len(kinds)-1] != watchdog.ToolResult {
				t.Errorf("events %v; want tool_call first and tool_result last", kinds)
			}
		})
	}
}

func TestAnEventStreamEndsWithExactlyOneResult(t *testing.T) {
	cases := []struct {
		name      string
		items     []string
		effect    Effect
		wantPosts int
		want      trace.Outcome
		wantErr   error
		wantOut   string
	}{
		{"a result ends it", []string{`progress {"units":1}`, `result {"output":"x"}`, `result {"output":"y"}`}, Read, 1, trace.OK, nil, `"x"`},
		{"an error event fails it", []string{`error {"message":"disk full"}`}, Read, 1, trace.UpstreamError, trace.ErrFailed, ""},
		{"a retryable error event is retried", []string{`error {"message":"busy","retryable":true}`}, Read, 3, trace.UpstreamError, trace.ErrFailed, ""},
		{"a stream without a result fails and is retried", []string{`progress {"units":1}`}, Read, 3, trace.UpstreamError, ErrIncomplete, ""},
		{"a result that is not JSON is invalid", []string{`result {nope`}, Read, 1, trace.Invalid, ErrBadAnswer, ""},
		{"a result without output is invalid", []string{`result {}`}, Read, 1, trace.Invalid, ErrBadAnswer, ""},
		{"unknown events are skipped", []string{`hello {}`, `result {"output":2}`}, Read, 1, trace.OK, nil, `2`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &toolServer{post: stream(tc.items...)}
			srv := startServer(t, s)
			reg := mustRegister(t, Remote(Spec{Name: "job", Effect: tc.effect}, srv.URL, srv.Client()))
			res := reg.Call(t.Context(), remoteRun(t, newRecorder(t), nil), "job", nil)
			posts, _, _ := s.got()
			if len(posts) != tc.wantPosts || res.Outcome != tc.want {
				t.Errorf("%d POSTs, outcome %s; want %d, %s (err %q)", len(posts), res.Outcome, tc.wantPosts, tc.want, res.Err)
			}
			if tc.wantErr != nil && !errors.Is(res.Cause, tc.wantErr) {
				t.Errorf("cause %v, want %v", res.Cause, tc.wantErr)
			}
			if tc.wantOut != "" && string(res.Output) != tc.wantOut {
				t.Errorf("output %s, want %s", res.Output, tc.wantOut)
			}
		})
	}
}

func TestAWriteWhoseStreamBrokeIsReconciled(t *testing.T) {
	s := &toolServer{
		post: stream(`progress {"units":1}`),
		status: func(w http.ResponseWriter, r *http.Request, n int) {
			writeJSON(w, http.StatusOK, `{"state":"done","output":"sent"}`)
		},
	}
	srv := startServer(t, s)
	reg := mustRegister(t, Remote(Spec{Name: "mail", Effect: Write}, srv.URL, srv.Client()))
	res := reg.Call(t.Context(), remoteRun(t, newRecorder(t), nil), "mail", nil)
	posts, asks, _ := s.got()
	if len(posts) != 1 || len(asks) != 1 {
		t.Errorf("%d POSTs, %d asks; want 1, 1", len(posts), len(asks))
	}
	if res.Outcome != trace.OK || string(res.Output) != `"sent"` {
		t.Errorf("result %+v", res)
	}
}

// A write whose every attempt failed to dial never reached its tool:
// nothing of it can have happened, so it is neither reconciled nor an
// orphan, and it is tried again with its key, up to its attempts, as a
// write whose status says never received is.
func TestAWriteThatNeverReachedTheServerIsNotReconciled(t *testing.T) {
	srv := startServer(t, &toolServer{})
	url := srv.URL
	srv.Close() // nothing listens: the dial fails, nothing was sent
	reg := mustRegister(t, Remote(Spec{Name: "pay", Effect: Write}, url, nil))
	rec := newRecorder(t)
	res := reg.Call(t.Context(), remoteRun(t, rec, nil), "pay", nil)
	if len(rec.reconciles) != 0 || res.State != "" || res.Outcome != trace.UpstreamError || res.Attempts != DefaultMaxAttempts {
		t.Errorf("result %+v, %d reconciles; want a plain failure after %d attempts", res, len(rec.reconciles), DefaultMaxAttempts)
	}
	if !strings.Contains(res.Err, "could not reach the tool") {
		t.Errorf("Err %q", res.Err)
	}
}

func TestMalformedArgumentsAreAnErrorForTheModelAndSendNothing(t *testing.T) {
	params := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer","minimum":1}},"required":["q"],"additionalProperties":false}`)
	cases := []struct {
		name string
		args string
		want string
	}{
		{"not JSON", `{"q":`, "not JSON"},
		{"trailing garbage", `{"q":"a"} x`, "not JSON"},
		{"a missing property", `{}`, "q"},
		{"a wrong type", `{"q":1}`, "string"},
		{"out of range", `{"q":"a","n":0}`, "minimum"},
		{"an extra property", `{"q":"a","z":1}`, "z"},
		{"not an object", `[1,2]`, "object"},
		{"empty is {}", ``, "q"},
	}
	s := &toolServer{}
	srv := startServer(t, s)
	reg := mustRegister(t, Remote(Spec{Name: "search", Parameters: params, Effect: Read}, srv.URL, srv.Client()))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder(t)
			res := reg.Call(t.Context(), remoteRun(t, rec, nil), "search", json.RawMessage(tc.args))
			if res.Outcome != trace.Invalid || res.Attempts != 0 || !errors.Is(res.Cause, ErrInvalidArguments) {
				t.Errorf("result %+v", res)
			}
			if !strings.Contains(res.Err, tc.want) || !strings.Contains(res.Err, `"search"`) {
				t.Errorf("Err %q should name the tool and mention %q", res.Err, tc.want)
			}
			if len(rec.starts) != 0 || len(rec.signals) != 0 {
				t.Errorf("observer heard %v, %v", rec.starts, rec.signals)
			}
		})
	}
	if posts, _, _ := s.got(); len(posts) != 0 {
		t.Errorf("%d POSTs sent for malformed arguments", len(posts))
	}
	ok := reg.Call(t.Context(), remoteRun(t, newRecorder(t), nil), "search", json.RawMessage(`{"q": "a", "n": 2}`))
	if ok.Err != "" {
		t.Errorf("valid arguments: %q", ok.Err)
	}
}

func TestARefusedLeaseSendsNothing(t *testing.T) {
	s := &toolServer{}
	srv := startServer(t, s)
	// The tool declares it takes a minute; the run has 10s.
	spec := Spec{Name: "crawl", Effect: Read, P50: time.Minute}
	reg := mustRegister(t, Remote(spec, srv.URL, srv.Client()))
	rec := newRecorder(t)
	run := &Run{Budget: newBudget(t, 10*time.Second), Observer: rec.observer()}

	res := reg.Call(t.Context(), run, "crawl", nil)

	if !res.Refused || res.Err != "not started: not enough time" || res.Attempts != 0 || res.Key != "" {
		t.Errorf("result %+v", res)
	}
	if !errors.Is(res.Cause, budget.ErrRefused) || len(rec.refused) != 1 {
		t.Errorf("cause %v, %d refusals observed", res.Cause, len(rec.refused))
	}
	if len(rec.signals) != 0 {
		t.Errorf("events %v for a call that never started", rec.kinds())
	}
	if posts, _, _ := s.got(); len(posts) != 0 {
		t.Errorf("%d POSTs sent", len(posts))
	}
}

func TestAnUnknownToolIsAnErrorForTheModel(t *testing.T) {
	nop := func(context.Context, json.RawMessage, Progress) (any, error) { return nil, nil }
	reg := mustRegister(t, Func(Spec{Name: "a"}, nop), Func(Spec{Name: "b"}, nop))
	res := reg.Call(t.Context(), &Run{Budget: newBudget(t, time.Second)}, "c", nil)
	if res.Outcome != trace.Invalid || !errors.Is(res.Cause, ErrUnknownTool) || !strings.Contains(res.Err, "a, b") {
		t.Errorf("result %+v", res)
	}
}
