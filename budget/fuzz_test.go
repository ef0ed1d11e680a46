package budget_test

import (
	"errors"
	"math"
	"math/big"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
)

// The fuzz targets check the parsers and the pure policies against
// independent oracles (exact rational or big-integer arithmetic), so that a
// rounding or overflow slip in the package cannot hide behind the same slip
// in the test. Seeds live in testdata/fuzz/<FuzzName>/.

// fuzzNow is the instant HTTP-dates are measured against. It is fixed so
// that a failing input replays exactly.
var fuzzNow = time.Date(2025, time.June, 1, 12, 0, 0, 0, time.UTC)

// decimal is the only number syntax a server means by retry-after-ms or
// delta-seconds: digits with an optional fraction that has digits on both
// sides of the point.
var decimal = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

func FuzzParseRetryAfter(f *testing.F) {
	f.Fuzz(func(t *testing.T, ms string, setMs bool, ra string, setRa bool) {
		h := http.Header{}
		if setMs {
			h.Set("Retry-After-Ms", ms)
		}
		if setRa {
			h.Set("Retry-After", ra)
		}
		d, ok, err := budget.ParseRetryAfter(h, fuzzNow)

		if ok && err != nil {
			t.Fatalf("ok with error %v", err)
		}
		if ok && (d < 0 || d > budget.MaxRetryAfter) {
			t.Fatalf("ok with d = %v, outside [0, %v]", d, budget.MaxRetryAfter)
		}
		if !ok && d != 0 {
			t.Fatalf("not ok but d = %v", d)
		}
		if err != nil {
			if !errors.Is(err, budget.ErrBadRetryAfter) {
				t.Fatalf("error %v does not match ErrBadRetryAfter", err)
			}
			re, isRA := errors.AsType[*budget.RetryAfterError](err)
			if !isRA {
				t.Fatalf("error %T is not a *RetryAfterError", err)
			}
			if len(re.Value) > 64 {
				t.Fatalf("error quotes %d bytes of the value, want at most 64", len(re.Value))
			}
		}

		// A header that is absent or empty is not there; the one in force is
		// retry-after-ms when it has a value, else Retry-After.
		name, v, unit := "", "", time.Duration(0)
		switch {
		case setMs && ms != "":
			name, v, unit = "Retry-After-Ms", ms, time.Millisecond
		case setRa && ra != "":
			name, v, unit = "Retry-After", ra, time.Second
		default:
			if ok || err != nil {
				t.Fatalf("no header, got %v, %v, %v; want 0, false, nil", d, ok, err)
			}
			return
		}
		if !ok && err == nil {
			t.Fatalf("%s %q present but neither used nor reported", name, v)
		}
		if re, _ := errors.AsType[*budget.RetryAfterError](err); re != nil && re.Header != name {
			t.Fatalf("error names header %q, want %q, the one in force", re.Header, name)
		}

		s := strings.TrimSpace(v)
		switch {
		case decimal.MatchString(s):
			checkDecimal(t, s, unit, d, ok)
		case s == "" || unit == time.Millisecond || strings.ContainsRune("0123456789+-.", rune(s[0])):
			if ok {
				t.Fatalf("%s %q is not a non-negative decimal number, but parsed as %v", name, v, d)
			}
		default:
			checkDate(t, v, s, d, ok)
		}
	})
}

