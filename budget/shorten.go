package budget

import "time"

// Shorten returns the budget of a run that must also end by deadline: b
// itself when deadline is not before b's, else a budget that started when b
// did and ends at deadline. Its total is deadline − start, so the ladder's
// fractions are of the time the run really has; its reserve is b's when
// [Config.Reserve] chose one that is still below the new total, and the
// default rule on the new total otherwise; floor and estimates are b's.
//
// A caller's context whose deadline comes before start + B is such a
// deadline: a run embedded under it must land inside it, with its reserve
// taken from the time it has, rather than be cut off by it. The result is
// written once, like any budget, and b is not changed. A deadline already
// past gives a budget with nothing left, whose every lease is refused.
func (b *Budget) Shorten(deadline time.Time) *Budget {
	if !deadline.Before(b.deadline) {
		return b
	}
	total := max(deadline.Sub(b.start), 0)
	s := &Budget{start: b.start, deadline: b.start.Add(total), total: total,
		reserve: b.reserve, floor: b.floor, est: b.est, reserveSet: b.reserveSet}
	if !b.reserveSet || s.reserve >= total {
		s.reserve, s.reserveSet = DefaultReserve(total), false
	}
	return s
}

// Within returns b shortened to end within d from now ([Budget.Shorten]):
// the budget of a step that must be over by then, such as the landing call
// of a run its user cancelled, which is owed an answer within the reserve
// rather than within whatever the budget had left.
func (b *Budget) Within(d time.Duration) *Budget {
	return b.Shorten(time.Now().Add(d))
}
