package landing

import (
	"fmt"
	"time"
)

// Rounded rounds d for a person, to the nearest unit its size calls for:
// tenths of a second under 10s, always written (4.3s, 5.0s: a countdown
// keeps its width), whole seconds under a minute (12s), minutes and
// seconds under an hour (1m12s; 2m), hours and minutes above (1h5m).
// A value that rounds up to the next size takes its form: 9.96s is 10s,
// 59.6s is 1m, and 29.998764328s is 30s. Below zero is 0.0s. It is how
// the live line and a result's [Result.Line] say time spent; the budget
// note, which must never say there is more time than there is, truncates
// instead ([Human]).
func Rounded(d time.Duration) string {
	d = max(d, 0)
	switch {
	case d < 10*time.Second:
		d = d.Round(100 * time.Millisecond)
	case d < time.Hour:
		d = d.Round(time.Second)
	default:
		d = d.Round(time.Minute)
	}
	switch {
	case d < 10*time.Second:
		tenths := d / (100 * time.Millisecond)
		return fmt.Sprintf("%d.%ds", tenths/10, tenths%10)
	case d < time.Minute:
		return fmt.Sprintf("%ds", d/time.Second)
	case d < time.Hour:
		return withUnits(d/time.Minute, "m", d%time.Minute/time.Second, "s")
	}
	return withUnits(d/time.Hour, "h", d%time.Hour/time.Minute, "m")
}

// withUnits writes "1m12s", or "2m" when the smaller unit is zero.
func withUnits(big time.Duration, bigUnit string, small time.Duration, smallUnit string) string {
	if small == 0 {
		return fmt.Sprintf("%d%s", big, bigUnit)
	}
	return fmt.Sprintf("%d%s%d%s", big, bigUnit, small, smallUnit)
}

// Line is the one line a command prints for a person on standard error
// after a run's answer: its status, cause, steps, attempts, orphans and
// the time it spent of its budget, rounded ([Rounded]), e.g.
// "partial · cause budget · 1 steps · 5 attempts · 1 orphans · spent 0.9s
// of 1.2s".
func (r Result) Line() string {
	cause := "none"
	if r.Cause != "" {
		cause = string(r.Cause)
	}
	return fmt.Sprintf("%s · cause %s · %d steps · %d attempts · %d orphans · spent %s of %s",
		r.Status, cause, r.Steps, r.Attempts, r.Orphans,
		Rounded(time.Duration(r.Budget.SpentMs)*time.Millisecond), Rounded(time.Duration(r.Budget.TotalMs)*time.Millisecond))
}
