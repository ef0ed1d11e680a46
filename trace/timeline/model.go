package timeline

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/trace"
)

// The ladder's thresholds (landing.NarrowAt and landing.FitAt) and its
// last phase's name; package landing is not imported for three constants,
// as package trace does not import it for one.
const (
	narrowAt  = 0.60
	fitAt     = 0.80
	landPhase = "land"
)

// run is one run of the traces, read into what its timeline draws. Times
// are milliseconds of the run's own clock (elapsed_ms).
type run struct {
	id       string
	parentID string // parent_run_id, or the run whose call served it
	key      string // run_start's idempotency_key: the parent's call
	records  []trace.Record

	start, end *trace.Record
	total      int64 // B; 0 when the trace does not say
	reserve    int64 // R: as the trace shows it (see reserveOf), else budget.DefaultReserve
	reserveSet bool  // reports whether the trace showed R, not the default rule
	last       int64 // elapsed_ms of the last record

	lanes    []*lane
	phases   []phaseSpan
	resets   []reset // quiet-clock resets: progress records and attempt ends
	landing  *trace.Record
	children []*child // sub-agents nested under this run's calls, by start

	// cancels are the run's cancels, one each, in the order they were
	// sent; each is also a mark on its call's row.
	cancels []*mark
	// cancelWait is the run's wait for cancel answers after its result
	// existed, nil when it had none (see cancelWaitOf).
	cancelWait *cancelWait

	// parent is the run and attempt this one is nested under; nil for a
	// run shown on its own.
	parent        *run
	parentAttempt *attempt
	offset        float64 // where this run's 0 is on its parent's clock
}

// child is a nested run and where on its parent's clock it started.
type child struct {
	run *run
	at  *attempt
}

// lane is one step kind of a run: "setup", "model", "tool:NAME",
// "agent:NAME". Its calls are laid out in rows, so that calls that ran at
// once do not cover each other.
type lane struct {
	step     string
	calls    []*call
	refusals []trace.Record
	first    int64 // elapsed of the lane's first record, for the order of lanes
}

// call is the attempts of one request and the waits between them: one
// idempotency key, or one model turn.
type call struct {
	step     string
	index    int
	key      string
	attempts []*attempt
	waits    []wait
	marks    []*mark
}

// span is how long the call covers, from its first attempt to its last
// attempt, wait or mark.
func (c *call) span() (from, to int64) {
	from, to = c.attempts[0].start, c.attempts[0].end
	for _, a := range c.attempts {
		from, to = min(from, a.start), max(to, a.end)
	}
	for _, w := range c.waits {
		from, to = min(from, w.from), max(to, w.to)
	}
	for _, m := range c.marks {
		from, to = min(from, m.at), max(to, m.at)
	}
	return from, to
}

// attempt is one physical request: an attempt_start and its attempt_end.
type attempt struct {
	call             *call
	startRec, endRec *trace.Record // startRec is nil for an end the trace has no start of
	start, end       int64         // end is the run's last record for an attempt never ended
	ended            bool
	progress         []trace.Record
	children         []*run
}

// outcome is the attempt's outcome, "" when it never ended.
func (a *attempt) outcome() trace.Outcome {
	if a.endRec == nil {
		return ""
	}
	return a.endRec.Outcome
}

// rec is the record that names the attempt: its start, or its end.
func (a *attempt) rec() *trace.Record {
	if a.startRec != nil {
		return a.startRec
	}
	return a.endRec
}

// wait is a backoff sleep before a retry, or a wait between two status
// asks of a write being reconciled.
type wait struct {
	from, to int64
	rec      *trace.Record
}

// markKind names what a mark on a call's row is.
type markKind string

const (
	markRefused  markKind = "refused"   // a refused record
	markGiveUp   markKind = "giveup"    // a backoff that gave up: no retry
	markCancel   markKind = "cancel"    // cancel_sent
	markReconcil markKind = "reconcile" // reconcile
	markOrphan   markKind = "orphan"    // orphan
)

