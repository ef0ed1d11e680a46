package cost_test

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cost"
)

// cheap is a price in whole picodollars, so that the arithmetic of the
// tests reads at a glance.
var cheap = cost.Price{Model: "m", Input: 1, CacheRead: 1, Output: 10, Reasoning: 10}

func mustNew(t testing.TB, cfg cost.Config, charged cost.Amount) *cost.Budget {
	t.Helper()
	b, err := cost.New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	b.Charge(charged)
	return b
}

// money is a cap of c picodollars with reserve r.
func money(c, r cost.Money) cost.Config {
	return cost.Config{Cap: cost.Amount{Cost: c}, Reserve: cost.Amount{Cost: r}}
}

func TestLeaseGrantsWhatIsLeftAboveTheReserveAndTheInput(t *testing.T) {
	dear := cheap
	dear.Reasoning = 20
	free := cost.Price{Input: 1}
	both := cost.Config{Cap: cost.Amount{Cost: 1000, Tokens: 150}, Reserve: cost.Amount{Cost: 100, Tokens: 15}}
	cases := []struct {
		name    string
		cfg     cost.Config
		charged cost.Amount
		price   cost.Price
		ask     cost.Ask
		landing bool
		want    int64
	}{
		{"the money left above the reserve and the input binds", money(1000, 100), cost.Amount{}, cheap,
			cost.Ask{Input: 100}, false, (1000 - 100 - 100) / 10},
		{"the ceiling binds when it is smaller", money(1000, 100), cost.Amount{}, cheap,
			cost.Ask{Input: 100, Ceiling: 50}, false, 50},
		{"the lease is the whole tokens the money pays for, rounded down", money(1000, 100), cost.Amount{}, cheap,
			cost.Ask{Input: 105}, false, 79},
		{"an output token is priced at the dearer of output and reasoning", money(1000, 100), cost.Amount{}, dear,
			cost.Ask{Input: 100}, false, 40},
		{"what was charged is spent", money(1000, 100), cost.Amount{Cost: 500}, cheap,
			cost.Ask{Input: 100}, false, 30},
		{"the tokens cap binds when it is the tighter", both, cost.Amount{}, cheap,
			cost.Ask{Input: 100}, false, 150 - 15 - 100},
		{"the money cap binds when it is the tighter", both, cost.Amount{Cost: 600}, cheap,
			cost.Ask{Input: 100}, false, (1000 - 600 - 100 - 100) / 10},
		{"the p50 is taken at most the ceiling", money(1000, 100), cost.Amount{}, cheap,
			cost.Ask{Input: 100, Ceiling: 50, P50: 100}, false, 50},
		{"a p50 that fits does not change the lease", money(1000, 100), cost.Amount{}, cheap,
			cost.Ask{Input: 100, P50: 80}, false, 80},
		{"with no cap the ceiling is the lease", cost.Config{}, cost.Amount{Cost: 1 << 40}, cheap,
			cost.Ask{Input: 100, Ceiling: 4096, P50: 5000}, false, 4096},
		{"with no cap and no ceiling there is no limit", cost.Config{}, cost.Amount{}, cheap,
			cost.Ask{Input: 100}, false, 0},
		{"free output under a money cap is limited by the ceiling alone", money(1000, 100), cost.Amount{}, free,
			cost.Ask{Input: 100, Ceiling: 300}, false, 300},
		{"free output and no ceiling is no limit", money(1000, 100), cost.Amount{}, free,
			cost.Ask{Input: 100}, false, 0},
		{"the landing lease may spend the reserve", money(1000, 100), cost.Amount{Cost: 850}, cheap,
			cost.Ask{Input: 10}, true, (1000 - 850 - 10) / 10},
		{"a work lease may not", money(1000, 100), cost.Amount{Cost: 850}, cheap,
			cost.Ask{Input: 10}, false, (1000 - 850 - 100 - 10) / 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := mustNew(t, tc.cfg, tc.charged)
			lease := b.Lease
			if tc.landing {
				lease = b.LandingLease
			}
			got, err := lease(tc.ask, tc.price)
			if err != nil || got != tc.want {
				t.Errorf("lease = %d, %v; want %d", got, err, tc.want)
			}
			if b.Charged() != tc.charged {
				t.Errorf("a lease charged %+v", b.Charged())
			}
		})
	}
}

