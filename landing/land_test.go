package landing

import (
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/trace"
)

// Both hosts' loops land by these rules (issue 25); the conformance suite
// compares the hosts, these pin the rules themselves.
func TestMustLandSaysWhenTheLoopStopsAndWhy(t *testing.T) {
	for _, tc := range []struct {
		name  string
		loop  Loop
		cause Cause
		must  bool
	}{
		{"a run at work with steps left goes on", Loop{Phase: Fit, Steps: 2, MaxSteps: 3}, "", false},
		{"a run whose quiet clock fired lands on quiet, whatever else holds", Loop{Ended: CauseQuiet, Phase: Land, Steps: 3, MaxSteps: 3}, CauseQuiet, true},
		{"a cancelled run lands on cancelled", Loop{Ended: CauseCancelled, MaxSteps: 3}, CauseCancelled, true},
		{"a run in the land phase lands on budget before its step limit", Loop{Phase: Land, Steps: 3, MaxSteps: 3}, CauseBudget, true},
		{"a run that made all its turns lands on max_steps", Loop{Phase: Narrow, Steps: 3, MaxSteps: 3}, CauseMaxSteps, true},
		{"a run that repeated a call as often as it may lands stuck, before its step limit and its phase", Loop{Phase: Land, Steps: 3, MaxSteps: 3, Repeats: 3, MaxRepeats: 3}, CauseStuck, true},
		{"a run with repeats left goes on", Loop{Phase: Explore, Steps: 2, MaxSteps: 9, Repeats: 2, MaxRepeats: 3}, "", false},
		{"a run with no repeat limit is never stuck", Loop{Phase: Explore, Steps: 2, MaxSteps: 9, Repeats: 7}, "", false},
		{"a stuck run whose quiet clock fired lands on quiet", Loop{Ended: CauseQuiet, Steps: 2, MaxSteps: 9, Repeats: 3, MaxRepeats: 3}, CauseQuiet, true},
		{"a run whose cost is down to its reserve lands on cost, whatever time it has", Loop{Phase: Explore, Steps: 2, MaxSteps: 9, CostOut: true}, CauseCost, true},
		{"a run out of cost and of time lands on cost: nothing more can be paid for", Loop{Phase: Land, Steps: 2, MaxSteps: 9, CostOut: true}, CauseCost, true},
		{"a run out of cost whose quiet clock fired lands on quiet", Loop{Ended: CauseQuiet, Steps: 2, MaxSteps: 9, CostOut: true}, CauseQuiet, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cause, must := MustLand(tc.loop)
			if cause != tc.cause || must != tc.must {
				t.Errorf("MustLand = %q, %v; want %q, %v", cause, must, tc.cause, tc.must)
			}
		})
	}
}

func TestTurnCauseBlamesTheModelOnlyWhenTimeDidNotRunOut(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ended     Cause
		outOfTime bool
		want      Cause
	}{
		{"a model that failed is upstream", "", false, CauseUpstream},
		{"a give-up, a refusal or a cut at the deadline is budget", "", true, CauseBudget},
		{"the run's own end is the cause whatever the turn says", CauseQuiet, true, CauseQuiet},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := TurnCause(tc.ended, tc.outOfTime); got != tc.want {
				t.Errorf("TurnCause = %q; want %q", got, tc.want)
			}
		})
	}
}

