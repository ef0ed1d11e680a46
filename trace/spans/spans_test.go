package spans_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/kit"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/trace/spans"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// A run with a retry (the model's first answer is a 503), a remote tool
// call, a sub-agent and a landing call (one step allowed): its spans, as
// the in-memory exporter has them.
func TestARunsSpansNameItsAttemptsAndNestItsChild(t *testing.T) {
	var traceparent string
	var mu sync.Mutex
	var k kit.Server
	if err := k.Register(kit.Tool{Name: "lookup", Effect: kit.Read, Handler: func(ctx context.Context, c *kit.Call) (any, error) {
		return "found", nil
	}}); err != nil {
		t.Fatal(err)
	}
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			mu.Lock()
			traceparent = r.Header.Get("traceparent")
			mu.Unlock()
		}
		k.ServeHTTP(w, r)
	}))
	defer tool.Close()
	defer k.Close()
	srv := sim.NewServer(&sim.Scenario{Rules: []sim.Rule{{Request: 1, Status: 503}}})
	defer srv.Close()
	m, err := model.New(model.Config{BaseURL: srv.URL, Model: "gpt-test"})
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry(nil)
	for _, tl := range []tools.Tool{
		tools.Remote(tools.Spec{Name: "lookup", Effect: tools.Read}, tool.URL, nil),
		harness.NewAgent(tools.Spec{Name: "alpha"}, harness.Config{}),
	} {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	sink := spans.New(tp.Tracer("glidepath"), spans.Config{Provider: "openai", Model: "gpt-test", ServerAddress: "127.0.0.1", ServerPort: 8089})
	b, err := budget.New(budget.Config{Total: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}

	res, err := harness.Run(t.Context(), b, harness.Config{Task: "find cats", Model: m, Tools: reg, MaxSteps: 1, Sinks: []trace.Sink{sink}})
	if err != nil || res.Cause != "max_steps" {
		t.Fatalf("result %+v, %v", res, err)
	}
	got := exp.GetSpans() // before Shutdown, which erases them
	tp.Shutdown(context.Background())

	byName := map[string][]tracetest.SpanStub{}
	for _, s := range got {
		byName[s.Name] = append(byName[s.Name], s)
	}
	// The sub-agent's run is named for its entry, so that two can be told
	// apart (issue 18).
	roots, children := byName["invoke_agent glidepath"], byName["invoke_agent alpha"]
	if len(roots) != 1 || len(children) != 1 {
		t.Fatalf("spans %v; want one run and one sub-agent run named alpha", names(got))
	}
	root := roots[0]
	attrs := attributes(root.Attributes)
	if attrs["gen_ai.operation.name"] != "invoke_agent" || attrs["glidepath.cause"] != "max_steps" ||
		attrs["glidepath.status"] != "partial" || attrs["glidepath.budget.total_ms"] != "30000" ||
		attrs["gen_ai.response.status"] != "incomplete" {
		t.Errorf("the run's span: %v", attrs)
	}
	if a := attributes(children[0].Attributes); a["gen_ai.agent.name"] != "alpha" || a["gen_ai.response.status"] != "completed" {
		t.Errorf("the sub-agent's span: %v", a)
	}
	if _, ok := attributes(children[0].Attributes)["glidepath.cause"]; ok {
		t.Errorf("the complete sub-agent's span carries a glidepath.cause")
	}
	var chats, childChats []tracetest.SpanStub
	for _, c := range byName["chat gpt-test"] {
		switch c.Parent.SpanID() {
		case root.SpanContext.SpanID():
			chats = append(chats, c)
		case children[0].SpanContext.SpanID():
			childChats = append(childChats, c)
		default:
			t.Errorf("chat span %v is neither the run's child nor the sub-agent's", attributes(c.Attributes))
		}
	}
	if len(chats) != 3 || len(childChats) != 1 { // the 503, its retry, the landing call; the child's answer
		t.Errorf("%d chat spans in the run and %d in the child, want 3 and 1: %v", len(chats), len(childChats), names(got))
	}
	var resent, landing, answered bool
	for _, c := range chats {
		a := attributes(c.Attributes)
		for _, key := range []string{"gen_ai.provider.name", "gen_ai.request.model", "http.request.resend_count",
			"glidepath.budget.granted_ms", "glidepath.budget.remaining_ms", "glidepath.phase", "glidepath.outcome"} {
			if a[key] == "" {
				t.Errorf("chat span lacks %s: %v", key, a)
			}
		}
		if c.SpanKind != oteltrace.SpanKindClient || a["server.address"] != "127.0.0.1" || a["server.port"] != "8089" {
			t.Errorf("chat span of kind %v at %q:%q, want CLIENT at the model's server", c.SpanKind, a["server.address"], a["server.port"])
		}
		resent = resent || a["http.request.resend_count"] == "1"
		landing = landing || a["glidepath.landing"] == "true"
		if a["glidepath.outcome"] == "ok" {
			// What the server said of its answer, where it said it.
			answered = true
			if a["gen_ai.response.model"] != sim.ModelID || a["gen_ai.response.finish_reasons"] == "" {
				t.Errorf("an answered chat span lacks the response's model or finish reasons: %v", a)
			}
		}
	}
	if !resent || !landing || !answered {
		t.Errorf("no chat span is the retry (%v), the landing call (%v) or an answer (%v)", resent, landing, answered)
	}
	lookups := byName["execute_tool lookup"]
	if len(lookups) != 1 {
		t.Fatalf("execute_tool lookup spans: %d", len(lookups))
	}
	if k := lookups[0].SpanKind; k != oteltrace.SpanKindInternal {
		t.Errorf("execute_tool is of kind %v, want INTERNAL (semconv)", k)
	}
	a := attributes(lookups[0].Attributes)
	if a["gen_ai.operation.name"] != "execute_tool" || a["gen_ai.tool.name"] != "lookup" || !strings.HasPrefix(a["gen_ai.tool.call.id"], "call_") ||
		a["glidepath.outcome"] != "ok" {
		t.Errorf("the tool's span: %v", a)
	}
	mu.Lock()
	if !strings.Contains(traceparent, lookups[0].SpanContext.SpanID().String()) {
		t.Errorf("the tool's POST carried traceparent %q, not its attempt's span %s", traceparent, lookups[0].SpanContext.SpanID())
	}
	mu.Unlock()
	alphas := byName["execute_tool alpha"]
	if len(alphas) != 1 || children[0].Parent.SpanID() != alphas[0].SpanContext.SpanID() {
		t.Errorf("the sub-agent's run is not a child of its execute_tool span")
	}
	for _, s := range got {
		for _, kv := range s.Attributes {
			if strings.HasPrefix(kv.Value.Emit(), "gp_") {
				t.Errorf("span %s carries a raw idempotency key: %s=%s", s.Name, kv.Key, kv.Value.Emit())
			}
		}
	}
}

func names(ss tracetest.SpanStubs) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	return out
}

