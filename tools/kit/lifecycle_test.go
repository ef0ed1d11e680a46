package kit_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/tools/kit"
)

func TestAPanickingHandlerFailsItsCallAndTheServerKeepsServing(t *testing.T) {
	var log syncBuffer
	srv := &kit.Server{Logger: slog.New(slog.NewTextHandler(&log, nil))}
	var runs counter
	mustRegister(t, srv, echo("echo"), kit.Tool{Name: "boom", Effect: kit.Read, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
		runs.add()
		var m map[string]int
		m["x"] = 1 // a nil map: the handler's bug
		return nil, nil
	}})
	defer srv.Close()
	for _, stream := range []bool{false, true} {
		m := serve(t.Context(), srv, request{path: "/tools/boom", stream: stream})
		if stream {
			evs := m.events(t)
			if len(evs) != 1 || evs[0].typ != "error" || !strings.Contains(evs[0].data, "kit: tool boom panicked: assignment to entry in nil map") {
				t.Errorf("stream: %v, want one error event naming the panic", evs)
			}
			continue
		}
		if e := jsonError(t, m); m.code != 422 || e.Error.Retryable || !strings.Contains(e.Error.Message, "kit: tool boom panicked") {
			t.Errorf("JSON: %d %+v, want 422, not retryable, naming the panic", m.code, e)
		}
	}
	if runs.get() != 1 {
		t.Errorf("the handler ran %d times; a panic is a final failure", runs.get())
	}
	if l := log.String(); !strings.Contains(l, "kit: tool panicked") || !strings.Contains(l, "goroutine ") || !strings.Contains(l, "lifecycle_test.go") {
		t.Errorf("log lacks the panic's stack:\n%s", l)
	}
	if got := output(t, serve(t.Context(), srv, request{path: "/tools/echo", body: `{"arguments":{"a":1}}`})); got != `{"a":1}` {
		t.Errorf("after the panic, echo answered %s", got)
	}
}

func TestAHandlerThatExitsItsGoroutineStillEndsTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var srv kit.Server
		mustRegister(t, &srv, kit.Tool{Name: "exit", Effect: kit.Read, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
			runtime.Goexit()
			return nil, nil
		}})
		m := serve(t.Context(), &srv, request{path: "/tools/exit"})
		if e := jsonError(t, m); m.code != 422 || !strings.Contains(e.Error.Message, "exited without returning") {
			t.Errorf("got %d %+v", m.code, e)
		}
		srv.Close() // returns: the run was released
	})
}

func TestCloseEndsEveryHandlersContextAndWaitsForThem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &kit.Server{KeepaliveEvery: -1}
		causes := make(chan error, 2)
		mustRegister(t, srv, kit.Tool{Name: "job", Effect: kit.Read, Cancellable: true, Max: time.Minute, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
			<-ctx.Done()
			causes <- context.Cause(ctx)
			time.Sleep(50 * time.Millisecond) // cleanup the server must wait for
			return nil, ctx.Err()
		}})
		a := serveAsync(t.Context(), srv, request{path: "/tools/job", header: map[string]string{"Idempotency-Key": "a"}})
		b := serveAsync(t.Context(), srv, request{path: "/tools/job", stream: true, header: map[string]string{"Idempotency-Key": "b"}})
		synctest.Wait()
		start := time.Now()
		if err := srv.Close(); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 50*time.Millisecond {
			t.Errorf("Close returned after %v, want 50ms, once the handlers returned", got)
		}
		for range 2 {
			if got := <-causes; got != kit.ErrClosed {
				t.Errorf("handler's cause %v, want ErrClosed", got)
			}
		}
		if m := <-a; m.code != 503 || !jsonError(t, m).Error.Retryable {
			t.Errorf("a: %d, want a retryable 503", m.code)
		}
		if evs := (<-b).events(t); len(evs) != 1 || !strings.Contains(evs[0].data, "kit: server closed") {
			t.Errorf("b: %v, want one error event", evs)
		}
		m := serve(t.Context(), srv, request{path: "/tools/job", header: map[string]string{"Idempotency-Key": "c"}})
		if e := jsonError(t, m); m.code != 503 || e.Error.Message != kit.ErrClosed.Error() || !e.Error.Retryable {
			t.Errorf("a call after Close: %d %+v, want a retryable 503", m.code, e)
		}
		if err := srv.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	})
}

func TestShutdownStopsWaitingWhenItsContextEndsAndCloseWaitsOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var srv kit.Server
		mustRegister(t, &srv, kit.Tool{Name: "commit", Effect: kit.Write, Max: time.Minute, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
			time.Sleep(time.Second) // ignores its context: commits late
			return "committed", nil
		}})
		answer := serveAsync(t.Context(), &srv, request{path: "/tools/commit"})
		synctest.Wait()
		start := time.Now()
		ctx, cancel := context.WithTimeoutCause(t.Context(), 200*time.Millisecond, errorString("grace over"))
		defer cancel()
		if err := srv.Shutdown(ctx); err == nil || err.Error() != "grace over" || time.Since(start) != 200*time.Millisecond {
			t.Errorf("Shutdown: %v after %v, want its context's cause after 200ms", err, time.Since(start))
		}
		srv.Close()
		if got := time.Since(start); got != time.Second {
			t.Errorf("Close returned after %v, want 1s, when the late commit returned", got)
		}
		if got := output(t, <-answer); got != `"committed"` {
			t.Errorf("the late commit answered %s", got)
		}
	})
}

