package harness_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools"
)

// B = 1m; the model calls two sub-agents at once, whose tools hang.
// child_a's ceiling is 2s: it lands on its budget at 1.45s, partial.
// child_b's is 30s: it is still at work when the parent is cancelled at
// 3s, and lands cancelled. The parent's boundary says what each brought
// back, in its own word, not "done".
func TestAParentsBoundarySaysWhichChildWasPartialAndWhichCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(nil)
		defer srv.Close()
		child := func(name string, ceiling time.Duration) *harness.Agent {
			return harness.NewAgent(tools.Spec{Name: name, Description: "Researches one question.", Ceiling: ceiling},
				harness.Config{Instructions: "You research one question.", Tools: registry(t, hangs("crawl"))})
		}
		reg := registry(t, child("child_a", 2*time.Second), child("child_b", 30*time.Second))
		ctx, cancel := context.WithCancelCause(t.Context())
		time.AfterFunc(3*time.Second, func() { cancel(harness.ErrInterrupted) })

		res, err := run(t, ctx, time.Minute, harness.Config{Task: "find cats", Quiet: time.Hour, Model: newModel(t, srv), Tools: reg}, nil)

		if err != nil || res.Cause != landing.CauseCancelled {
			t.Fatalf("parent %+v, %v; want landed, cancelled", res, err)
		}
		if want := "Cancelled at step 1: child_a partial (budget), child_b cancelled."; res.Boundary != want {
			t.Errorf("boundary %q\nwant     %q", res.Boundary, want)
		}
		if err := reg.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}