type mark struct {
	kind markKind
	at   int64
	rec  *trace.Record
	// settled is, for a cancel, the cancel_sent record of its answer
	// (accepted, unknown or failed), nil when none came: the run never
	// heard back, which is all an MCP cancel says (state sent). A cancel
	// that could not be sent at all is its failed record alone: rec and
	// settled are that one record.
	settled *trace.Record
}

// cancelState is how a cancel settled: accepted, unknown, failed, or
// sent when it had no answer (SPEC §6).
func (m *mark) cancelState() string {
	if m.settled != nil {
		return orWord(m.settled.State, "?")
	}
	return orWord(m.rec.State, string(trace.CancelStateSent))
}

// cancelWait is the stretch between the run's result existing (its
// landing record, or for an answered run the last record before the
// wait) and its run_end, spent waiting for the answers of cancels sent
// before it (harness.CancelGrace at most).
type cancelWait struct {
	from, to int64
	result   *trace.Record // the record at which the result existed
	cancels  []*mark       // the cancels still unanswered then
}

type phaseSpan struct {
	phase    string
	from, to int64
	forced   bool // the ladder was moved ahead of the budget (reason forced)
}

type reset struct {
	at  int64
	rec *trace.Record
}

// readRuns groups records by run, nests each sub-agent under the call of
// its parent that ran it, and returns the runs shown on their own, by
// their first timestamp, and every run by ID.
func readRuns(records []trace.Record) (top []*run, all map[string]*run) {
	byID := map[string][]trace.Record{}
	for _, r := range records {
		byID[r.RunID] = append(byID[r.RunID], r)
	}
	all = map[string]*run{}
	callOf := map[string]*run{} // a call's key → the run whose attempts carry it
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		recs := byID[id]
		slices.SortStableFunc(recs, func(a, b trace.Record) int { return cmp.Compare(a.Seq, b.Seq) })
		recs = slices.CompactFunc(recs, func(a, b trace.Record) bool { return a.Seq == b.Seq })
		r := build(id, recs)
		all[id] = r
		for _, rec := range recs {
			if rec.Event == trace.AttemptStart && rec.Key != "" {
				if _, seen := callOf[rec.Key]; !seen {
					callOf[rec.Key] = r
				}
			}
		}
	}
	// A sub-agent is found as trace.Summarize finds it: its run_start
	// carries the key of a call another run made (in process or served by
	// harness serve); parent_run_id alone says whose it is, not where.
	for _, id := range slices.Sorted(maps.Keys(all)) {
		r := all[id]
		p := callOf[r.key]
		if r.key == "" || p == nil || p == r {
			continue
		}
		if a := p.attemptFor(r); a != nil && !ancestor(r, p) {
			r.parent, r.parentAttempt = p, a
			a.children = append(a.children, r)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(all)) {
		r := all[id]
		if r.parent == nil {
			top = append(top, r)
		}
	}
	slices.SortStableFunc(top, func(a, b *run) int { return a.startTS().Compare(b.startTS()) })
	for _, r := range top {
		r.place(0)
	}
	return top, all
}

// ancestor reports whether r is p or one of the runs p is nested under,
// so that a trace whose keys loop cannot nest a run inside itself.
func ancestor(r, p *run) bool {
	for q := p; q != nil; q = q.parent {
		if q == r {
			return true
		}
	}
	return false
}

// startTS is the time of the run's first record.
func (r *run) startTS() time.Time {
	if len(r.records) == 0 {
		return time.Time{}
	}
	return r.records[0].TS
}

// attemptFor is the attempt of r's parent that ran child c: the attempt of
// c's key that was in flight when c started, else the last one started
// before, else the first.
func (r *run) attemptFor(c *run) *attempt {
	var cands []*attempt
	for _, l := range r.lanes {
		for _, cl := range l.calls {
			if cl.key != c.key {
				continue
			}
			for _, a := range cl.attempts {
				if a.startRec != nil {
					cands = append(cands, a)
				}
			}
		}
	}
	if len(cands) == 0 {
		return nil
	}
	at := c.startTS()
	best := cands[0]
	for _, a := range cands {
		if !a.startRec.TS.After(at) {
			best = a
		}
	}
	return best
}

