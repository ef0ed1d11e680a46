package cost

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"

	"github.com/glidepath/glidepath/budget"
)

// Config is a cost budget's configuration.
type Config struct {
	// Cap is what the run may spend: money (--max-cost), tokens
	// (--max-tokens), or both. A zero field is no cap on that thing; a zero
	// Cap is no cap at all.
	Cap Amount
	// Reserve is held back from work for the landing call, on each capped
	// field: the landing call's p95 cost where it is known. A zero field
	// is DefaultReserve's.
	Reserve Amount
}

// DefaultReserve is the reserve of a cap whose landing cost is not known:
// a tenth of it, as the time budget keeps at least a tenth of its total.
func DefaultReserve(limit Amount) Amount {
	return Amount{Cost: limit.Cost / 10, Tokens: limit.Tokens / 10}
}

// A Budget is what a run may spend in money and tokens, what it has
// spent, and the reserve it keeps for landing. The zero Budget has no cap:
// it counts what is charged and refuses nothing. A Budget is plain data
// with no clock and no lock, for one goroutine (a run's machine, a
// Temporal workflow) to keep.
type Budget struct {
	limit   Amount // the cap; a zero field is none
	reserve Amount // on capped fields only
	spent   Amount // charged so far, never capped: a run over its cap reads as over
	held    Amount // for a slice: what its parent has charged for it and not yet settled
}

var (
	errNoCap    = errors.New("there is no cap to keep it from")
	errNotBelow = errors.New("must be less than the cap")
)

// New returns the budget of cfg, or a [*ConfigError] naming the field
// that is negative, or a reserve that is not below its cap or has none.
func New(cfg Config) (*Budget, error) {
	b := &Budget{limit: cfg.Cap}
	if err := checkCap(cfg.Cap); err != nil {
		return nil, err
	}
	if err := b.SetReserve(cfg.Reserve); err != nil {
		return nil, err
	}
	return b, nil
}

func checkCap(c Amount) error {
	if c.Cost < 0 {
		return &ConfigError{Field: "cap.cost", Value: c.Cost.String(), Err: errNegative}
	}
	if c.Tokens < 0 {
		return &ConfigError{Field: "cap.tokens", Value: strconv.FormatInt(c.Tokens, 10), Err: errNegative}
	}
	return nil
}

// SetReserve replaces the reserve, a zero field by DefaultReserve's: the
// landing call's p95 cost grows with the conversation, and a run that
// learns it anew keeps it. It returns a [*ConfigError], and changes
// nothing, when a field is negative, not below its cap, or has no cap.
func (b *Budget) SetReserve(r Amount) error {
	def := DefaultReserve(b.limit)
	if r.Cost == 0 {
		r.Cost = def.Cost
	}
	if r.Tokens == 0 {
		r.Tokens = def.Tokens
	}
	if err := b.checkReserve(r); err != nil {
		return err
	}
	b.reserve = r
	return nil
}

func (b *Budget) checkReserve(r Amount) error {
	if err := checkReserve("reserve.cost", r.Cost.String(), int64(r.Cost), int64(b.limit.Cost)); err != nil {
		return err
	}
	return checkReserve("reserve.tokens", strconv.FormatInt(r.Tokens, 10), r.Tokens, b.limit.Tokens)
}

func checkReserve(field, value string, r, limit int64) error {
	switch {
	case r < 0:
		return &ConfigError{Field: field, Value: value, Err: errNegative}
	case r > 0 && limit == 0:
		return &ConfigError{Field: field, Value: value, Err: errNoCap}
	case r > 0 && r >= limit:
		return &ConfigError{Field: field, Value: value, Err: errNotBelow}
	}
	return nil
}

// Cap returns the cap; a zero field is none.
func (b *Budget) Cap() Amount { return b.limit }

// Reserve returns what is held back for landing.
func (b *Budget) Reserve() Amount { return b.reserve }

// Charged returns what has been charged so far, capped or not, including
// the slices carved for sub-agents and not yet settled.
func (b *Budget) Charged() Amount { return b.spent }

