package budget

import "time"

// SliceKeep is what a parent holds back from a sub-agent's slice to
// receive and use its answer: its p95 for one model turn, and at least
// twice the floor, the least a parent needs to hear an answer and start
// one more call.
func SliceKeep(modelP95, floor time.Duration) time.Duration {
	return max(modelP95, MulSat(floor, 2))
}

// SliceGrant is the slice policy as a pure function of durations, the
// one rule for a sub-agent's share of its parent's time in process
// ([Budget.SliceLease]) and on Temporal (issue 25): with keep raised to
// [SliceKeep]'s least,
//
//	granted = min(want, remaining − reserve − keep)   (want ≤ 0: all it can get)
//	refused when remaining − reserve − keep ≤ floor (ParentKeep) or granted ≤ floor (BelowFloor)
//
// It returns the keep it applied, for the parent's own wait.
func SliceGrant(remaining, reserve, floor, want, keep time.Duration) (granted, kept time.Duration, capped bool, refused Rule) {
	kept = max(keep, MulSat(floor, 2))
	left := remaining - reserve - kept
	if left <= floor {
		return 0, kept, false, ParentKeep
	}
	granted = left
	if want > 0 && want < left {
		granted, capped = want, true
	}
	if granted <= floor {
		return granted, kept, capped, BelowFloor
	}
	return granted, kept, capped, 0
}

// SliceLease grants the lease of a sub-agent's run, of kind k (nil: none
// named), carved out of b's available time (remaining − reserve), never a
// fresh budget, by [SliceGrant]: granted = min(want, available − keep),
// where keep is what the parent holds back to receive and use the answer;
// want ≤ 0 asks for all it can get. The lease therefore ends before the
// parent's reserve begins, with keep to spare. It is refused ([ParentKeep])
// when the child would get no more than the floor. Unlike a work lease it
// is not refused below the kind's p50: a sub-agent lands inside whatever it
// gets, and its p50 is only what earlier slices happened to be.
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
// at one instant, as [LeaseAt] is [Budget.Lease]'s, by [SliceGrant]: the
// Lease's Deadline is left zero for the caller to set, and a refusal's
// Step says "agent".
func SliceLeaseAt(remaining, reserve, floor, want, keep time.Duration) (Lease, *RefusedError) {
	granted, kept, capped, rule := SliceGrant(remaining, reserve, floor, want, keep)
	switch rule {
	case 0:
		return Lease{Granted: granted, Remaining: remaining, Capped: capped}, nil
	case ParentKeep:
		return Lease{}, &RefusedError{Rule: rule, Step: "agent", Remaining: remaining,
			Left: max(remaining-reserve, 0), Need: kept + floor}
	}
	return Lease{}, &RefusedError{Rule: rule, Step: "agent", Remaining: remaining, Left: granted, Need: floor}
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
