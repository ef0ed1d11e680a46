package kit_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/tools/kit"
)

type statusAnswer struct {
	State  string          `json:"state"`
	Output json.RawMessage `json:"output"`
	Units  int64           `json:"units"`
	Error  *struct {
		Message   string `json:"message"`
		Retryable bool   `json:"retryable"`
	} `json:"error"`
}

func status(t *testing.T, h http.Handler, path string) (int, statusAnswer) {
	t.Helper()
	m := serve(t.Context(), h, request{method: http.MethodGet, path: path})
	var st statusAnswer
	if m.code == http.StatusOK || m.code == http.StatusAccepted {
		if err := json.Unmarshal(m.body.Bytes(), &st); err != nil {
			t.Fatalf("status body %q: %v", m.body.String(), err)
		}
	} else {
		jsonError(t, m)
	}
	return m.code, st
}

func TestTheSameKeyTwiceRunsTheHandlerOnceAndAnswersTheSameOutput(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			var srv kit.Server
			var runs counter
			mustRegister(t, &srv, kit.Tool{Name: "pay", Effect: kit.Write, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
				return map[string]any{"payment": runs.add(), "attempt": call.Attempt}, nil
			}})
			defer srv.Close()
			rq := request{path: "/tools/pay", body: `{"arguments":{"amount":5}}`, stream: stream}
			first, second := serve(t.Context(), &srv, rq), serve(t.Context(), &srv, rq)
			if runs.get() != 1 {
				t.Errorf("the handler ran %d times, want once", runs.get())
			}
			if first.body.String() != second.body.String() || !strings.Contains(first.body.String(), `{"attempt":1,"payment":1}`) {
				t.Errorf("answers differ or lack the first output:\n%s\n%s", first.body.String(), second.body.String())
			}
			// Another key is another call.
			serve(t.Context(), &srv, request{path: "/tools/pay", body: rq.body, header: map[string]string{"Idempotency-Key": "k2"}})
			if runs.get() != 2 {
				t.Errorf("a new key ran the handler %d times in all, want 2", runs.get())
			}
		})
	}
}

func TestArgumentsAreComparedCompactedAndAKeyReusedWithOthersIsRefused(t *testing.T) {
	var srv kit.Server
	var runs counter
	mustRegister(t, &srv, kit.Tool{Name: "pay", Effect: kit.Write, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
		runs.add()
		return call.Args, nil
	}})
	defer srv.Close()
	if got := output(t, serve(t.Context(), &srv, request{path: "/tools/pay", body: `{"arguments": {"amount": 5}}`})); got != `{"amount":5}` {
		t.Errorf("handler saw %s, want compacted arguments", got)
	}
	if got := output(t, serve(t.Context(), &srv, request{path: "/tools/pay", body: `{"arguments":{"amount":5}}`})); got != `{"amount":5}` {
		t.Errorf("the same arguments spaced otherwise got %s", got)
	}
	m := serve(t.Context(), &srv, request{path: "/tools/pay", body: `{"arguments":{"amount":6}}`})
	if e := jsonError(t, m); m.code != http.StatusUnprocessableEntity || !strings.Contains(e.Error.Message, "other arguments") {
		t.Errorf("reused key: %d %+v, want 422", m.code, e)
	}
	if runs.get() != 1 {
		t.Errorf("handler ran %d times, want 1", runs.get())
	}
}