// Left returns what is left of each capped field, cap − charged, never
// below zero; an uncapped field reads zero.
func (b *Budget) Left() Amount {
	return Amount{
		Cost:   Money(left(int64(b.limit.Cost), int64(b.spent.Cost), 0)),
		Tokens: left(b.limit.Tokens, b.spent.Tokens, 0),
	}
}

// left returns limit − spent − keep, at least zero.
func left(limit, spent, keep int64) int64 {
	return max(limit-spent-keep, 0)
}

// Charge adds what an attempt or a call spent ([Of], or a tool's declared
// cost) to what has been charged. Negative fields count as zero; sums
// saturate.
func (b *Budget) Charge(a Amount) {
	b.spent.Cost = Money(addSat(int64(b.spent.Cost), max(int64(a.Cost), 0)))
	b.spent.Tokens = addSat(b.spent.Tokens, max(a.Tokens, 0))
}

// Spent returns how much of its cap the further-spent capped field has
// used, as a fraction (above 1 when over it), so that the ladder can
// follow whichever budget, time or cost, is further spent; 0 with no cap.
func (b *Budget) Spent() float64 {
	f, _ := b.further()
	return f
}

// Unit returns the capped field that is further spent (USD on a tie),
// the one --json reports; 0 with no cap.
func (b *Budget) Unit() Unit {
	_, u := b.further()
	return u
}

func (b *Budget) further() (float64, Unit) {
	var f float64
	var u Unit
	if b.limit.Cost > 0 {
		f, u = float64(b.spent.Cost)/float64(b.limit.Cost), USD
	}
	if b.limit.Tokens > 0 {
		if t := float64(b.spent.Tokens) / float64(b.limit.Tokens); u == 0 || t > f {
			f, u = t, Tokens
		}
	}
	return f, u
}

// MustLand reports whether a capped field has nothing left above its
// reserve: no more work can be paid for, and the run lands.
func (b *Budget) MustLand() bool {
	return b.limit.Cost > 0 && left(int64(b.limit.Cost), int64(b.spent.Cost), int64(b.reserve.Cost)) == 0 ||
		b.limit.Tokens > 0 && left(b.limit.Tokens, b.spent.Tokens, b.reserve.Tokens) == 0
}

// An Ask is what a model attempt asks of the cost budget before it is
// sent.
type Ask struct {
	Step    string // the step kind a refusal names; "" reads "model"
	Input   int64  // the request's input tokens, known before sending
	Ceiling int64  // the most output tokens it may ask for (the model's MaxOutput, a configured limit); 0: none
	P50     int64  // the kind's p50 output tokens; 0: none known
}

// Lease returns the output-token limit of the next model attempt
// (max_completion_tokens, max_output_tokens), leased from what is left
// above the reserve, or refuses the attempt before it is sent. On each
// capped field,
//
//	limit = ⌊(cap − charged − reserve − input's cost) / one output token's cost⌋
//
// the input priced as if none of it were cached and each output token at
// the dearer of the output and reasoning prices, so that the lease is
// never more than the money left can pay for. The lease is the least
// limit, at most a.Ceiling. It is refused with a [*RefusedError] when no
// output token fits (BelowFloor), or fewer than the kind's p50 output
// (BelowP50, the p50 taken at most a.Ceiling): a turn whose expected cost
// does not fit is not worth its input. The error names the field that
// refused, what was left of it and what the turn needed.
//
// A lease of 0 means no limit: no field is capped, or only by a price of
// zero, and a.Ceiling is 0. Lease does not allocate unless it refuses;
// it changes nothing, for the attempt is charged after it ends
// ([Budget.Charge]).
func (b *Budget) Lease(a Ask, p Price) (int64, error) {
	return b.lease(a, p, false)
}

// LandingLease is [Budget.Lease] for the landing call, which may spend
// the reserve: limit = ⌊(cap − charged − input's cost) / one output
// token's cost⌋.
func (b *Budget) LandingLease(a Ask, p Price) (int64, error) {
	return b.lease(a, p, true)
}

