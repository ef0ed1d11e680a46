package landing

import (
	"testing"
	"time"
)

func TestRoundedRoundsForAPerson(t *testing.T) {
	cases := []struct {
		d    time.Duration
		want string
	}{
		{0, "0.0s"},
		{-time.Second, "0.0s"},
		{49 * time.Millisecond, "0.0s"},
		{50 * time.Millisecond, "0.1s"},
		{4349 * time.Millisecond, "4.3s"},
		{5 * time.Second, "5.0s"},
		{9949 * time.Millisecond, "9.9s"},
		{9950 * time.Millisecond, "10s"},
		{12499 * time.Millisecond, "12s"},
		{29998764328 * time.Nanosecond, "30s"}, // issue 9: once printed as it is
		{59499 * time.Millisecond, "59s"},
		{59500 * time.Millisecond, "1m"},
		{72 * time.Second, "1m12s"},
		{2 * time.Minute, "2m"},
		{59*time.Minute + 59499*time.Millisecond, "59m59s"},
		{59*time.Minute + 59500*time.Millisecond, "1h"},
		{time.Hour + 5*time.Minute + 29*time.Second, "1h5m"},
		{time.Hour + 5*time.Minute + 30*time.Second, "1h6m"},
		{25 * time.Hour, "25h"},
	}
	for _, tc := range cases {
		if got := Rounded(tc.d); got != tc.want {
			t.Errorf("Rounded(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestALineSaysHowTheRunEndedAndWhatItSpent(t *testing.T) {
	cases := []struct {
		res  Result
		want string
	}{
		{Result{Status: Complete, Steps: 2, Attempts: 7, Budget: BudgetReport{TotalMs: 20000, SpentMs: 2018}},
			"complete · cause none · 2 steps · 7 attempts · 0 orphans · spent 2.0s of 20s"},
		{Result{Status: Partial, Cause: CauseBudget, Steps: 1, Attempts: 5, Orphans: 1, Budget: BudgetReport{TotalMs: 1200, SpentMs: 855}},
			"partial · cause budget · 1 steps · 5 attempts · 1 orphans · spent 0.9s of 1.2s"},
	}
	for _, tc := range cases {
		if got := tc.res.Line(); got != tc.want {
			t.Errorf("Line() = %q, want %q", got, tc.want)
		}
	}
}