func TestASecondPostWhileTheFirstRunsFollowsItInsteadOfRunningAgain(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &kit.Server{KeepaliveEvery: 400 * time.Millisecond}
				var runs counter
				mustRegister(t, srv, kit.Tool{Name: "job", Effect: kit.Read, Max: time.Minute, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
					runs.add()
					for i := range int64(5) {
						time.Sleep(200 * time.Millisecond)
						call.Progress(i+1, 5, "")
					}
					return "done once", nil
				}})
				defer srv.Close()
				start := time.Now()
				first := serveAsync(t.Context(), srv, request{path: "/tools/job", stream: stream})
				time.Sleep(500 * time.Millisecond)
				m := serve(t.Context(), srv, request{path: "/tools/job", stream: stream})
				if got := time.Since(start); got != time.Second {
					t.Errorf("the follower answered at %v, want with the first at 1s", got)
				}
				<-first
				if runs.get() != 1 {
					t.Errorf("handler ran %d times", runs.get())
				}
				if !stream {
					if got := output(t, m); got != `"done once"` {
						t.Errorf("follower got %s", got)
					}
					return
				}
				var got []string
				for _, ev := range m.events(t) {
					got = append(got, ev.typ+ev.comment+" "+ev.data)
				}
				// It joins at 500ms: the latest progress (2) at once, then
				// the rest, then the first call's result.
				want := []string{
					`progress {"units":2,"total":5,"message":""}`,
					`progress {"units":3,"total":5,"message":""}`,
					`progress {"units":4,"total":5,"message":""}`,
					`progress {"units":5,"total":5,"message":""}`,
					`result {"output":"done once"}`,
				}
				if !slices.Equal(got, want) {
					t.Errorf("follower's events:\n%q\nwant\n%q", got, want)
				}
			})
		})
	}
}

func TestAFollowerWhoseDeadlineComesFirstGetsARetryableError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var srv kit.Server
		mustRegister(t, &srv, kit.Tool{Name: "slow", Effect: kit.Read, Max: time.Minute, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
			time.Sleep(time.Second)
			return "late", nil
		}})
		defer srv.Close()
		first := serveAsync(t.Context(), &srv, request{path: "/tools/slow"})
		synctest.Wait()
		start := time.Now()
		m := serve(t.Context(), &srv, request{path: "/tools/slow", header: map[string]string{budget.Header: "300"}})
		if got := time.Since(start); got != 300*time.Millisecond {
			t.Errorf("follower answered after %v, want its own 300ms", got)
		}
		if e := jsonError(t, m); m.code != http.StatusServiceUnavailable || !e.Error.Retryable || !strings.Contains(e.Error.Message, "still running") {
			t.Errorf("follower: %d %+v, want a retryable 503", m.code, e)
		}
		if got := output(t, <-first); got != `"late"` {
			t.Errorf("first got %s", got)
		}
	})
}

func TestARetryableFailureDoesNotStickSoTheNextAttemptRunsAgain(t *testing.T) {
	cases := []struct {
		name     string
		first    func(ctx context.Context) error
		wantCode int    // the first attempt's status
		wantErr  string // its error's code
	}{
		{"a retryable Error", func(ctx context.Context) error { return &kit.Error{Message: "busy", Retryable: true} },
			http.StatusServiceUnavailable, ""},
		// The caller's budget ended these: a 504 that says so.
		{"the context ended by the deadline", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
			http.StatusGatewayTimeout, kit.CodeDeadline},
		{"a plain error after the deadline", func(ctx context.Context) error { <-ctx.Done(); return errorString("gave up") },
			http.StatusGatewayTimeout, kit.CodeDeadline},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var srv kit.Server
				mustRegister(t, &srv, kit.Tool{Name: "fetch", Effect: kit.Read, Max: time.Minute, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
					if call.Attempt == 1 {
						return nil, tc.first(ctx)
					}
					return fmt.Sprintf("attempt %d", call.Attempt), nil
				}})
				defer srv.Close()
				rq := request{path: "/tools/fetch", header: map[string]string{budget.Header: "100"}}
				m := serve(t.Context(), &srv, rq)
				if e := jsonError(t, m); m.code != tc.wantCode || !e.Error.Retryable || e.Error.Code != tc.wantErr {
					t.Fatalf("first attempt: %d %+v, want a retryable %d with code %q", m.code, e, tc.wantCode, tc.wantErr)
				}
				if code, st := status(t, &srv, "/tools/fetch/calls/k1"); code != 200 || st.State != "failed" || st.Error == nil || !st.Error.Retryable {
					t.Errorf("status after the first attempt: %d %+v, want failed, retryable", code, st)
				}
				if got := output(t, serve(t.Context(), &srv, rq)); got != `"attempt 2"` {
					t.Errorf("second attempt got %s", got)
				}
				if got := output(t, serve(t.Context(), &srv, rq)); got != `"attempt 2"` {
					t.Errorf("third POST got %s, want the stored output", got)
				}
			})
		})
	}
}