func attributes(kvs []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

// Every string a span carries, its name, attributes, events' attributes
// and status message.
func exportedStrings(ss tracetest.SpanStubs) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name, s.Status.Description)
		for _, kv := range s.Attributes {
			out = append(out, kv.Value.Emit())
		}
		for _, ev := range s.Events {
			out = append(out, ev.Name)
			for _, kv := range ev.Attributes {
				out = append(out, kv.Value.Emit())
			}
		}
	}
	return out
}

// The records of a run with an orphan, as the harness makes them: its
// key in the records, and in the reconcile's error, the orphan's, the
// landing's and the child's messages; and a key the sink never saw in a
// record, in the landing message, as a child in another process's orphan
// would be named.
func TestNoRawKeyLeavesInAnySpan(t *testing.T) {
	const pay, child, remote = "gp_aaaaaaaaaaaaaaaaaaaaaaaaaa", "gp_bbbbbbbbbbbbbbbbbbbbbbbbbb", "gp_cccccccccccccccccccccccccc"
	custom := "order-77-retry" // a key of a tool's own shape
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	sink := spans.New(tp.Tracer("glidepath"), spans.Config{})
	ts := time.Now()
	for _, r := range []trace.Record{
		{Event: trace.RunStart, RunID: "p"},
		{Event: trace.AttemptStart, RunID: "p", Step: "tool:pay", StepIndex: 1, Attempt: 1, Key: pay},
		{Event: trace.AttemptStart, RunID: "p", Step: "tool:ship", StepIndex: 1, Attempt: 1, Key: custom},
		{Event: trace.AttemptStart, RunID: "p", Step: "agent:alpha", StepIndex: 1, Attempt: 1, Key: child},
		{Event: trace.RunStart, RunID: "c", ParentRunID: "p", Key: child},
		{Event: trace.Landing, RunID: "c", ParentRunID: "p", Message: "the child's call " + child + " landed"},
		{Event: trace.RunEnd, RunID: "c", ParentRunID: "p", Result: "partial", Cause: "budget"},
		{Event: trace.AttemptEnd, RunID: "p", Step: "agent:alpha", StepIndex: 1, Attempt: 1, Key: child, Outcome: trace.OK},
		{Event: trace.Progress, RunID: "p", Step: "tool:pay", Key: pay, Units: 1, Message: "paying under " + pay},
		{Event: trace.AttemptEnd, RunID: "p", Step: "tool:pay", StepIndex: 1, Attempt: 1, Key: pay, Outcome: trace.GaveUp,
			Message: "pay: cut; GET /tools/pay/calls/" + pay + ": 503"},
		{Event: trace.AttemptEnd, RunID: "p", Step: "tool:ship", StepIndex: 1, Attempt: 1, Key: custom, Outcome: trace.UpstreamError,
			Message: "ship " + custom + " failed"},
		{Event: trace.Reconcile, RunID: "p", Step: "tool:pay", Key: pay, State: "failed", Message: "status of " + pay + ": 503"},
		{Event: trace.Orphan, RunID: "p", Step: "tool:pay", Key: pay, State: "open", Message: "journaled " + pay},
		{Event: trace.Landing, RunID: "p", Cause: "unsettled", Message: "The outcome of pay (key " + pay + ") is unknown; " +
			"the child's " + child + " and a remote orphan " + remote + " and " + custom + " too; Authorization: Bearer abcdefghijkl"},
		{Event: trace.RunEnd, RunID: "p", Result: "partial", Cause: "unsettled"},
	} {
		r.TS = ts
		if err := sink.Record(r); err != nil {
			t.Fatal(err)
		}
	}
	got := exp.GetSpans()
	all := strings.Join(exportedStrings(got), "\n")
	for _, k := range []string{pay, child, remote, custom, "abcdefghijkl"} {
		if strings.Contains(all, k) {
			t.Errorf("%s is exported raw:\n%s", k, all)
		}
	}
	for _, k := range []string{pay, child, remote, custom} {
		if !strings.Contains(all, spans.HashKey(k)) {
			t.Errorf("%s is not named by its hash %s in what is exported:\n%s", k, spans.HashKey(k), all)
		}
	}
	if !strings.Contains(all, "The outcome of pay (key "+spans.HashKey(pay)+") is unknown") {
		t.Errorf("the landing message is not exported with the key hashed:\n%s", all)
	}
}

