package budget

import "time"

// SliceLease grants the lease of a sub-agent's run, of kind k (nil: none
// named), carved out of b's available time (remaining − reserve), never a
// fresh budget: granted = min(want, available − keep), where keep is what
// the parent holds back to receive and use the answer; want ≤ 0 asks for
// all it can get; a keep below twice the floor counts as twice the floor,
// the least a parent needs to hear an answer and start one more call. The
// lease therefore ends before the parent's reserve begins, with keep to
// spare. It is refused ([ParentKeep]) when the child
// would get no more than the floor. Unlike a work lease it is not refused
// below the kind's p50: a sub-agent lands inside whatever it gets, and its
// p50 is only what earlier slices happened to be.
//
// Its Budget-Remaining-Ms, the child's total, is Granted; [Budget.Child]
// makes the child's budget from it.
func (b *Budget) SliceLease(k *Kind, want, keep time.Duration) (Lease, error) {
	now := time.Now()
	l, refused := SliceLeaseAt(max(b.deadline.Sub(now), 0), b.reserve, b.floor, want, keep)
	if refused != nil {
		if k != nil {
			refused.Step = k.Name()
		}
		return Lease{}, refused
	}
	l.Deadline = now.Add(l.Granted)
	return l, nil
}

// SliceLeaseAt is the rule of [Budget.SliceLease] on the budget's figures
// at one instant, as [LeaseAt] is [Budget.Lease]'s: the Lease's Deadline
// is left zero for the caller to set, and a refusal's Step says "agent".
func SliceLeaseAt(remaining, reserve, floor, want, keep time.Duration) (Lease, *RefusedError) {
	keep = max(keep, MulSat(floor, 2))
	left := remaining - reserve - keep
	if left <= floor {
		return Lease{}, &RefusedError{Rule: ParentKeep, Step: "agent", Remaining: remaining,
			Left: max(remaining-reserve, 0), Need: keep + floor}
	}
	l := Lease{Granted: left, Remaining: remaining}
	if want > 0 && want < left {
		l.Granted, l.Capped = want, true
	}
	if l.Granted <= floor {
		return Lease{}, &RefusedError{Rule: BelowFloor, Step: "agent", Remaining: remaining, Left: l.Granted, Need: floor}
	}
	return l, nil
}

// Child returns the budget of a sub-agent that runs on l, a lease of b:
// it started when the lease was granted and ends when the lease does, so
// its total is the lease's Granted, the Budget-Remaining-Ms a remote child
// would have been sent; its reserve follows the default rule on that
// total, and it shares b's floor and estimates, so that what the child
// observes informs the parent.
func (b *Budget) Child(l Lease) *Budget {
	total := max(l.Granted, 0)
	return &Budget{start: l.Deadline.Add(-total), deadline: l.Deadline, total: total,
		reserve: DefaultReserve(total), floor: b.floor, est: b.est}
}

// Slice carves a child budget for a sub-agent out of b's available time:
// [Budget.SliceLease], then [Budget.Child]. The child gets
// min(want, available − keep); it is refused ([ParentKeep]) when it would
// get no more than the floor.
func (b *Budget) Slice(want, keep time.Duration) (*Budget, error) {
	l, err := b.SliceLease(nil, want, keep)
	if err != nil {
		return nil, err
	}
	return b.Child(l), nil
}

// WithEstimates returns b with other latency estimates, and the same
// deadline, reserve and floor: the budget of a sub-agent whose latencies
// are its own, such as one on another model than its parent's.
func (b *Budget) WithEstimates(est *Estimates) *Budget {
	c := *b
	c.est = est
	return &c
}
