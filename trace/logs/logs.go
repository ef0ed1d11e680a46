package logs

import (
	"github.com/glidepath/glidepath/internal/redact"
	"github.com/glidepath/glidepath/trace"
	"github.com/rs/zerolog"
)

// A Sink logs each record it is handed to its logger: attempts that failed
// at warning level, progress at debug, the rest at info. It is safe for
// concurrent use, as a zerolog.Logger writing to one writer is.
type Sink struct {
	log     zerolog.Logger
	secrets []string
}

// New returns a Sink logging to log. secrets are values no line may
// carry, such as the API key; patterns that look like secrets are
// scrubbed too.
func New(log zerolog.Logger, secrets ...string) *Sink {
	return &Sink{log: log, secrets: secrets}
}

// Record logs r. It never fails: a line that cannot be written is no
// reason to stop a run.
func (s *Sink) Record(r trace.Record) error {
	ev := s.log.Info()
	switch {
	case r.Event == trace.Progress:
		ev = s.log.Debug()
	case r.Event == trace.AttemptEnd && r.Outcome != trace.OK,
		r.Event == trace.Refused, r.Event == trace.Orphan,
		r.Event == trace.Backoff && r.GaveUp:
		ev = s.log.Warn()
	}
	ev = ev.Str("run_id", r.RunID).Str("event", string(r.Event)).
		Int64("elapsed_ms", r.ElapsedMs).Int64("remaining_ms", r.RemainingMs).Str("phase", r.Phase)
	if r.ParentRunID != "" {
		ev = ev.Str("parent_run_id", r.ParentRunID)
	}
	if r.Step != "" {
		ev = ev.Str("step", r.Step).Int("step_index", r.StepIndex)
	}
	if r.Attempt > 0 {
		ev = ev.Int("attempt", r.Attempt)
	}
	switch r.Event {
	case trace.AttemptStart, trace.AttemptEnd, trace.Refused:
		ev = ev.Int64("granted_ms", r.GrantedMs)
	}
	if r.Outcome != "" {
		ev = ev.Str("outcome", string(r.Outcome))
	}
	if r.Status != 0 {
		ev = ev.Int("status", r.Status)
	}
	switch r.Event {
	case trace.Backoff:
		ev = ev.Int64("sleep_ms", r.SleepMs).Str("source", r.Source).Bool("gave_up", r.GaveUp)
	case trace.Progress:
		ev = ev.Int64("units", r.Units)
	case trace.PhaseChange:
		ev = ev.Str("from", r.From).Str("to", r.To)
	case trace.RunStart:
		ev = ev.Int64("total_ms", r.TotalMs)
	case trace.RunEnd, trace.Landing:
		ev = ev.Str("cause", r.Cause).Str("result", r.Result)
	case trace.CancelSent, trace.Reconcile, trace.Orphan:
		ev = ev.Str("state", r.State)
	}
	if r.Reason != "" {
		ev = ev.Str("reason", r.Reason)
	}
	ev.Msg(redact.Secrets(message(r), s.secrets...))
	return nil
}

// message is a record's line for a person: its event, and what it said.
func message(r trace.Record) string {
	m := string(r.Event)
	if r.Step != "" {
		m += " " + r.Step
	}
	if r.Message != "" {
		m += ": " + r.Message
	}
	return m
}
