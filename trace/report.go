package trace

import (
	"cmp"
	"maps"
	"slices"

	"github.com/glidepath/glidepath/budget"
)

// A Report summarizes the traces of many runs (SPEC §6): how much of its
// budget each run spent, where the time went, what spent the budget of
// the runs that ran out, how attempts ended and what was left to
// reconcile. It marshals with encoding/json as `harness report --json`
// prints it; its maps always hold the keys of the SPEC's vocabulary, zero
// or not, so a reader finds them.
type Report struct {
	Runs       int            `json:"runs"`
	Unfinished int            `json:"unfinished"` // runs whose trace has no run_end
	Results    map[string]int `json:"results"`    // finished runs by result: complete, partial
	Causes     map[string]int `json:"causes"`     // finished runs by cause: budget, quiet, cancelled, max_steps, upstream, unsettled, tools_failed

	// Late counts the finished runs that ended after their deadline: their
	// run_end carries late_ms (SPEC §3). LateMaxMs is the latest of them.
	Late      int   `json:"late"`
	LateMaxMs int64 `json:"late_max_ms"`

	Utilization Utilization  `json:"utilization"`
	Steps       []StepTime   `json:"steps"`     // by time spent, most first
	Exhausted   []Exhaustion `json:"exhausted"` // the runs that spent their budget (cause budget, not a server's wait), by run ID

	// SubAgents sums up the runs of sub-agents, in-process (parent_run_id)
	// or served by harness serve (run_start's idempotency_key is a call
	// of another run), by the parent's step that ran them. Their time is inside that step's, so it is
	// neither in Steps nor in Utilization, and they are not among Runs,
	// Results, Causes or Exhausted; their attempts, cancels,
	// reconciliations and orphans are counted below with every other.
	SubAgents []SubAgent `json:"sub_agents"`

	Outcomes   Outcomes       `json:"outcomes"`
	Retries    int            `json:"retries"`    // backoff records that slept: attempts made again after a failure
	Cancels    map[string]int `json:"cancels"`    // cancel_sent records by state: sent, accepted, unknown, failed
	Reconciled map[string]int `json:"reconciled"` // reconcile records by state: done, failed, never_received, running
	Orphans    int            `json:"orphans"`    // orphan records
}

