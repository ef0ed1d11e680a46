package budget

import (
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"time"
)

// Backoff defaults.
const (
	DefaultBase = 250 * time.Millisecond
	DefaultCap  = 8 * time.Second
)

// Backoff is exponential backoff with full jitter: the n-th retry sleeps
// uniform(0, min(Cap, Base·2^(n−1))). The zero value uses the defaults.
type Backoff struct {
	Base time.Duration // zero: DefaultBase
	Cap  time.Duration // zero: DefaultCap

	// Rand returns a uniform integer in [0, n). Nil uses math/rand/v2,
	// which is safe for concurrent use; tests pass a seeded source.
	Rand func(n int64) int64

	// Resolution is the host's timer resolution (see Timers in the
	// package doc): a sleep shorter than it costs it, and the give-up
	// test counts that cost. Zero, as in process: a sleep costs what it
	// sleeps.
	Resolution time.Duration
}

// Cost returns what a sleep of d costs on the host: d, or the
// resolution when d is shorter (a Temporal server holds a short timer
// back until its timer processor's next pass, issue 26: a backoff
// recorded as 28ms took 1003ms).
func (bo Backoff) Cost(d time.Duration) time.Duration { return max(d, bo.Resolution) }

// Ceiling returns the upper bound of the sleep before retry n (n ≥ 1):
// min(Cap, Base·2^(n−1)).
func (bo Backoff) Ceiling(n int) time.Duration {
	base, limit := bo.Base, bo.Cap
	if base <= 0 {
		base = DefaultBase
	}
	if limit <= 0 {
		limit = DefaultCap
	}
	d := base
	for i := 1; i < n && d < limit; i++ {
		if d > limit/2 {
			return limit // doubling would pass the cap, or overflow
		}
		d *= 2
	}
	return min(d, limit)
}

// Jitter returns a full-jitter sleep for retry n: uniform in [0, Ceiling(n)].
func (bo Backoff) Jitter(n int) time.Duration {
	r := bo.Rand
	if r == nil {
		r = rand.Int64N
	}
	c := int64(bo.Ceiling(n))
	if c == math.MaxInt64 {
		return time.Duration(r(c)) // [0, c] would overflow; [0, c) loses one nanosecond
	}
	return time.Duration(r(c + 1))
}

// Source says where a backoff sleep came from.
type Source uint8

const (
	FromJitter     Source = iota + 1 // computed full-jitter backoff
	FromRetryAfter                   // the server's retry-after-ms or Retry-After
)

func (s Source) String() string {
	if s == FromRetryAfter {
		return "retry_after"
	}
	return "jitter"
}

// Reasons for giving up, as written in the trace's backoff record.
const (
	BackoffExceedsBudget    = "backoff_exceeds_budget"
	RetryAfterExceedsBudget = "retry_after_exceeds_budget"
)

// A Delay is the decision taken before a retry: sleep this long, or give up
// now because the sleep would outlast the budget.
type Delay struct {
	Sleep  time.Duration
	Source Source
	// Spread is the part of a server-directed Sleep that is jitter of our
	// own, added after the server's wait; 0 for a computed backoff.
	Spread time.Duration
	GiveUp bool   // reports whether the retry must not happen
	Reason string // why it gave up: BackoffExceedsBudget or RetryAfterExceedsBudget
}

// Decide is the sleep policy as a pure function: give up when
// sleep ≥ available − floor, since the retry after it could not get a lease.
func Decide(sleep time.Duration, src Source, available, floor time.Duration) Delay {
	return decide(sleep, sleep, src, available, floor)
}

// decide is [Decide] on a sleep whose cost on the host ([Backoff.Cost])
// is cost: the give-up test uses what the sleep really takes.
func decide(sleep, cost time.Duration, src Source, available, floor time.Duration) Delay {
	d := Delay{Sleep: sleep, Source: src}
	if cost >= room(available, floor) {
		d.GiveUp = true
		d.Reason = BackoffExceedsBudget
		if src == FromRetryAfter {
			d.Reason = RetryAfterExceedsBudget
		}
	}
	return d
}

