package kit_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/tools/kit"
)

func TestRegisterRejectsAnInvalidToolNamingTheField(t *testing.T) {
	ok := echo("ok")
	cases := []struct {
		name  string
		edit  func(*kit.Tool)
		field string
	}{
		{"empty name", func(t *kit.Tool) { t.Name = "" }, "Name"},
		{"name with a slash", func(t *kit.Tool) { t.Name = "a/b" }, "Name"},
		{"name of 65 characters", func(t *kit.Tool) { t.Name = strings.Repeat("a", 65) }, "Name"},
		{"no effect", func(t *kit.Tool) { t.Effect = "" }, "Effect"},
		{"unknown effect", func(t *kit.Tool) { t.Effect = "delete" }, "Effect"},
		{"no handler", func(t *kit.Tool) { t.Handler = nil }, "Handler"},
		{"negative p50", func(t *kit.Tool) { t.P50 = -time.Millisecond }, "P50"},
		{"p95 below p50", func(t *kit.Tool) { t.P50, t.P95 = time.Second, time.Millisecond }, "P95"},
		{"negative max", func(t *kit.Tool) { t.Max = -time.Second }, "Max"},
		{"parameters not JSON", func(t *kit.Tool) { t.Parameters = json.RawMessage(`{`) }, "Parameters"},
		{"parameters an array", func(t *kit.Tool) { t.Parameters = json.RawMessage(`[]`) }, "Parameters"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var srv kit.Server
			tl := ok
			tc.edit(&tl)
			err := srv.Register(tl)
			te, isTool := errors.AsType[*kit.ToolError](err)
			if !isTool || te.Field != tc.field || !errors.Is(err, kit.ErrBadTool) {
				t.Fatalf("Register: %v, want a *ToolError on %s matching ErrBadTool", err, tc.field)
			}
			if !strings.HasPrefix(err.Error(), "kit: tool ") {
				t.Errorf("message %q lacks the package prefix", err)
			}
			if err := srv.Register(ok); err != nil {
				t.Errorf("the server changed: registering a valid tool after: %v", err)
			}
		})
	}
}

func TestRegisterRefusesANameTwice(t *testing.T) {
	var srv kit.Server
	mustRegister(t, &srv, echo("search"))
	err := srv.Register(echo("search"))
	if !errors.Is(err, kit.ErrDuplicate) || !errors.Is(err, kit.ErrBadTool) {
		t.Fatalf("second Register: %v, want ErrDuplicate and ErrBadTool", err)
	}
}

func TestManifestListsEveryToolInRegistrationOrderWithItsHints(t *testing.T) {
	var srv kit.Server
	mustRegister(t, &srv,
		kit.Tool{Name: "search", Description: "Search the index.", Effect: kit.Read, P50: 20 * time.Millisecond, P95: 150 * time.Millisecond,
			Parameters: json.RawMessage(`{"type": "object", "properties": {"query": {"type": "string"}}}`), Handler: waitCause},
		kit.Tool{Name: "commit", Description: "Commit a payment.", Effect: kit.Write, Cancellable: false, P50: 1500 * time.Millisecond, P95: 2 * time.Second, Handler: waitCause},
		kit.Tool{Name: "long_job", Effect: kit.Read, Cancellable: true, Handler: waitCause},
	)
	ts := httptest.NewServer(&srv)
	defer ts.Close()
	resp, err := ts.Client().Get(ts.URL + "/tools")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	want := `{"tools":[` +
		`{"name":"search","description":"Search the index.","parameters":{"type":"object","properties":{"query":{"type":"string"}}},"effect":"read","cancellable":false,"p50_ms":20,"p95_ms":150},` +
		`{"name":"commit","description":"Commit a payment.","parameters":{"type":"object","properties":{}},"effect":"write","cancellable":false,"p50_ms":1500,"p95_ms":2000},` +
		`{"name":"long_job","description":"","parameters":{"type":"object","properties":{}},"effect":"read","cancellable":true,"p50_ms":0,"p95_ms":0}]}` + "\n"
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" || string(body) != want {
		t.Errorf("GET /tools: %s %q\n%s\nwant 200 application/json\n%s", resp.Status, resp.Header.Get("Content-Type"), body, want)
	}
}

