package landing

import (
	"errors"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/trace"
)

// The frame is the stamp both hosts put on their records (issue 25): these
// pin what it writes, the conformance suite that the hosts agree.
func TestFrameStampsEachRecordAfterThePhaseChangeTheClockMade(t *testing.T) {
	start := time.Unix(1000, 0).UTC()
	f := NewFrame("run-a", "run-p", start, 10*time.Second, 0, 0) // R = 2.5s: land from 7.5s

	st := f.Stamp(start.Add(100*time.Millisecond), trace.Record{Event: trace.RunStart, TotalMs: 10000, Seq: 99, LateMs: 7})
	if st.Change.Event != "" {
		t.Fatalf("a record in explore was preceded by %+v", st.Change)
	}
	got := st.Record
	if got.Seq != 1 || got.RunID != "run-a" || got.ParentRunID != "run-p" || got.ElapsedMs != 100 || got.RemainingMs != 9900 ||
		got.Phase != "explore" || got.LateMs != 0 || !got.TS.Equal(start.Add(100*time.Millisecond)) || got.TotalMs != 10000 {
		t.Fatalf("run_start stamped %+v", got)
	}

	st = f.Stamp(start.Add(6500*time.Millisecond), trace.Record{Event: trace.AttemptStart, Step: "model"})
	if c := st.Change; c.Event != trace.PhaseChange || c.From != "explore" || c.To != "narrow" || c.Reason != "" || c.Seq != 2 || c.Phase != "narrow" || c.ElapsedMs != 6500 {
		t.Fatalf("the clock's change at 65%% was recorded as %+v", c)
	}
	if r := st.Record; r.Seq != 3 || r.Phase != "narrow" {
		t.Fatalf("the record after the change was stamped seq %d, phase %q", r.Seq, r.Phase)
	}
	if f.Phase() != Narrow {
		t.Fatalf("the phase on record is %v, want narrow", f.Phase())
	}
}

func TestFrameMovesAheadOfTheClockWithReasonForced(t *testing.T) {
	start := time.Unix(0, 0)
	f := NewFrame("run", "", start, 10*time.Second, 0, 0)
	now := start.Add(time.Second)
	c := f.MoveTo(now, Land)
	if c.Event != trace.PhaseChange || c.From != "explore" || c.To != "land" || c.Reason != "forced" || c.Seq != 1 {
		t.Fatalf("a forced landing was recorded as %+v", c)
	}
	if again := f.MoveTo(now, Narrow); again.Event != "" {
		t.Fatalf("a move back was recorded: %+v", again)
	}
	if _, ok := f.NextWake(); ok {
		t.Fatal("a frame in land still wants a phase timer")
	}
}

func TestFrameRecordsNothingAfterRunEnd(t *testing.T) {
	start := time.Unix(0, 0)
	f := NewFrame("run", "", start, 10*time.Second, 0, 0)
	end := f.Stamp(start.Add(10250*time.Millisecond), trace.Record{Event: trace.RunEnd})
	if end.Change.To != "land" || end.Record.LateMs != 250 || end.Record.RemainingMs != 0 || end.Record.ElapsedMs != 10250 {
		t.Fatalf("a run_end 250ms past D was stamped %+v after %+v", end.Record, end.Change)
	}
	after := f.Stamp(start.Add(11*time.Second), trace.Record{Event: trace.CancelSent})
	if after.Change.Event != "" || after.Record.Event != "" {
		t.Fatalf("a record after run_end was stamped: %+v", after)
	}
	if c := f.MoveTo(start.Add(11*time.Second), Land); c.Event != "" {
		t.Fatalf("a move after run_end was recorded: %+v", c)
	}
}

func TestFrameWakesAtTheNextRungOfThePhaseOnRecord(t *testing.T) {
	start := time.Unix(0, 0)
	f := NewFrame("run", "", start, 100*time.Second, 10*time.Second, 0) // narrow 60s, fit 80s, land 90s
	for _, want := range []time.Duration{60 * time.Second, 80 * time.Second, 90 * time.Second} {
		at, ok := f.NextWake()
		if !ok || !at.Equal(start.Add(want)) {
			t.Fatalf("NextWake = %v, %v; want %v", at.Sub(start), ok, want)
		}
		if c := f.Advance(at); c.Event != trace.PhaseChange {
			t.Fatalf("the wake at %v moved nothing", want)
		}
	}
	if _, ok := f.NextWake(); ok {
		t.Fatal("a frame in land wants another wake")
	}
}