func TestLeaseRefusesATurnWhoseExpectedCostDoesNotFit(t *testing.T) {
	both := cost.Config{Cap: cost.Amount{Cost: 1000, Tokens: 150}, Reserve: cost.Amount{Cost: 100, Tokens: 15}}
	cases := []struct {
		name    string
		cfg     cost.Config
		charged cost.Amount
		ask     cost.Ask
		landing bool
		want    cost.RefusedError
		msg     string
	}{
		{"an input that does not fit leaves no output token", money(1000, 100), cost.Amount{}, cost.Ask{Input: 900}, false,
			cost.RefusedError{Step: "model", Rule: budget.BelowFloor, Unit: cost.USD, Left: 900, Need: 910},
			"cost: refused model: $0.0000000009 left, below its least $0.00000000091"},
		{"an input that fits with room for no output token", money(1000, 100), cost.Amount{}, cost.Ask{Input: 895}, false,
			cost.RefusedError{Step: "model", Rule: budget.BelowFloor, Unit: cost.USD, Left: 900, Need: 905}, ""},
		{"fewer output tokens than the kind's p50", money(1000, 100), cost.Amount{}, cost.Ask{Step: "model", Input: 100, P50: 100}, false,
			cost.RefusedError{Step: "model", Rule: budget.BelowP50, Unit: cost.USD, Left: 900, Need: 100 + 100*10},
			"cost: refused model: $0.0000000009 left, below its expected $0.0000000011 (p50 output)"},
		{"a spent cap", money(1000, 100), cost.Amount{Cost: 950}, cost.Ask{Input: 1}, false,
			cost.RefusedError{Step: "model", Rule: budget.BelowFloor, Unit: cost.USD, Left: 0, Need: 11}, ""},
		{"a cap spent past its end", money(1000, 100), cost.Amount{Cost: 5000}, cost.Ask{Input: 1}, true,
			cost.RefusedError{Step: "model", Rule: budget.BelowFloor, Unit: cost.USD, Left: 0, Need: 11}, ""},
		{"the tokens cap refuses, naming tokens", both, cost.Amount{}, cost.Ask{Step: "landing", Input: 140}, false,
			cost.RefusedError{Step: "landing", Rule: budget.BelowFloor, Unit: cost.Tokens, Left: 135, Need: 141},
			"cost: refused landing: 135 tokens left, below its least 141 tokens"},
		{"the landing lease refuses below the p50 too", money(1000, 100), cost.Amount{Cost: 850}, cost.Ask{Input: 10, P50: 20}, true,
			cost.RefusedError{Step: "model", Rule: budget.BelowP50, Unit: cost.USD, Left: 150, Need: 210}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := mustNew(t, tc.cfg, tc.charged)
			lease := b.Lease
			if tc.landing {
				lease = b.LandingLease
			}
			got, err := lease(tc.ask, cheap)
			re, ok := errors.AsType[*cost.RefusedError](err)
			if got != 0 || !ok || *re != tc.want {
				t.Fatalf("lease = %d, %#v; want %+v", got, err, tc.want)
			}
			if !errors.Is(err, cost.ErrRefused) || !errors.Is(err, budget.ErrRefused) {
				t.Errorf("%v does not match cost.ErrRefused and budget.ErrRefused", err)
			}
			if tc.msg != "" && err.Error() != tc.msg {
				t.Errorf("message %q, want %q", err, tc.msg)
			}
		})
	}
}

func TestLeaseCallAdmitsAPaidToolOnlyIfItsCostFits(t *testing.T) {
	cases := []struct {
		name    string
		cfg     cost.Config
		charged cost.Money
		call    cost.Money
		refused bool
	}{
		{"a call that fits above the reserve", money(1000, 100), 0, 900, false},
		{"a call that would spend the reserve", money(1000, 100), 0, 901, true},
		{"a call after others spent the room", money(1000, 100), 500, 401, true},
		{"a free call when nothing is left", money(1000, 100), 1000, 0, false},
		{"a paid call with no money cap", cost.Config{Cap: cost.Amount{Tokens: 10}}, 0, 1 << 40, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := mustNew(t, tc.cfg, cost.Amount{Cost: tc.charged})
			err := b.LeaseCall("tool:search", tc.call)
			if (err != nil) != tc.refused {
				t.Fatalf("LeaseCall = %v, refused want %v", err, tc.refused)
			}
			if re, ok := errors.AsType[*cost.RefusedError](err); ok && (re.Step != "tool:search" || re.Need != int64(tc.call) || re.Rule != budget.BelowFloor) {
				t.Errorf("refusal %+v", re)
			}
		})
	}
}

