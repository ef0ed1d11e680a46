package budget

import "time"

// Armable returns how long a timer armed now may be set for and still
// fire by a deadline remaining away, on a host whose timers fire up to
// resolution late: remaining − resolution, never negative. A resolution
// of zero or less, as in process, leaves remaining as it is.
func Armable(remaining, resolution time.Duration) time.Duration {
	return max(remaining-max(resolution, 0), 0)
}
