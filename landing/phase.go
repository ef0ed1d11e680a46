package landing

import (
	"fmt"
	"time"
)

// A Phase is a rung of the ladder. Phases only move forward.
type Phase uint8

const (
	// Explore: [0, 60%) of the budget spent. Parallel tool calls, sub-agents
	// and speculative calls are allowed.
	Explore Phase = iota
	// Narrow: [60%, 80%). No new parallel branches, sub-agents or
	// speculative calls: width is bought with budget the run no longer has.
	Narrow
	// Fit: [80%, B−R). A call is admitted only if its p95 fits in what is
	// left before the reserve.
	Fit
	// Land: [B−R, B]. No more work; the run lands.
	Land
)

// Thresholds of the ladder, as fractions of the total budget.
const (
	NarrowAt = 0.60
	FitAt    = 0.80
)

var phaseNames = [...]string{"explore", "narrow", "fit", "land"}

func (p Phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return fmt.Sprintf("Phase(%d)", uint8(p))
}

// MarshalText writes the phase's name, as in the trace.
func (p Phase) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// PhaseAt is the ladder as a pure function: the phase of a run of total
// budget total with reserve reserve after spent. The reserve wins over the
// percentage rungs when it is larger than 20% of the budget.
func PhaseAt(spent, total, reserve time.Duration) Phase { return phaseOf(spent, total, reserve) }

// phaseOf is the ladder's rule on any budget counted in whole units:
// time's nanoseconds ([PhaseAt]), cost's picodollars or tokens
// ([CostPhase]), so that the two budgets climb it by one rule.
func phaseOf[N ~int64](spent, total, reserve N) Phase {
	switch {
	case spent >= total-reserve:
		return Land
	case float64(spent) >= FitAt*float64(total):
		return Fit
	case float64(spent) >= NarrowAt*float64(total):
		return Narrow
	}
	return Explore
}

// forbids says, in words the model can read, what a phase does not allow.
func (p Phase) forbids() string {
	switch p {
	case Explore:
		return "nothing yet; parallel tool calls and sub-agents are allowed"
	case Narrow:
		return "no new parallel tool calls, no sub-agents, no speculative calls"
	case Fit:
		return "only calls whose usual duration (p95) fits in the time before landing; no parallel calls, sub-agents or speculative calls"
	}
	return "no more tool calls; summarize now"
}

// PhaseReason is what a phase record says of the run being in p after
// spent of total: "forced" when p is ahead of the phase the time spent
// gives (the ladder was moved there, the run lands early), "" when the
// clock moved it. Both hosts' phase records say it by this one rule
// (issue 25).
func PhaseReason(p Phase, spent, total, reserve time.Duration) string {
	if p > PhaseAt(spent, total, reserve) {
		return "forced"
	}
	return ""
}