func TestAFinalFailureSticks(t *testing.T) {
	var srv kit.Server
	var runs counter
	mustRegister(t, &srv, kit.Tool{Name: "t", Effect: kit.Write, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
		return nil, errorString(fmt.Sprintf("declined #%d", runs.add()))
	}})
	defer srv.Close()
	for range 2 {
		m := serve(t.Context(), &srv, request{path: "/tools/t"})
		if e := jsonError(t, m); m.code != 422 || e.Error.Message != "declined #1" {
			t.Errorf("got %d %+v, want 422 declined #1", m.code, e)
		}
	}
	if runs.get() != 1 {
		t.Errorf("handler ran %d times", runs.get())
	}
}

func TestTheStatusEndpointFollowsACallFromRunningToDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var srv kit.Server
		release := make(chan struct{})
		mustRegister(t, &srv, kit.Tool{Name: "job", Effect: kit.Read, Max: time.Minute, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
			call.Progress(4, 10, "")
			<-release
			return []int{1, 2}, nil
		}})
		defer srv.Close()
		if code, _ := status(t, &srv, "/tools/job/calls/k1"); code != http.StatusNotFound {
			t.Errorf("status before any call: %d, want 404", code)
		}
		if code, _ := status(t, &srv, "/tools/nope/calls/k1"); code != http.StatusNotFound {
			t.Errorf("status of an unknown tool: %d, want 404", code)
		}
		answer := serveAsync(t.Context(), &srv, request{path: "/tools/job"})
		synctest.Wait()
		if code, st := status(t, &srv, "/tools/job/calls/k1"); code != 200 || st.State != "running" || st.Units != 4 || st.Output != nil {
			t.Errorf("status while running: %d %+v, want running with 4 units", code, st)
		}
		close(release)
		<-answer
		if code, st := status(t, &srv, "/tools/job/calls/k1"); code != 200 || st.State != "done" || st.Units != 4 || string(st.Output) != "[1,2]" {
			t.Errorf("status when done: %d %+v, want done with the output", code, st)
		}
	})
}

func TestDeleteEndsTheRunningHandlersContextWithErrCancelled(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &kit.Server{KeepaliveEvery: -1}
				causes := make(chan error, 1)
				mustRegister(t, srv, kit.Tool{Name: "long_job", Effect: kit.Read, Cancellable: true, Max: time.Minute, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
					<-ctx.Done()
					causes <- context.Cause(ctx)
					time.Sleep(10 * time.Millisecond) // cleanup after a cancel
					return nil, context.Cause(ctx)
				}})
				defer srv.Close()
				answer := serveAsync(t.Context(), srv, request{path: "/tools/long_job", stream: stream})
				time.Sleep(time.Second)
				start := time.Now()
				m := serve(t.Context(), srv, request{method: http.MethodDelete, path: "/tools/long_job/calls/k1"})
				if m.code != http.StatusAccepted || time.Since(start) != 0 {
					t.Errorf("DELETE: %d after %v, want 202 at once; body %s", m.code, time.Since(start), m.body.String())
				}
				if got := <-causes; got != kit.ErrCancelled {
					t.Errorf("handler's cause: %v, want ErrCancelled", got)
				}
				a := <-answer
				want := `{"message":"kit: tool long_job ended: kit: call cancelled","retryable":true}`
				if stream {
					if evs := a.events(t); len(evs) != 1 || evs[0].typ != "error" || evs[0].data != want {
						t.Errorf("events %v, want one error event %s", evs, want)
					}
				} else if e := jsonError(t, a); a.code != 503 || !strings.Contains(a.body.String(), want) {
					t.Errorf("answer %d %+v, want 503 with %s", a.code, e, want)
				}
				if code, st := status(t, srv, "/tools/long_job/calls/k1"); st.State != "failed" {
					t.Errorf("status after cancel: %d %+v, want failed", code, st)
				}
				// Cancelling is idempotent: a finished call is accepted.
				if m := serve(t.Context(), srv, request{method: http.MethodDelete, path: "/tools/long_job/calls/k1"}); m.code != http.StatusAccepted {
					t.Errorf("DELETE of a finished call: %d, want 202", m.code)
				}
			})
		})
	}
}