func TestFrameClockSaysSpentPastTheDeadline(t *testing.T) {
	start := time.Unix(0, 0)
	f := NewFrame("run", "", start, 10*time.Second, 2*time.Second, 0)
	spent, remaining, available := f.Clock(start.Add(9 * time.Second))
	if spent != 9*time.Second || remaining != time.Second || available != -time.Second {
		t.Fatalf("Clock at 9s = %v, %v, %v", spent, remaining, available)
	}
	spent, remaining, _ = f.Clock(start.Add(12 * time.Second))
	if spent != 12*time.Second || remaining != 0 {
		t.Fatalf("Clock past D = %v, %v", spent, remaining)
	}
	if f.Floor() != budget.DefaultFloor || f.Reserve() != 2*time.Second || f.Total() != 10*time.Second {
		t.Fatalf("figures %v %v %v", f.Total(), f.Reserve(), f.Floor())
	}
}

func TestBackoffPausesTheQuietClockOnlyForASleepTheRunChose(t *testing.T) {
	for _, tc := range []struct {
		name  string
		d     budget.Delay
		waits bool
	}{
		{"a jittered sleep pauses it", budget.Delay{Sleep: 80 * time.Millisecond, Source: budget.FromJitter}, true},
		{"a server's wait pauses it", budget.Delay{Sleep: time.Second, Source: budget.FromRetryAfter}, true},
		{"a sleep of zero does not: it has no silence to excuse", budget.Delay{Source: budget.FromJitter}, false},
		{"a give-up does not: it sleeps nothing", budget.Delay{Sleep: time.Minute, GiveUp: true, Reason: budget.BackoffExceedsBudget}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, waits := Backoff(trace.Record{Step: "tool:pay", Attempt: 2, ResendCount: 1, Key: "k"}, tc.d)
			if waits != tc.waits {
				t.Errorf("waits = %v, want %v", waits, tc.waits)
			}
			if rec.Event != trace.Backoff || rec.SleepMs != tc.d.Sleep.Milliseconds() || rec.Source != tc.d.Source.String() ||
				rec.GaveUp != tc.d.GiveUp || rec.Reason != tc.d.Reason || rec.ResendCount != 0 || rec.Step != "tool:pay" || rec.Key != "k" {
				t.Errorf("record %+v", rec)
			}
		})
	}
}

func TestSetupRulesLeaseRefuseAndNameWhatDidNotFinish(t *testing.T) {
	start := time.Unix(0, 0)
	f := NewFrame("run", "", start, 6*time.Second, time.Second, 50*time.Millisecond)

	lease, err := f.SetupLease(start, 0, 0)
	if err != nil || lease.Granted != 1250*time.Millisecond || !lease.Capped || !lease.Deadline.Equal(start.Add(1250*time.Millisecond)) {
		t.Fatalf("a 6s run's setup lease = %+v, %v; want a quarter of its 5s of work, capped", lease, err)
	}
	if lease, err = f.SetupLease(start, 4*time.Second, 0); err != nil || lease.Granted != 4*time.Second {
		t.Fatalf("a setup that asks 4s got %+v, %v", lease, err)
	}
	_, err = f.SetupLease(start.Add(4980*time.Millisecond), 0, 0)
	re, ok := errors.AsType[*budget.RefusedError](err)
	if !ok || re.Step != SetupStep || re.Rule != budget.BelowFloor {
		t.Fatalf("a setup with 20ms of work left got %v", err)
	}
	rec, left := SetupRefused("manifest of http://x", 1, err)
	if rec.Event != trace.Refused || rec.Step != SetupStep || rec.Reason != "below floor" || rec.Attempt != 1 ||
		rec.Message != "manifest of http://x: "+err.Error() || left != "manifest of http://x was not started (not enough time)" {
		t.Fatalf("SetupRefused = %+v, %q", rec, left)
	}

	for _, tc := range []struct {
		name  string
		o     trace.Outcome
		left  string
		cause Cause
	}{
		{"a setup that finished leaves nothing", trace.OK, "", ""},
		{"a setup its lease cut ran out of time", trace.GaveUp, "mcp fs did not finish in 1.2s", CauseBudget},
		{"a cancelled setup was cancelled", trace.Cancelled, "mcp fs was cancelled", CauseCancelled},
		{"a setup that failed is upstream's", trace.UpstreamError, "mcp fs failed", CauseUpstream},
	} {
		t.Run(tc.name, func(t *testing.T) {
			left, cause := SetupEnd("mcp fs", tc.o, 1250*time.Millisecond)
			if left != tc.left || cause != tc.cause {
				t.Errorf("SetupEnd = %q, %q; want %q, %q", left, cause, tc.left, tc.cause)
			}
		})
	}
	if !SetupAgain(true, 1, 3) || SetupAgain(true, 3, 3) || SetupAgain(false, 1, 3) {
		t.Error("only a dead worker's setup is made again, up to its attempts")
	}
}