// A run whose run_start carries a key given to ParentCall is a child of
// that span: a call served to another process's attempt.
func TestParentCallMakesARemoteCallersSpanTheRunsParent(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	sink := spans.New(tp.Tracer("glidepath"), spans.Config{})
	caller := oteltrace.NewSpanContext(oteltrace.SpanContextConfig{
		TraceID: oteltrace.TraceID{1, 2, 3}, SpanID: oteltrace.SpanID{4, 5, 6}, TraceFlags: oteltrace.FlagsSampled, Remote: true})
	sink.ParentCall("gp_served", caller)
	sink.ParentCall("gp_other", oteltrace.SpanContext{}) // invalid: ignored
	for _, r := range []trace.Record{
		{Event: trace.RunStart, RunID: "served", Key: "gp_served"},
		{Event: trace.RunEnd, RunID: "served", Result: "complete"},
		{Event: trace.RunStart, RunID: "other", Key: "gp_other"},
		{Event: trace.RunEnd, RunID: "other", Result: "complete"},
	} {
		sink.Record(r)
	}
	got := exp.GetSpans()
	if len(got) != 2 {
		t.Fatalf("%d spans, want 2", len(got))
	}
	if p := got[0].Parent; p.TraceID() != caller.TraceID() || p.SpanID() != caller.SpanID() || got[0].SpanContext.TraceID() != caller.TraceID() {
		t.Errorf("the served run's span has parent %v in trace %v, want the caller's %v", p.SpanID(), got[0].SpanContext.TraceID(), caller.SpanID())
	}
	if got[1].Parent.IsValid() {
		t.Errorf("the other run has parent %v, want none: an invalid parent is ignored", got[1].Parent.SpanID())
	}
}

func TestAZeroSinkMakesNoSpans(t *testing.T) {
	var s spans.Sink
	if err := s.Record(trace.Record{Event: trace.RunStart, RunID: "r"}); err != nil {
		t.Fatal(err)
	}
	s.ParentCall("k", oteltrace.SpanContext{})
	if ctx := s.AttemptContext(t.Context(), trace.Record{RunID: "r"}); ctx != t.Context() {
		t.Error("a zero Sink changed the context")
	}
}