func TestDeleteOfAnUnknownCallOrOfAToolThatIsNotCancellableIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var srv kit.Server
		mustRegister(t, &srv,
			kit.Tool{Name: "long_job", Effect: kit.Read, Cancellable: true, Handler: waitCause},
			kit.Tool{Name: "commit", Effect: kit.Write, Cancellable: false, Max: time.Second, Handler: waitCause},
		)
		defer srv.Close()
		for _, path := range []string{"/tools/long_job/calls/nobody", "/tools/nope/calls/k1"} {
			m := serve(t.Context(), &srv, request{method: http.MethodDelete, path: path})
			if jsonError(t, m); m.code != http.StatusNotFound {
				t.Errorf("DELETE %s: %d, want 404", path, m.code)
			}
		}
		answer := serveAsync(t.Context(), &srv, request{path: "/tools/commit"})
		synctest.Wait()
		start := time.Now()
		m := serve(t.Context(), &srv, request{method: http.MethodDelete, path: "/tools/commit/calls/k1"})
		if e := jsonError(t, m); m.code != http.StatusConflict || !strings.Contains(e.Error.Message, "not cancellable") {
			t.Errorf("DELETE of a write that is not cancellable: %d %+v, want 409", m.code, e)
		}
		if got := output(t, <-answer); !strings.Contains(got, "lease expired") || time.Since(start) != time.Second {
			t.Errorf("the commit ran on to its deadline: %s after %v", got, time.Since(start))
		}
	})
}

func TestTwoServersSharingAStoreAnswerForEachOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := new(kit.MemoryStore)
		release := make(chan struct{})
		var runs counter
		newServer := func() *kit.Server {
			srv := &kit.Server{Store: store}
			mustRegister(t, srv, kit.Tool{Name: "job", Effect: kit.Read, Cancellable: true, Max: time.Minute, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
				runs.add()
				<-release
				return "from a", nil
			}})
			return srv
		}
		a, b := newServer(), newServer()
		defer a.Close()
		defer b.Close()
		answer := serveAsync(t.Context(), a, request{path: "/tools/job"})
		synctest.Wait()
		m := serve(t.Context(), b, request{path: "/tools/job"})
		if e := jsonError(t, m); m.code != http.StatusConflict || !e.Error.Retryable {
			t.Errorf("b, while a runs the call: %d %+v, want a retryable 409", m.code, e)
		}
		if code, st := status(t, b, "/tools/job/calls/k1"); code != 200 || st.State != "running" {
			t.Errorf("b's status: %d %+v, want running", code, st)
		}
		if m := serve(t.Context(), b, request{method: http.MethodDelete, path: "/tools/job/calls/k1"}); m.code != http.StatusConflict {
			t.Errorf("b's DELETE: %d, want 409", m.code)
		}
		close(release)
		<-answer
		if got := output(t, serve(t.Context(), b, request{path: "/tools/job"})); got != `"from a"` || runs.get() != 1 {
			t.Errorf("b after a finished: %s with %d runs, want a's output and one run", got, runs.get())
		}
	})
}

// brokenStore is a Store whose backend is down.
type brokenStore struct{}

func (brokenStore) Begin(context.Context, kit.CallID, string) (kit.Record, bool, error) {
	return kit.Record{}, false, errorString("connection refused")
}
func (brokenStore) Finish(context.Context, kit.CallID, kit.Record) error { return nil }
func (brokenStore) Get(context.Context, kit.CallID) (kit.Record, bool, error) {
	return kit.Record{}, false, errorString("connection refused")
}

