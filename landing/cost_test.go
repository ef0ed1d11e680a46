package landing_test

import (
	"strings"
	"testing"

	"github.com/glidepath/glidepath/cost"
	"github.com/glidepath/glidepath/landing"
)

func TestTheCostBudgetClimbsTheLadderByTimesRule(t *testing.T) {
	newBudget := func(c cost.Config) *cost.Budget {
		b, err := cost.New(c)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	dollars := cost.Config{Cap: cost.Amount{Cost: cost.Dollar}}            // reserve: a tenth
	both := cost.Config{Cap: cost.Amount{Cost: cost.Dollar, Tokens: 1000}} // reserve: a tenth of each
	cases := []struct {
		name   string
		b      *cost.Budget
		charge cost.Amount
		want   landing.Phase
	}{
		{"no budget is in explore", nil, cost.Amount{}, landing.Explore},
		{"a budget with no cap is in explore however much it spent", newBudget(cost.Config{}), cost.Amount{Cost: 100 * cost.Dollar, Tokens: 1e9}, landing.Explore},
		{"under 60% spent is explore", newBudget(dollars), cost.Amount{Cost: 59 * cost.Cent}, landing.Explore},
		{"60% spent is narrow", newBudget(dollars), cost.Amount{Cost: 60 * cost.Cent}, landing.Narrow},
		{"80% spent is fit", newBudget(dollars), cost.Amount{Cost: 80 * cost.Cent}, landing.Fit},
		{"down to the reserve is land", newBudget(dollars), cost.Amount{Cost: 90 * cost.Cent}, landing.Land},
		{"over the cap is land", newBudget(dollars), cost.Amount{Cost: 2 * cost.Dollar}, landing.Land},
		{"the further-spent field sets the phase: tokens", newBudget(both), cost.Amount{Cost: 10 * cost.Cent, Tokens: 850}, landing.Fit},
		{"the further-spent field sets the phase: money", newBudget(both), cost.Amount{Cost: 65 * cost.Cent, Tokens: 10}, landing.Narrow},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.b != nil {
				tc.b.Charge(tc.charge)
			}
			if got := landing.CostPhase(tc.b); got != tc.want {
				t.Errorf("CostPhase = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestARunLandedByCostSaysSoInItsBoundary(t *testing.T) {
	got := landing.Boundary(landing.Record{Cause: landing.CauseCost, Step: 3})
	if !strings.HasPrefix(got, "Reached its cost cap at step 3") {
		t.Errorf("boundary %q", got)
	}
}
