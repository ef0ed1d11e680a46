package durable_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/temporal/durable"
	"github.com/glidepath/glidepath/trace"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/temporal"
)

// A run in a namespace with the attributes is listed as running, in its
// phase, with its deadline, while it runs; asked to land, it is found by
// `GlidepathStatus = "partial" AND GlidepathCause = "cancelled"`. Its
// history holds one upsert at its start, one per change of phase and one
// at its end, however many records it wrote, and replays (the checked-in
// histories are recorded in a namespace without the attributes).
func TestARunIsListedByItsStatusPhaseAndDeadlineAndFoundByItsCause(t *testing.T) {
	e, wr, ctx := longJobRun(t, func(ctx context.Context, e *env) {
		if err := durable.RegisterSearchAttributes(ctx, e.c, e.ts.GetDefaultNamespace()); err != nil {
			t.Fatal(err)
		}
	})
	d, err := e.c.DescribeWorkflow(ctx, wr.GetID(), wr.GetRunID())
	if err != nil {
		t.Fatal(err)
	}
	sa := d.TypedSearchAttributes
	status, _ := sa.GetKeyword(durable.StatusAttribute)
	phase, _ := sa.GetKeyword(durable.PhaseAttribute)
	deadline, _ := sa.GetTime(durable.DeadlineAttribute)
	if _, ok := sa.GetKeyword(durable.CauseAttribute); ok || status != durable.Running || phase != "explore" ||
		!deadline.Equal(d.WorkflowStartTime.Add(longJobBudget)) {
		t.Errorf("a running run's attributes: status %q phase %q deadline %v (start %v), want running explore start+%v and no cause",
			status, phase, deadline, d.WorkflowStartTime, longJobBudget)
	}
	if err := e.c.SignalWorkflow(ctx, wr.GetID(), "", durable.SignalLand, nil); err != nil {
		t.Fatal(err)
	}
	var out durable.Output
	if err := wr.Get(ctx, &out); err != nil {
		t.Fatal(err)
	}
	if res := out.Result; res.Status != landing.Partial || res.Cause != landing.CauseCancelled {
		t.Fatalf("status %s cause %q, want partial cancelled\n%s", res.Status, res.Cause, dump(out))
	}
	found := listUntil(t, ctx, e, `GlidepathStatus = "partial" AND GlidepathCause = "cancelled" AND GlidepathPhase = "land"`)
	if found != wr.GetID() {
		t.Errorf("the query found %q, want %q", found, wr.GetID())
	}
	h := e.history(t, wr)
	if got, want := upserts(h), 2+len(records(out, trace.PhaseChange, "")); got != want || want != 3 {
		t.Errorf("%d upserts in the history, want %d: one at the start, one per phase record (explore→land), one at the end", got, want)
	}
	if err := replayer(t).ReplayWorkflowHistory(nil, h); err != nil {
		t.Errorf("the history with its upserts does not replay: %v", err)
	}
}

// listUntil lists the env's runs by query until one is found, and returns
// its workflow ID: visibility lags behind a run's history.
func listUntil(t *testing.T, ctx context.Context, e *env, query string) string {
	t.Helper()
	for {
		resp, err := e.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		if err != nil {
			t.Fatalf("list %s: %v", query, err)
		}
		if ex := resp.GetExecutions(); len(ex) > 0 {
			return ex[0].GetExecution().GetWorkflowId()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no run found by %s", query)
		case <-time.After(50 * time.Millisecond): // polling the server's visibility, out of synctest's sight
		}
	}
}

// upserts counts a history's upserts of the run's attributes (the
// GetVersion of its rules upserts TemporalChangeVersion, issue 25).
func upserts(h *historypb.History) int {
	n := 0
	for _, ev := range h.Events {
		fields := ev.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields()
		if slices.ContainsFunc(slices.Collect(maps.Keys(fields)), func(k string) bool { return strings.HasPrefix(k, "Glidepath") }) {
			n++
		}
	}
	return n
}

// A run in a namespace without the attributes, or with one of another
// type, runs as in one that has them, and upserts nothing: the server
// would fail every workflow task that names an attribute it does not know.
func TestARunInANamespaceWithoutTheAttributesCompletesAndUpsertsNothing(t *testing.T) {
	cases := []struct {
		name     string
		register map[string]enumspb.IndexedValueType
	}{
		{"none registered", nil},
		{"the phase registered as an Int", map[string]enumspb.IndexedValueType{durable.PhaseAttribute.GetName(): enumspb.INDEXED_VALUE_TYPE_INT}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "tools:\n  - name: search\n    builtin: search\n")
			if tc.register != nil {
				ns := e.ts.GetDefaultNamespace()
				if _, err := e.c.OperatorService().AddSearchAttributes(t.Context(), &operatorservice.AddSearchAttributesRequest{Namespace: ns, SearchAttributes: tc.register}); err != nil {
					t.Fatal(err)
				}
				if err := durable.RegisterSearchAttributes(t.Context(), e.c, ns); !errors.Is(err, durable.ErrSearchAttribute) {
					t.Errorf("registering over another type: %v, want ErrSearchAttribute", err)
				}
			}
			out, wr := e.run(t, durable.Input{Task: "find cats", Budget: 20 * time.Second})
			if out.Result.Status != landing.Complete {
				t.Fatalf("status %s cause %q, want complete\n%s", out.Result.Status, out.Result.Cause, dump(out))
			}
			if n := upserts(e.history(t, wr)); n != 0 {
				t.Errorf("%d upserts in the history, want none", n)
			}
		})
	}
}

// The attribute names and types a run keeps are the ones
// RegisterSearchAttributes registers, and registering them again does
// nothing.
func TestRegisteringTheAttributesTwiceRegistersThemOnce(t *testing.T) {
	e := newEnvFiles(t, nil, nil, nil, noWorker)
	ns := e.ts.GetDefaultNamespace()
	for range 2 {
		if err := durable.RegisterSearchAttributes(t.Context(), e.c, ns); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := e.c.OperatorService().ListSearchAttributes(t.Context(), &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []temporal.SearchAttributeKey{durable.StatusAttribute, durable.CauseAttribute, durable.PhaseAttribute, durable.DeadlineAttribute} {
		if got, want := resp.GetCustomAttributes()[k.GetName()], k.GetValueType(); got != want {
			t.Errorf("%s is a %v, want a %v", k.GetName(), got, want)
		}
	}
}