func TestMalformedRequestsAreRefusedWithAJSONErrorBeforeTheHandlerRuns(t *testing.T) {
	big := `{"arguments":{"pad":"` + strings.Repeat("x", 2000) + `"}}`
	cases := []struct {
		name       string
		rq         request
		wantStatus int
		wantIn     string
	}{
		{"unknown tool", request{path: "/tools/nope"}, 404, `no tool named "nope"`},
		{"unknown path", request{method: "GET", path: "/elsewhere"}, 404, "no such endpoint"},
		{"manifest by POST", request{path: "/tools"}, 405, "method not allowed"},
		{"call by GET", request{method: "GET", path: "/tools/echo"}, 405, "method not allowed"},
		{"status by PUT", request{method: "PUT", path: "/tools/echo/calls/k1"}, 405, "method not allowed"},
		{"body not JSON", request{path: "/tools/echo", body: `{"arguments":`}, 400, "not {\"arguments\""},
		{"body an array", request{path: "/tools/echo", body: `[1]`}, 400, "not {\"arguments\""},
		{"body with trailing data", request{path: "/tools/echo", body: `{"arguments":{}} {}`}, 400, "not {\"arguments\""},
		{"arguments not an object", request{path: "/tools/echo", body: `{"arguments":[1,2]}`}, 400, "arguments must be a JSON object"},
		{"body too large", request{path: "/tools/echo", body: big}, 413, "larger than 1024 bytes"},
		{"no Idempotency-Key", request{path: "/tools/echo", header: map[string]string{"Idempotency-Key": ""}}, 400, "missing Idempotency-Key"},
		{"blank Idempotency-Key", request{path: "/tools/echo", header: map[string]string{"Idempotency-Key": "  "}}, 400, "Idempotency-Key"},
		{"Idempotency-Key with a space", request{path: "/tools/echo", header: map[string]string{"Idempotency-Key": "a b"}}, 400, "Idempotency-Key"},
		{"budget negative", request{path: "/tools/echo", header: map[string]string{budget.Header: "-1"}}, 400, "Budget-Remaining-Ms"},
		{"budget not a number", request{path: "/tools/echo", header: map[string]string{budget.Header: "abc"}}, 400, "Budget-Remaining-Ms"},
		{"budget a fraction", request{path: "/tools/echo", header: map[string]string{budget.Header: "1.5"}}, 400, "Budget-Remaining-Ms"},
		{"budget empty", request{path: "/tools/echo", header: map[string]string{budget.Header: " "}}, 400, "Budget-Remaining-Ms"},
		{"budget beyond a year", request{path: "/tools/echo", header: map[string]string{budget.Header: "99999999999999"}}, 400, "Budget-Remaining-Ms"},
		{"budget streaming", request{path: "/tools/echo", stream: true, header: map[string]string{budget.Header: "abc"}}, 400, "Budget-Remaining-Ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var runs counter
			srv := &kit.Server{MaxBody: 1024}
			mustRegister(t, srv, kit.Tool{Name: "echo", Effect: kit.Read, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
				runs.add()
				return call.Args, nil
			}})
			defer srv.Close()
			m := serve(t.Context(), srv, tc.rq)
			e := jsonError(t, m)
			if m.code != tc.wantStatus || !strings.Contains(e.Error.Message, tc.wantIn) || e.Error.Retryable {
				t.Errorf("got %d %+v, want %d, not retryable, with %q", m.code, e.Error, tc.wantStatus, tc.wantIn)
			}
			if runs.get() != 0 {
				t.Errorf("the handler ran %d times", runs.get())
			}
		})
	}
}