func TestNoGoroutineIsLeftAfterServingOverHTTP(t *testing.T) {
	before := runtime.NumGoroutine()
	srv := &kit.Server{KeepaliveEvery: 10 * time.Millisecond, Logger: discardLogger()}
	mustRegister(t, srv, echo("echo"),
		kit.Tool{Name: "stuck", Effect: kit.Read, Cancellable: true, Max: time.Minute, Handler: waitCause},
		kit.Tool{Name: "boom", Effect: kit.Read, Handler: func(ctx context.Context, call *kit.Call) (any, error) { panic("boom") }},
	)
	ts := httptest.NewServer(srv)
	client := ts.Client()
	do := func(method, path, key string, stream bool) {
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(`{"arguments":{}}`))
		req.Header.Set("Idempotency-Key", key)
		if stream {
			req.Header.Set("Accept", "text/event-stream")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		do("POST", "/tools/stuck", "s1", true)
	}()
	do("POST", "/tools/echo", "e1", false)
	do("POST", "/tools/boom", "b1", true)
	deadline := time.Now().Add(patience)
	for {
		code := serve(t.Context(), srv, request{method: "GET", path: "/tools/stuck/calls/s1"}).code
		if code == 200 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	do("DELETE", "/tools/stuck/calls/s1", "", false)
	<-done
	srv.Close()
	ts.Close()
	client.CloseIdleConnections()
	for {
		n := runtime.NumGoroutine()
		if n <= before {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestListenUsesLoopbackUnlessAHostIsGiven(t *testing.T) {
	cases := []struct {
		addr         string
		wantLoopback bool
	}{
		{"", true},
		{":0", true},
		{"127.0.0.1:0", true},
		{"0.0.0.0:0", false},
	}
	for _, tc := range cases {
		t.Run(tc.addr, func(t *testing.T) {
			l, err := kit.Listen(tc.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			ip := l.Addr().(*net.TCPAddr).IP
			if ip.IsLoopback() != tc.wantLoopback {
				t.Errorf("listening on %s, want loopback %v", l.Addr(), tc.wantLoopback)
			}
		})
	}
	if _, err := kit.Listen("no-port"); err == nil || !strings.HasPrefix(err.Error(), "kit: ") {
		t.Errorf("Listen without a port: %v, want a kit error", err)
	}
}

func TestListenAndServeServesUntilItsContextEndsThenClosesItsHandlers(t *testing.T) {
	var log syncBuffer
	srv := &kit.Server{Logger: slog.New(slog.NewTextHandler(&log, nil))}
	causes := make(chan error, 1)
	started := make(chan struct{})
	mustRegister(t, srv, kit.Tool{Name: "stuck", Effect: kit.Read, Max: time.Minute, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
		close(started)
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, ctx.Err()
	}})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- kit.ListenAndServe(ctx, "", srv) }()
	var url string
	for deadline := time.Now().Add(patience); url == ""; time.Sleep(time.Millisecond) {
		if i := strings.Index(log.String(), "url=http://"); i >= 0 {
			url = strings.Fields(log.String()[i+len("url="):])[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no listening line in the log: %q", log.String())
		}
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Errorf("listening on %s, want loopback", url)
	}
	answered := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", url+"/tools/stuck", strings.NewReader(`{"arguments":{}}`))
		req.Header.Set("Idempotency-Key", "k1")
		req.Header.Set(budget.Header, "60000")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	select {
	case <-started:
	case <-time.After(patience):
		t.Fatal("the call never reached its handler")
	}
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("ListenAndServe: %v", err)
		}
	case <-time.After(patience):
		t.Fatal("ListenAndServe did not return after its context ended")
	}
	if got := <-causes; !errors.Is(got, kit.ErrClosed) {
		t.Errorf("handler's cause: %v, want ErrClosed", got)
	}
	if code := <-answered; code != http.StatusServiceUnavailable {
		t.Errorf("the call in flight was answered %d, want 503", code)
	}
}

func TestACallerHangingUpEndsTheHandlersContextWithErrCallerGone(t *testing.T) {
	var srv kit.Server
	causes := make(chan error, 1)
	started := make(chan struct{})
	mustRegister(t, &srv, kit.Tool{Name: "stuck", Effect: kit.Read, Max: time.Minute, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
		close(started)
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, ctx.Err()
	}})
	ts := httptest.NewServer(&srv)
	defer ts.Close()
	defer srv.Close()
	ctx, hangUp := context.WithCancel(t.Context())
	defer hangUp()
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/tools/stuck", strings.NewReader(`{"arguments":{}}`))
	req.Header.Set("Idempotency-Key", "k1")
	go func() {
		select {
		case <-started:
		case <-ctx.Done():
		}
		hangUp()
	}()
	if _, err := ts.Client().Do(req); err == nil {
		t.Fatal("the call was answered")
	}
	select {
	case got := <-causes:
		if got != kit.ErrCallerGone {
			t.Errorf("handler's cause: %v, want ErrCallerGone", got)
		}
	case <-time.After(patience):
		t.Fatal("the handler's context did not end when the caller hung up")
	}
}
