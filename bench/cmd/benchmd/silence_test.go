package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/bench/battery"
)

// A healthy silent call is a loss when Glidepath cut it, and the loss
// says why: with nothing known of the call, the cold start's cost. Held
// for the allowance its known p95 gave it, it is none, and its row
// states E and where it came from (issue 27).
func TestAHealthyCutSaysWhetherAnythingWasKnown(t *testing.T) {
	sc, _ := battery.Lookup("reasoning-cold")
	baseline := battery.Result{System: battery.PerCall, Runs: 10, Answered: 10, ToolRequests: 10, Wall: battery.Quantiles{P50: 1512 * time.Millisecond}}
	for _, tc := range []struct {
		name string
		gp   battery.Result
		loss string // "" for none
		e    string
	}{
		{
			name: "a cold call cut at Q is the cold start's cost",
			gp: battery.Result{System: battery.Glidepath, Runs: 10, Labeled: 10, Partial: 10, Answered: 10, FalseStalls: 10,
				Allowance: battery.Allowance{Runs: 10, Source: "none"}, Wall: battery.Quantiles{P50: 501 * time.Millisecond}},
			loss: "cut 10 healthy calls (nothing known of it, no E: the quiet period alone applied, the cold start's cost)",
			e:    "none (Q alone)",
		},
		{
			name: "a call held for its allowance costs nothing",
			gp: battery.Result{System: battery.Glidepath, Runs: 10, Labeled: 10, Complete: 10, Answered: 10, ToolRequests: 10,
				Allowance: battery.Allowance{Runs: 10, P50: 1600 * time.Millisecond, Max: 1600 * time.Millisecond, Source: "profile"},
				Wall:      battery.Quantiles{P50: 1524 * time.Millisecond}},
			e: "1600ms (profile)",
		},
		{
			name: "a cut with no silent part says nothing of E",
			gp: battery.Result{System: battery.Glidepath, Runs: 10, Labeled: 10, Partial: 10, Answered: 10, FalseStalls: 10, ToolRequests: 10,
				Wall: battery.Quantiles{P50: 501 * time.Millisecond}},
			loss: "cut 10 healthy calls and landed 10 of 10 runs partial",
			e:    "—",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &report{}
			rows := costCells(sc, []battery.Result{baseline, tc.gp}, r)
			if !slices.Contains(rows[1], tc.e) || !slices.Contains(rows[0], "—") {
				t.Errorf("rows %q: want Glidepath's E %q, the baseline's —", rows, tc.e)
			}
			switch {
			case tc.loss == "" && len(r.losses) > 0:
				t.Errorf("losses %q, want none", r.losses)
			case tc.loss != "" && (len(r.losses) != 1 || !strings.Contains(r.losses[0], tc.loss)):
				t.Errorf("losses %q, want one saying %q", r.losses, tc.loss)
			}
		})
	}
}

// The repeated-call row is met only when every repeating run landed
// stuck within the bounded repeats and no run of distinct calls did.
func TestTheLoopRowNeedsBothHalves(t *testing.T) {
	stuck := battery.Result{Runs: 10, Stuck: 10, ToolRequests: 40}
	distinct := battery.Result{Runs: 10, Complete: 10, ToolRequests: 50}
	for _, tc := range []struct {
		name          string
		rep, distinct battery.Result
		met           bool
	}{
		{"both halves hold", stuck, distinct, true},
		{"a repeating run that did not land stuck", battery.Result{Runs: 10, Stuck: 9, ToolRequests: 40}, distinct, false},
		{"a distinct loop taken for stuck", stuck, battery.Result{Runs: 10, Stuck: 1, Complete: 9}, false},
		{"stuck only after more calls than the repeats allow", battery.Result{Runs: 10, Stuck: 10, ToolRequests: 41}, distinct, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &report{}
			loopTarget(r, tc.rep, tc.distinct)
			if len(r.spec) != 1 || r.spec[0].met != tc.met {
				t.Errorf("rows %+v, want one, met %v", r.spec, tc.met)
			}
		})
	}
}