func TestTwoBudgetHeadersAreRefusedOverHTTP(t *testing.T) {
	var srv kit.Server
	mustRegister(t, &srv, echo("echo"))
	ts := httptest.NewServer(&srv)
	defer ts.Close()
	defer srv.Close()
	req, _ := http.NewRequest("POST", ts.URL+"/tools/echo", strings.NewReader(`{"arguments":{}}`))
	req.Header.Set("Idempotency-Key", "k1")
	req.Header.Add(budget.Header, "100")
	req.Header.Add(budget.Header, "200")
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e errorAnswer
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || resp.StatusCode != 400 ||
		!strings.Contains(e.Error.Message, "Budget-Remaining-Ms") || !strings.Contains(e.Error.Message, "more than once") {
		t.Errorf("got %s %+v (%v), want 400 naming the header sent twice", resp.Status, e, err)
	}
}

func TestACallWithNoTimeLeftIsAnsweredAtOnceAndNeverRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var srv kit.Server
		ran := false
		mustRegister(t, &srv, kit.Tool{Name: "wait", Effect: kit.Write, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
			ran = true
			return "done", nil
		}})
		defer srv.Close()
		start := time.Now()
		m := serve(t.Context(), &srv, request{path: "/tools/wait", header: map[string]string{budget.Header: "0"}})
		e := jsonError(t, m)
		if time.Since(start) != 0 || m.code != http.StatusGatewayTimeout || e.Error.Code != kit.CodeDeadline ||
			!strings.Contains(e.Error.Message, "no time left") || e.Error.Retryable {
			t.Errorf("answered %d %+v after %v, want at once a 504 saying no time was left", m.code, e, time.Since(start))
		}
		if ran {
			t.Error("the handler ran for a call with no time")
		}
		if code, _ := status(t, &srv, "/tools/wait/calls/k1"); code != http.StatusNotFound {
			t.Errorf("status of the call: %d, want 404: it was never received as work", code)
		}
	})
}

func TestTheHandlersDeadlineIsTheCallersBudgetClampedToTheToolsMax(t *testing.T) {
	const max = 2 * time.Second
	cases := []struct {
		name      string
		header    string // "" sends none
		wantAfter time.Duration
		wantCause error
	}{
		{"a budget below max sets the deadline exactly", "300", 300 * time.Millisecond, budget.ErrDeadline},
		{"a budget equal to max", "2000", max, budget.ErrDeadline},
		{"a budget just above max is clamped", "2001", max, budget.ErrLeaseExpired},
		{"a huge budget is clamped", "86400000", max, budget.ErrLeaseExpired},
		{"no budget gets max", "", max, budget.ErrLeaseExpired},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var srv kit.Server
				var deadline time.Time
				mustRegister(t, &srv, kit.Tool{Name: "wait", Effect: kit.Read, Max: max, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
					deadline, _ = ctx.Deadline()
					return waitCause(ctx, call)
				}})
				defer srv.Close()
				start := time.Now()
				m := serve(t.Context(), &srv, request{path: "/tools/wait", header: map[string]string{budget.Header: tc.header}})
				if got := time.Since(start); got != tc.wantAfter {
					t.Errorf("answered after %v, want %v", got, tc.wantAfter)
				}
				if got := deadline.Sub(start); got != tc.wantAfter {
					t.Errorf("the handler's deadline was %v after arrival, want %v", got, tc.wantAfter)
				}
				want, _ := json.Marshal(map[string]string{"after": tc.wantAfter.String(), "cause": tc.wantCause.Error()})
				if got := output(t, m); got != string(want) {
					t.Errorf("output %s, want %s", got, want)
				}
			})
		})
	}
}

func TestAToolWithoutMaxGetsDefaultMax(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var srv kit.Server
		mustRegister(t, &srv, kit.Tool{Name: "wait", Effect: kit.Read, Handler: waitCause})
		defer srv.Close()
		start := time.Now()
		serve(t.Context(), &srv, request{path: "/tools/wait", header: map[string]string{budget.Header: "86400000"}})
		if got := time.Since(start); got != kit.DefaultMax {
			t.Errorf("answered after %v, want DefaultMax %v", got, kit.DefaultMax)
		}
	})
}