// place sets the offsets of r's children on r's clock, and theirs on
// theirs, given where r's own 0 is.
func (r *run) place(offset float64) {
	r.offset = offset
	for _, l := range r.lanes {
		for _, cl := range l.calls {
			for _, a := range cl.attempts {
				for _, c := range a.children {
					at := float64(a.start)
					// The child's clock starts at its run_start: where that
					// is inside the parent's attempt is read off the two
					// timestamps, and kept inside the attempt, since the
					// clocks of two processes may disagree.
					if !c.startTS().IsZero() && !a.startRec.TS.IsZero() {
						d := float64(c.startTS().Sub(a.startRec.TS)) / float64(time.Millisecond)
						at = min(max(float64(a.start)+d, float64(a.start)), float64(a.end))
					}
					r.children = append(r.children, &child{run: c, at: a})
					c.place(offset + at)
				}
			}
		}
	}
	slices.SortStableFunc(r.children, func(a, b *child) int { return cmp.Compare(a.run.offset, b.run.offset) })
}

// build reads one run's records, in seq order.
func build(id string, recs []trace.Record) *run {
	r := &run{id: id, records: recs}
	lanes := map[string]*lane{}
	laneOf := func(step string, at int64) *lane {
		l := lanes[step]
		if l == nil {
			l = &lane{step: step, first: at}
			lanes[step] = l
			r.lanes = append(r.lanes, l)
		}
		return l
	}
	type callID struct {
		step  string
		index int
		key   string
	}
	open := map[callID][]*call{} // calls whose last attempt may still be retried
	var prev *call               // the call of the last attempt record
	var pending []*attempt       // started, not yet ended
	curPhase := ""
	phaseFrom := int64(0)
	var phases []phaseSpan
	forced := false
	landAt := int64(-1) // where the ladder reached land on its own

	callFor := func(rec *trace.Record) *call {
		id := callID{rec.Step, rec.StepIndex, rec.Key}
		if cs := open[id]; len(cs) > 0 {
			c := cs[len(cs)-1]
			last := c.attempts[len(c.attempts)-1]
			// A retry continues the call whose last attempt came before it
			// and has ended; an attempt numbered 1 is a call of its own.
			if rec.Attempt > 1 && last.ended && rec.Attempt > last.rec().Attempt {
				return c
			}
		}
		c := &call{step: rec.Step, index: rec.StepIndex, key: rec.Key}
		open[id] = append(open[id], c)
		l := laneOf(rec.Step, rec.ElapsedMs)
		l.calls = append(l.calls, c)
		return c
	}
	// callOf finds the call a record that names a step (a backoff, a
	// cancel, a reconcile, an orphan) belongs to: the latest of its step,
	// index and key.
	callOf := func(rec *trace.Record) *call {
		if rec.Step == "" {
			return prev
		}
		if cs := open[callID{rec.Step, rec.StepIndex, rec.Key}]; len(cs) > 0 {
			return cs[len(cs)-1]
		}
		if rec.Key != "" {
			for id, cs := range open {
				if id.key == rec.Key && len(cs) > 0 {
					return cs[len(cs)-1]
				}
			}
		}
		return nil
	}

	for i := range recs {
		rec := &recs[i]
		r.last = max(r.last, rec.ElapsedMs)
		if r.parentID == "" {
			r.parentID = rec.ParentRunID
		}
		switch {
		case curPhase == "" && rec.Phase != "":
			curPhase, phaseFrom = rec.Phase, rec.ElapsedMs
		case rec.Phase != "" && rec.Phase != curPhase && rec.Event != trace.PhaseChange && phaseRank(rec.Phase) > phaseRank(curPhase):
			// A record carries the phase of its own instant, which may come
			// before the phase record says so; the ladder only moves on.
			phases = append(phases, phaseSpan{phase: curPhase, from: phaseFrom, to: rec.ElapsedMs, forced: forced})
			curPhase, phaseFrom, forced = rec.Phase, rec.ElapsedMs, false
		}
		switch rec.Event {
		case trace.RunStart:
			if r.start == nil {
				r.start = rec
				r.key = rec.Key
			}
		case trace.RunEnd:
			r.end = rec
		case trace.PhaseChange:
			if rec.To != "" && rec.To != curPhase {
				if curPhase != "" {
					phases = append(phases, phaseSpan{phase: curPhase, from: phaseFrom, to: rec.ElapsedMs, forced: forced})
				}
				curPhase, phaseFrom = rec.To, rec.ElapsedMs
			}
			if rec.To == curPhase {
				forced = rec.Reason == "forced"
			}
			if rec.To == landPhase && rec.Reason != "forced" && landAt < 0 {
				landAt = rec.ElapsedMs
			}
		case trace.AttemptStart:
			c := callFor(rec)
			a := &attempt{call: c, startRec: rec, start: rec.ElapsedMs, end: rec.ElapsedMs}
			c.attempts = append(c.attempts, a)
			pending = append(pending, a)
			prev = c
		case trace.AttemptEnd:
			a := match(pending, rec)
			if a == nil {
				// An end whose start is not in the trace (a trace cut at
				// its head): drawn where it ended.
				c := callFor(rec)
				a = &attempt{call: c, start: rec.ElapsedMs}
				c.attempts = append(c.attempts, a)
			} else {
				pending = slices.DeleteFunc(pending, func(p *attempt) bool { return p == a })
			}
			prev = a.call
			a.endRec, a.end, a.ended = rec, max(rec.ElapsedMs, a.start), true
			r.resets = append(r.resets, reset{rec.ElapsedMs, rec})
		case trace.Progress:
			r.resets = append(r.resets, reset{rec.ElapsedMs, rec})
			for _, a := range slices.Backward(pending) {
				s := a.startRec
				if s.Step == rec.Step && s.Key == rec.Key && (rec.Key != "" || s.StepIndex == rec.StepIndex) {
					a.progress = append(a.progress, *rec)
					break
				}
			}
		case trace.Backoff:
			c := callOf(rec)
			if c == nil {
				continue
			}
			if rec.GaveUp {
				c.marks = append(c.marks, &mark{kind: markGiveUp, at: rec.ElapsedMs, rec: rec})
			} else {
				c.waits = append(c.waits, wait{rec.ElapsedMs, rec.ElapsedMs + max(rec.SleepMs, 0), rec})
			}
		case trace.Refused:
			l := laneOf(rec.Step, rec.ElapsedMs)
			l.refusals = append(l.refusals, *rec)
		case trace.CancelSent:
			// A cancel is two records: state sent as it goes out, on its
			// lease, and its answer later; or its failed record alone when
			// it could not be sent. It is one cancel, drawn once, where it
			// was sent (SPEC §8).
			c := callOf(rec)
			if c == nil {
				continue
			}
			if rec.State != string(trace.CancelStateSent) {
				if m := r.unsettled(rec); m != nil {
					m.settled = rec
					continue
				}
			}
			m := &mark{kind: markCancel, at: rec.ElapsedMs, rec: rec}
			if rec.State != string(trace.CancelStateSent) {
				m.settled = rec
			}
			c.marks = append(c.marks, m)
			r.cancels = append(r.cancels, m)
		case trace.Reconcile, trace.Orphan:
			c := callOf(rec)
			if c == nil {
				continue
			}
			kind := map[trace.Event]markKind{trace.Reconcile: markReconcil, trace.Orphan: markOrphan}[rec.Event]
			c.marks = append(c.marks, &mark{kind: kind, at: rec.ElapsedMs, rec: rec})
		case trace.Landing:
			r.landing = rec
		}
	}
	end := r.last
	if r.end != nil {
		end = max(r.end.ElapsedMs, r.last)
	}
	for _, a := range pending {
		a.end = max(end, a.start) // never ended: it ran until the run's last word
	}
	if curPhase != "" {
		phases = append(phases, phaseSpan{phase: curPhase, from: phaseFrom, to: end, forced: forced})
	}
	// A phase entered at the last instant (run_end stamped land) shades
	// nothing.
	r.phases = slices.DeleteFunc(phases, func(p phaseSpan) bool { return p.to <= p.from && len(phases) > 1 })

	switch {
	case r.start != nil && r.start.TotalMs > 0:
		r.total = r.start.TotalMs
	case r.end != nil && r.end.TotalMs > 0:
		r.total = r.end.TotalMs
	case r.start != nil:
		r.total = r.start.ElapsedMs + r.start.RemainingMs
	}
	r.reserve, r.reserveSet = reserveOf(r.total, landAt)
	r.cancelWait = r.cancelWaitOf()

	// Lanes: setup first, then the model, then the calls in the order
	// they were first made.
	rank := func(step string) int {
		switch step {
		case "setup":
			return 0
		case "model":
			return 1
		}
		return 2
	}
	slices.SortStableFunc(r.lanes, func(a, b *lane) int {
		return cmp.Or(cmp.Compare(rank(a.step), rank(b.step)), cmp.Compare(a.first, b.first))
	})
	return r
}

