package budget

import (
	"context"
	"fmt"
	"time"

	"github.com/glidepath/glidepath/internal/ctxkey"
)

// DefaultFloor is the floor used when [Config.Floor] is zero.
const DefaultFloor = 50 * time.Millisecond

// Config describes a run budget. The zero value of every field but Total
// selects its documented default.
type Config struct {
	// Total is the whole budget B of the run. It must be positive.
	Total time.Duration

	// Reserve is the tail R kept for landing; no work lease may spend it.
	// Zero selects [DefaultReserve](Total). A reserve of Total or more is an
	// error, since it would leave no time for work.
	Reserve time.Duration

	// Floor is F: with less than this left, nothing is started.
	// Zero selects [DefaultFloor]. A floor of Total or more is an error.
	Floor time.Duration

	// Estimates holds per-kind latency estimates. Nil gives the budget a
	// fresh, private set; share one set across runs so that what one run
	// observed informs the next.
	Estimates *Estimates

	// Start is when the budget's clock started, if that is before [New] is
	// called: a process that spent its start-up before it could make its
	// budget spends that from the budget too (SPEC §3; issue 17: on a
	// starved machine `harness run` start-up took tens of ms before its
	// clock started). Zero, or an instant not before now, is now. It must
	// come from time.Now, so that it carries a monotonic reading.
	Start time.Time
}

// ConfigError reports a Config field that cannot be used.
type ConfigError struct {
	Field string
	Value time.Duration
	Err   error
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("budget: %s %v: %v", e.Field, e.Value, e.Err)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// DefaultReserve returns the default reserve for a total budget:
// max(10% of total, min(20s, 25% of total)). For 2m that is 20s, for 10s it
// is 2.5s, for 10m it is 60s.
func DefaultReserve(total time.Duration) time.Duration {
	return max(total/10, min(20*time.Second, total/4))
}

// A Budget is the time of one run: a deadline D on the monotonic clock, set
// once by [New] and never moved, a reserve R kept for landing and a floor F
// below which nothing starts. A Budget is safe for concurrent use; it is
// immutable after New apart from the shared [Estimates].
type Budget struct {
	start    time.Time
	deadline time.Time
	total    time.Duration
	reserve  time.Duration
	floor    time.Duration
	est      *Estimates

	// reserveSet reports whether Config.Reserve chose the reserve, so that
	// [Budget.Shorten] keeps a chosen one and recomputes a default one.
	reserveSet bool
}

// New starts a budget now, or at cfg.Start if that is earlier: its
// deadline is that instant + cfg.Total.
func New(cfg Config) (*Budget, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	now := time.Now()
	if !cfg.Start.IsZero() && cfg.Start.Before(now) {
		now = cfg.Start
	}
	return start(now, cfg), nil
}

// Validate returns a [*ConfigError] when cfg cannot be a budget: a total
// that is not positive, a reserve or floor that is negative or not below
// the total. [New] refuses such a cfg; a host that builds its frame from
// plain figures (temporal/durable) asks the same rule.
func (cfg *Config) Validate() error {
	switch {
	case cfg.Total <= 0:
		return &ConfigError{"total", cfg.Total, errNotPositive}
	case cfg.Reserve < 0:
		return &ConfigError{"reserve", cfg.Reserve, errNegative}
	case cfg.Floor < 0:
		return &ConfigError{"floor", cfg.Floor, errNegative}
	case cfg.Reserve >= cfg.Total:
		return &ConfigError{"reserve", cfg.Reserve, errNotBelowTotal}
	case cfg.Floor >= cfg.Total:
		return &ConfigError{"floor", cfg.Floor, errNotBelowTotal}
	}
	return nil
}

// start builds a budget from a start instant. now must carry a monotonic
// reading (it comes from time.Now) so that the deadline is immune to
// wall-clock steps.
func start(now time.Time, cfg Config) *Budget {
	b := &Budget{
		start:   now,
		total:   cfg.Total,
		reserve: cfg.Reserve,
		floor:   cfg.Floor,
		est:     cfg.Estimates,

		reserveSet: cfg.Reserve != 0,
	}
	b.deadline = now.Add(cfg.Total)
	if b.reserve == 0 {
		b.reserve = DefaultReserve(cfg.Total)
	}
	if b.floor == 0 {
		b.floor = DefaultFloor
	}
	if b.est == nil {
		b.est = NewEstimates()
	}
	return b
}

// Start returns when the budget began.
func (b *Budget) Start() time.Time { return b.start }

// Deadline returns D, the instant the run must have ended by.
func (b *Budget) Deadline() time.Time { return b.deadline }

// Total returns B.
func (b *Budget) Total() time.Duration { return b.total }

// Reserve returns R.
func (b *Budget) Reserve() time.Duration { return b.reserve }

// Floor returns F.
func (b *Budget) Floor() time.Duration { return b.floor }

// Estimates returns the latency estimates the budget leases against.
func (b *Budget) Estimates() *Estimates { return b.est }

// Remaining returns the time left until the deadline, never negative.
func (b *Budget) Remaining() time.Duration {
	return max(time.Until(b.deadline), 0)
}

// Spent returns the time since the budget started: the time that really
// passed, even past Total (a stopped process, a starved machine). Time is
// never rounded in the run's favour (SPEC §3); [Budget.Remaining] is what
// stays at zero.
func (b *Budget) Spent() time.Duration {
	return time.Since(b.start)
}

// Read returns the time spent and the time remaining from one reading of
// the clock: a record stamped with both says the same instant twice. Up to
// the deadline they add up to Total; past it, spent keeps growing (by as
// much as the run is late) and remaining stays zero.
func (b *Budget) Read() (spent, remaining time.Duration) {
	return b.ReadAt(time.Now())
}

// ReadAt is [Budget.Read] at the instant now, which must come from
// time.Now: a record stamped with now and with the budget at now says one
// instant, so that a run's result and its run_end record cannot disagree
// about whether it ended late (issue 24).
func (b *Budget) ReadAt(now time.Time) (spent, remaining time.Duration) {
	return now.Sub(b.start), max(b.deadline.Sub(now), 0)
}

// Until returns how long from now until spent of the budget has been
// spent: the wait for a timer that fires at that point of the run. It is
// zero or less once that point has passed.
func (b *Budget) Until(spent time.Duration) time.Duration {
	return time.Until(b.start.Add(spent))
}

// FractionSpent returns Spent/Total: from 0 at the start, 1 at the
// deadline, and more than 1 past it.
func (b *Budget) FractionSpent() float64 {
	if b.total <= 0 {
		return 1 // a budget shortened to nothing is all spent
	}
	return float64(b.Spent()) / float64(b.total)
}

// Available returns the time work may still spend: Remaining − Reserve,
// which is negative once the run is inside its reserve.
func (b *Budget) Available() time.Duration {
	return b.Remaining() - b.reserve
}

// ctxKey is shared with the harness's run context, which carries the
// run's budget without a context of WithBudget's.
type ctxKey = ctxkey.Budget

// WithBudget returns a copy of parent that carries b and ends at b's
// deadline with cause [ErrDeadline], unless parent ends first.
func WithBudget(parent context.Context, b *Budget) (context.Context, context.CancelFunc) {
	ctx := context.WithValue(parent, ctxKey{}, b)
	return context.WithDeadlineCause(ctx, b.deadline, ErrDeadline)
}

// FromContext returns the budget carried by ctx, if any.
func FromContext(ctx context.Context) (*Budget, bool) {
	b, ok := ctx.Value(ctxKey{}).(*Budget)
	return b, ok
}