func TestASliceIsCarvedFromWhatTheParentHasAboveItsReserveAndKeep(t *testing.T) {
	cases := []struct {
		name       string
		cfg        cost.Config
		charged    cost.Amount
		want, keep cost.Amount
		child      cost.Amount // its cap
		refused    cost.Unit
	}{
		{"all it can get", money(1000, 100), cost.Amount{Cost: 200}, cost.Amount{}, cost.Amount{Cost: 50},
			cost.Amount{Cost: 1000 - 200 - 100 - 50}, 0},
		{"what it wants when that is less", money(1000, 100), cost.Amount{}, cost.Amount{Cost: 300}, cost.Amount{Cost: 50},
			cost.Amount{Cost: 300}, 0},
		{"no more than there is when it wants more", money(1000, 100), cost.Amount{}, cost.Amount{Cost: 5000}, cost.Amount{Cost: 50},
			cost.Amount{Cost: 850}, 0},
		{"its own cap on a field the parent does not cap", money(1000, 100), cost.Amount{}, cost.Amount{Tokens: 77}, cost.Amount{},
			cost.Amount{Cost: 900, Tokens: 77}, 0},
		{"no cap where neither has one", cost.Config{}, cost.Amount{}, cost.Amount{}, cost.Amount{Cost: 50},
			cost.Amount{}, 0},
		{"refused when the parent would keep less than its keep", money(1000, 100), cost.Amount{Cost: 850}, cost.Amount{}, cost.Amount{Cost: 50},
			cost.Amount{}, cost.USD},
		{"refused on tokens too", cost.Config{Cap: cost.Amount{Cost: 1000, Tokens: 100}}, cost.Amount{Tokens: 90}, cost.Amount{}, cost.Amount{},
			cost.Amount{}, cost.Tokens},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := mustNew(t, tc.cfg, tc.charged)
			child, err := b.Slice(tc.want, tc.keep)
			if tc.refused != 0 {
				re, ok := errors.AsType[*cost.RefusedError](err)
				if !ok || re.Rule != budget.ParentKeep || re.Unit != tc.refused || re.Step != "agent" {
					t.Fatalf("Slice = %v, want a ParentKeep refusal on %v", err, tc.refused)
				}
				if b.Charged() != tc.charged {
					t.Errorf("a refused slice charged the parent: %+v", b.Charged())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if child.Cap() != tc.child {
				t.Errorf("child's cap = %+v, want %+v", child.Cap(), tc.child)
			}
			if child.Reserve() != cost.DefaultReserve(tc.child) || child.Charged() != (cost.Amount{}) {
				t.Errorf("child starts with reserve %+v, charged %+v", child.Reserve(), child.Charged())
			}
			if tc.cfg.Cap.Cost > 0 && b.Charged().Cost != tc.charged.Cost+tc.child.Cost {
				t.Errorf("parent charged %v, want the slice held: %v", b.Charged().Cost, tc.charged.Cost+tc.child.Cost)
			}
			if left := b.Left(); tc.cfg.Cap.Cost > 0 && left.Cost < b.Reserve().Cost+tc.keep.Cost {
				t.Errorf("parent keeps %v, less than its reserve and keep", left.Cost)
			}
		})
	}
}

