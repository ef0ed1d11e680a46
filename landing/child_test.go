package landing_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/trace"
)

// SliceOf is a sub-agent's share on both hosts (issue 25): what the child
// gets, its own reserve and floor, and how long the parent waits for it.
func TestSliceOf(t *testing.T) {
	const floor = 50 * time.Millisecond
	cases := []struct {
		name                                  string
		remaining, reserve, ceiling, modelP95 time.Duration
		want                                  landing.Slice
		rule                                  budget.Rule
	}{
		{"a child gets what is left before the reserve and keep, with its own default reserve",
			10 * time.Second, 2 * time.Second, 0, time.Second,
			landing.Slice{Granted: 7 * time.Second, Keep: time.Second, Reserve: budget.DefaultReserve(7 * time.Second), Floor: floor,
				Wait: 7*time.Second + 500*time.Millisecond, Grace: 200 * time.Millisecond}, 0},
		{"a ceiling caps the slice and the parent's wait with it",
			10 * time.Second, 2 * time.Second, 3 * time.Second, time.Second,
			landing.Slice{Granted: 3 * time.Second, Keep: time.Second, Reserve: budget.DefaultReserve(3 * time.Second), Floor: floor,
				Wait: 3*time.Second + 500*time.Millisecond, Grace: 200 * time.Millisecond}, 0},
		{"the grace after giving up is a quarter of keep, at most four floors",
			60 * time.Second, 2 * time.Second, 0, 20 * time.Second,
			landing.Slice{Granted: 38 * time.Second, Keep: 20 * time.Second, Reserve: budget.DefaultReserve(38 * time.Second), Floor: floor,
				Wait: 48 * time.Second, Grace: 4 * floor}, 0},
		{"no more than the floor left after keep is refused", 3 * time.Second, 2 * time.Second, 0, 990 * time.Millisecond, landing.Slice{}, budget.ParentKeep},
		{"a ceiling at the floor is refused", 10 * time.Second, 2 * time.Second, floor, time.Second, landing.Slice{}, budget.BelowFloor},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, rule := landing.SliceOf(tc.remaining, tc.reserve, floor, tc.ceiling, tc.modelP95)
			if got != tc.want || rule != tc.rule {
				t.Errorf("SliceOf = %+v, %v; want %+v, %v", got, rule, tc.want, tc.rule)
			}
		})
	}
}

