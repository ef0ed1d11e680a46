package main

import (
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/bench/fleet"
)

// The idle row's shortfall says what an idle run's heap is made of, from
// the benchmark's figures, not from numbers of its own (issue 20, item 5).
func TestTheIdleShortfallSaysWhatARunsHeapIsMadeOf(t *testing.T) {
	res := result{Name: "IdleRuns", Metrics: map[string]float64{
		"own-heap-B/idle-run": 6144, "caller-heap-B/idle-sdk-call": 512,
		"sdk-heap-B/idle-run": 8192, "sdk-heap-B/idle-sdk-call": 7168,
		"http-heap-B/idle-run": 15360, "http-heap-B/idle-sdk-call": 14336,
		"slack-heap-B/idle-run": 4096, "slack-heap-B/idle-sdk-call": 3072,
		"other-heap-B/idle-run": 0, "other-heap-B/idle-sdk-call": 0,
	}}
	got := idleHeapBreakdown(res)
	for _, want := range []string{"6 KB against the bare loop's own 0.5 KB", "openai-go's 8 KB against 7 KB", "net/http's 15 KB against 14 KB", "sit in 4 KB against 3 KB"} {
		if !strings.Contains(got, want) {
			t.Errorf("breakdown %q does not say %q", got, want)
		}
	}
	if strings.Contains(got, "none of these") {
		t.Errorf("breakdown %q names an other share that is zero", got)
	}
}

// The start row's shortfall says, from the fleets' own measures, what a
// run spent until its last first request went out beside the SDK, and
// names the retries' competition only for a start that outlasted the
// server's Retry-After (issue 20, item 4).
func TestTheStartShortfallSaysWhatAFleetsStartIsMadeOf(t *testing.T) {
	gp := fleet.Result{FirstSpread: 300 * time.Millisecond, StartCPUPerRun: 250 * time.Microsecond, StartBytesPerRun: 64 * 1024, StartAllocsPerRun: 450}
	sdk := fleet.Result{FirstSpread: 100 * time.Millisecond, StartCPUPerRun: 150 * time.Microsecond, StartBytesPerRun: 48 * 1024, StartAllocsPerRun: 300}
	got := startShortfall(gp, sdk, sdk)
	for _, want := range []string{"250 µs of CPU and allocated 64 KB in 450 objects", "same messages 150 µs, 48 KB in 300 objects"} {
		if !strings.Contains(got, want) {
			t.Errorf("shortfall %q does not say %q", got, want)
		}
	}
	if strings.Contains(got, "compete with the retries") {
		t.Errorf("a start within the Retry-After is said to compete with retries: %q", got)
	}
	gp.FirstSpread = 2 * time.Second
	if got := startShortfall(gp, sdk, sdk); !strings.Contains(got, "compete with the retries") {
		t.Errorf("a start of %v, past the Retry-After, does not say its first requests met the retries: %q", gp.FirstSpread, got)
	}
	gp.AwayCPUPerRun, sdk.AwayCPUPerRun = 300*time.Microsecond, 200*time.Microsecond
	if got := startShortfall(gp, sdk, sdk); !strings.Contains(got, "until every run was turned away, 300 µs against 200 µs (1.50×)") {
		t.Errorf("shortfall %q does not give the whole start's CPU beside the SDK's", got)
	}
	if got := startCost(fleet.Result{}); got != "—" {
		t.Errorf("the start cost of a fleet that did not send every first request is %q, want —", got)
	}
}
