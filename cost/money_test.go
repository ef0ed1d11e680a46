package cost_test

import (
	"math"
	"testing"

	"github.com/glidepath/glidepath/cost"
)

func TestParseUSDReadsDecimalsExactly(t *testing.T) {
	cases := []struct {
		in   string
		want cost.Money
	}{
		{"0.50", 50 * cost.Cent},
		{"$2", 2 * cost.Dollar},
		{"1e-3", cost.Dollar / 1000},
		{"5.46875e-07", 546_875},
		{"0.1", cost.Dollar / 10},
		{".25", cost.Dollar / 4},
		{"7.", 7 * cost.Dollar},
		{"1E+2", 100 * cost.Dollar},
		{"0.0000000000005", 1}, // half a picodollar rounds up
		{"0.00000000000049", 0},
		{"0.000000000001", cost.Picodollar},
		{"-0", 0},
		{"9223372.036854775807", math.MaxInt64},
		{"1e-999999999999", 0},
		{"0e999999999999", 0},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := cost.ParseUSD(tc.in)
			if err != nil || got != tc.want {
				t.Errorf("ParseUSD(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestParseUSDRejectsWhatIsNotAnAmount(t *testing.T) {
	for _, in := range []string{"", "-1", "-0.000001", "abc", "1.2.3", "e5", "1e", "1e+", "0x10", " 1", "1,5",
		"NaN", "Inf", "9223372.0368547758075", "1e30", "--1", "$", "1$"} {
		t.Run(in, func(t *testing.T) {
			if got, err := cost.ParseUSD(in); err == nil {
				t.Errorf("ParseUSD(%q) = %v, want an error", in, got)
			}
		})
	}
	for in, want := range map[string]string{
		"-2":   `cost: bad amount "-2": must not be negative`,
		"1e30": `cost: bad amount "1e30": too large`,
		"two":  `cost: bad amount "two": not a number`,
	} {
		if _, err := cost.ParseUSD(in); err == nil || err.Error() != want {
			t.Errorf("ParseUSD(%q) = %v, want %s", in, err, want)
		}
	}
}

func TestMoneyReadsAsDollarsWithAtLeastCents(t *testing.T) {
	cases := []struct {
		m    cost.Money
		want string
	}{
		{0, "$0.00"},
		{50 * cost.Cent, "$0.50"},
		{1_234_567, "$0.000001234567"},
		{12*cost.Dollar + 3*cost.Cent, "$12.03"},
		{-cost.Dollar, "-$1.00"},
		{math.MaxInt64, "$9223372.036854775807"},
		{math.MinInt64, "-$9223372.036854775808"},
	}
	for _, tc := range cases {
		if got := tc.m.String(); got != tc.want {
			t.Errorf("Money(%d) = %q, want %q", int64(tc.m), got, tc.want)
		}
	}
}

func TestCostPricesEachKindOfTokenApart(t *testing.T) {
	p := cost.Price{Input: 10, CacheRead: 1, Output: 100, Reasoning: 1000}
	cases := []struct {
		name   string
		u      cost.Usage
		want   cost.Money
		tokens int64
	}{
		{"nothing costs nothing", cost.Usage{}, 0, 0},
		{"plain input and output", cost.Usage{Input: 3, Output: 2}, 3*10 + 2*100, 5},
		{"cached input is part of the input, at its own price", cost.Usage{Input: 5, Cached: 4, Output: 1}, 1*10 + 4*1 + 100, 6},
		{"reasoning is part of the output, at its own price", cost.Usage{Input: 1, Output: 5, Reasoning: 2}, 10 + 3*100 + 2*1000, 6},
		{"a part larger than its whole counts whole", cost.Usage{Input: 1, Cached: 3, Output: 0, Reasoning: 2}, 3*1 + 2*1000, 5},
		{"negative counts are none", cost.Usage{Input: -5, Cached: -1, Output: -3, Reasoning: -7}, 0, 0},
		{"an absurd count saturates", cost.Usage{Input: math.MaxInt64, Output: math.MaxInt64}, math.MaxInt64, math.MaxInt64},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.Cost(tc.u); got != tc.want {
				t.Errorf("Cost(%+v) = %d, want %d", tc.u, got, tc.want)
			}
			if got := cost.Of(tc.u, p); got != (cost.Amount{Cost: tc.want, Tokens: tc.tokens}) {
				t.Errorf("Of(%+v) = %+v, want {%d %d}", tc.u, got, tc.want, tc.tokens)
			}
		})
	}
	if got := (cost.Price{Input: -10, Output: -1}).Cost(cost.Usage{Input: 3, Output: 3}); got != 0 {
		t.Errorf("a negative price paid back %v", got)
	}
}
