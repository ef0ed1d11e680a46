package cost_test

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cost"
)

// The fuzz targets check the parsers and the lease against independent
// oracles (encoding/json's own reading, exact rational arithmetic), so
// that a slip in the package cannot hide behind the same slip in the
// test. Seeds live in testdata/fuzz/<FuzzName>/.

func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := cost.Parse(data)
		var raw map[string]json.RawMessage
		jsonErr := json.Unmarshal(data, &raw)
		if err != nil {
			if tab != nil {
				t.Fatal("a table with an error")
			}
			if !errors.Is(err, cost.ErrBadPrices) {
				t.Fatalf("%v does not match ErrBadPrices", err)
			}
			if jsonErr != nil {
				return
			}
			for _, e := range unjoin(err) {
				pe, ok := errors.AsType[*cost.PriceError](e)
				if !ok {
					t.Fatalf("%T %v is not a *PriceError", e, e)
				}
				if _, known := raw[pe.Model]; !known {
					t.Fatalf("error names model %q, not in the input", pe.Model)
				}
				if len(pe.Value) > 64+len("…") {
					t.Fatalf("error quotes %d bytes", len(pe.Value))
				}
			}
			return
		}
		if jsonErr != nil {
			t.Fatalf("parsed what encoding/json rejects: %v", jsonErr)
		}
		want := len(raw)
		if _, ok := raw["sample_spec"]; ok {
			want--
		}
		if tab.Len() != want {
			t.Fatalf("table has %d models, the file %d", tab.Len(), want)
		}
		for model := range raw {
			p, ok := tab.Lookup(model)
			if model == "sample_spec" {
				continue
			}
			if !ok || p.Model != model {
				t.Fatalf("Lookup(%q) = %+v, %v", model, p, ok)
			}
			if p.Input < 0 || p.CacheRead < 0 || p.Output < 0 || p.Reasoning < 0 || p.MaxOutput < 0 {
				t.Fatalf("a negative price or limit: %+v", p)
			}
			if _, err := tab.Require(model); err != nil && !errors.Is(err, cost.ErrNoPrice) {
				t.Fatalf("Require(%q) = %v", model, err)
			}
		}
	})
}

func FuzzParseUSD(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		got, err := cost.ParseUSD(s)
		want, ok := ratUSD(s)
		switch {
		case !ok:
			// Too long or too far out for the oracle to check cheaply; the
			// parser must still answer without panicking.
		case want == nil:
			if err == nil {
				t.Fatalf("ParseUSD(%q) = %d, not an amount", s, got)
			}
		case want.Sign() < 0 || !want.IsInt64():
			if err == nil {
				t.Fatalf("ParseUSD(%q) = %d, want an error (oracle %v)", s, got, want)
			}
		case err != nil || int64(got) != want.Int64():
			t.Fatalf("ParseUSD(%q) = %d, %v; oracle %v", s, got, err, want)
		}
		if err == nil && got < 0 {
			t.Fatalf("ParseUSD(%q) = %d", s, got)
		}
	})
}

