package durable

import (
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/trace"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/workflow"
)

// zeroBackoffProbe makes, as a sub-agent's run, the backoff of each of
// sleeps and returns whether the run went on after each.
func zeroBackoffProbe(ctx workflow.Context, sleeps []time.Duration) ([]bool, error) {
	r := &run{in: Input{Parent: &Parent{WorkflowID: "no-such-parent", RunID: "run-p", Step: "agent:a", Key: "k"}}}
	startQuiet(r, time.Minute, workflow.Now(ctx))
	var went []bool
	for _, s := range sleeps {
		went = append(went, r.backoff(ctx, trace.Record{Step: "tool:t", Attempt: 1}, budget.Delay{Sleep: s, Source: budget.FromJitter}))
	}
	return went, nil
}

// Issue 25 (review): a backoff of zero paused the quiet clock on Temporal,
// the run's and its parent's (a pause and a resume signal sent), where in
// process it pauses nothing: a wait of nothing has no silence to excuse.
// Both hosts now pause by landing.Backoff's rule. A backoff of 1s still
// pauses the parent's clock: the two signals of that one are the only
// ones the history holds.
func TestABackoffOfZeroPausesNoQuietClockAsInProcess(t *testing.T) {
	went, c, wr := probe[[]bool](t, "zeroBackoffProbe", zeroBackoffProbe, []time.Duration{0, time.Second})
	if len(went) != 2 || !went[0] || !went[1] {
		t.Fatalf("the run went on after its backoffs: %v", went)
	}
	signals := 0
	it := c.GetWorkflowHistory(t.Context(), wr.GetID(), wr.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.GetEventType() == enumspb.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED {
			signals++
		}
	}
	if signals != 2 {
		t.Errorf("the history holds %d signals to the parent, want 2: a pause and a resume for the 1s backoff, none for the backoff of zero", signals)
	}
}
