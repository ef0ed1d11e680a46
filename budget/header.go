package budget

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header is the HTTP header that carries a deadline across processes as
// remaining milliseconds: a monotonic instant means nothing in another
// process, a duration does.
const Header = "Budget-Remaining-Ms"

// MaxHeader is the largest Budget-Remaining-Ms accepted. Larger values are
// not clamped but rejected: no agent run lasts a year, so such a value is a
// bug or an attack, not a budget.
const MaxHeader = 365 * 24 * time.Hour

// HeaderError reports a malformed Budget-Remaining-Ms value. It matches
// [ErrBadHeader].
type HeaderError struct {
	Value  string // as received, truncated to 64 bytes
	Reason string
}

func (e *HeaderError) Error() string {
	return fmt.Sprintf("budget: bad %s %q: %s", Header, e.Value, e.Reason)
}

// Is reports whether target is [ErrBadHeader].
func (e *HeaderError) Is(target error) bool { return target == ErrBadHeader }

// FormatRemaining renders d as whole milliseconds, rounded down and never
// negative, so the receiver is never promised more than the sender has.
func FormatRemaining(d time.Duration) string {
	return strconv.FormatInt(max(d.Milliseconds(), 0), 10)
}

// ParseRemaining parses a Budget-Remaining-Ms value: an integer ≥ 0 of at
// most [MaxHeader]. Surrounding spaces are allowed; signs, fractions and
// anything else are a [*HeaderError]. It never panics.
func ParseRemaining(v string) (time.Duration, error) {
	s := strings.TrimSpace(v)
	if s == "" {
		return 0, headerError(v, "empty")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			if s[0] == '-' {
				return 0, headerError(v, "negative")
			}
			return 0, headerError(v, "not an integer")
		}
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms > MaxHeader.Milliseconds() {
		return 0, headerError(v, "larger than a year")
	}
	return time.Duration(ms) * time.Millisecond, nil
}

func headerError(v, reason string) error {
	if len(v) > 64 {
		v = v[:64]
	}
	return &HeaderError{Value: v, Reason: reason}
}

// Receive turns the Budget-Remaining-Ms of an incoming request into a local
// deadline on the receiver's monotonic clock: it returns a copy of parent
// that ends after min(header, limit). Without the header the limit alone
// applies; a limit of zero or less means the receiver sets none. The
// context's cause is [ErrDeadline] when the caller's budget ends it and
// [ErrLeaseExpired] when the receiver's own limit does. A malformed header
// is returned as a [*HeaderError] and no context is made.
func Receive(parent context.Context, h http.Header, limit time.Duration) (context.Context, context.CancelFunc, error) {
	v, present := h[http.CanonicalHeaderKey(Header)]
	if !present {
		if limit <= 0 {
			ctx, cancel := context.WithCancel(parent)
			return ctx, cancel, nil
		}
		ctx, cancel := context.WithTimeoutCause(parent, limit, ErrLeaseExpired)
		return ctx, cancel, nil
	}
	if len(v) != 1 {
		return nil, nil, headerError(strings.Join(v, ","), "sent more than once")
	}
	d, err := ParseRemaining(v[0])
	if err != nil {
		return nil, nil, err
	}
	if limit > 0 && d > limit {
		ctx, cancel := context.WithTimeoutCause(parent, limit, ErrLeaseExpired)
		return ctx, cancel, nil
	}
	ctx, cancel := context.WithTimeoutCause(parent, d, ErrDeadline)
	return ctx, cancel, nil
}
