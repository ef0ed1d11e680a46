package landing

import (
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/trace"
)

// A Frame is a run's time as plain data — when its budget B started, its
// deadline D, its reserve R and floor F — and the stamp of its records: the
// one rule both hosts read the clock, order the records and record the
// ladder's moves by (issue 25: the process's Session and the Temporal
// workflow each had their own). It holds no timer and reads no clock: time
// is an argument, and [Frame.NextWake] says when the host's one phase
// timer is to fire. It lives here, beside [PhaseAt] and [NextPhaseAt],
// because its state is the ladder's phase on record, and package landing
// already speaks both of its vocabularies, budget and trace.
//
// A Frame is not safe for concurrent use: a host that records from
// several goroutines stamps under one lock, so that seq, ts and
// elapsed_ms increase together.
//
// Its deadline is start + total, as a budget's is, and is not kept apart:
// every in-process run holds a Frame (issue 25 item 6).
type Frame struct {
	runID, parentRunID    string
	start                 time.Time
	total, reserve, floor time.Duration
	resolution            time.Duration // the host's timer resolution: zero in process

	seq   int64 // the last record's seq
	phase Phase // the phase the last phase record moved to
	ended bool  // run_end is stamped: it is the run's last record
}

// NewFrame returns the frame of run runID — a sub-agent's of run
// parentRunID, "" for a run of its own — whose budget total started at
// start, with reserve and floor; a zero reserve or floor is the default
// ([budget.DefaultReserve], [budget.DefaultFloor]), as [budget.New] makes
// them.
func NewFrame(runID, parentRunID string, start time.Time, total, reserve, floor time.Duration) Frame {
	if reserve == 0 {
		reserve = budget.DefaultReserve(total)
	}
	if floor == 0 {
		floor = budget.DefaultFloor
	}
	return Frame{runID: runID, parentRunID: parentRunID, start: start, total: total, reserve: reserve, floor: floor}
}

// FrameOf returns the frame of run runID on b, a budget already made.
func FrameOf(runID, parentRunID string, b *budget.Budget) Frame {
	return NewFrame(runID, parentRunID, b.Start(), b.Total(), b.Reserve(), b.Floor())
}

// WithResolution returns f on a host whose timers fire up to d late (a
// Temporal server's timer resolution, issue 26): its leases and the
// timers it tells the host to arm count d once ([budget.Armable]). Zero,
// as in process, changes nothing.
func (f Frame) WithResolution(d time.Duration) Frame {
	f.resolution = max(d, 0)
	return f
}

// Resolution returns the host's timer resolution, for the rules that
// count it beside the frame's ([budget.Backoff.Resolution]).
func (f *Frame) Resolution() time.Duration { return f.resolution }

// Armable returns how long a timer armed at now may be set for and still
// fire by D on the host: remaining − the resolution, never negative.
func (f *Frame) Armable(now time.Time) time.Duration {
	_, remaining, _ := f.Clock(now)
	return budget.Armable(remaining, f.resolution)
}

// Figures returns the budget's figures at now for a turn's or a call's
// machine, whose kind's p50 is p50 and whose work has ended or not:
// its Remaining is [Frame.Armable], so that every lease and backoff the
// machine grants counts the host's timer resolution.
func (f *Frame) Figures(now time.Time, p50 time.Duration, ended bool) budget.Figures {
	return budget.Figures{Remaining: f.Armable(now), Reserve: f.reserve, Floor: f.floor, P50: p50, Ended: ended}
}

// deadline returns D, when the budget ends.
func (f *Frame) deadline() time.Time { return f.start.Add(f.total) }

// RunID returns the run's ID, which stamps its records.
func (f *Frame) RunID() string { return f.runID }

// Start returns when the budget started.
func (f *Frame) Start() time.Time { return f.start }

// Total returns B.
func (f *Frame) Total() time.Duration { return f.total }

// Reserve returns R.
func (f *Frame) Reserve() time.Duration { return f.reserve }

// Floor returns F.
func (f *Frame) Floor() time.Duration { return f.floor }

// Phase returns the phase on record: the last phase record's.
func (f *Frame) Phase() Phase { return f.phase }

// Seq returns the last record's seq.
func (f *Frame) Seq() int64 { return f.seq }

