package budget

import "time"

// Figures are a run's budget as it stands when an event happens, read by
// a host off its clock and handed to a pure machine (a tool call's, a
// model turn's): the machine is given time, never reads it (issue 25).
type Figures struct {
	// Remaining is the time until the run's deadline, never negative; on
	// a host whose timers fire late, the time a timer armed now may use
	// ([Armable]), so that every lease granted from it ends in time.
	Remaining time.Duration
	Reserve   time.Duration
	Floor     time.Duration
	P50       time.Duration // the kind's p50 (a [Kind], [Latency]): a lease below it is refused
	Keep      time.Duration // what the run holds back from a sub-agent's slice
	// Ended reports that the run's work, or the turn's context, has ended
	// (its quiet clock, its wall, a cancellation, or the caller's own): no
	// further attempt or ask is made.
	Ended bool
}

// Available is the work time: remaining − reserve.
func (f Figures) Available() time.Duration { return f.Remaining - f.Reserve }

// FiguresOf reads b's figures now, with k's p50 (nil: none known); ended
// reports that the work has ended.
func FiguresOf(b *Budget, k *Kind, ended bool) Figures {
	f := Figures{Remaining: b.Remaining(), Reserve: b.Reserve(), Floor: b.Floor(), Ended: ended}
	if k != nil {
		f.P50 = k.P50()
	}
	return f
}