// checkDecimal compares a parsed decimal delay with its exact value.
func checkDecimal(t *testing.T, s string, unit time.Duration, d time.Duration, ok bool) {
	t.Helper()
	// Only the significant digits go to big.Rat, whose decimal conversion
	// is quadratic: the fuzzer's megabyte of zeros would stall it. Twenty
	// integer digits exceed MaxRetryAfter in either unit, and forty digits
	// of fraction are far below float64's reach.
	whole, frac, _ := strings.Cut(s, ".")
	whole = strings.TrimLeft(whole, "0")
	if len(whole) > 20 {
		if ok {
			t.Fatalf("%q·%v is longer than MaxRetryAfter but parsed as %v", s, unit, d)
		}
		return
	}
	exact, valid := new(big.Rat).SetString("0" + whole + "." + frac[:min(len(frac), 40)] + "0")
	if !valid {
		t.Fatalf("oracle cannot read %q", s)
	}
	exact.Mul(exact, new(big.Rat).SetInt64(int64(unit)))
	maxRA := new(big.Rat).SetInt64(int64(budget.MaxRetryAfter))
	if exact.Cmp(maxRA) <= 0 {
		if !ok {
			t.Fatalf("%q·%v = %sns is within MaxRetryAfter but was rejected", s, unit, exact.FloatString(3))
		}
		// The parse goes through float64, which holds a nanosecond count up
		// to MaxRetryAfter within 0.2ns, and then truncates: "1.00000001"
		// seconds comes out as 1.000000009s. Off by less than 2ns is the
		// best float64 can do; more would be a real error.
		off := new(big.Rat).Sub(exact, new(big.Rat).SetInt64(int64(d)))
		if off.Abs(off).Cmp(big.NewRat(2, 1)) >= 0 {
			t.Fatalf("%q·%v parsed as %v, want %sns", s, unit, d, exact.FloatString(3))
		}
		if exact.IsInt() && !strings.Contains(s, ".") && d != time.Duration(exact.Num().Int64()) {
			t.Fatalf("whole %q·%v parsed as %v, want exactly %v", s, unit, d, time.Duration(exact.Num().Int64()))
		}
		return
	}
	if ok && exact.Cmp(new(big.Rat).Add(maxRA, big.NewRat(1, 1))) > 0 {
		t.Fatalf("%q·%v is longer than MaxRetryAfter but parsed as %v", s, unit, d)
	}
}

// checkDate compares a Retry-After that is not a number with its reading as
// an HTTP-date measured against fuzzNow.
func checkDate(t *testing.T, v, s string, d time.Duration, ok bool) {
	t.Helper()
	at, err := http.ParseTime(s)
	if err != nil {
		if ok {
			t.Fatalf("Retry-After %q is no HTTP-date, but parsed as %v", v, d)
		}
		return
	}
	want := max(at.Sub(fuzzNow), 0)
	switch {
	case want > budget.MaxRetryAfter && ok:
		t.Fatalf("Retry-After %q is %v away, past MaxRetryAfter, but parsed as %v", v, want, d)
	case want <= budget.MaxRetryAfter && (!ok || d != want):
		t.Fatalf("Retry-After %q parsed as %v, %v; want %v", v, d, ok, want)
	}
}

func FuzzParseRemaining(f *testing.F) {
	f.Fuzz(func(t *testing.T, v string) {
		d, err := budget.ParseRemaining(v)

		// The oracle: surrounding space trimmed, ASCII digits only, a value
		// no larger than MaxHeader.
		s := strings.TrimSpace(v)
		valid := s != "" && strings.Trim(s, "0123456789") == ""
		n := int64(-1)
		if sig := strings.TrimLeft(s, "0"); valid && len(sig) <= 18 { // 18 digits always fit an int64
			n, _ = strconv.ParseInt("0"+sig, 10, 64)
		}
		valid = valid && n >= 0 && n <= budget.MaxHeader.Milliseconds()

		if !valid {
			if err == nil {
				t.Fatalf("ParseRemaining(%q) = %v, want an error", v, d)
			}
			if !errors.Is(err, budget.ErrBadHeader) {
				t.Fatalf("ParseRemaining(%q) error %v does not match ErrBadHeader", v, err)
			}
			if he, _ := errors.AsType[*budget.HeaderError](err); he == nil || len(he.Value) > 64 {
				t.Fatalf("ParseRemaining(%q) error %#v: want a *HeaderError quoting at most 64 bytes", v, err)
			}
			if d != 0 {
				t.Fatalf("ParseRemaining(%q) failed but returned %v", v, d)
			}
			return
		}
		if err != nil {
			t.Fatalf("ParseRemaining(%q): %v", v, err)
		}
		if want := time.Duration(n) * time.Millisecond; d != want {
			t.Fatalf("ParseRemaining(%q) = %v, want %v", v, d, want)
		}
		if d < 0 || d > budget.MaxHeader || d%time.Millisecond != 0 {
			t.Fatalf("ParseRemaining(%q) = %v: not whole milliseconds in [0, MaxHeader]", v, d)
		}
		if back, err := budget.ParseRemaining(budget.FormatRemaining(d)); back != d || err != nil {
			t.Fatalf("round trip of %v gave %v, %v", d, back, err)
		}
	})
}

