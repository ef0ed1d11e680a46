package budget

import "time"

// Slice carves a child budget for a sub-agent out of b's available time
// (remaining − reserve), never a fresh budget. The child gets
// min(want, available − keep), where keep is what the parent holds back to
// receive and use the answer; want ≤ 0 asks for all it can get. The child's
// deadline therefore never passes the parent's reserve, and it shares the
// parent's floor and estimates, with its own reserve by the default rule.
// It is refused ([ParentKeep]) when the child would get no more than the
// floor.
func (b *Budget) Slice(want, keep time.Duration) (*Budget, error) {
	now := time.Now()
	remaining := max(b.deadline.Sub(now), 0)
	left := remaining - b.reserve - max(keep, 0)
	if left <= b.floor {
		return nil, &RefusedError{Step: "agent", Rule: ParentKeep, Remaining: remaining,
			Left: max(remaining-b.reserve, 0), Need: max(keep, 0) + b.floor}
	}
	total := left
	if want > 0 {
		total = min(want, left)
	}
	if total <= b.floor {
		return nil, &RefusedError{Step: "agent", Rule: BelowFloor, Remaining: remaining, Left: total, Need: b.floor}
	}
	return start(now, Config{Total: total, Floor: b.floor, Estimates: b.est}), nil
}