// Utilization is the spread of spent/total over the finished runs whose
// budget the trace gives, as nearest-rank percentiles: 1 is a run that
// spent its whole budget.
type Utilization struct {
	Runs int     `json:"runs"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
}

// StepTime is the time one step kind ("model", "tool:NAME", "agent:NAME")
// spent over all runs: the durations of its attempts, from attempt_start to
// attempt_end, plus the backoff sleeps before its retries. Attempts that
// ran in parallel each count in full.
type StepTime struct {
	Step     string  `json:"step"`
	Attempts int     `json:"attempts"`
	Ms       int64   `json:"ms"`
	Share    float64 `json:"share"` // of the time of all step kinds
}

// SubAgent sums up the children one step of their parents ran: how many,
// how they ended, the slices they were given (their total_ms) and what
// they spent them on.
type SubAgent struct {
	Step       string         `json:"step"` // the parents' step kind: "agent:NAME", or "tool:NAME" for one served by harness serve; "agent:?" when no parent record names it
	Runs       int            `json:"runs"`
	Unfinished int            `json:"unfinished"`
	Results    map[string]int `json:"results"`
	Causes     map[string]int `json:"causes"`
	Late       int            `json:"late"`         // children that ended after their own deadline (late_ms)
	SliceP50Ms int64          `json:"slice_p50_ms"` // nearest rank
	SliceMaxMs int64          `json:"slice_max_ms"`
	SpentMs    int64          `json:"spent_ms"` // the finished children's elapsed_ms at run_end, summed
	Steps      []StepTime     `json:"steps"`    // the children's own time by step kind, most first
}

// Exhaustion names what spent the budget of a run that ran out (run_end
// cause budget): the step, one model turn and the calls it asked for,
// whose attempts and backoff sleeps took the most of the run's time, and
// within it the step kind that took most. Time here is the run's clock:
// calls that ran in parallel spend it once, so Ms is at most SpentMs. Usually that is not the step that held the
// budget when it ran out, which HeldBy names: the work the run waited on
// last, the attempt that ended last before landing (one never ended
// outlasts all). Landing itself spends the reserve, so it counts for
// neither.
type Exhaustion struct {
	RunID       string  `json:"run_id"`
	SpentMs     int64   `json:"spent_ms"`   // run_end's elapsed_ms
	StepIndex   int     `json:"step_index"` // −1 when the run made no attempt before landing
	Step        string  `json:"step"`       // the kind that took most of step StepIndex; "" with no attempt
	Ms          int64   `json:"ms"`         // the time of step StepIndex: its attempts and sleeps, overlaps counted once
	Share       float64 `json:"share"`      // Ms / SpentMs
	HeldBy      string  `json:"held_by"`    // "" with no attempt
	HeldByIndex int     `json:"held_by_index"`
}

// Outcomes counts how attempts ended (attempt_end), "we gave up" apart
// from "they failed" ([Outcome.Ours]), and the work that never became an
// attempt.
type Outcomes struct {
	OK     int            `json:"ok"`
	Ours   Side           `json:"we_gave_up"`  // gave_up, quiet, cancelled
	Theirs Side           `json:"they_failed"` // upstream_error, rate_limited, invalid
	Other  map[string]int `json:"other"`       // outcomes outside the vocabulary, "" included

	Refused        int `json:"refused"`          // attempts the budget or a gate refused before they started
	RetriesGivenUp int `json:"retries_given_up"` // backoff records that gave up: our jittered sleep would have outlasted the budget

	// ServerWaitsGivenUp counts backoff records that gave up because the
	// server asked, with Retry-After, for a wait longer than the time
	// left: the server's wait, not our spending, ended those retries.
	ServerWaitsGivenUp int `json:"server_waits_given_up"`
}

// Side is one side's outcomes: their sum and each one's count.
type Side struct {
	Total int             `json:"total"`
	By    map[Outcome]int `json:"by"`
}

// retryAfterExceedsBudget is budget.RetryAfterExceedsBudget, the reason
// of a give-up on a server's wait.
const retryAfterExceedsBudget = budget.RetryAfterExceedsBudget

// landPhase is landing.Land's name, as the harness writes it in a
// record's phase; package landing is not imported for one word.
const landPhase = "land"

// Summarize builds the Report of the runs whose records are given, from
// one trace or many, in any order: records are grouped by run ID and
// ordered by seq, and a record whose run ID and seq were already seen is
// counted once, so a trace given twice is not counted twice.
func Summarize(records []Record) Report {
	rep := Report{
		Results:    zeros("complete", "partial"),
		Causes:     zeros("budget", "quiet", "cancelled", "max_steps", "upstream", "unsettled", "tools_failed"),
		Steps:      []StepTime{},
		Exhausted:  []Exhaustion{},
		Cancels:    zeros("sent", "accepted", "unknown", "failed"),
		Reconciled: zeros("done", "failed", "never_received", "running"),
		Outcomes: Outcomes{
			Ours:   Side{By: map[Outcome]int{GaveUp: 0, Quiet: 0, Cancelled: 0}},
			Theirs: Side{By: map[Outcome]int{UpstreamError: 0, RateLimited: 0, Invalid: 0}},
			Other:  map[string]int{},
		},
	}
	runs := map[string][]Record{}
	callOf := map[string]callAt{} // a call's key → the step and run of its attempts
	for _, r := range records {
		runs[r.RunID] = append(runs[r.RunID], r)
		if r.Event == AttemptStart && r.Key != "" {
			callOf[r.Key] = callAt{r.Step, r.RunID}
		}
	}
	steps := map[string]*StepTime{}
	children := map[string]*childSum{}
	var utils []float64
	for _, id := range slices.Sorted(maps.Keys(runs)) {
		recs := runs[id]
		slices.SortStableFunc(recs, func(a, b Record) int { return cmp.Compare(a.Seq, b.Seq) })
		recs = slices.CompactFunc(recs, func(a, b Record) bool { return a.Seq == b.Seq })
		if step, ok := parentStep(recs, callOf); ok {
			rep.child(recs, step, children)
			continue
		}
		rs := rep.walk(recs, steps)
		rep.Runs++
		if rs.end == nil {
			rep.Unfinished++
			continue
		}
		rep.Results[rs.end.Result]++
		if rs.end.Cause != "" {
			rep.Causes[rs.end.Cause]++
		}
		if rs.end.LateMs > 0 {
			rep.Late++
			rep.LateMaxMs = max(rep.LateMaxMs, rs.end.LateMs)
		}
		if total := rs.total(); total > 0 {
			utils = append(utils, float64(rs.end.ElapsedMs)/float64(total))
		}
		// A run the budget landed because a server asked for a wait it
		// could not afford did not spend its budget: it is not one that
		// ran out, whatever its cause says.
		if rs.end.Cause == "budget" && !rs.serverWait {
			rep.Exhausted = append(rep.Exhausted, rs.exhaustion(id))
		}
	}

	slices.Sort(utils)
	rep.Utilization = Utilization{Runs: len(utils), P50: nearestRank(utils, 50), P90: nearestRank(utils, 90), P99: nearestRank(utils, 99)}
	rep.Steps = byTime(steps)
	rep.SubAgents = []SubAgent{}
	for _, step := range slices.Sorted(maps.Keys(children)) {
		c := children[step]
		slices.Sort(c.slices)
		c.sum.SliceP50Ms = nearestRankInt(c.slices, 50)
		if len(c.slices) > 0 {
			c.sum.SliceMaxMs = c.slices[len(c.slices)-1]
		}
		c.sum.Steps = byTime(c.steps)
		rep.SubAgents = append(rep.SubAgents, c.sum)
	}
	return rep
}

// agentPrefix starts a sub-agent's step kind (harness.AgentKindPrefix).
const agentPrefix = "agent:"

// childSum is what Summarize gathers of one agent step's children.
type childSum struct {
	sum    SubAgent
	slices []int64
	steps  map[string]*StepTime
}

// callAt is where a call's attempts are on the record: their step and run.
type callAt struct{ step, run string }

// parentStep reports whether recs are a sub-agent's run and names the
// parent's step that ran it: a run whose records carry a parent_run_id
// (in the parent's process), or whose run_start carries the key of a call
// that another run of the traces made (served by harness serve, in a
// process of its own). A child whose parent's records are not among the
// traces is under "agent:?".
func parentStep(recs []Record, callOf map[string]callAt) (string, bool) {
	var start *Record
	for i := range recs {
		if recs[i].Event == RunStart {
			start = &recs[i]
			break
		}
	}
	var call callAt
	known := false
	if start != nil && start.Key != "" {
		call, known = callOf[start.Key]
		known = known && call.run != start.RunID
	}
	switch {
	case known:
		return call.step, true
	case recs[0].ParentRunID != "":
		return agentPrefix + "?", true
	}
	return "", false
}

// child reads the records of a sub-agent's run into the summary of the
// parent's step that ran it: its outcomes count with every run's, its time
// with its siblings'.
func (rep *Report) child(recs []Record, step string, children map[string]*childSum) {
	c := children[step]
	if c == nil {
		c = &childSum{sum: SubAgent{Step: step, Results: zeros("complete", "partial"),
			Causes: zeros("budget", "quiet", "cancelled", "max_steps", "upstream", "unsettled", "tools_failed")}, steps: map[string]*StepTime{}}
		children[step] = c
	}
	rs := rep.walk(recs, c.steps)
	c.sum.Runs++
	if total := rs.total(); total > 0 {
		c.slices = append(c.slices, total)
	}
	if rs.end == nil {
		c.sum.Unfinished++
		return
	}
	c.sum.Results[rs.end.Result]++
	if rs.end.Cause != "" {
		c.sum.Causes[rs.end.Cause]++
	}
	if rs.end.LateMs > 0 {
		c.sum.Late++
	}
	c.sum.SpentMs += rs.end.ElapsedMs
}

// byTime lists steps by time spent, most first, each with its share.
func byTime(steps map[string]*StepTime) []StepTime {
	var all int64
	for _, s := range steps {
		all += s.Ms
	}
	out := make([]StepTime, 0, len(steps))
	for _, s := range steps {
		if all > 0 {
			s.Share = float64(s.Ms) / float64(all)
		}
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b StepTime) int {
		return cmp.Or(cmp.Compare(b.Ms, a.Ms), cmp.Compare(a.Step, b.Step))
	})
	return out
}

// runState is what one run's walk keeps.
type runState struct {
	start, end *Record
	last       int64                      // the elapsed_ms of the run's last record
	byIndex    map[int]map[string][]span  // when each step index and kind was busy, landing excluded
	holder     *Record                    // the attempt_start of the work that ended last before landing
	holdUntil  int64                      // when the holder's attempt ended
	serverWait bool                       // a model backoff gave up on a server's Retry-After, and no work followed
	pending    map[attemptKey][]pendingAt // started attempts not yet ended, oldest first
}

// attemptKey tells one physical request from another; parallel calls of
// one tool in one step differ in their idempotency keys.
type attemptKey struct {
	step          string
	index, number int
	key           string
}

// span is a stretch of a run's clock, [from, to) in elapsed milliseconds.
type span struct{ from, to int64 }

type pendingAt struct {
	start   *Record
	landing bool
}

// hold makes the attempt started by start the run's holder if it ended
// (at until) no earlier than the holder's: the budget ran out while the
// run waited on the work that ended last. Ties go to the later start,
// then to the step's name, so that the answer does not depend on the
// order of records.
func (rs *runState) hold(start *Record, until int64) {
	if h := rs.holder; h != nil {
		if c := cmp.Or(cmp.Compare(until, rs.holdUntil), cmp.Compare(start.ElapsedMs, h.ElapsedMs), cmp.Compare(start.Step, h.Step)); c < 0 {
			return
		}
	}
	rs.holder, rs.holdUntil = start, until
}

// walk reads one run's records, in seq order, into rep and steps.
func (rep *Report) walk(recs []Record, steps map[string]*StepTime) *runState {
	rs := &runState{byIndex: map[int]map[string][]span{}, pending: map[attemptKey][]pendingAt{}}
	// spend counts [from, to) for step: in full for its kind, since the
	// time by kind is work done, and as a stretch of the run's clock for
	// its step index, since what a run that ran out spent is its clock.
	spend := func(step string, index int, from, to int64, landing bool) {
		s := steps[step]
		if s == nil {
			s = &StepTime{Step: step}
			steps[step] = s
		}
		to = max(to, from)
		s.Ms += to - from
		if landing {
			return
		}
		if rs.byIndex[index] == nil {
			rs.byIndex[index] = map[string][]span{}
		}
		rs.byIndex[index][step] = append(rs.byIndex[index][step], span{from, to})
	}
	var prev *Record // the last attempt record, whose step a backoff sleep belongs to
	for i := range recs {
		r := &recs[i]
		rs.last = r.ElapsedMs
		switch r.Event {
		case RunStart:
			rs.start = r
		case RunEnd:
			rs.end = r
		case AttemptStart:
			k := attemptKey{r.Step, r.StepIndex, r.Attempt, r.Key}
			landing := r.Phase == landPhase
			rs.pending[k] = append(rs.pending[k], pendingAt{r, landing})
			spend(r.Step, r.StepIndex, r.ElapsedMs, r.ElapsedMs, landing)
			steps[r.Step].Attempts++
			if !landing {
				rs.serverWait = false
			}
			prev = r
		case AttemptEnd:
			k := attemptKey{r.Step, r.StepIndex, r.Attempt, r.Key}
			if q := rs.pending[k]; len(q) > 0 {
				spend(r.Step, r.StepIndex, q[0].start.ElapsedMs, r.ElapsedMs, q[0].landing)
				if !q[0].landing {
					rs.hold(q[0].start, r.ElapsedMs)
				}
				rs.pending[k] = q[1:]
			}
			rep.count(r.Outcome)
			prev = r
		case Refused:
			rep.Outcomes.Refused++
		case Backoff:
			if r.Step == "model" && r.GaveUp && r.Reason == retryAfterExceedsBudget {
				rs.serverWait = true // the run lands on it, unless work follows
			}
			switch {
			case r.Reconciling:
				// A wait between status asks: nothing was sent again.
			case r.GaveUp && r.Reason == retryAfterExceedsBudget:
				rep.Outcomes.ServerWaitsGivenUp++ // no sleep happened
			case r.GaveUp:
				rep.Outcomes.RetriesGivenUp++ // no sleep happened
			default:
				rep.Retries++
			}
			switch {
			case r.GaveUp:
			case r.Step != "":
				spend(r.Step, r.StepIndex, r.ElapsedMs, r.ElapsedMs+r.SleepMs, r.Phase == landPhase)
			case prev != nil:
				spend(prev.Step, prev.StepIndex, r.ElapsedMs, r.ElapsedMs+r.SleepMs, r.Phase == landPhase)
			}
		case CancelSent:
			rep.Cancels[r.State]++
		case Reconcile:
			rep.Reconciled[r.State]++
		case Orphan:
			rep.Orphans++
		}
	}
	// An attempt the trace never ended (the run was cut short) ran until
	// the run's last word, so its time is not lost from the report.
	end := rs.last
	if rs.end != nil {
		end = rs.end.ElapsedMs
	}
	for k, q := range rs.pending {
		for _, p := range q {
			spend(k.step, k.index, p.start.ElapsedMs, end, p.landing)
			if !p.landing {
				rs.hold(p.start, end+1) // it outlasted everything that ended
			}
		}
	}
	return rs
}

func (rep *Report) count(o Outcome) {
	switch {
	case o == OK:
		rep.Outcomes.OK++
	case o.Ours():
		rep.Outcomes.Ours.Total++
		rep.Outcomes.Ours.By[o]++
	case o == UpstreamError || o == RateLimited || o == Invalid:
		rep.Outcomes.Theirs.Total++
		rep.Outcomes.Theirs.By[o]++
	default:
		rep.Outcomes.Other[string(o)]++
	}
}

// total is the run's budget B: run_start's total_ms, else run_end's, else
// what run_start says was spent and left.
func (rs *runState) total() int64 {
	switch {
	case rs.start != nil && rs.start.TotalMs > 0:
		return rs.start.TotalMs
	case rs.end != nil && rs.end.TotalMs > 0:
		return rs.end.TotalMs
	case rs.start != nil:
		return rs.start.ElapsedMs + rs.start.RemainingMs
	}
	return 0
}

// exhaustion names the step that spent most of a run that ran out. Ties
// go to the earlier step and, within a step, to the kind first in order.
func (rs *runState) exhaustion(id string) Exhaustion {
	e := Exhaustion{RunID: id, SpentMs: rs.end.ElapsedMs, StepIndex: -1}
	for _, index := range slices.Sorted(maps.Keys(rs.byIndex)) {
		var all []span
		for _, spans := range rs.byIndex[index] {
			all = append(all, spans...)
		}
		if ms := covered(all); e.StepIndex < 0 || ms > e.Ms {
			e.StepIndex, e.Ms = index, ms
		}
	}
	if e.StepIndex >= 0 {
		kinds := rs.byIndex[e.StepIndex]
		var most int64 = -1
		for _, kind := range slices.Sorted(maps.Keys(kinds)) {
			if ms := covered(kinds[kind]); ms > most {
				e.Step, most = kind, ms
			}
		}
	}
	if e.SpentMs > 0 {
		e.Share = float64(e.Ms) / float64(e.SpentMs)
	}
	if rs.holder != nil {
		e.HeldBy, e.HeldByIndex = rs.holder.Step, rs.holder.StepIndex
	}
	return e
}

// covered is how much of the run's clock the spans cover, overlaps
// counted once. It sorts spans.
func covered(spans []span) int64 {
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.from, b.from) })
	var total, end int64
	for i, s := range spans {
		if i == 0 || s.from > end {
			total += s.to - s.from
			end = s.to
		} else if s.to > end {
			total += s.to - end
			end = s.to
		}
	}
	return total
}

// nearestRank is the p-th percentile of sorted by the nearest-rank method:
// the smallest value with at least p% of the values at or below it.
func nearestRank(sorted []float64, p int) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ⌈p·n/100⌉
	return sorted[max(rank, 1)-1]
}

// nearestRankInt is nearestRank of sorted integers.
func nearestRankInt(sorted []int64, p int) int64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100
	return sorted[max(rank, 1)-1]
}

func zeros(keys ...string) map[string]int {
	m := make(map[string]int, len(keys))
	for _, k := range keys {
		m[k] = 0
	}
	return m
}
