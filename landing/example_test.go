package landing_test

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/landing"
)

func ExamplePhaseAt() {
	total := 2 * time.Minute
	reserve := 20 * time.Second
	for _, spent := range []time.Duration{time.Minute, 72 * time.Second, 96 * time.Second, 100 * time.Second} {
		fmt.Println(spent, landing.PhaseAt(spent, total, reserve))
	}
	// Output:
	// 1m0s explore
	// 1m12s narrow
	// 1m36s fit
	// 1m40s land
}

func ExampleNoteFor() {
	fmt.Println(landing.NoteFor(landing.Narrow, 40*time.Second, 20*time.Second))
	// Output:
	// Budget: 40s left until the deadline, 20s until landing begins. Phase: narrow. Not allowed now: no new parallel tool calls, no sub-agents, no speculative calls.
}

func ExampleSummarize() {
	r := landing.Summarize(landing.Record{
		Task:  "reconcile March invoices",
		Cause: landing.CauseBudget,
		Step:  14,
		Calls: []landing.Call{
			{Tool: "reconciliation", Outcome: landing.Done, Summary: "3 mismatches"},
			{Tool: "supplier lookup", Key: "k7", Outcome: landing.Interrupted, State: landing.StateAbandoned},
		},
	})
	fmt.Println(r.Text())
	// Output:
	// PARTIAL RESULT. Ran out of allotted time at step 14: reconciliation done; supplier lookup was in flight and is not included.
	//
	// Partial answer, summarized by the harness from its own record (no model summary) for: reconcile March invoices.
	// Established:
	// - reconciliation: 3 mismatches
	// Not established:
	// - supplier lookup: in flight, not included
}

func ExampleResult_MarshalJSON() {
	enc := json.NewEncoder(os.Stdout)
	enc.Encode(landing.Result{RunID: "r1", Status: landing.Complete, Answer: "42", Steps: 2, Attempts: 3})
	// Output:
	// {"run_id":"r1","status":"complete","cause":null,"answer":"42","boundary":"","established":[],"not_established":[],"in_flight":[],"budget":{"total_ms":0,"spent_ms":0,"reserve_ms":0,"remaining_ms":0},"steps":2,"attempts":3,"orphans":0,"unavailable":[]}
}

func ExampleLadder() {
	b, err := budget.New(budget.Config{Total: 2 * time.Minute})
	if err != nil {
		panic(err)
	}
	l := landing.New(b, landing.Config{OnChange: func(c landing.Change) {
		fmt.Printf("phase %v → %v\n", c.From, c.To)
	}})
	fmt.Println(l.Phase(), l.MayWiden(landing.Parallel))

	// A stalled run lands at once, whatever the clock says.
	l.Advance(landing.Land)
	fmt.Println(l.MustLand())
	fmt.Println(l.Admit(b.Estimates().Kind("tool:search"), time.Second))
	// Output:
	// explore <nil>
	// phase explore → land
	// true
	// landing: refused tool:search in the land phase: the run is landing: no more work is started
}