// unsettled is the oldest cancel of the run, of the step and key of
// answer, that has no answer yet: the one answer settles.
func (r *run) unsettled(answer *trace.Record) *mark {
	for _, m := range r.cancels {
		if m.settled == nil && m.rec.Key == answer.Key && m.rec.Step == answer.Step {
			return m
		}
	}
	return nil
}

// cancelWaitOf finds the run's wait for cancel answers: the harness makes
// its result (the landing record, or, for a run the model answered, the
// last record before the wait), then gives the cancels still unanswered
// their grace, then writes run_end. A run that had no cancel unanswered
// then, or whose run_end came at once, had no wait.
func (r *run) cancelWaitOf() *cancelWait {
	if r.end == nil || len(r.cancels) == 0 {
		return nil
	}
	result := r.landing
	if result == nil {
		for i := len(r.records) - 1; i >= 0; i-- {
			rec := &r.records[i]
			answer := rec.Event == trace.CancelSent && rec.State != string(trace.CancelStateSent)
			if rec.Seq < r.end.Seq && !answer {
				result = rec
				break
			}
		}
	}
	if result == nil || r.end.ElapsedMs <= result.ElapsedMs {
		return nil
	}
	w := &cancelWait{from: result.ElapsedMs, to: r.end.ElapsedMs, result: result}
	for _, m := range r.cancels {
		if m.rec.Seq < result.Seq && (m.settled == nil || m.settled.Seq > result.Seq) {
			w.cancels = append(w.cancels, m)
		}
	}
	if len(w.cancels) == 0 {
		return nil
	}
	return w
}

