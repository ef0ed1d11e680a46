package landing

import "time"

// Note returns the budget note the model reads at every turn: the time left
// until the deadline and until landing begins, the phase, and what the
// phase forbids. A model that knows it has ninety seconds picks a different
// plan from one that finds out by being cut off.
//
// A Ladder [New] did not make has no time to tell of: its note is the
// land phase's, with nothing left.
func (l *Ladder) Note() string {
	if l.unmade() {
		return NoteFor(Land, 0, 0)
	}
	b := l.b
	return NoteFor(l.Phase(), b.Remaining(), b.Available())
}

// NoteFor renders the budget note from its parts; [Ladder.Note] fills them in.
// In the land phase the time until landing is zero whatever the clock says,
// since a run that landed early (stalled, cancelled, out of steps) must not
// be told that landing is still minutes away.
func NoteFor(p Phase, remaining, beforeLanding time.Duration) string {
	if p == Land {
		beforeLanding = 0
	}
	// Joined rather than formatted: the note is made at every turn, and
	// fmt's reflection was most of its cost (BenchmarkStepCPU).
	return "Budget: " + Human(remaining) + " left until the deadline, " + Human(max(beforeLanding, 0)) +
		" until landing begins. Phase: " + p.String() + ". Not allowed now: " + p.forbids() + "."
}

// Human shortens a duration for reading, as the budget note does: whole
// seconds above ten seconds, tenths below, milliseconds below one second.
// It truncates, so nobody is told there is more time than there is.
func Human(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return d.Truncate(time.Second).String()
	case d >= time.Second:
		return d.Truncate(100 * time.Millisecond).String()
	}
	return d.Truncate(time.Millisecond).String()
}
