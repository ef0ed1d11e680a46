package main

import (
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/server/temporaltest"

	"github.com/glidepath/glidepath/budget/profile"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
)

// Issue 27, learn from cuts, on this host: --quiet 4s cuts a model whose
// first token comes 6s after its headers, and `run` keeps the cut in the
// profile at its queue. The next run starts from it (Input.Learned),
// allows the model twice the cut, and completes. The margins are wide:
// the test server's timers fire up to a second late, and a cut attempt
// ends when its activity hears of the cancel.
func TestASecondRunAllowsTheSilenceTheFirstWasCutAt(t *testing.T) {
	srv := sim.NewServer(&sim.Scenario{Rules: []sim.Rule{{FirstToken: 6 * time.Second}}})
	defer srv.Close()
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	startStoppableWorker(t, ts, "cut", "tools:\n  - name: search\n    builtin: search\n", "--model", "gpt-4.1", "--base-url", srv.URL)
	path := filepath.Join(t.TempDir(), "profile.json")
	runOnce := func() (code int, stderr string) {
		var stdout, errOut syncBuffer
		err := run(t.Context(), runArgs(ts, "cut", "--budget", "30s", "--quiet", "4s", "--profile", path, "q"), nil, &stdout, &errOut)
		return exitCode(err, &errOut), errOut.String()
	}

	if code, stderr := runOnce(); code != exitPartial {
		t.Fatalf("the first run: exit %d, want partial (quiet)\n%s", code, stderr)
	}
	p, err := profile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var cut time.Duration
	for _, k := range p.Summary(time.Now()).Kinds {
		if k.Kind == model.Kind {
			cut = k.Cut
		}
	}
	if cut < 4*time.Second || cut >= 6*time.Second {
		t.Fatalf("the model's cut after the first run is %v, want between Q and its first token's 6s\n%+v", cut, p.Summary(time.Now()))
	}

	t.Logf("the model's cut: %v", cut)

	code, stderr := runOnce()
	if code != exitOK {
		t.Fatalf("the second run: exit %d, want the model held for twice the cut (%v)\n%s", code, 2*cut, stderr)
	}
	if got := inputOf(t, ts, startedID(t, stderr)).Learned[model.Kind]; got != cut {
		t.Errorf("the second run learned %v of the model, want its cut %v", got, cut)
	}
}
