package landing

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

func recordedRun() Record {
	return Record{
		Task:  "reconcile March invoices",
		Cause: CauseBudget,
		Step:  14,
		Calls: []Call{
			{Step: 2, Tool: "ledger", Key: "k1", Outcome: Done, Summary: "42 invoices"},
			{Step: 5, Tool: "reconciliation", Key: "k2", Outcome: Done, Summary: "3 mismatches"},
			{Step: 9, Tool: "fx_rates", Key: "k3", Outcome: Failed, Summary: "503 from upstream"},
			{Step: 13, Tool: "browser", Key: "k4", Outcome: Refused},
			{Step: 14, Tool: "supplier lookup", Key: "k5", Outcome: Interrupted, State: StateAbandoned},
			{Step: 14, Tool: "payment", Key: "k6", Outcome: Interrupted, State: StateOrphaned},
		},
	}
}

func TestTheDeterministicSummaryPutsEveryCallInTheRightList(t *testing.T) {
	r := Summarize(recordedRun())
	if r.Status != Partial || r.Cause != CauseBudget || r.Steps != 14 || r.Orphans != 1 {
		t.Errorf("status %v cause %v steps %d orphans %d", r.Status, r.Cause, r.Steps, r.Orphans)
	}
	wantEst := []string{"ledger: 42 invoices", "reconciliation: 3 mismatches"}
	wantNot := []string{
		"fx_rates: failed: 503 from upstream",
		"browser: not started, not enough time",
		"supplier lookup: in flight, not included",
		"payment: in flight, not included",
	}
	if !slices.Equal(r.Established, wantEst) || !slices.Equal(r.NotEstablished, wantNot) {
		t.Errorf("established %q\nnot established %q", r.Established, r.NotEstablished)
	}
	wantIn := []InFlight{{"supplier lookup", "k5", StateAbandoned}, {"payment", "k6", StateOrphaned}}
	if !slices.Equal(r.InFlight, wantIn) {
		t.Errorf("in flight %+v", r.InFlight)
	}
	wantBoundary := "Ran out of allotted time at step 14: ledger and reconciliation done; fx_rates failed; " +
		"browser was not started (not enough time); supplier lookup was in flight and is not included. " +
		"The outcome of payment (key k6) is unknown: it may or may not have happened; run `harness reconcile` to settle it."
	if r.Boundary != wantBoundary {
		t.Errorf("boundary\n got %q\nwant %q", r.Boundary, wantBoundary)
	}
	if !strings.HasPrefix(r.Answer, "Partial answer, summarized by the harness") || !strings.Contains(r.Answer, "- ledger: 42 invoices") {
		t.Errorf("answer %q", r.Answer)
	}
	if text := r.Text(); !strings.HasPrefix(text, "PARTIAL RESULT. Ran out of allotted time at step 14") {
		t.Errorf("a partial result's text does not lead with its boundary: %q", text)
	}
	for _, banned := range []string{"shutting down", "complete", "success"} {
		if strings.Contains(strings.ToLower(r.Answer+r.Boundary), banned) {
			t.Errorf("partial wording contains %q", banned)
		}
	}
}

