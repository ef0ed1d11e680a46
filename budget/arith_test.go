package budget

import (
	"math"
	"math/big"
	"testing"
	"time"
)

const (
	maxD = time.Duration(math.MaxInt64)
	minD = time.Duration(math.MinInt64)
)

func TestAddSatAddsAndSaturatesInsteadOfWrapping(t *testing.T) {
	cases := []struct {
		name string
		a, b time.Duration
		want time.Duration
	}{
		{"small sums are exact", 2 * time.Second, 500 * time.Millisecond, 2500 * time.Millisecond},
		{"adding zero changes nothing", maxD, 0, maxD},
		{"a negative addend subtracts", time.Second, -3 * time.Second, -2 * time.Second},
		{"a sum that just fits is exact", maxD - 1, 1, maxD},
		{"a sum one past the largest duration is the largest", maxD, 1, maxD},
		{"two huge durations are the largest, not negative", maxD / 2, maxD/2 + 2, maxD},
		{"the largest twice is the largest", maxD, maxD, maxD},
		{"a difference that just fits is exact", minD + 1, -1, minD},
		{"a sum one below the smallest duration is the smallest", minD, -1, minD},
		{"the smallest twice is the smallest, not zero", minD, minD, minD},
		{"the largest and the smallest cancel to minus one", maxD, minD, -1},
		{"a large negative addend does not overflow the test", 0, minD, minD},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := AddSat(tc.a, tc.b); got != tc.want {
				t.Errorf("AddSat(%d, %d) = %d, want %d", tc.a, tc.b, got, tc.want)
			}
			if got := AddSat(tc.b, tc.a); got != tc.want {
				t.Errorf("AddSat(%d, %d) = %d, want %d (addition commutes)", tc.b, tc.a, got, tc.want)
			}
		})
	}
}

func TestMulSatMultipliesAndSaturatesInsteadOfWrapping(t *testing.T) {
	cases := []struct {
		name string
		d    time.Duration
		n    int
		want time.Duration
	}{
		{"small products are exact", 30 * time.Second, 3, 90 * time.Second},
		{"zero times the largest count is zero", 0, math.MaxInt, 0},
		{"the largest duration times zero is zero", maxD, 0, 0},
		{"times one is the duration itself", maxD, 1, maxD},
		{"a negative count negates", time.Second, -2, -2 * time.Second},
		{"two negatives make a positive", -time.Second, -2, 2 * time.Second},
		{"a product that just fits is exact", maxD / 4, 4, maxD - 3},
		{"a product past the largest duration is the largest", maxD/4 + 1, 4, maxD},
		{"a million retries of a quarter of the range are the largest", maxD / 4, 1_000_000, maxD},
		{"a product below the smallest duration is the smallest", maxD, -2, minD},
		{"the smallest times one is itself", minD, 1, minD},
		{"the smallest negated is the largest, not itself", minD, -1, maxD},
		{"minus one times the smallest count is the largest", -1, math.MinInt, maxD},
		{"the largest negated fits", maxD, -1, -maxD},
		{"the smallest times two is the smallest, not zero", minD, 2, minD},
		{"the smallest times minus two is the largest", minD, -2, maxD},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := MulSat(tc.d, tc.n); got != tc.want {
				t.Errorf("MulSat(%d, %d) = %d, want %d", tc.d, tc.n, got, tc.want)
			}
		})
	}
}

// clamp returns x as a duration, saturated at the ends of the range.
func clamp(x *big.Int) time.Duration {
	switch {
	case x.Cmp(big.NewInt(math.MaxInt64)) > 0:
		return maxD
	case x.Cmp(big.NewInt(math.MinInt64)) < 0:
		return minD
	}
	return time.Duration(x.Int64())
}

// FuzzSaturatingArithmetic checks AddSat and MulSat against exact
// arithmetic, clamped to the range of a duration.
func FuzzSaturatingArithmetic(f *testing.F) {
	f.Add(int64(1), int64(2))
	f.Add(int64(math.MaxInt64), int64(1))
	f.Add(int64(math.MinInt64), int64(-1))
	f.Add(int64(math.MaxInt64/4+1), int64(4))
	f.Add(int64(-1), int64(math.MinInt64))
	f.Add(int64(math.MinInt64), int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, a, b int64) {
		sum := new(big.Int).Add(big.NewInt(a), big.NewInt(b))
		if got, want := AddSat(time.Duration(a), time.Duration(b)), clamp(sum); got != want {
			t.Errorf("AddSat(%d, %d) = %d, want %d", a, b, got, want)
		}
		n := int(b) // a narrower int on 32-bit platforms, where b is cut to fit
		prod := new(big.Int).Mul(big.NewInt(a), big.NewInt(int64(n)))
		if got, want := MulSat(time.Duration(a), n), clamp(prod); got != want {
			t.Errorf("MulSat(%d, %d) = %d, want %d", a, n, got, want)
		}
	})
}
