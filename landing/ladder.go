package landing

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glidepath/glidepath/budget"
)

// Change is a move up the ladder, reported to [Config.OnChange].
type Change struct {
	From, To  Phase
	Spent     time.Duration // budget spent at the change
	Remaining time.Duration // budget remaining at the change
	Forced    bool          // reports whether Advance moved it, not the clock
}

// Config configures a [Ladder]. The zero value is valid.
type Config struct {
	// OnChange, if not nil, is called once for every change of phase, in
	// order, from the goroutine that noticed it. It must not block and must
	// not call back into the Ladder.
	OnChange func(Change)
}

// A Ladder walks a run's budget through the phases and answers the gates
// the harness asks before doing work. It reads the budget's clock when
// asked; it owns no timer and no goroutine. A Ladder is safe for concurrent
// use.
//
// A Ladder [New] did not make (the zero Ladder, or a nil *Ladder) has no
// budget: it is in [Land] and refuses all work, its gates with a
// [*GateError] that says so; it never panics.
type Ladder struct {
	b        *budget.Budget
	onChange func(Change)

	mu    sync.Mutex    // serializes moves and OnChange calls
	phase atomic.Uint32 // the Phase; written under mu, read without it
}

// New returns the ladder of b, in the phase b's spending puts it in.
func New(b *budget.Budget, cfg Config) *Ladder {
	return &Ladder{b: b, onChange: cfg.OnChange}
}

// Budget returns the budget the ladder reads; nil for a Ladder [New] did
// not make.
func (l *Ladder) Budget() *budget.Budget {
	if l.unmade() {
		return nil
	}
	return l.b
}

// unmade reports whether l has no budget: [New] did not make it.
func (l *Ladder) unmade() bool { return l == nil || l.b == nil }

// Phase returns the current phase, moving the ladder forward if the budget
// spent since the last call says so.
func (l *Ladder) Phase() Phase {
	if l.unmade() {
		return Land
	}
	spent, remaining := l.b.Spent(), l.b.Remaining()
	return l.moveTo(PhaseAt(spent, l.b.Total(), l.b.Reserve()), spent, remaining, false)
}

// Peek returns the phase the ladder is in once spent of the budget is
// spent, without moving it or reporting a change: the phase it has moved to
// (by the clock or by [Ladder.Advance]) or the one spent says, whichever is
// further. It takes no lock, so it may be called from OnChange; a record
// stamped with it carries the phase of its own instant, even while nothing
// has polled the ladder into motion.
func (l *Ladder) Peek(spent time.Duration) Phase {
	if l.unmade() {
		return Land
	}
	return max(Phase(l.phase.Load()), PhaseAt(spent, l.b.Total(), l.b.Reserve()))
}

// Next returns the phase the clock moves the ladder to next and how much
// of the budget will have been spent when it does (ask the budget how long
// that is from now: [budget.Budget.Until]), so that a caller can arm a
// timer and see the change when it happens rather than at its next poll;
// ok is false once the ladder has landed.
func (l *Ladder) Next() (p Phase, at time.Duration, ok bool) {
	if l.unmade() {
		return Land, 0, false
	}
	return NextPhaseAt(Phase(l.phase.Load()), l.b.Total(), l.b.Reserve())
}

// NextPhaseAt is [Ladder.Next] as a pure function of the phase cur and the
// budget: the phase the clock moves a run to next and the spending at
// which it does, the one rule both hosts arm their phase timer by (issue
// 25); ok is false from land on.
func NextPhaseAt(cur Phase, total, reserve time.Duration) (p Phase, at time.Duration, ok bool) {
	// The least whole nanoseconds of spending at which PhaseAt moves on.
	rungs := [...]time.Duration{
		time.Duration(math.Ceil(NarrowAt * float64(total))),
		time.Duration(math.Ceil(FitAt * float64(total))),
		total - reserve,
	}
	best := time.Duration(math.MaxInt64)
	for _, r := range rungs {
		if q := PhaseAt(r, total, reserve); q > cur && r < best {
			best, p = r, q
		}
	}
	if best == math.MaxInt64 {
		return cur, 0, false
	}
	return p, best, true
}

// Advance moves the ladder forward to p at once, whatever the clock says: a
// stalled or cancelled run, or one out of steps, lands now. It never moves
// the ladder back; it returns the phase after the call.
func (l *Ladder) Advance(p Phase) Phase {
	now := l.Phase()
	if p <= now || l.unmade() {
		return now
	}
	return l.moveTo(p, l.b.Spent(), l.b.Remaining(), true)
}

