package main

import (
	"fmt"
	"time"
)

// human rounds a duration for a person, as `harness run`'s summary line
// does (cmd/harness/status.go's human, in package main there: repeated).
func human(d time.Duration) string {
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

func withUnits(big time.Duration, bigUnit string, small time.Duration, smallUnit string) string {
	if small == 0 {
		return fmt.Sprintf("%d%s", big, bigUnit)
	}
	return fmt.Sprintf("%d%s%d%s", big, bigUnit, small, smallUnit)
}
