package budget

import (
	"math"
	"time"
)

// AddSat returns a + b, saturated: when the sum does not fit in a
// [time.Duration] it is the nearest one that does, math.MaxInt64 (about 292
// years) above and math.MinInt64 below, never a wrapped value of the other
// sign. A worst case summed from many ceilings and sleeps (harness plan's)
// must stay larger than any budget it is compared with, however absurd the
// configuration; a wrapped sum would make it look small.
//
// The names are those of C++26's std::add_sat and std::mul_sat.
func AddSat(a, b time.Duration) time.Duration {
	switch {
	case b > 0 && a > math.MaxInt64-b:
		return math.MaxInt64
	case b < 0 && a < math.MinInt64-b:
		return math.MinInt64
	}
	return a + b
}

// MulSat returns d·n, saturated as [AddSat] is: a product that does not
// fit is math.MaxInt64 when d and n have the same sign and math.MinInt64
// when they do not. Zero times anything is zero.
func MulSat(d time.Duration, n int) time.Duration {
	if d == 0 || n == 0 {
		return 0
	}
	m := time.Duration(n)
	p := d * m
	// The product wrapped iff dividing it back does not give d. The one
	// wrap that division misses is MinInt64 · −1, which wraps to MinInt64
	// and divides back to MinInt64 (the Go spec defines that quotient).
	if p/m == d && (m != -1 || d != math.MinInt64) {
		return p
	}
	if (d < 0) == (m < 0) {
		return math.MaxInt64
	}
	return math.MinInt64
}
