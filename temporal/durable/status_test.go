package durable_test

import (
	"strings"
	"testing"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/temporal/durable"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/trace/spans"
)

// A run asked to land by SignalLand (harness-temporal land) takes the path
// of its cancellation: it lands now with cause cancelled, within its
// reserve, the call in flight named. Before that, its status query shows
// the call in flight by its hashed key, never the key itself.
func TestASignalToLandLandsAsACancellationAndTheStatusShowsTheCallByItsHashedKey(t *testing.T) {
	e, wr, ctx := longJobRun(t)
	const budget = longJobBudget
	v, err := e.c.QueryWorkflow(ctx, wr.GetID(), "", durable.QueryStatus)
	if err != nil {
		t.Fatal(err)
	}
	var st durable.Status
	if err := v.Get(&st); err != nil {
		t.Fatal(err)
	}
	if len(st.InFlight) != 1 || st.InFlight[0].Tool != "long_job" || st.InFlight[0].Kind != "tool:long_job" ||
		!strings.HasPrefix(st.InFlight[0].Key, "key-sha256:") || st.Landing || st.Ended || st.Budget.TotalMs != budget.Milliseconds() {
		t.Fatalf("status %+v, want long_job in flight by its hashed key", st)
	}
	if err := e.c.SignalWorkflow(ctx, wr.GetID(), "", durable.SignalLand, nil); err != nil {
		t.Fatal(err)
	}
	var out durable.Output
	if err := wr.Get(ctx, &out); err != nil {
		t.Fatal(err)
	}
	res := out.Result
	if res.Status != landing.Partial || res.Cause != landing.CauseCancelled || len(res.InFlight) != 1 || res.InFlight[0].Tool != "long_job" {
		t.Fatalf("result %+v, want partial cancelled with long_job in flight\n%s", res, dump(out))
	}
	if got := spans.HashKey(res.InFlight[0].IdempotencyKey); got != st.InFlight[0].Key {
		t.Errorf("status key %s, want the hash of the call's key %s", st.InFlight[0].Key, got)
	}
	cut := records(out, trace.AttemptEnd, "tool:long_job")
	if len(cut) != 1 || cut[0].Outcome != trace.Cancelled {
		t.Fatalf("long_job attempts %+v, want one cancelled", cut)
	}
	end := records(out, trace.RunEnd, "")[0]
	if reserve := res.Budget.ReserveMs; end.ElapsedMs-cut[0].ElapsedMs > reserve || end.LateMs != 0 {
		t.Errorf("run ended %dms after the signal, want within the reserve %dms", end.ElapsedMs-cut[0].ElapsedMs, reserve)
	}
	if l := records(out, trace.Landing, ""); len(l) != 1 || l[0].Cause != "cancelled" {
		t.Errorf("landing records %+v", l)
	}
	v, err = e.c.QueryWorkflow(ctx, wr.GetID(), "", durable.QueryStatus)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Get(&st); err != nil {
		t.Fatal(err)
	}
	if !st.Ended || st.Result != "partial" || st.Cause != "cancelled" || len(st.InFlight) != 0 {
		t.Errorf("status of the ended run %+v", st)
	}
}