func TestTheBoundaryNamesTheCause(t *testing.T) {
	cases := []struct {
		rec  Record
		want string
	}{
		// Issue 24: a run with no call to list says where it was, and
		// nothing about tool calls.
		{Record{Cause: CauseQuiet, Step: 3, Quiet: time.Minute}, "Stopped at step 3: no progress for 1m0s: nothing was established."},
		{Record{Cause: CauseCancelled, Step: 1}, "Cancelled at step 1: nothing was established."},
		{Record{Cause: CauseBudget, Step: 0, Doing: "no model turn had started"}, "Ran out of allotted time at step 0: no model turn had started."},
		{Record{Cause: CauseCancelled, Step: 1, Failure: "the model sent only keepalives for 1.5s"},
			"Cancelled at step 1: the model sent only keepalives for 1.5s."},
		{Record{Cause: CauseMaxSteps, Step: 1, Doing: "the model had not answered yet", Calls: []Call{{Tool: "a", Outcome: Done}}},
			"Reached the step limit at step 1: a done."},
		{Record{Cause: CauseToolsFailed, Step: 2, Failure: "ignored", Calls: []Call{{Tool: "search", Outcome: Failed}, {Tool: "fetch", Outcome: Refused}}},
			"Answered at step 2 without a tool's result: search failed; fetch was not started (not enough time)."},
		{Record{Cause: CauseCancelled, Step: 1, Calls: []Call{{Tool: "child_a", Outcome: Done, Landed: CauseBudget}, {Tool: "child_b", Outcome: Done, Landed: CauseCancelled}}},
			"Cancelled at step 1: child_a partial (budget), child_b cancelled."},
		{Record{Cause: CauseBudget, Step: 2, Calls: []Call{{Tool: "search", Outcome: Done}, {Tool: "child_a", Outcome: Done, Landed: CauseQuiet}}},
			"Ran out of allotted time at step 2: search done; child_a partial (quiet)."},
		{Record{Cause: CauseMaxSteps, Step: 50, Calls: []Call{{Tool: "a", Outcome: Done}, {Tool: "b", Outcome: Done}, {Tool: "c", Outcome: Done}, {Tool: "a", Outcome: Done}}},
			"Reached the step limit at step 50: a, b and c done."},
		{Record{Cause: CauseUpstream, Step: 2, Calls: []Call{{Tool: "x", Outcome: Interrupted}}}, "The model failed at step 2: x was in flight and is not included."},
		{Record{Cause: CauseStuck, Step: 4, Failure: `search {"q":"x"} gave the same result 3 times over`, Calls: []Call{{Tool: "search", Outcome: Done}}},
			`Stopped at step 4, stuck repeating a call: search {"q":"x"} gave the same result 3 times over. Before that: search done.`},
		{Record{Cause: CauseUpstream, Step: 1, Failure: "401 Incorrect API key provided"},
			"The model failed at step 1: 401 Incorrect API key provided."},
		{Record{Cause: CauseUpstream, Step: 2, Failure: "503 Service Unavailable.", Calls: []Call{{Tool: "search", Outcome: Done}}},
			"The model failed at step 2: 503 Service Unavailable. Before that: search done."},
		{Record{Cause: CauseBudget, Step: 1, Failure: "the model's server asked to wait 30s before a retry, and the run had only 7.4s left before its reserve"},
			"Stopped at step 1: the model's server asked to wait 30s before a retry, and the run had only 7.4s left before its reserve."},
		{Record{Cause: CauseUnsettled, Step: 2, Calls: []Call{{Tool: "pay", Key: "gp_1", Outcome: Interrupted, State: StateOrphaned}}},
			"Answered at step 2. The outcome of pay (key gp_1) is unknown: it may or may not have happened; run `harness reconcile` to settle it."},
		{Record{Cause: CauseUnsettled, Step: 3, Calls: []Call{{Tool: "search", Outcome: Done},
			{Tool: "pay", Key: "gp_1", Outcome: Interrupted, State: StateOrphaned}, {Tool: "pay", Key: "gp_2", Outcome: Interrupted, State: StateOrphaned}}},
			"Answered at step 3: search done. The outcomes of pay (key gp_1) and pay (key gp_2) are unknown: they may or may not have happened; run `harness reconcile` to settle them."},
		{Record{Cause: CauseUnsettled, Step: 2, Calls: []Call{{Tool: "pay", Key: "gp_1", Outcome: Interrupted, State: StateOrphaned, Unreachable: true},
			{Tool: "book", Key: "gp_2", Outcome: Interrupted, State: StateOrphaned}}},
			"Answered at step 2. The outcome of book (key gp_2) is unknown: it may or may not have happened; run `harness reconcile` to settle it. " +
				"The outcome of pay (key gp_1) is unknown: it may or may not have happened, and its tool cannot be asked from outside this run; check it by hand."},
		// Each orphan names the command that settles it (issue 24): the
		// run's journal's reconcile, or the --settle a person records with.
		{Record{Cause: CauseBudget, Step: 1, Calls: []Call{
			{Tool: "pay", Key: "gp_1", Outcome: Interrupted, State: StateOrphaned, Unreachable: true, Next: "harness reconcile --journal o.jsonl --settle gp_1=done"},
			{Tool: "book", Key: "gp_2", Outcome: Interrupted, State: StateOrphaned, Next: "harness reconcile --journal o.jsonl"}}},
			"Ran out of allotted time at step 1. The outcome of book (key gp_2) is unknown: it may or may not have happened; run `harness reconcile --journal o.jsonl` to settle it. " +
				"The outcome of pay (key gp_1) is unknown: it may or may not have happened, and its tool cannot be asked from outside this run; " +
				"check it by hand, then record what you found: `harness reconcile --journal o.jsonl --settle gp_1=done` if it happened, or =failed if not."},
		{Record{Cause: CauseBudget, Step: 1, Calls: []Call{
			{Tool: "pay", Key: "gp_1", Outcome: Interrupted, State: StateOrphaned, Unreachable: true, Next: "harness reconcile --settle gp_1=done"},
			{Tool: "pay", Key: "gp_2", Outcome: Interrupted, State: StateOrphaned, Unreachable: true, Next: "harness reconcile --settle gp_2=done"}}},
			"Ran out of allotted time at step 1. The outcomes of pay (key gp_1) and pay (key gp_2) are unknown: they may or may not have happened, and their tools cannot be asked from outside this run; " +
				"check them by hand, then record what you found for each: `harness reconcile --settle gp_1=done`, `harness reconcile --settle gp_2=done` if it happened, or =failed if not."},
	}
	for _, tc := range cases {
		t.Run(string(tc.rec.Cause), func(t *testing.T) {
			if got := Boundary(tc.rec); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestSettleKeepsTheAnswerAndIsPartialOnlyWhileAWriteIsUnknown(t *testing.T) {
	calls := []Call{{Tool: "search", Key: "k1", Outcome: Done, Summary: "3 hits"}}
	if r := Settle(Record{Step: 2, Calls: calls}, "42"); r.Status != Complete || r.Cause != "" || r.Answer != "42" || r.Boundary != "" {
		t.Errorf("no orphan: %+v, want complete", r)
	}
	calls = append(calls, Call{Tool: "pay", Key: "gp_9", Outcome: Interrupted, State: StateOrphaned},
		Call{Tool: "fetch", Key: "k3", Outcome: Interrupted, State: StateCancelled})
	r := Settle(Record{Step: 2, Calls: calls}, "42")
	if r.Status != Partial || r.Cause != CauseUnsettled || r.Answer != "42" || r.Orphans != 1 {
		t.Errorf("an orphan: %+v, want partial, unsettled, the answer kept", r)
	}
	if len(r.InFlight) != 2 || r.InFlight[0] != (InFlight{"pay", "gp_9", StateOrphaned}) {
		t.Errorf("in flight %+v, want the orphan with its key", r.InFlight)
	}
	if !strings.Contains(r.Boundary, "pay (key gp_9)") || !strings.Contains(r.Boundary, "harness reconcile") ||
		!strings.HasPrefix(r.Text(), "PARTIAL RESULT. Answered at step 2") {
		t.Errorf("boundary %q, text %q", r.Boundary, r.Text())
	}
}

// Issue 24: "complete", exit 0, for a run whose every tool call failed.
func TestSettleIsPartialWhenEveryToolCallFailedOrNeverStarted(t *testing.T) {
	cases := []struct {
		name  string
		calls []Call
		want  Cause // "": complete
	}{
		{"no tool call at all", nil, ""},
		{"one call done among failures", []Call{{Tool: "a", Outcome: Failed}, {Tool: "b", Outcome: Done}}, ""},
		{"a sub-agent that brought a partial result", []Call{{Tool: "child", Outcome: Done, Landed: CauseBudget}}, ""},
		{"every call failed", []Call{{Tool: "a", Outcome: Failed}, {Tool: "a", Outcome: Failed}}, CauseToolsFailed},
		{"every call failed or was not started", []Call{{Tool: "a", Outcome: Failed}, {Tool: "b", Outcome: Refused}}, CauseToolsFailed},
		{"every call was cut", []Call{{Tool: "a", Outcome: Interrupted, State: StateCancelled}}, CauseToolsFailed},
		{"an orphan is named first", []Call{{Tool: "pay", Key: "gp_1", Outcome: Interrupted, State: StateOrphaned}}, CauseUnsettled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Settle(Record{Step: 2, Calls: tc.calls}, "42")
			if r.Answer != "42" {
				t.Errorf("answer %q, want the model's kept", r.Answer)
			}
			if tc.want == "" {
				if r.Status != Complete || r.Cause != "" || r.Boundary != "" {
					t.Errorf("%+v, want complete", r)
				}
				return
			}
			if r.Status != Partial || r.Cause != tc.want || !strings.HasPrefix(r.Text(), "PARTIAL RESULT. Answered at step 2") {
				t.Errorf("status %s, cause %s, text %q; want partial, %s", r.Status, r.Cause, r.Text(), tc.want)
			}
		})
	}
}

func TestSummaryWithoutCauseIsStillPartialWithCauseBudget(t *testing.T) {
	r := Summarize(Record{Step: 1})
	if r.Status != Partial || r.Cause != CauseBudget || !strings.Contains(r.Answer, "Established: nothing.") {
		t.Errorf("%+v", r)
	}
}

func TestResultJSONHasEveryFieldAndEmptyListsNotNull(t *testing.T) {
	complete := Result{RunID: "r1", Status: Complete, Answer: "42"}
	data, err := json.Marshal(complete)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"run_id":"r1","status":"complete","cause":null,"answer":"42","boundary":"",` +
		`"established":[],"not_established":[],"in_flight":[],` +
		`"budget":{"total_ms":0,"spent_ms":0,"reserve_ms":0,"remaining_ms":0},"steps":0,"attempts":0,"orphans":0,"unavailable":[]}`
	if string(data) != want {
		t.Errorf("got  %s\nwant %s", data, want)
	}
	if complete.Text() != "42" {
		t.Errorf("a complete result's text is %q", complete.Text())
	}
	partial, _ := json.Marshal(Summarize(recordedRun()))
	if !strings.Contains(string(partial), `"cause":"budget"`) || !strings.Contains(string(partial), `"state":"orphaned"`) {
		t.Errorf("partial JSON %s", partial)
	}
}

// A run that landed before its first model turn was in setup: the
// boundary says which pieces did not finish, not that no tool call had
// (issue 24).
func TestTheBoundaryOfARunThatLandedInSetupNamesTheSetup(t *testing.T) {
	cases := []struct {
		name string
		rec  Record
		want string
	}{
		{"one piece ran out", Record{Cause: CauseBudget, Setup: []string{"mcp server fs: connect and tools/list did not finish in 4.4s"}},
			"Ran out of allotted time at step 0: in setup, mcp server fs: connect and tools/list did not finish in 4.4s."},
		{"two pieces cancelled", Record{Cause: CauseCancelled, Setup: []string{"manifest of http://a was cancelled", "manifest of http://b was cancelled"}},
			"Cancelled at step 0: in setup, manifest of http://a was cancelled; manifest of http://b was cancelled."},
		{"a failure of the model's says it first", Record{Cause: CauseUpstream, Failure: "401 Incorrect API key provided", Setup: []string{"manifest of http://a failed"}},
			"The model failed at step 0: 401 Incorrect API key provided."},
		{"setup before where the run was", Record{Cause: CauseBudget, Doing: "no model turn had started", Setup: []string{"manifest of http://a did not finish in 1.1s"}},
			"Ran out of allotted time at step 0: in setup, manifest of http://a did not finish in 1.1s."},
		{"no setup left: where the run was", Record{Cause: CauseCancelled, Doing: "no model turn had started"}, "Cancelled at step 0: no model turn had started."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Boundary(tc.rec); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
