package budget

import (
	"context"
	"math"
	"time"
)

// A Lease is the time granted to one attempt. Its Granted duration is the
// attempt's timeout and the Budget-Remaining-Ms value sent with it.
type Lease struct {
	Granted   time.Duration // the attempt's timeout
	Remaining time.Duration // the run's remaining time when the lease was granted
	Deadline  time.Time     // when the lease ends: grant time + Granted
	Capped    bool          // reports whether the ceiling, not the budget, limited Granted
	Landing   bool          // reports whether the lease may spend the reserve
}

// Grant is the lease policy as a pure function of durations. available is
// what the lease may draw on (remaining − reserve for work, remaining for
// landing). A ceiling of zero or less means none. It returns the granted
// duration, whether the ceiling limited it, and the rule that refused it (0
// when granted; on a BelowP50 refusal granted is what would have been
// granted):
//
//	granted = min(ceiling, available − floor)
//	refused when available − floor ≤ 0 (BelowFloor) or granted < p50 (BelowP50)
func Grant(available, floor, ceiling, p50 time.Duration) (granted time.Duration, capped bool, refused Rule) {
	granted = room(available, floor)
	if granted <= 0 {
		return 0, false, BelowFloor
	}
	if ceiling > 0 && ceiling < granted {
		granted, capped = ceiling, true
	}
	if granted < p50 {
		return granted, capped, BelowP50
	}
	return granted, capped, 0
}

// Lease grants a work lease for one attempt of kind k (nil: a kind with no
// known latency), bounded by ceiling (zero or less: none). Work leases never
// touch the reserve. It returns a [*RefusedError] when the attempt should not
// be started at all. It does not allocate unless it refuses.
func (b *Budget) Lease(k *Kind, ceiling time.Duration) (Lease, error) {
	return b.lease(k, ceiling, false)
}

// LandingLease grants a lease that may spend the reserve, for the landing
// call and for cleanup such as cancel requests:
// granted = min(ceiling, remaining − floor).
func (b *Budget) LandingLease(k *Kind, ceiling time.Duration) (Lease, error) {
	return b.lease(k, ceiling, true)
}

func (b *Budget) lease(k *Kind, ceiling time.Duration, landing bool) (Lease, error) {
	now := time.Now()
	var p50 time.Duration
	if k != nil {
		p50 = k.P50()
	}
	l, refused := LeaseAt(max(b.deadline.Sub(now), 0), b.reserve, b.floor, ceiling, p50, landing)
	if refused != nil {
		if k != nil {
			refused.Step = k.Name()
		}
		return Lease{}, refused
	}
	l.Deadline = now.Add(l.Granted)
	return l, nil
}

// LeaseAt is the rule of [Budget.Lease] (landing false) and
// [Budget.LandingLease] (landing true) on the budget's figures at one
// instant, for a host that keeps them as data, such as a Temporal
// workflow, or a machine given time as an argument (issue 25): remaining
// is the run's time left, never negative. The Lease's Deadline is left
// zero, for the caller to set to its now plus Granted. A refusal is
// returned as a [*RefusedError] with no Step, and allocates; a grant does
// not.
func LeaseAt(remaining, reserve, floor, ceiling, p50 time.Duration, landing bool) (Lease, *RefusedError) {
	available := remaining
	if !landing {
		available -= reserve
	}
	granted, capped, rule := Grant(available, floor, ceiling, p50)
	switch rule {
	case BelowFloor:
		return Lease{}, &RefusedError{Rule: rule, Remaining: remaining, Left: max(available, 0), Need: floor}
	case BelowP50:
		return Lease{}, &RefusedError{Rule: rule, Remaining: remaining, Left: max(granted, 0), Need: p50}
	}
	return Lease{Granted: granted, Remaining: remaining, Capped: capped, Landing: landing}, nil
}

// Context returns a copy of parent that ends when the lease does. Its
// [context.Cause] is [ErrLeaseExpired] when the ceiling limited the lease and
// [ErrDeadline] when the run's time did; if parent ends first, parent's cause
// carries through.
func (l Lease) Context(parent context.Context) (context.Context, context.CancelFunc) {
	cause := ErrDeadline
	if l.Capped {
		cause = ErrLeaseExpired
	}
	return context.WithDeadlineCause(parent, l.Deadline, cause)
}

// Millis returns the Budget-Remaining-Ms value for this lease.
func (l Lease) Millis() string { return FormatRemaining(l.Granted) }

// room returns available − floor, saturated at the ends of the int64 range
// so that an absurd floor (Config allows any non-negative one) cannot wrap
// a refusal around into a lease of centuries.
func room(available, floor time.Duration) time.Duration {
	r := available - floor
	switch {
	case floor > 0 && r > available:
		return math.MinInt64
	case floor < 0 && r < available:
		return math.MaxInt64
	}
	return r
}
