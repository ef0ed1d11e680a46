package harness_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/trace"
)

// A run that lands with no landing lease left (here: at its deadline) does
// not call summarize, whose model call could not be leased: it says so on
// the landing record in the words the Temporal workflow uses, and the
// harness summarizes (landing.Plan, issue 25). Before, summarize was called
// and its refused turn recorded as "landing call failed".
func TestALandingWithNoLeaseLeftSaysSoAndSummarizesItself(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := budget.New(budget.Config{Total: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var sink collect
		s, ctx, err := harness.Start(t.Context(), b, harness.Config{Task: "find cats", Sinks: []trace.Sink{&sink}})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // the deadline: nothing is left above the floor
		called := false
		res := s.Land(ctx, &harness.MustLandError{Cause: landing.CauseBudget}, func(context.Context, string) (string, error) {
			called = true
			return "the model's summary", nil
		})
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if called || res.Status != landing.Partial || res.Answer == "the model's summary" {
			t.Errorf("summarize called %v, result %+v; want the harness's summary, summarize not called", called, res)
		}
		lands := only(sink.all(), trace.Landing, "")
		if len(lands) != 1 || lands[0].Result != "harness" || lands[0].Message != "no time for a landing call: below floor" {
			t.Errorf("landing records %+v; want one, the harness's, saying there was no time for the call", lands)
		}
		if n := len(only(sink.all(), trace.Refused, "")); n != 0 {
			t.Errorf("%d refused records; want none: no landing call was asked for", n)
		}
	})
}
