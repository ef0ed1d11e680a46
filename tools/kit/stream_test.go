package kit_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/tools/kit"
)

func TestAStreamSendsProgressWithIncreasingUnitsThenExactlyOneResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &kit.Server{KeepaliveEvery: -1}
		mustRegister(t, srv, kit.Tool{Name: "job", Effect: kit.Read, Max: time.Minute, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
			steps := []struct {
				units int64
				note  string
			}{{1, "one"}, {1, "repeat"}, {0, "lower"}, {-5, "negative"}, {2, "two"}, {2, "repeat"}, {3, "three"}}
			for _, s := range steps {
				time.Sleep(100 * time.Millisecond)
				call.Progress(s.units, 3, s.note)
			}
			time.Sleep(100 * time.Millisecond)
			return "finished", nil
		}})
		defer srv.Close()
		m := serve(t.Context(), srv, request{path: "/tools/job", stream: true})
		if ct := m.header.Get("Content-Type"); ct != "text/event-stream" || m.code != http.StatusOK {
			t.Fatalf("answer %d %q, want 200 text/event-stream", m.code, ct)
		}
		want := []event{
			{at: 100 * time.Millisecond, typ: "progress", data: `{"units":1,"total":3,"message":"one"}`},
			{at: 500 * time.Millisecond, typ: "progress", data: `{"units":2,"total":3,"message":"two"}`},
			{at: 700 * time.Millisecond, typ: "progress", data: `{"units":3,"total":3,"message":"three"}`},
			{at: 800 * time.Millisecond, typ: "result", data: `{"output":"finished"}`},
		}
		if got := m.events(t); !slices.Equal(got, want) {
			t.Errorf("events:\n%v\nwant\n%v", got, want)
		}
	})
}

func TestProgressIsCoalescedSoABurstNeverWaitsForTheClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &kit.Server{KeepaliveEvery: -1}
		mustRegister(t, srv, kit.Tool{Name: "burst", Effect: kit.Read, Max: time.Minute, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
			for i := range int64(1000) {
				call.Progress(i+1, 1000, "")
			}
			time.Sleep(time.Second)
			return nil, nil
		}})
		defer srv.Close()
		start := time.Now()
		m := serve(t.Context(), srv, request{path: "/tools/burst", stream: true})
		if got := time.Since(start); got != time.Second {
			t.Errorf("answered after %v, want 1s: the burst cost no time", got)
		}
		evs := m.events(t)
		if len(evs) < 2 || len(evs) > 1001 {
			t.Fatalf("%d events", len(evs))
		}
		last := int64(0)
		for _, ev := range evs[:len(evs)-1] {
			var p struct{ Units int64 }
			if ev.typ != "progress" || json.Unmarshal([]byte(ev.data), &p) != nil || p.Units <= last {
				t.Fatalf("event %+v after units %d: want progress with more units", ev, last)
			}
			last = p.Units
		}
		if last != 1000 || evs[len(evs)-1].typ != "result" {
			t.Errorf("last progress %d then %+v, want 1000 then the result", last, evs[len(evs)-1])
		}
	})
}

func TestKeepalivesFillEverySilenceOfTheConfiguredInterval(t *testing.T) {
	cases := []struct {
		name     string
		every    time.Duration
		progress []time.Duration // when the handler reports progress, units increasing
		want     []event
	}{
		{
			name:  "a handler that never reports gets a keepalive every interval",
			every: 300 * time.Millisecond,
			want: []event{
				{at: 300 * time.Millisecond, comment: "keepalive"},
				{at: 600 * time.Millisecond, comment: "keepalive"},
				{at: 900 * time.Millisecond, comment: "keepalive"},
				{at: time.Second, typ: "error", data: `{"message":"kit: tool stuck ended: budget: run deadline reached","retryable":true,"code":"deadline_exceeded"}`},
			},
		},
		{
			name:     "progress resets the silence",
			every:    300 * time.Millisecond,
			progress: []time.Duration{200 * time.Millisecond},
			want: []event{
				{at: 200 * time.Millisecond, typ: "progress", data: `{"units":1,"total":0,"message":""}`},
				{at: 500 * time.Millisecond, comment: "keepalive"},
				{at: 800 * time.Millisecond, comment: "keepalive"},
				{at: time.Second, typ: "error", data: `{"message":"kit: tool stuck ended: budget: run deadline reached","retryable":true,"code":"deadline_exceeded"}`},
			},
		},
		{
			name:  "a negative interval sends none",
			every: -1,
			want: []event{
				{at: time.Second, typ: "error", data: `{"message":"kit: tool stuck ended: budget: run deadline reached","retryable":true,"code":"deadline_exceeded"}`},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &kit.Server{KeepaliveEvery: tc.every}
				mustRegister(t, srv, kit.Tool{Name: "stuck", Effect: kit.Read, Max: time.Minute, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
					start := time.Now()
					for i, at := range tc.progress {
						time.Sleep(at - time.Since(start))
						call.Progress(int64(i+1), 0, "")
					}
					<-ctx.Done()
					return nil, ctx.Err()
				}})
				defer srv.Close()
				m := serve(t.Context(), srv, request{path: "/tools/stuck", stream: true, header: map[string]string{budget.Header: "1000"}})
				if got := m.events(t); !slices.Equal(got, tc.want) {
					t.Errorf("events:\n%v\nwant\n%v", got, tc.want)
				}
			})
		})
	}
}