// NextDelay decides the sleep before retry n (n ≥ 1) after a failed attempt
// whose response headers were h (nil for a transport error): it reads them
// with [ReadRetryAfter] at the time now and decides with [Backoff.Next] on
// the budget's available time. A malformed value is reported as the error.
func (b *Budget) NextDelay(bo Backoff, n int, h http.Header) (Delay, error) {
	ra, err := ReadRetryAfter(h, time.Now())
	return bo.Next(n, ra, b.Available(), b.floor), err
}

// A RetryAfter is what a failed attempt's response said about when to come
// back, as [ReadRetryAfter] read it: plain data, so that it crosses an
// activity boundary and a pure caller decides on it (issue 25).
type RetryAfter struct {
	Wait     time.Duration `json:",omitempty"` // the server's wait, when Given
	Given    bool          `json:",omitempty"` // a valid retry-after-ms or Retry-After was sent
	TooLarge bool          `json:",omitempty"` // one longer than MaxRetryAfter: do not come back soon
}

// ReadRetryAfter reads the retry-after of h at the time now (see
// [ParseRetryAfter]). A value too large to be meaningful is reported both
// as TooLarge and as the error.
func ReadRetryAfter(h http.Header, now time.Time) (RetryAfter, error) {
	d, ok, err := ParseRetryAfter(h, now)
	return RetryAfter{Wait: d, Given: ok, TooLarge: err != nil && isTooLarge(err)}, err
}

// Next is the sleep policy before retry n (n ≥ 1), as a pure function of
// what the server said and the time available (remaining − reserve). It
// gives up when the sleep's cost on the host ([Backoff.Cost]) would leave
// the retry no lease. A given Retry-After replaces the jittered backoff:
// the retry comes no sooner than the server asked, and a little later by
// a spread of full jitter (see [Backoff.Spread]), so that the clients a
// server turned away at one instant do not all come back at the next. A
// wait too large to be meaningful counts as exceeding the budget: the
// server asked us not to come back soon. Otherwise the sleep is
// [Backoff.Jitter]. Every draw is bo.Rand's, so a host that seeds it
// replays the same sleeps.
func (bo Backoff) Next(n int, ra RetryAfter, available, floor time.Duration) Delay {
	switch {
	case ra.Given:
		d := decide(ra.Wait, bo.Cost(ra.Wait), FromRetryAfter, available, floor)
		if !d.GiveUp {
			// The spread keeps the sleep under the room, and its cost
			// too: a cost of the resolution passed the test above.
			d.Spread = bo.Spread(n, ra.Wait, room(available, floor)-ra.Wait-1)
			d.Sleep += d.Spread
		}
		return d
	case ra.TooLarge:
		d := Decide(0, FromRetryAfter, 0, 0)
		d.Sleep = 0
		return d
	}
	sleep := bo.Jitter(n)
	return decide(sleep, bo.Cost(sleep), FromJitter, available, floor)
}

// Spread returns the jitter added after a server's wait of ra before retry
// n: uniform in [0, min(Ceiling(n), max(ra, Base), limit)], 0 when limit
// is not positive. A server's wait is a floor, not an appointment: a
// thousand clients told "Retry-After: 1" at one instant would otherwise
// come back within a millisecond of each other, and be turned away again.
// The spread is at most the larger of the server's wait and Base, so a
// short wait is not stretched into a long one, and limit keeps it from
// making a sleep that fits the budget one that does not.
func (bo Backoff) Spread(n int, ra, limit time.Duration) time.Duration {
	base := bo.Base
	if base <= 0 {
		base = DefaultBase
	}
	c := min(bo.Ceiling(n), max(ra, base), limit)
	if c <= 0 {
		return 0
	}
	r := bo.Rand
	if r == nil {
		r = rand.Int64N
	}
	return time.Duration(r(int64(c) + 1)) // c ≤ Cap, far from overflowing
}

// Wait sleeps for d.Sleep or until ctx ends, whichever is first, and then
// returns nil or context.Cause(ctx). It does not sleep a delay that gave up.
func (d Delay) Wait(ctx context.Context) error {
	if d.GiveUp {
		return nil
	}
	t := time.NewTimer(d.Sleep)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