func TestAStoreThatFailsIsARetryableError(t *testing.T) {
	srv := &kit.Server{Store: brokenStore{}}
	var runs counter
	mustRegister(t, srv, kit.Tool{Name: "t", Effect: kit.Read, Cancellable: true, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
		runs.add()
		return nil, nil
	}})
	defer srv.Close()
	for _, rq := range []request{
		{path: "/tools/t"},
		{method: http.MethodGet, path: "/tools/t/calls/k1"},
		{method: http.MethodDelete, path: "/tools/t/calls/k1"},
	} {
		m := serve(t.Context(), srv, rq)
		if e := jsonError(t, m); m.code != http.StatusServiceUnavailable || !e.Error.Retryable || !strings.Contains(e.Error.Message, "connection refused") {
			t.Errorf("%s %s: %d %+v, want a retryable 503", rq.method, rq.path, m.code, e)
		}
	}
	if runs.get() != 0 {
		t.Errorf("handler ran without a record")
	}
}

func TestTheSameKeyOverHTTPWithAHangingFirstAttempt(t *testing.T) {
	var srv kit.Server
	mustRegister(t, &srv, kit.Tool{Name: "fetch", Effect: kit.Read, Max: time.Minute, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
		if call.Attempt == 1 {
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}
		return "page", nil
	}})
	ts := httptest.NewServer(&srv)
	defer ts.Close()
	defer srv.Close()
	post := func(lease time.Duration) (*http.Response, error) {
		ctx, cancel := context.WithTimeout(t.Context(), lease)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/tools/fetch", strings.NewReader(`{"arguments":{"url":"u"}}`))
		req.Header.Set("Idempotency-Key", "gp_same")
		req.Header.Set(budget.Header, budget.FormatRemaining(lease))
		resp, err := ts.Client().Do(req)
		if err == nil {
			defer resp.Body.Close()
			var r struct{ Output string }
			json.NewDecoder(resp.Body).Decode(&r)
			resp.Header.Set("X-Output", r.Output)
		}
		return resp, err
	}
	if _, err := post(100 * time.Millisecond); err == nil {
		t.Log("the first attempt was answered before the client gave up")
	}
	// The first attempt's handler ends at its deadline; the retry may
	// arrive while it is still ending and then follows it to its end.
	resp, err := post(patience)
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Output") != "page" {
		t.Fatalf("retry with the same key: %v %v", resp, err)
	}
}

// corruptStore is a Store whose one record is done with an output that is
// not JSON, as a shared store's backend might hand back.
type corruptStore struct{}

func (corruptStore) Begin(context.Context, kit.CallID, string) (kit.Record, bool, error) {
	return corruptStore{}.record(), false, nil
}
func (corruptStore) Finish(context.Context, kit.CallID, kit.Record) error { return nil }
func (corruptStore) Get(context.Context, kit.CallID) (kit.Record, bool, error) {
	return corruptStore{}.record(), true, nil
}
func (corruptStore) record() kit.Record {
	sum := sha256.Sum256([]byte(`{}`))
	return kit.Record{State: kit.Done, ArgsSHA256: hex.EncodeToString(sum[:]), Output: json.RawMessage(`{not json`)}
}

func TestAStoredOutputThatIsNotJSONIsAnErrorAnswerNotAPanic(t *testing.T) {
	srv := &kit.Server{Store: corruptStore{}}
	mustRegister(t, srv, echo("t"))
	defer srv.Close()
	for _, rq := range []request{
		{path: "/tools/t"},
		{method: http.MethodGet, path: "/tools/t/calls/k1"},
	} {
		m := serve(t.Context(), srv, rq)
		if e := jsonError(t, m); m.code != http.StatusInternalServerError || !strings.Contains(e.Error.Message, "encoding the answer") {
			t.Errorf("%s %s: %d %+v, want a 500 naming the encoding", rq.method, rq.path, m.code, e)
		}
	}
	m := serve(t.Context(), srv, request{path: "/tools/t", stream: true})
	evs := m.events(t)
	if len(evs) != 1 || evs[0].typ != "error" || !strings.Contains(evs[0].data, "encoding the answer") {
		t.Errorf("streamed: %+v, want one error event naming the encoding", evs)
	}
}
