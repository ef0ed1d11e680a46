package landing

import "github.com/glidepath/glidepath/cost"

// CostPhase is the ladder's phase by a run's cost budget (issue 28): the
// rung its further-spent capped field has reached, by time's rule
// ([PhaseAt]): narrow at 60% of the cap spent, fit at 80%, land once what
// is left is the reserve kept for the landing. A budget with no cap, or
// nil, is in [Explore]. A host's ladder follows whichever of its two
// budgets, time and cost, is further along, and lands with [CauseCost]
// when it is cost that reached [Land] ([Loop.CostOut]).
func CostPhase(b *cost.Budget) Phase {
	if b == nil {
		return Explore
	}
	limit, spent, keep := b.Cap(), b.Charged(), b.Reserve()
	p := Explore
	if limit.Cost > 0 {
		p = max(p, phaseOf(spent.Cost, limit.Cost, keep.Cost))
	}
	if limit.Tokens > 0 {
		p = max(p, phaseOf(spent.Tokens, limit.Tokens, keep.Tokens))
	}
	return p
}