func TestSettleChargesTheParentWhatTheChildReallySpent(t *testing.T) {
	cases := []struct {
		name  string
		spent cost.Amount // by the child, of its cap 400 picodollars
		want  cost.Amount // the parent's charge after settling
	}{
		{"a child that spent less gives the rest back", cost.Amount{Cost: 150, Tokens: 30}, cost.Amount{Cost: 100 + 150, Tokens: 30}},
		{"a child that spent it all", cost.Amount{Cost: 400}, cost.Amount{Cost: 500}},
		{"a child over its slice by one attempt costs the parent that too", cost.Amount{Cost: 460}, cost.Amount{Cost: 560}},
		{"a child that spent nothing", cost.Amount{}, cost.Amount{Cost: 100}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := mustNew(t, money(1000, 100), cost.Amount{Cost: 100})
			child, err := b.Slice(cost.Amount{Cost: 400}, cost.Amount{})
			if err != nil {
				t.Fatal(err)
			}
			child.Charge(tc.spent)
			b.Settle(child)
			if b.Charged() != tc.want {
				t.Errorf("parent charged %+v, want %+v", b.Charged(), tc.want)
			}
			b.Settle(child)
			if b.Charged() != tc.want {
				t.Errorf("settling twice charged %+v, want %+v", b.Charged(), tc.want)
			}
			child.Charge(cost.Amount{Cost: 7})
			b.Settle(child)
			if b.Charged().Cost != tc.want.Cost+7 {
				t.Errorf("a later settle charged %v, want %v", b.Charged().Cost, tc.want.Cost+7)
			}
		})
	}
}

func TestSpentFollowsTheFurtherSpentCap(t *testing.T) {
	both := cost.Config{Cap: cost.Amount{Cost: 1000, Tokens: 200}}
	cases := []struct {
		name     string
		cfg      cost.Config
		charged  cost.Amount
		spent    float64
		unit     cost.Unit
		mustLand bool
	}{
		{"no cap is never spent", cost.Config{}, cost.Amount{Cost: 1 << 50, Tokens: 1 << 50}, 0, 0, false},
		{"money further spent", both, cost.Amount{Cost: 500, Tokens: 20}, 0.5, cost.USD, false},
		{"tokens further spent", both, cost.Amount{Cost: 500, Tokens: 150}, 0.75, cost.Tokens, false},
		{"a tie reads as money", both, cost.Amount{Cost: 500, Tokens: 100}, 0.5, cost.USD, false},
		{"a cap reached down to its reserve must land", both, cost.Amount{Cost: 900}, 0.9, cost.USD, true},
		{"a cap spent past its end reads over one", money(1000, 0), cost.Amount{Cost: 1500}, 1.5, cost.USD, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := mustNew(t, tc.cfg, tc.charged)
			if got := b.Spent(); got != tc.spent {
				t.Errorf("Spent = %v, want %v", got, tc.spent)
			}
			if got := b.Unit(); got != tc.unit {
				t.Errorf("Unit = %v, want %v", got, tc.unit)
			}
			if got := b.MustLand(); got != tc.mustLand {
				t.Errorf("MustLand = %v, want %v", got, tc.mustLand)
			}
		})
	}
}

func TestNewRejectsAnUnusableConfigNamingTheField(t *testing.T) {
	cases := []struct {
		name  string
		cfg   cost.Config
		field string
	}{
		{"a negative money cap", cost.Config{Cap: cost.Amount{Cost: -1}}, "cap.cost"},
		{"a negative tokens cap", cost.Config{Cap: cost.Amount{Tokens: -1}}, "cap.tokens"},
		{"a negative reserve", money(1000, -1), "reserve.cost"},
		{"a reserve as large as its cap", money(1000, 1000), "reserve.cost"},
		{"a reserve with no cap to keep it from", cost.Config{Cap: cost.Amount{Cost: 10}, Reserve: cost.Amount{Tokens: 5}}, "reserve.tokens"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cost.New(tc.cfg)
			ce, ok := errors.AsType[*cost.ConfigError](err)
			if !ok || ce.Field != tc.field {
				t.Errorf("New(%+v) = %v, want a *ConfigError on %s", tc.cfg, err, tc.field)
			}
		})
	}
	b := mustNew(t, money(1000, 0), cost.Amount{})
	if b.Reserve() != (cost.Amount{Cost: 100}) {
		t.Errorf("a zero reserve is %+v, want the default", b.Reserve())
	}
	if err := b.SetReserve(cost.Amount{Cost: 2000}); err == nil || b.Reserve().Cost != 100 {
		t.Errorf("SetReserve beyond the cap = %v and left %+v", err, b.Reserve())
	}
}