// phaseRank orders the ladder's phases; a name outside it ranks last.
func phaseRank(p string) int {
	switch p {
	case "explore":
		return 0
	case "narrow":
		return 1
	case "fit":
		return 2
	case landPhase:
		return 3
	}
	return 4
}

// reserveOf is the reserve R of a run of total B whose ladder reached land
// on its own at landAt (−1: it did not): B − landAt, since the ladder
// lands at B − R. The trace does not carry R itself, and a land the ladder
// was moved to early (reason "forced") says nothing of it, so otherwise R
// is the default rule's, which --reserve may have changed: set reports
// whether the trace showed it. A total of 0 has no reserve.
func reserveOf(total, landAt int64) (reserve int64, set bool) {
	switch {
	case total <= 0:
		return 0, false
	case landAt >= 0 && landAt <= total:
		return total - landAt, true
	}
	return budget.DefaultReserve(time.Duration(total) * time.Millisecond).Milliseconds(), false
}

// match finds the started attempt an attempt_end ends: the same step,
// step index, attempt number and key, preferring one with the same lease
// and message (two setup calls in parallel differ in nothing else), else
// the oldest.
func match(pending []*attempt, end *trace.Record) *attempt {
	var first *attempt
	for _, a := range pending {
		s := a.startRec
		if s.Step != end.Step || s.StepIndex != end.StepIndex || s.Attempt != end.Attempt || s.Key != end.Key {
			continue
		}
		if s.GrantedMs == end.GrantedMs && s.Message == end.Message {
			return a
		}
		if first == nil {
			first = a
		}
	}
	return first
}