// Continued returns f with seq records stamped and phase on record: the
// frame of a run that a host moved to another process (a Temporal run
// that continues as new, issue 26), which stamps on from the next seq and
// records no phase change it has already recorded.
func (f Frame) Continued(seq int64, phase Phase) Frame {
	f.seq, f.phase = seq, phase
	return f
}

// Clock reads the budget at now: spent, the time that really passed (even
// past B: time is not rounded in the run's favour, SPEC §3); remaining,
// never negative; and available, remaining − R, negative inside the
// reserve: what work may still spend.
func (f *Frame) Clock(now time.Time) (spent, remaining, available time.Duration) {
	spent, remaining = now.Sub(f.start), max(f.deadline().Sub(now), 0)
	return spent, remaining, remaining - f.reserve
}

// Stamps are what a host writes for one record, in this order: a phase
// record, when the clock moved the ladder since the last one (its Event
// is empty when it did not), then the record. Both are empty once run_end
// is stamped: what comes after it (a cancel a tool answered past the
// deadline) is not the run's.
type Stamps struct {
	Change trace.Record
	Record trace.Record
}

// Stamp stamps rec at now — ts, run_id, parent_run_id, seq, elapsed_ms and
// remaining_ms from one reading of the clock, the phase at that instant,
// and on run_end late_ms, whatever rec held in them —, after a phase
// record for a change of phase the clock made that is not yet on the
// record: a record's phase is the phase at its own time, not the one its
// turn started in.
func (f *Frame) Stamp(now time.Time, rec trace.Record) Stamps {
	if f.ended {
		return Stamps{}
	}
	st := Stamps{Change: f.Advance(now)}
	st.Record = f.stamp(now, rec)
	f.ended = rec.Event == trace.RunEnd
	return st
}

// Advance moves the phase on record to the one the clock says at now, and
// returns its phase record, stamped; a Record with no Event when the phase
// did not change. Phases only move forward.
func (f *Frame) Advance(now time.Time) trace.Record {
	spent, _, _ := f.Clock(now)
	return f.MoveTo(now, PhaseAt(spent, f.total, f.reserve))
}

// MoveTo moves the phase on record to p, ahead of the clock when the run
// lands early (its record's reason is "forced", [PhaseReason]), and
// returns its phase record, stamped; a Record with no Event when p is not
// ahead of the phase on record, or the run has ended.
func (f *Frame) MoveTo(now time.Time, p Phase) trace.Record {
	if f.ended || p <= f.phase {
		return trace.Record{}
	}
	from := f.phase
	f.phase = p
	spent, _, _ := f.Clock(now)
	return f.stamp(now, trace.Record{Event: trace.PhaseChange, From: from.String(), To: p.String(),
		Reason: PhaseReason(p, spent, f.total, f.reserve)})
}

// stamp stamps rec as the frame's next record, in the phase on record.
func (f *Frame) stamp(now time.Time, rec trace.Record) trace.Record {
	f.seq++
	rec = trace.Stamp(rec, now, f.runID, f.seq, f.start, f.deadline())
	rec.ParentRunID, rec.Phase = f.parentRunID, f.phase.String()
	return rec
}

// NextWake returns when the clock moves the phase on record next, for the
// host's one phase timer: a phase record says when the run changed phase,
// not when it next recorded something. ok is false from land on, or once
// the run has ended: no timer is needed.
func (f *Frame) NextWake() (at time.Time, ok bool) {
	if f.ended {
		return time.Time{}, false
	}
	_, spent, ok := NextPhaseAt(f.phase, f.total, f.reserve)
	return f.start.Add(spent), ok
}

// Backoff fills rec, which says whose backoff it is (step, step index,
// attempt, key, reconciling, an unreadable Retry-After), as the record of
// the backoff d, and reports whether the host pauses the quiet clock (and
// a parent's) while it sleeps: a wait the run chose is not silence (SPEC
// §3), but a give-up sleeps nothing, and neither does a sleep of zero,
// which has no silence to excuse (issue 25: the workflow paused for one,
// the process did not).
func Backoff(rec trace.Record, d budget.Delay) (trace.Record, bool) {
	rec.Event, rec.SleepMs, rec.Source, rec.GaveUp, rec.Reason = trace.Backoff, d.Sleep.Milliseconds(), d.Source.String(), d.GiveUp, d.Reason
	rec.ResendCount = 0 // a sleep is no attempt
	return rec, !d.GiveUp && d.Sleep > 0
}