func (l *Ladder) moveTo(p Phase, spent, remaining time.Duration, forced bool) Phase {
	if cur := Phase(l.phase.Load()); p <= cur {
		return cur // nothing moves: no lock, so a gate never waits on an OnChange
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	from := Phase(l.phase.Load())
	if p <= from {
		return from
	}
	l.phase.Store(uint32(p))
	if l.onChange != nil {
		l.onChange(Change{From: from, To: p, Spent: spent, Remaining: remaining, Forced: forced})
	}
	return p
}

// MustLand reports whether the run must stop working and land.
func (l *Ladder) MustLand() bool { return l.Phase() == Land }

// Widening is work that makes a run wider rather than deeper.
type Widening uint8

const (
	Parallel    Widening = iota + 1 // more than one tool call at once
	SubAgent                        // a new sub-agent
	Speculative                     // a call the answer may not need
)

var wideningNames = [...]string{"", "parallel tool calls", "a sub-agent", "a speculative call"}

func (w Widening) String() string {
	if int(w) < len(wideningNames) && w != 0 {
		return wideningNames[w]
	}
	return fmt.Sprintf("Widening(%d)", uint8(w))
}

// MayWiden returns nil if the run may still widen in the way w, and a
// [*GateError] once the ladder has left the explore phase ([WidenAt]).
func (l *Ladder) MayWiden(w Widening) error {
	if l.unmade() {
		return &GateError{Phase: Land, What: w.String(), Reason: noBudget}
	}
	return WidenAt(l.Phase(), w)
}

// WidenAt is [Ladder.MayWiden] as a pure function of the phase p, the one
// rule a process and a Temporal workflow apply (issue 25): nil in
// explore, a [*GateError] after it.
func WidenAt(p Phase, w Widening) error {
	if p == Explore {
		return nil
	}
	return &GateError{Phase: p, What: w.String(),
		Reason: fmt.Sprintf("the %s phase allows no new parallel branches, sub-agents or speculative calls", p)}
}

// GateReason is what a refused record says of a gate's refusal err: the
// [*GateError]'s reason, else err's words. Both hosts record it.
func GateReason(err error) string {
	if ge, ok := errors.AsType[*GateError](err); ok {
		return ge.Reason
	}
	return err.Error()
}

// Admit returns nil if a call of kind k may start now, by [AdmitAt] in the
// ladder's phase, with k's p95 and the time available before landing. The
// lease itself still applies its own rules.
func (l *Ladder) Admit(k *budget.Kind, ceiling time.Duration) error {
	if l.unmade() {
		return &GateError{Phase: Land, What: kindName(k), Reason: noBudget}
	}
	var p95 time.Duration
	if k != nil {
		p95 = k.P95()
	}
	return AdmitAt(l.Phase(), kindName(k), p95, ceiling, l.b.Available())
}

// AdmitAt is the gate of a call as a pure function, the one rule a process
// ([Ladder.Admit]) and a Temporal workflow apply (issue 25). It returns
// nil if a call named what, whose p95 estimate and ceiling are given (zero:
// unknown, none), may start in phase p with left before landing (remaining
// − reserve), and a [*GateError] otherwise. In explore and narrow it is
// admitted. In fit it is admitted only if its p95 is below left; with no
// p95 known, the ceiling stands in for it, and with neither it is not
// admitted, since nothing says it fits. In land nothing is admitted.
func AdmitAt(p Phase, what string, p95, ceiling, left time.Duration) error {
	switch p {
	case Explore, Narrow:
		return nil
	case Land:
		return &GateError{Phase: p, What: what, Reason: "the run is landing: no more work is started"}
	}
	est, basis := p95, "p95"
	if est <= 0 && ceiling > 0 {
		est, basis = ceiling, "ceiling"
	}
	if est <= 0 {
		return &GateError{Phase: p, What: what, Reason: "no latency estimate says it fits before landing"}
	}
	if est >= left {
		return &GateError{Phase: p, What: what, Estimate: est, Left: max(left, 0),
			Reason: fmt.Sprintf("its %s %v does not fit in the %v left before landing", basis, est, max(left, 0).Round(time.Millisecond))}
	}
	return nil
}

// noBudget is the reason a Ladder New did not make refuses all work.
const noBudget = "the ladder has no budget (made without landing.New): no work is started"

func kindName(k *budget.Kind) string {
	if k == nil {
		return "call"
	}
	return k.Name()
}