func TestTheDefaultKeepaliveIntervalIsFifteenSeconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var srv kit.Server
		mustRegister(t, &srv, kit.Tool{Name: "stuck", Effect: kit.Read, Max: time.Minute, Handler: waitCause})
		defer srv.Close()
		m := serve(t.Context(), &srv, request{path: "/tools/stuck", stream: true, header: map[string]string{budget.Header: "31000"}})
		var at []time.Duration
		for _, ev := range m.events(t) {
			if ev.comment != "" {
				at = append(at, ev.at)
			}
		}
		if want := []time.Duration{15 * time.Second, 30 * time.Second}; !slices.Equal(at, want) {
			t.Errorf("keepalives at %v, want %v", at, want)
		}
	})
}

func TestAClientThatDoesNotAskForAStreamGetsJSON(t *testing.T) {
	cases := []struct {
		name   string
		accept string
		stream bool
	}{
		{"no Accept", "", false},
		{"JSON", "application/json", false},
		{"any type", "*/*", false},
		{"a stream refused with q=0", "text/event-stream;q=0", false},
		{"a stream among others", "application/json, text/event-stream;q=0.5", true},
		{"a stream in capitals", "Text/Event-Stream", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &kit.Server{KeepaliveEvery: 50 * time.Millisecond}
				mustRegister(t, srv, kit.Tool{Name: "job", Effect: kit.Read, Max: time.Minute, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
					time.Sleep(100 * time.Millisecond)
					call.Progress(1, 1, "half")
					time.Sleep(100 * time.Millisecond)
					return map[string]int{"n": 7}, nil
				}})
				defer srv.Close()
				m := serve(t.Context(), srv, request{path: "/tools/job", header: map[string]string{"Accept": tc.accept}})
				if tc.stream {
					evs := m.events(t)
					if m.header.Get("Content-Type") != "text/event-stream" || len(evs) == 0 || evs[len(evs)-1].data != `{"output":{"n":7}}` {
						t.Errorf("got %q %v, want a stream ending with the result", m.header.Get("Content-Type"), evs)
					}
					return
				}
				if got := output(t, m); got != `{"n":7}` || m.header.Get("Content-Type") != "application/json" {
					t.Errorf("got %q %s, want application/json {\"n\":7}", m.header.Get("Content-Type"), got)
				}
			})
		})
	}
}

func TestAJSONAnswerCarriesAFailureAsAnErrorStatus(t *testing.T) {
	cases := []struct {
		name          string
		err           error
		wantStatus    int
		wantMessage   string
		wantRetryable bool
	}{
		{"a plain error is final", errorString("index offline"), 422, "index offline", false},
		{"an Error that is not retryable", &kit.Error{Message: "search: empty query"}, 422, "search: empty query", false},
		{"a retryable Error", &kit.Error{Message: "search: shard busy", Retryable: true}, 503, "search: shard busy", true},
		{"an Error without a message", &kit.Error{}, 422, "kit: tool t failed", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var srv kit.Server
			mustRegister(t, &srv, kit.Tool{Name: "t", Effect: kit.Read, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
				return nil, tc.err
			}})
			defer srv.Close()
			m := serve(t.Context(), &srv, request{path: "/tools/t"})
			e := jsonError(t, m)
			if m.code != tc.wantStatus || e.Error.Message != tc.wantMessage || e.Error.Retryable != tc.wantRetryable {
				t.Errorf("got %d %+v, want %d %q retryable %v", m.code, e.Error, tc.wantStatus, tc.wantMessage, tc.wantRetryable)
			}
		})
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

func TestAnOutputThatIsNotJSONFailsTheCall(t *testing.T) {
	var srv kit.Server
	mustRegister(t, &srv, kit.Tool{Name: "t", Effect: kit.Read, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
		return func() {}, nil
	}})
	defer srv.Close()
	m := serve(t.Context(), &srv, request{path: "/tools/t"})
	if e := jsonError(t, m); m.code != 422 || !strings.Contains(e.Error.Message, "output is not JSON") {
		t.Errorf("got %d %+v", m.code, e)
	}
}

// Over a real socket, with go-sse's own reader as the client.
func TestAStreamOverHTTPReadsWithGoSSE(t *testing.T) {
	srv := &kit.Server{KeepaliveEvery: 20 * time.Millisecond}
	mustRegister(t, srv, kit.Tool{Name: "job", Effect: kit.Read, Max: time.Minute, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
		for i := range int64(3) {
			call.Progress(i+1, 3, "step")
			time.Sleep(50 * time.Millisecond)
		}
		return "ok", nil
	}})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/tools/job", strings.NewReader(`{"arguments":{}}`))
	req.Header.Set("Idempotency-Key", "k1")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// A loaded machine may coalesce two reports into one event, so the
	// test asserts the order, not the count.
	var types []string
	last := int64(0)
	for ev, err := range sse.Read(resp.Body, nil) {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.Type)
		if ev.Type == "progress" {
			var p struct{ Units int64 }
			if json.Unmarshal([]byte(ev.Data), &p) != nil || p.Units <= last {
				t.Errorf("progress %q after units %d", ev.Data, last)
			}
			last = p.Units
		}
	}
	if n := len(types); n < 2 || n > 4 || types[0] != "progress" || types[n-1] != "result" || slices.Contains(types[:n-1], "result") || last != 3 {
		t.Errorf("events %v ending at units %d, want progress events up to 3, then one result", types, last)
	}
}