// ratUSD is the oracle of ParseUSD: s in picodollars, rounded half up,
// by big.Rat; nil when s is not a decimal number; ok false when s is too
// long or its exponent too large to check cheaply.
func ratUSD(s string) (_ *big.Int, ok bool) {
	s = strings.TrimPrefix(s, "$")
	if len(s) > 200 {
		return nil, false
	}
	if !decimal(s) {
		return nil, true
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 && len(strings.TrimLeft(s[i+1:], "+-")) > 3 {
		return nil, false
	}
	r, good := new(big.Rat).SetString(s)
	if !good {
		return nil, true
	}
	r.Mul(r, new(big.Rat).SetInt64(int64(cost.Dollar)))
	// Round half up: ⌊r + ½⌋ for r ≥ 0; a negative amount stays negative
	// unless it rounds to zero, which ParseUSD reads as zero too ("-0").
	neg := r.Sign() < 0
	r.Abs(r)
	r.Add(r, big.NewRat(1, 2))
	q := new(big.Int).Quo(r.Num(), r.Denom())
	if neg {
		q.Neg(q)
	}
	return q, true
}

// decimal reports whether s is in the syntax ParseUSD reads: an optional
// minus, digits with an optional fraction (at least one digit in all),
// an optional exponent.
func decimal(s string) bool {
	s = strings.TrimPrefix(s, "-")
	num, exp, hasExp := strings.Cut(s, "e")
	if !hasExp {
		num, exp, hasExp = strings.Cut(s, "E")
	}
	whole, frac, _ := strings.Cut(num, ".")
	if !digits(whole) || !digits(frac) || whole+frac == "" {
		return false
	}
	if hasExp {
		exp = strings.TrimPrefix(strings.TrimPrefix(exp, "+"), "-")
		return exp != "" && digits(exp)
	}
	return true
}

func digits(s string) bool {
	return strings.Trim(s, "0123456789") == ""
}

// FuzzLease checks the lease against the rule it states, in exact
// integers: a granted lease's input and output, at their dearest, fit in
// what is left above the reserve; a refusal happens only when they would
// not, or fewer than the p50's would.
func FuzzLease(f *testing.F) {
	f.Fuzz(func(t *testing.T, capCost, reserve, charged, in, inPrice, outPrice, ceiling, p50 int64) {
		cfg := cost.Config{Cap: cost.Amount{Cost: cost.Money(capCost)}, Reserve: cost.Amount{Cost: cost.Money(reserve)}}
		b, err := cost.New(cfg)
		if err != nil {
			return
		}
		b.Charge(cost.Amount{Cost: cost.Money(charged)})
		p := cost.Price{Input: cost.Money(inPrice), Output: cost.Money(outPrice), Reasoning: cost.Money(outPrice)}
		ask := cost.Ask{Input: in, Ceiling: ceiling, P50: p50}
		out, err := b.Lease(ask, p)

		capped := capCost > 0
		left := new(big.Int)
		if capped {
			left.SetInt64(capCost)
			left.Sub(left, big.NewInt(max(charged, 0)))
			left.Sub(left, big.NewInt(int64(b.Reserve().Cost)))
			if left.Sign() < 0 {
				left.SetInt64(0)
			}
		}
		spend := func(outputs int64) *big.Int { // the ask's dearest cost with outputs output tokens
			c := new(big.Int).Mul(big.NewInt(max(in, 0)), big.NewInt(max(inPrice, 0)))
			return c.Add(c, new(big.Int).Mul(big.NewInt(outputs), big.NewInt(max(outPrice, 0))))
		}
		expected := max(p50, 0)
		if ceiling > 0 {
			expected = min(expected, ceiling)
		}
		if err != nil {
			re, ok := errors.AsType[*cost.RefusedError](err)
			if !ok || !capped {
				t.Fatalf("Lease = %v with cap %d", err, capCost)
			}
			need := max(expected, 1)
			if re.Rule == budget.BelowFloor {
				need = 1
			}
			if spend(need).Cmp(left) <= 0 {
				t.Fatalf("refused %v, yet %d outputs cost %v of %v left", err, need, spend(need), left)
			}
			return
		}
		if out < 0 || ceiling > 0 && out > ceiling {
			t.Fatalf("lease %d with ceiling %d", out, ceiling)
		}
		if !capped || outPrice <= 0 {
			return
		}
		if out == 0 && ceiling <= 0 {
			t.Fatalf("no limit under a cap with a price")
		}
		if spend(out).Cmp(left) > 0 {
			t.Fatalf("lease %d costs %v, more than the %v left", out, spend(out), left)
		}
		if out < expected {
			t.Fatalf("lease %d below the expected %d", out, expected)
		}
		if (ceiling <= 0 || out < ceiling) && spend(out+1).Cmp(left) <= 0 && spend(out).IsInt64() && out < math.MaxInt64 {
			t.Fatalf("lease %d, yet %d would fit in %v", out, out+1, left)
		}
	})
}
