package hog_test

import (
	"os"
	"testing"
	"time"

	"github.com/glidepath/glidepath/bench/internal/hog"
)

func TestMain(m *testing.M) {
	hog.Main()
	os.Exit(m.Run())
}

// A hog spins, and ends by itself at its bound when nobody stops it: the
// CPU it spent is most of its life. Stop, after the bound, only waits.
func TestAHogSpinsUntilItsBoundAndNoLonger(t *testing.T) {
	const within = 300 * time.Millisecond
	start := time.Now()
	h, err := hog.Start(1, within)
	if err != nil {
		t.Fatal(err)
	}
	// Stop closes the hog's input; letting the bound pass first makes the
	// bound, not Stop, what ends it. A real process: synctest cannot wait
	// for it, so real time passes.
	time.Sleep(within)
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*within {
		t.Errorf("a hog bounded to %v took %v to stop", within, took)
	}
	// Generous: on a shared machine the hog gets what the others leave.
	if got := h.CPU(); got < within/10 {
		t.Errorf("the hog spent %v of CPU in %v, want it busy", got, within)
	}
}

// Stop ends hogs long before their bound, and a nil *Hogs stops nothing.
func TestStopEndsHogsBeforeTheirBound(t *testing.T) {
	h, err := hog.Start(2, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("Stop took %v", took)
	}
	var none *hog.Hogs
	if err := none.Stop(); err != nil {
		t.Errorf("nil Stop: %v", err)
	}
}

func TestStartRefusesAHogWithoutABound(t *testing.T) {
	if h, err := hog.Start(1, 0); err == nil {
		h.Stop()
		t.Fatal("Start(1, 0) started a hog with no bound")
	}
}
