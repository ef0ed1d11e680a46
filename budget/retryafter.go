package budget

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxRetryAfter is the longest server-directed delay taken as meaningful.
// Anything longer is rejected as absurd; [Budget.NextDelay] treats it as a
// delay that exceeds the budget.
const MaxRetryAfter = 7 * 24 * time.Hour

// RetryAfterError reports a retry-after-ms or Retry-After value that cannot
// be used. It matches [ErrBadRetryAfter].
type RetryAfterError struct {
	Header string // the header's canonical name
	Value  string // the value as received, truncated to 64 bytes
	Reason string // why it was rejected
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("budget: bad %s %q: %s", e.Header, e.Value, e.Reason)
}

// Is reports whether target is [ErrBadRetryAfter].
func (e *RetryAfterError) Is(target error) bool { return target == ErrBadRetryAfter }

const tooLarge = "longer than MaxRetryAfter"

func isTooLarge(err error) bool {
	var e *RetryAfterError
	return errors.As(err, &e) && e.Reason == tooLarge
}

// ParseRetryAfter reads the delay a server asked for. The non-standard
// retry-after-ms (milliseconds, fractions allowed) wins over Retry-After,
// which is either delta-seconds or an HTTP-date (RFC 9110 §10.2.3); a date
// is measured against now, and one in the past means no delay. It reports
// ok=false with a nil error when neither header is present, and a
// [*RetryAfterError] for a value that is not a finite, non-negative number
// or date no later than [MaxRetryAfter]. It never panics.
func ParseRetryAfter(h http.Header, now time.Time) (d time.Duration, ok bool, err error) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		d, err := parseDecimal("Retry-After-Ms", v, time.Millisecond)
		return d, err == nil, err
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false, nil
	}
	if s := strings.TrimSpace(v); s != "" && strings.ContainsRune("0123456789+-.", rune(s[0])) {
		d, err := parseDecimal("Retry-After", v, time.Second)
		return d, err == nil, err
	}
	t, perr := http.ParseTime(strings.TrimSpace(v))
	if perr != nil {
		return 0, false, retryAfterError("Retry-After", v, "neither delta-seconds nor an HTTP-date")
	}
	d = max(t.Sub(now), 0)
	if d > MaxRetryAfter {
		return 0, false, retryAfterError("Retry-After", v, tooLarge)
	}
	return d, true, nil
}

// parseDecimal parses a non-negative decimal number of units: digits with
// an optional fraction. strconv alone would also take "NaN", "Inf", hex
// and exponents, none of which a server means.
func parseDecimal(header, v string, unit time.Duration) (time.Duration, error) {
	s := strings.TrimSpace(v)
	if s == "" {
		return 0, retryAfterError(header, v, "empty")
	}
	if s[0] == '-' {
		return 0, retryAfterError(header, v, "negative")
	}
	dot := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
		case c == '.' && !dot && i > 0 && i < len(s)-1:
			dot = true
		default:
			return 0, retryAfterError(header, v, "not a non-negative decimal number")
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || f*float64(unit) > float64(MaxRetryAfter) {
		return 0, retryAfterError(header, v, tooLarge)
	}
	return time.Duration(f * float64(unit)), nil
}

func retryAfterError(header, v, reason string) error {
	if len(v) > 64 {
		v = v[:64]
	}
	return &RetryAfterError{Header: header, Value: v, Reason: reason}
}