func TestPlanSendsTheLandingCallOnlyWhenItCanBeAnswered(t *testing.T) {
	rec := Record{Cause: CauseBudget, Step: 2}
	ok := Landing{Record: rec, Summarizer: true, Remaining: 5 * time.Second, Reserve: 2 * time.Second,
		Floor: 50 * time.Millisecond, P50: time.Second}
	with := func(f func(*Landing)) Landing { l := ok; f(&l); return l }
	for _, tc := range []struct {
		name  string
		l     Landing
		call  bool
		lease time.Duration
		words string
	}{
		{"a run with time and a model that answered sends it on remaining − floor", ok, true, 4950 * time.Millisecond, ""},
		{"a cancelled run's call is leased at most the reserve", with(func(l *Landing) { l.Record.Cause = CauseCancelled }), true, 2 * time.Second, ""},
		{"a host with nothing to send summarizes", with(func(l *Landing) { l.Summarizer = false }), false, 0, ""},
		{"a model that was mute is not sent it", with(func(l *Landing) { l.End.Mute = true }), false, 0, ""},
		{"a model that refused the run is not sent it", with(func(l *Landing) { l.End.Refused = true }), false, 0, ""},
		{"a model that asked for a wait the run could not afford is not sent it", with(func(l *Landing) { l.End.RetryAfter = time.Minute }), false, 0, ""},
		{"no time above the floor says so", with(func(l *Landing) { l.Remaining = 40 * time.Millisecond }), false, 0, "no time for a landing call: below floor"},
		{"a lease below the model's p50 says so", with(func(l *Landing) { l.Remaining = 500 * time.Millisecond }), false, 0, "no time for a landing call: below p50"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Plan(tc.l)
			boundary := Boundary(tc.l.Record)
			words := tc.words
			if words == "" {
				words = boundary
			}
			if c.Call != tc.call || c.Lease != tc.lease || c.Words != words {
				t.Errorf("Plan = call %v lease %v words %q; want %v %v %q", c.Call, c.Lease, c.Words, tc.call, tc.lease, words)
			}
			if c.Prompt != Prompt(boundary) {
				t.Errorf("prompt %q does not carry the boundary %q", c.Prompt, boundary)
			}
			if c.Call && c.Note != NoteFor(Land, tc.l.Remaining, 0) {
				t.Errorf("note %q is not the land phase's", c.Note)
			}
		})
	}
}

func TestPlanNamesTheUnansweredModelWhenNothingElseStoppedTheRun(t *testing.T) {
	l := Landing{Record: Record{Cause: CauseQuiet, Step: 1, Quiet: time.Second}, Unanswered: "the model sent nothing for 1s"}
	c := Plan(l)
	if c.Failure != l.Unanswered || !strings.Contains(c.Words, l.Unanswered) {
		t.Errorf("Plan = failure %q words %q; want both to name %q", c.Failure, c.Words, l.Unanswered)
	}
	l.Record.Failure = "401 Incorrect API key provided"
	if c := Plan(l); c.Failure != l.Record.Failure {
		t.Errorf("Plan's failure = %q; want the record's own %q", c.Failure, l.Record.Failure)
	}
}

func TestLandedSaysHowTheLandingCallWent(t *testing.T) {
	sent := LandCommand{Call: true, Words: "Ran out of allotted time at step 2: nothing was established."}
	for _, tc := range []struct {
		name        string
		c           LandCommand
		failed      bool
		why, text   string
		result, msg string
		answer      string
	}{
		{"a call that answered is the model's", sent, false, "", "Partial: …", "model", sent.Words, "Partial: …"},
		{"a call that failed says why", sent, true, "503 busy", "", "harness", "landing call failed: 503 busy", ""},
		{"a call that answered only white space answered nothing", sent, false, "", " \n", "harness", "landing call answered nothing", ""},
		{"no call is the harness's, in the plan's words", LandCommand{Words: "no time for a landing call: below floor"}, false, "", "", "harness", "no time for a landing call: below floor", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, answer := tc.c.Landed(CauseBudget, tc.failed, tc.why, tc.text)
			if rec.Event != trace.Landing || rec.Cause != string(CauseBudget) || rec.Result != tc.result || rec.Message != tc.msg || answer != tc.answer {
				t.Errorf("Landed = %+v, %q; want result %q message %q answer %q", rec, answer, tc.result, tc.msg, tc.answer)
			}
		})
	}
}

func TestFinishFillsTheTotalsAndKeepsTheAnswer(t *testing.T) {
	res := Finish(SummarizeWith(Record{Cause: CauseMaxSteps, Step: 3}, "the model's summary"),
		Totals{RunID: "run-1", Steps: 3, Attempts: 5, Budget: Report(10*time.Second, time.Second, 10500*time.Millisecond, 0)})
	if res.RunID != "run-1" || res.Steps != 3 || res.Attempts != 5 || res.Answer != "the model's summary" ||
		res.Cause != CauseMaxSteps || res.Budget != (BudgetReport{TotalMs: 10000, SpentMs: 10500, ReserveMs: 1000}) {
		t.Errorf("Finish = %+v", res)
	}
}