func FuzzFormatRemaining(f *testing.F) {
	f.Fuzz(func(t *testing.T, n int64) {
		d := time.Duration(n)
		s := budget.FormatRemaining(d)
		if s == "" || strings.Trim(s, "0123456789") != "" {
			t.Fatalf("FormatRemaining(%v) = %q, want digits only", d, s)
		}
		got, err := budget.ParseRemaining(s)
		switch {
		case d < 0:
			if s != "0" || got != 0 || err != nil {
				t.Fatalf("negative %v sent as %q and read back as %v, %v; want 0", d, s, got, err)
			}
		case d <= budget.MaxHeader:
			if want := d.Truncate(time.Millisecond); got != want || err != nil {
				t.Fatalf("%v sent as %q and read back as %v, %v; want %v", d, s, got, err, want)
			}
		default:
			// Past MaxHeader the receiver rejects it, unless truncating to
			// whole milliseconds brought it back to MaxHeader.
			if err != nil && !errors.Is(err, budget.ErrBadHeader) {
				t.Fatalf("%v read back with error %v, want ErrBadHeader", d, err)
			}
			if err == nil && got != d.Truncate(time.Millisecond) {
				t.Fatalf("%v sent as %q and read back as %v", d, s, got)
			}
		}
		if err == nil && got > max(d, 0) {
			t.Fatalf("%v sent as %q promises the receiver %v, more than the sender has", d, s, got)
		}
	})
}

// room returns available − floor saturated to the int64 range, the
// mathematically right value wherever it is representable.
func room(available, floor time.Duration) time.Duration {
	r := new(big.Int).Sub(big.NewInt(int64(available)), big.NewInt(int64(floor)))
	switch {
	case r.Cmp(big.NewInt(math.MaxInt64)) > 0:
		return math.MaxInt64
	case r.Cmp(big.NewInt(math.MinInt64)) < 0:
		return math.MinInt64
	}
	return time.Duration(r.Int64())
}

func FuzzGrant(f *testing.F) {
	f.Fuzz(func(t *testing.T, a, fl, c, p int64) {
		available, floor, ceiling, p50 := time.Duration(a), time.Duration(fl), time.Duration(c), time.Duration(p)
		granted, capped, rule := budget.Grant(available, floor, ceiling, p50)
		call := func() string {
			return "Grant(available " + available.String() + ", floor " + floor.String() +
				", ceiling " + ceiling.String() + ", p50 " + p50.String() + ")"
		}

		r := room(available, floor)
		if r <= 0 {
			if rule != budget.BelowFloor || granted != 0 || capped {
				t.Fatalf("%s = %v, %v, %v; available − floor = %v ≤ 0, want 0, false, BelowFloor", call(), granted, capped, rule, r)
			}
			return
		}
		if rule == budget.BelowFloor {
			t.Fatalf("%s refused BelowFloor with available − floor = %v > 0", call(), r)
		}
		if granted <= 0 {
			t.Fatalf("%s granted %v, want > 0", call(), granted)
		}
		if granted > r {
			t.Fatalf("%s granted %v, more than available − floor = %v", call(), granted, r)
		}
		if ceiling > 0 && granted > ceiling {
			t.Fatalf("%s granted %v, more than the ceiling", call(), granted)
		}
		wantCapped, want := false, r
		if ceiling > 0 && ceiling < r {
			wantCapped, want = true, ceiling
		}
		if granted != want {
			t.Fatalf("%s granted %v, want %v", call(), granted, want)
		}
		if capped != wantCapped {
			t.Fatalf("%s capped = %v, want %v", call(), capped, wantCapped)
		}
		switch {
		case rule == 0 && granted < p50:
			t.Fatalf("%s granted %v below p50", call(), granted)
		case rule == budget.BelowP50 && granted >= p50:
			t.Fatalf("%s refused BelowP50 although %v meets it", call(), granted)
		case rule != 0 && rule != budget.BelowP50:
			t.Fatalf("%s refused by %v", call(), rule)
		}
	})
}

