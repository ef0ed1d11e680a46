package harness

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/landing"
)

// markUnavailable is the Toolset's, and the run's own for a tool whose
// ceiling is below its p50: a tool is named once, with the first reason.
func TestASessionNamesEachUnavailableToolOnceAndTheResultListsThem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := budget.New(budget.Config{Total: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		s, _, err := Start(t.Context(), b, Config{Task: "q"})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if got := s.Unavailable(); got != nil {
			t.Errorf("a fresh session lists %+v", got)
		}
		s.markUnavailable("fetch", "its tool server is down")
		s.markUnavailable("fetch", "said twice")
		s.markUnavailable("mcp server fs", "it did not come up")
		res := s.Answer("42")
		want := []landing.Unavailable{{Tool: "fetch", Why: "its tool server is down"}, {Tool: "mcp server fs", Why: "it did not come up"}}
		if len(res.Unavailable) != 2 || res.Unavailable[0] != want[0] || res.Unavailable[1] != want[1] {
			t.Errorf("unavailable %+v, want %+v", res.Unavailable, want)
		}
		if res.Status != landing.Complete {
			t.Errorf("status %s: a tool the run did without does not make its answer partial", res.Status)
		}
		var zero Session
		zero.markUnavailable("x", "y") // no panic on a Session never started
		if zero.Unavailable() != nil {
			t.Error("a zero Session lists unavailable tools")
		}
	})
}
