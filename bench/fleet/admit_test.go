package fleet_test

import (
	"testing"
	"time"

	"github.com/glidepath/glidepath/bench/fleet"
)

// A fleet larger than the process's admission limit: the runs beyond it
// are refused at once, each with its labeled result, before any admitted
// run could have waited out the server's Retry-After of 1s; every
// admitted run ends by B, complete (issue 25).
func TestAFleetPastItsAdmissionLimitIsRefusedAtOnceAndTheRestEndByB(t *testing.T) {
	const runs, limit = 300, 50
	res, err := fleet.Glidepath(t.Context(), fleet.Config{Runs: runs, Budget: 15 * time.Second, Admit: limit})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	if res.Labeled != runs || res.Errors != 0 {
		t.Errorf("%d of %d labeled, %d errors; want every run labeled, the refused ones too", res.Labeled, runs, res.Errors)
	}
	if res.Refused != runs-limit || res.Complete != limit {
		t.Errorf("%d refused, %d complete; want %d refused and the %d admitted complete", res.Refused, res.Complete, runs-limit, limit)
	}
	if res.RefusedEndMax >= time.Second {
		t.Errorf("the last refusal came at %v: want every one before an admitted run could wait out the 1s Retry-After", res.RefusedEndMax)
	}
	if res.Late != 0 || res.EndMax > res.Budget {
		t.Errorf("%d admitted runs ended late, the last at %v of %v", res.Late, res.EndMax, res.Budget)
	}
	if res.GoroutinesLeft != 0 {
		t.Errorf("%d goroutines left after the fleet", res.GoroutinesLeft)
	}
}