func TestTheZeroBudgetCountsAndRefusesNothing(t *testing.T) {
	var b cost.Budget
	b.Charge(cost.Amount{Cost: cost.Dollar, Tokens: 1_000_000})
	if _, err := b.Lease(cost.Ask{Input: 1 << 40, P50: 1 << 40}, cheap); err != nil {
		t.Errorf("Lease: %v", err)
	}
	if err := b.LeaseCall("tool:paid", cost.Dollar); err != nil {
		t.Errorf("LeaseCall: %v", err)
	}
	if b.Charged() != (cost.Amount{Cost: cost.Dollar, Tokens: 1_000_000}) || b.Left() != (cost.Amount{}) || b.MustLand() {
		t.Errorf("zero budget: charged %+v, left %+v", b.Charged(), b.Left())
	}
}

// A run that leases each turn's output limit, and whose model uses all
// of it, never spends beyond its cap: the lease leaves room for the input
// at full price and every output token at the dearest price.
func TestARunThatSpendsEveryLeaseStaysWithinItsCap(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 1))
	for range 200 {
		p := cost.Price{Input: cost.Money(rng.Int64N(5000)), Output: cost.Money(rng.Int64N(20000)),
			Reasoning: cost.Money(rng.Int64N(20000))}
		p.CacheRead = p.Input / 4
		cfg := cost.Config{Cap: cost.Amount{Cost: cost.Money(1 + rng.Int64N(1e9)), Tokens: rng.Int64N(200_000)}}
		b := mustNew(t, cfg, cost.Amount{})
		for turn := 0; ; turn++ {
			ask := cost.Ask{Input: rng.Int64N(5000), P50: rng.Int64N(300), Ceiling: rng.Int64N(4000)}
			lease := b.Lease
			if turn%5 == 4 {
				lease = b.LandingLease
			}
			out, err := lease(ask, p)
			if err != nil {
				if !errors.Is(err, cost.ErrRefused) {
					t.Fatal(err)
				}
				break
			}
			if out == 0 {
				out = 10_000 // no limit: the model says what it likes
			}
			reasoning := rng.Int64N(out + 1)
			b.Charge(cost.Of(cost.Usage{Input: ask.Input, Cached: rng.Int64N(ask.Input + 1), Output: out, Reasoning: reasoning}, p))
			c := b.Charged()
			if cfg.Cap.Cost > 0 && c.Cost > cfg.Cap.Cost || cfg.Cap.Tokens > 0 && c.Tokens > cfg.Cap.Tokens {
				t.Fatalf("price %+v, cap %+v: charged %+v after turn %d", p, cfg.Cap, c, turn)
			}
			if cfg.Cap == (cost.Amount{}) || turn > 10_000 {
				break
			}
		}
	}
}

func TestABudgetCarriedAsJSONGoesOnExactlyAsItWas(t *testing.T) {
	parent := mustNew(t, cost.Config{Cap: cost.Amount{Cost: 1000, Tokens: 500}, Reserve: cost.Amount{Cost: 70}}, cost.Amount{Cost: 120, Tokens: 9})
	child, err := parent.Slice(cost.Amount{Cost: 300}, cost.Amount{})
	if err != nil {
		t.Fatal(err)
	}
	child.Charge(cost.Amount{Cost: 40, Tokens: 3})
	for name, b := range map[string]*cost.Budget{"a parent": parent, "a slice": child, "a zero budget": {}} {
		t.Run(name, func(t *testing.T) {
			data, err := json.Marshal(b)
			if err != nil {
				t.Fatal(err)
			}
			var got cost.Budget
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatalf("Unmarshal(%s): %v", data, err)
			}
			if !reflect.DeepEqual(&got, b) {
				t.Errorf("%s read back as %+v, want %+v", data, got, *b)
			}
		})
	}
	var back cost.Budget
	data, _ := json.Marshal(child)
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	p2 := *parent
	p2.Settle(child)
	parent.Settle(&back)
	if parent.Charged() != p2.Charged() {
		t.Errorf("settling a carried slice charged %+v, want %+v", parent.Charged(), p2.Charged())
	}
	for _, bad := range []string{`{"Cap":{"Cost":-1}}`, `{"Cap":{"Cost":10},"Reserve":{"Cost":10}}`, `{"Charged":{"Tokens":-3}}`, `{"Cap":"x"}`} {
		var b cost.Budget
		if err := json.Unmarshal([]byte(bad), &b); err == nil {
			t.Errorf("Unmarshal(%s) read %+v", bad, b)
		}
	}
}