func FuzzDecide(f *testing.F) {
	f.Fuzz(func(t *testing.T, sleep int64, src uint8, available, floor int64) {
		source := budget.Source(src)
		d := budget.Decide(time.Duration(sleep), source, time.Duration(available), time.Duration(floor))
		if d.Sleep != time.Duration(sleep) || d.Source != source {
			t.Fatalf("Decide changed the sleep or its source: %+v", d)
		}
		r := room(time.Duration(available), time.Duration(floor))
		if want := time.Duration(sleep) >= r; d.GiveUp != want {
			t.Fatalf("Decide(%v, available %v, floor %v).GiveUp = %v, want %v (available − floor = %v)",
				time.Duration(sleep), time.Duration(available), time.Duration(floor), d.GiveUp, want, r)
		}
		want := ""
		switch {
		case d.GiveUp && source == budget.FromRetryAfter:
			want = budget.RetryAfterExceedsBudget
		case d.GiveUp:
			want = budget.BackoffExceedsBudget
		}
		if d.Reason != want {
			t.Fatalf("Decide %+v: reason %q, want %q", d, d.Reason, want)
		}
	})
}

// wantCeiling is min(Cap, Base·2^(n−1)) in exact arithmetic, with the
// defaults for non-positive fields and n < 1 read as n = 1.
func wantCeiling(base, limit time.Duration, n int) time.Duration {
	if base <= 0 {
		base = budget.DefaultBase
	}
	if limit <= 0 {
		limit = budget.DefaultCap
	}
	// Base ≥ 1ns, so 2^63 already passes any Cap: larger shifts change nothing.
	var shift uint
	if n > 1 {
		shift = uint(min(n-1, 64))
	}
	d := new(big.Int).Lsh(big.NewInt(int64(base)), shift)
	if d.Cmp(big.NewInt(int64(limit))) >= 0 {
		return limit
	}
	return time.Duration(d.Int64())
}

func FuzzBackoff(f *testing.F) {
	f.Fuzz(func(t *testing.T, base, limit int64, n int, pick uint64) {
		bo := budget.Backoff{Base: time.Duration(base), Cap: time.Duration(limit)}
		c := bo.Ceiling(n)
		if want := wantCeiling(bo.Base, bo.Cap, n); c != want {
			t.Fatalf("%+v.Ceiling(%d) = %v, want %v", bo, n, c, want)
		}
		if c <= 0 {
			t.Fatalf("%+v.Ceiling(%d) = %v, want > 0", bo, n, c)
		}
		if n < math.MaxInt {
			if next := bo.Ceiling(n + 1); next < c {
				t.Fatalf("%+v.Ceiling(%d) = %v, less than Ceiling(%d) = %v", bo, n+1, next, n, c)
			}
		}

		// Rand is asked for a uniform integer in [0, k): k must be positive
		// (math/rand panics otherwise) and k − 1 no more than the ceiling.
		for _, choose := range []func(k int64) int64{
			func(k int64) int64 { return 0 },
			func(k int64) int64 { return k - 1 },
			func(k int64) int64 { return int64(pick % uint64(k)) },
		} {
			bo.Rand = func(k int64) int64 {
				if k <= 0 || k-1 > int64(c) {
					t.Fatalf("Backoff{Base: %v, Cap: %v}.Jitter(%d) asked Rand for [0, %d), ceiling %v", bo.Base, bo.Cap, n, k, c)
				}
				return choose(k)
			}
			if j := bo.Jitter(n); j < 0 || j > c {
				t.Fatalf("Backoff{Base: %v, Cap: %v}.Jitter(%d) = %v, outside [0, %v]", bo.Base, bo.Cap, n, j, c)
			}
		}
		bo.Rand = nil
		if j := bo.Jitter(n); j < 0 || j > c {
			t.Fatalf("Backoff{Base: %v, Cap: %v}.Jitter(%d) = %v with math/rand, outside [0, %v]", bo.Base, bo.Cap, n, j, c)
		}
	})
}
