package landing

import (
	"cmp"
	"encoding/json"
	"time"

	"github.com/glidepath/glidepath/budget"
)

// Status says whether a run's answer is complete.
type Status string

const (
	Complete Status = "complete"
	Partial  Status = "partial"
)

// Cause says why a run landed early. The zero Cause means it did not, and
// encodes as JSON null.
type Cause string

const (
	CauseBudget    Cause = "budget"    // the budget reached the reserve or the deadline
	CauseQuiet     Cause = "quiet"     // the quiet clock fired: the run stalled
	CauseCancelled Cause = "cancelled" // the caller cancelled the run
	CauseMaxSteps  Cause = "max_steps" // the run used all its model turns
	CauseUpstream  Cause = "upstream"  // the model failed and could not be retried
	CauseUnsettled Cause = "unsettled" // the model answered, but a write's outcome is still unknown

	// CauseStuck: the run repeated a tool call — same tool, same
	// arguments, same result as an earlier call of the run — as many
	// times as its limit allows (SPEC §3, "activity is not progress";
	// issue 27). Such calls keep a run busy without getting it anywhere,
	// so the quiet clock alone would never stop it.
	CauseStuck Cause = "stuck"

	// CauseCost: the run spent its cost cap (--max-cost, --max-tokens)
	// down to the reserve it keeps for its landing (issue 28): money or
	// tokens, not time, ran out.
	CauseCost Cause = "cost"

	// CauseToolsFailed: the model answered, but every tool call it made
	// failed or never started, so nothing the answer says came from a
	// tool (issue 24). The answer is kept and labeled partial, as for
	// CauseUnsettled, rather than presented as complete: a run whose tools
	// all failed is most often a run whose tools are broken, which a
	// script reading exit 0 would never learn.
	CauseToolsFailed Cause = "tools_failed"

	// CauseAtCapacity: the run was not started. The process was running
	// as many runs as it can serve on time, or the run waited too long to
	// start, and refused it at once rather than answer after its deadline
	// (issue 25, package admit). Nothing was done: the caller may submit
	// it again later, or elsewhere.
	CauseAtCapacity Cause = "at_capacity"
)

// MarshalJSON writes null for the zero Cause.
func (c Cause) MarshalJSON() ([]byte, error) {
	if c == "" {
		return []byte("null"), nil
	}
	return json.Marshal(string(c))
}

// States of a call that was in flight when the run landed.
const (
	StateCancelled = "cancelled" // its cancel was accepted or its local context ended
	StateAbandoned = "abandoned" // a read we stopped waiting for that could not be cancelled
	StateOrphaned  = "orphaned"  // a write whose outcome is unknown
)

// InFlight is a call that had not finished when the run landed.
type InFlight struct {
	Tool           string `json:"tool"`
	IdempotencyKey string `json:"idempotency_key"`
	State          string `json:"state"`
}

// Unavailable is a tool the config names that the run could not use, and
// why (SPEC §4): a tool server or MCP server that is down, a manifest that
// is not one or does not list the tool, a tool whose ceiling cannot fit
// its own p50, a sub-agent that cannot be made (issue 24). Such a tool is
// not offered to the model.
type Unavailable struct {
	Tool string `json:"tool"`
	Why  string `json:"why"`
}

// BudgetReport is the budget as the result reports it, in milliseconds.
// SpentMs is the time that really passed since the budget began: more
// than TotalMs for a run that ended late (a stopped process, a starved
// machine), never rounded down to it (SPEC §3); RemainingMs is then 0.
type BudgetReport struct {
	TotalMs     int64 `json:"total_ms"`
	SpentMs     int64 `json:"spent_ms"`
	ReserveMs   int64 `json:"reserve_ms"`
	RemainingMs int64 `json:"remaining_ms"`
}

// ReportOf reads b's state at the instant at, from time.Now: a run's is
// read at the instant its run_end was stamped, so that spent_ms past
// total_ms and run_end's late_ms say the same (SPEC §3).
func ReportOf(b *budget.Budget, at time.Time) BudgetReport {
	spent, remaining := b.ReadAt(at)
	return Report(b.Total(), b.Reserve(), spent, remaining)
}

// Result is what a run returns: its answer, labeled complete or partial,
// with a visible boundary when partial. It encodes as the `--json` object of
// `harness run`; every field is always present, empty lists as [].
type Result struct {
	RunID          string       `json:"run_id"`
	Status         Status       `json:"status"`
	Cause          Cause        `json:"cause"`
	Answer         string       `json:"answer"`
	Boundary       string       `json:"boundary"`
	Established    []string     `json:"established"`
	NotEstablished []string     `json:"not_established"`
	InFlight       []InFlight   `json:"in_flight"`
	Budget         BudgetReport `json:"budget"`
	Steps          int          `json:"steps"`
	Attempts       int          `json:"attempts"`
	Orphans        int          `json:"orphans"`

	// Unavailable lists the tools the config names that the run could
	// not offer, and why; [] when there are none.
	Unavailable []Unavailable `json:"unavailable"`
}

// MarshalJSON encodes nil lists as [] so that consumers never see null
// where the contract promises a list.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	p := plain(r)
	p.Established = orEmpty(p.Established)
	p.NotEstablished = orEmpty(p.NotEstablished)
	if p.InFlight == nil {
		p.InFlight = []InFlight{}
	}
	if p.Unavailable == nil {
		p.Unavailable = []Unavailable{}
	}
	return json.Marshal(p)
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Text renders the result for a person. A partial result begins with its
// boundary, so that it cannot be read as complete.
func (r Result) Text() string {
	if r.Status == Complete {
		return r.Answer
	}
	return "PARTIAL RESULT. " + r.Boundary + "\n\n" + r.Answer
}

// Landed is, for a sub-agent's call that answered r, the cause r's run
// landed on: the call is done, but what it brought back is partial
// ([Call.Landed]); empty for a complete r. A partial that names no cause
// is still partial: [CauseBudget]. Both hosts read a child's result
// through it (issue 25).
func (r Result) Landed() Cause {
	if r.Status != Partial {
		return ""
	}
	return cmp.Or(r.Cause, CauseBudget)
}

// StaysInFlight reports whether a tool call that ended in state (one of the
// in_flight states; "" for none) is listed in the run's in_flight: an
// orphan always; a call cancelled or abandoned only when the run's end
// stopped it (its deadline, the quiet clock, a cancellation). One that
// leaseCut, its own lease having ended while the run went on, failed, the
// run knew it and told the model so: it is not in flight, whatever its
// cancel did. Both hosts list their calls by it (issue 25).
func StaysInFlight(state string, leaseCut bool) bool {
	return state == StateOrphaned || state != "" && !leaseCut
}
