package cost

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Money is an amount of US dollars, counted in whole picodollars
// (10⁻¹² USD), as [time.Duration] counts nanoseconds.
//
// Money is an integer, never a float, because a run adds up hundreds of
// attempts' costs and compares the sum with a cap: float64 sums drift (0.1
// + 0.2 ≠ 0.3), so a run could be refused, or let through, by a rounding
// error, and the two hosts could disagree after the same events. Integer
// sums are exact and the same everywhere. The unit is the picodollar
// because per-token prices are that fine: LiteLLM lists prices such as
// 5.46875e-07 USD a token, 546875 picodollars exactly, where micro- or
// nanodollars would round them. An int64 of picodollars holds up to about
// 9.2 million dollars; sums saturate there instead of wrapping.
type Money int64

// Units of [Money].
const (
	Picodollar  Money = 1
	Microdollar Money = 1e6
	Cent        Money = 1e10
	Dollar      Money = 1e12
)

// picoDigits is how many decimal places of a dollar a [Money] keeps.
const picoDigits = 12

// String writes m as dollars with as many decimals as it needs, at least
// two: "$0.50", "$0.000001234567", "-$1.00".
func (m Money) String() string {
	sign := ""
	u := uint64(m)
	if m < 0 {
		sign, u = "-", -u // the magnitude, which for MinInt64 only a uint64 holds
	}
	whole, frac := u/uint64(Dollar), u%uint64(Dollar)
	f := strconv.FormatUint(frac+uint64(Dollar), 10)[1:] // 12 digits, zero-padded
	f = strings.TrimRight(f, "0")
	for len(f) < 2 {
		f += "0"
	}
	return sign + "$" + strconv.FormatUint(whole, 10) + "." + f
}

// ParseUSD reads an amount of dollars written as a decimal number, such as
// --max-cost's "0.50", "2" or "1e-3", exactly: no float is involved. A
// leading "$" is allowed. Digits beyond the picodollar are rounded half
// up. A negative amount, one too large for [Money] or anything but a
// number is an error.
func ParseUSD(s string) (Money, error) {
	n, err := parseFixed(strings.TrimPrefix(s, "$"), picoDigits)
	if err != nil {
		return 0, fmt.Errorf("cost: bad amount %q: %w", s, err)
	}
	return Money(n), nil
}

var (
	errNotNumber = errors.New("not a number")
	errNegative  = errors.New("must not be negative")
	errTooLarge  = errors.New("too large")
)

// maxExp bounds the exponent parseFixed reads. Past it every digit is far
// beyond an int64 either way, so reading more digits could only cost time
// (a fuzzer's "1e999999999"), never change the answer.
const maxExp = 1 << 20

// parseFixed reads s, a decimal number in JSON's syntax (optional minus,
// digits, an optional fraction, an optional exponent; a fraction without
// leading digits, ".5", is accepted too), as an integer count of units of
// 10^−scale, rounding the first dropped digit half up. It never uses a
// float: each digit is placed at its power of ten and summed exactly.
func parseFixed(s string, scale int) (int64, error) {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	mant, exp, ok := splitDecimal(s)
	if !ok {
		return 0, errNotNumber
	}
	var v int64
	round := false
	for i := range len(mant) {
		d := int64(mant[i] - '0')
		// The power of ten of this digit, in units of 10^−scale.
		p := len(mant) - 1 - i + exp + scale
		switch {
		case p == -1:
			round = d >= 5
		case p < -1 || d == 0:
		case p > 18:
			return 0, errTooLarge
		default:
			add := d * pow10[p]
			if add/pow10[p] != d || v > math.MaxInt64-add {
				return 0, errTooLarge
			}
			v += add
		}
	}
	if round {
		if v == math.MaxInt64 {
			return 0, errTooLarge
		}
		v++
	}
	if neg && v != 0 {
		return 0, errNegative
	}
	return v, nil
}

// splitDecimal splits s into its digits (the integer and fraction parts
// run together) and the power of ten of the last of them, clamped to
// ±maxExp; ok is false when s is not a decimal number.
func splitDecimal(s string) (mant string, exp int, ok bool) {
	num, e, hasExp := strings.Cut(strings.ToLower(s), "e")
	whole, frac, _ := strings.Cut(num, ".")
	if !allDigits(whole) || !allDigits(frac) || whole+frac == "" {
		return "", 0, false
	}
	if hasExp {
		var eok bool
		if exp, eok = parseExp(e); !eok {
			return "", 0, false
		}
	}
	return whole + frac, exp - len(frac), true
}

// parseExp reads an exponent, optionally signed, clamped to ±maxExp.
func parseExp(e string) (int, bool) {
	sign := 1
	switch {
	case strings.HasPrefix(e, "-"):
		sign, e = -1, e[1:]
	case strings.HasPrefix(e, "+"):
		e = e[1:]
	}
	if e == "" || !allDigits(e) {
		return 0, false
	}
	n := 0
	for i := range len(e) {
		n = min(n*10+int(e[i]-'0'), maxExp)
	}
	return sign * n, true
}

func allDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

var pow10 = [...]int64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18}

// addSat returns a + b for non-negative a and b, saturated at
// math.MaxInt64 rather than wrapped, so that an absurd price or count
// makes a cost look large, never small.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// mulSat returns a·b saturated as addSat is; a negative factor counts as
// zero, so that a price written by hand below zero cannot pay money back.
func mulSat(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}