// fit is one capped field's answer to an ask.
type fit struct {
	unit Unit
	left int64 // what the ask may draw on: cap − charged, less the reserve for work
	in   int64 // the input's cost
	per  int64 // one output token's cost
}

// outputs returns how many output tokens fit after the input: −1 when
// the input itself does not, math.MaxInt64 when output is free.
func (f fit) outputs() int64 {
	room := f.left - f.in // both ≥ 0: no overflow
	switch {
	case room < 0:
		return -1
	case f.per <= 0:
		return math.MaxInt64
	}
	return room / f.per
}

func (b *Budget) lease(a Ask, p Price, landing bool) (int64, error) {
	fits, n := b.fits(a.Input, p, landing)
	out, bind := int64(math.MaxInt64), fit{}
	for _, f := range fits[:n] {
		if o := f.outputs(); o < out {
			out, bind = o, f
		}
	}
	expected := max(a.P50, 0)
	if a.Ceiling > 0 {
		expected = min(expected, a.Ceiling)
	}
	switch {
	case n == 0:
	case out < 1:
		return 0, refusal(a.Step, budget.BelowFloor, bind, 1)
	case out < expected:
		return 0, refusal(a.Step, budget.BelowP50, bind, expected)
	}
	if a.Ceiling > 0 && a.Ceiling < out {
		return a.Ceiling, nil
	}
	if out == math.MaxInt64 {
		return 0, nil
	}
	return out, nil
}

// fits returns the answers of the capped fields, in an array so that a
// lease does not allocate.
func (b *Budget) fits(input int64, p Price, landing bool) (fs [2]fit, n int) {
	input = max(input, 0)
	keep := b.reserve
	if landing {
		keep = Amount{}
	}
	if b.limit.Cost > 0 {
		fs[n] = fit{unit: USD, left: left(int64(b.limit.Cost), int64(b.spent.Cost), int64(keep.Cost)),
			in: mulSat(input, int64(p.Input)), per: max(int64(p.outputRate()), 0)}
		n++
	}
	if b.limit.Tokens > 0 {
		fs[n] = fit{unit: Tokens, left: left(b.limit.Tokens, b.spent.Tokens, keep.Tokens), in: input, per: 1}
		n++
	}
	return fs, n
}

func refusal(step string, rule budget.Rule, f fit, outputs int64) *RefusedError {
	if step == "" {
		step = "model"
	}
	return &RefusedError{Step: step, Rule: rule, Unit: f.unit, Left: f.left,
		Need: addSat(f.in, mulSat(outputs, f.per))}
}

// LeaseCall admits one call of a tool that declared its cost per call
// (cost: in the tools file or manifest), or refuses it before any I/O
// with a [*RefusedError] (BelowFloor) when the money left above the
// reserve is less than that cost. A call that declared none (c ≤ 0) is
// always admitted. After the call, charge its cost: Charge(Amount{Cost: c}).
func (b *Budget) LeaseCall(step string, c Money) error {
	if b.limit.Cost <= 0 || c <= 0 {
		return nil
	}
	l := left(int64(b.limit.Cost), int64(b.spent.Cost), int64(b.reserve.Cost))
	if l < int64(c) {
		return &RefusedError{Step: step, Rule: budget.BelowFloor, Unit: USD, Left: l, Need: int64(c)}
	}
	return nil
}