func TestInherit(t *testing.T) {
	parent := landing.Inherited{Quiet: 30 * time.Second, Parallel: 4, ModelP50: time.Second, ModelP95: 3 * time.Second}
	cases := []struct {
		name      string
		own       landing.Inherited
		sameModel bool
		want      landing.Inherited
	}{
		{"a child that names nothing takes its parent's settings and model estimate", landing.Inherited{}, true, parent},
		{"a child's own quiet and width are kept", landing.Inherited{Quiet: time.Second, Parallel: 1}, true,
			landing.Inherited{Quiet: time.Second, Parallel: 1, ModelP50: time.Second, ModelP95: 3 * time.Second}},
		{"a child on another model starts from no estimate of it", landing.Inherited{ModelP50: time.Hour}, false,
			landing.Inherited{Quiet: 30 * time.Second, Parallel: 4}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := landing.Inherit(tc.own, parent, tc.sameModel); got != tc.want {
				t.Errorf("Inherit = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// A child's result is the tool message exactly, and the parent's call of
// it is read back from that message, as in process, where the call's
// output is all the parent has (issue 25).
func TestChildMessageAndChildCall(t *testing.T) {
	cases := []struct {
		name   string
		res    landing.Result
		landed landing.Cause
	}{
		{"a complete child's call is done with no cause", landing.Result{Status: landing.Complete, Answer: "42"}, ""},
		{"a partial child's call is done, with the cause it landed on", landing.Result{Status: landing.Partial, Cause: landing.CauseQuiet, Boundary: "Stalled."}, landing.CauseQuiet},
		{"a partial child that names no cause landed on budget", landing.Result{Status: landing.Partial, Boundary: "Out of time."}, landing.CauseBudget},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msg, err := landing.ChildMessage(tc.res)
			if err != nil {
				t.Fatal(err)
			}
			var back landing.Result
			if err := json.Unmarshal(msg, &back); err != nil || back.Status != tc.res.Status || back.Boundary != tc.res.Boundary {
				t.Errorf("the tool message %s is not the child's result %+v (%v)", msg, tc.res, err)
			}
			c := landing.ChildCall(3, "researcher", "k1", msg)
			if c.Step != 3 || c.Tool != "researcher" || c.Key != "k1" || c.Outcome != landing.Done || c.Landed != tc.landed {
				t.Errorf("call = %+v, want researcher done at step 3 with key k1, landed %q", c, tc.landed)
			}
			if !strings.HasPrefix(c.Summary, `{"run_id":`) || len(c.Summary) > landing.MaxSummary+len("…") {
				t.Errorf("summary %q is not the message's first %d bytes", c.Summary, landing.MaxSummary)
			}
		})
	}
}

func TestOneLineKeepsTheFirstLineWithinMaxSummary(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"a short line is kept", "  done  ", "done"},
		{"a second line is cut and marked", "first\nsecond", "first …"},
		{"a long line is cut on a rune boundary", strings.Repeat("é", landing.MaxSummary), strings.Repeat("é", landing.MaxSummary/2) + "…"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := landing.OneLine(tc.in); got != tc.want {
				t.Errorf("OneLine = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestChildLost(t *testing.T) {
	cases := []struct {
		name    string
		loss    landing.ChildLoss
		quiet   bool
		why     string
		outcome trace.Outcome
		message string
	}{
		{"a child silent past the parent's wait is given up", landing.ChildSilent, false, "", trace.GaveUp, "researcher: the sub-agent sent no result within its slice of 3s"},
		{"a child stopped by the parent's quiet clock ends quiet", landing.ChildStopped, true, "the run stalled: nothing happened for 30s", trace.Quiet, "researcher: stopped: the run stalled: nothing happened for 30s"},
		{"a child stopped by a cancellation ends cancelled", landing.ChildStopped, false, "the run was cancelled", trace.Cancelled, "researcher: stopped: the run was cancelled"},
		{"a child whose run failed is an upstream error", landing.ChildFailed, false, "no worker", trace.UpstreamError, "researcher failed: no worker"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			outcome, message, toolMessage, c := landing.ChildLost(2, "researcher", "k1", tc.loss, tc.quiet, tc.why, 3*time.Second)
			if outcome != tc.outcome || message != tc.message {
				t.Errorf("ChildLost = %s %q, want %s %q", outcome, message, tc.outcome, tc.message)
			}
			if toolMessage != "error: "+tc.message+"; it was cancelled" {
				t.Errorf("tool message = %q", toolMessage)
			}
			want := landing.Call{Step: 2, Tool: "researcher", Key: "k1", Outcome: landing.Interrupted, State: landing.StateCancelled, Summary: tc.message}
			if c != want {
				t.Errorf("call = %+v, want %+v", c, want)
			}
		})
	}
}

func TestChildWork(t *testing.T) {
	cases := []struct {
		name string
		rec  trace.Record
		want string // "" for a record that is no work
	}{
		{"an attempt's start is work", trace.Record{Event: trace.AttemptStart, StepIndex: 1, Step: "model"}, "step 1: model"},
		{"an attempt's end is work, with its outcome", trace.Record{Event: trace.AttemptEnd, StepIndex: 1, Step: "tool:search", Outcome: trace.OK}, "step 1: tool:search ok"},
		{"a progress is work, with its words", trace.Record{Event: trace.Progress, StepIndex: 2, Step: "tool:fetch", Message: "3 of 5"}, "step 2: tool:fetch: 3 of 5"},
		{"a landing is work, with its cause", trace.Record{Event: trace.Landing, Cause: "budget"}, "landing (budget)"},
		{"a phase change is no work", trace.Record{Event: trace.PhaseChange}, ""},
		{"a backoff is no work", trace.Record{Event: trace.Backoff}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := landing.ChildWork(tc.rec)
			if ok != (tc.want != "") || got != tc.want {
				t.Errorf("ChildWork = %q, %t; want %q", got, ok, tc.want)
			}
		})
	}
}