// Slice carves a sub-agent's budget out of what b has left above its
// reserve, never a fresh one, leaving b keep (what it needs to receive
// and use the answer: its p95 cost for one model turn) on each capped
// field:
//
//	child's cap = min(want, cap − charged − reserve − keep)   (a zero field of want: all it can get)
//
// A field b does not cap is the child's want (zero: none). The slice is
// charged to b at once, so that slices carved side by side cannot
// together spend more than b has; [Budget.Settle] replaces that charge
// with what the child really spent. The child's reserve is
// DefaultReserve's of its cap. Slice is refused with a [*RefusedError]
// (ParentKeep) when a capped field has no more than keep left above the
// reserve.
func (b *Budget) Slice(want, keep Amount) (*Budget, error) {
	cost, err := carve(USD, int64(b.limit.Cost), int64(b.spent.Cost), int64(b.reserve.Cost), int64(want.Cost), int64(keep.Cost))
	if err != nil {
		return nil, err
	}
	tokens, err := carve(Tokens, b.limit.Tokens, b.spent.Tokens, b.reserve.Tokens, want.Tokens, keep.Tokens)
	if err != nil {
		return nil, err
	}
	child := &Budget{limit: Amount{Cost: Money(cost), Tokens: tokens}}
	child.reserve = DefaultReserve(child.limit)
	if b.limit.Cost > 0 {
		child.held.Cost = child.limit.Cost
	}
	if b.limit.Tokens > 0 {
		child.held.Tokens = child.limit.Tokens
	}
	b.Charge(child.held)
	return child, nil
}

// carve is Slice's rule on one field.
func carve(u Unit, limit, spent, reserve, want, keep int64) (int64, error) {
	want, keep = max(want, 0), max(keep, 0)
	if limit <= 0 {
		return want, nil
	}
	avail := left(limit, spent, reserve)
	if avail <= keep {
		return 0, &RefusedError{Step: "agent", Rule: budget.ParentKeep, Unit: u, Left: avail, Need: keep}
	}
	if want > 0 && want < avail-keep {
		return want, nil
	}
	return avail - keep, nil
}

// Settle moves what child, a slice of b, has spent since it was carved
// or last settled into b's charge, in place of what b was charged for it
// when carved: once the child has ended, b has been charged exactly what
// the child spent, over its slice or under it. Settling again adds only
// what the child spent since.
func (b *Budget) Settle(child *Budget) {
	b.spent.Cost = Money(settle(int64(b.spent.Cost), int64(child.spent.Cost), int64(child.held.Cost)))
	b.spent.Tokens = settle(b.spent.Tokens, child.spent.Tokens, child.held.Tokens)
	child.held = child.spent
}

// settle returns a parent's charge with a child's held part replaced by
// what it spent.
func settle(parent, spent, held int64) int64 {
	if spent >= held {
		return addSat(parent, spent-held)
	}
	return max(parent-(held-spent), 0)
}

// budgetJSON is a Budget as JSON writes it, all of its state: a Temporal
// run that continues as new carries its cost budget exactly (issue 26).
type budgetJSON struct {
	Cap     Amount `json:",omitzero"`
	Reserve Amount `json:",omitzero"`
	Charged Amount `json:",omitzero"`
	Held    Amount `json:",omitzero"` // a slice's charge to its parent, not yet settled
}

// MarshalJSON writes b's cap, reserve, charge and, for a slice, what its
// parent holds for it.
func (b *Budget) MarshalJSON() ([]byte, error) {
	return json.Marshal(budgetJSON{Cap: b.limit, Reserve: b.reserve, Charged: b.spent, Held: b.held})
}

// UnmarshalJSON reads what MarshalJSON wrote, or returns the
// [*ConfigError] that [New] would for a field that is not usable.
func (b *Budget) UnmarshalJSON(data []byte) error {
	var j budgetJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	if err := checkCap(j.Cap); err != nil {
		return err
	}
	c := Budget{limit: j.Cap}
	if err := c.checkReserve(j.Reserve); err != nil {
		return err
	}
	for _, f := range [...]struct {
		field string
		n     int64
	}{{"charged.cost", int64(j.Charged.Cost)}, {"charged.tokens", j.Charged.Tokens},
		{"held.cost", int64(j.Held.Cost)}, {"held.tokens", j.Held.Tokens}} {
		if f.n < 0 {
			return &ConfigError{Field: f.field, Value: strconv.FormatInt(f.n, 10), Err: errNegative}
		}
	}
	*b = Budget{limit: j.Cap, reserve: j.Reserve, spent: j.Charged, held: j.Held}
	return nil
}
