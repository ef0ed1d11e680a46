package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/glidepath/glidepath/internal/lines"
)

// MaxLine is the longest trace line [ReadRecords] accepts, in bytes. The
// [JSONL] sink writes far shorter ones; a longer line is not a trace's.
const MaxLine = 1 << 20

// ErrBadRecord is matched by every [*LineError]: a line of a trace that is
// not a record. A [*SkippedError] matches it too.
var ErrBadRecord = errors.New("trace: bad record")

// LineError reports a line of a trace that is not a record: not a JSON
// object, a field of the wrong type, a field every record carries missing,
// a line longer than [MaxLine], or a last line cut short by a crash. It
// matches [ErrBadRecord].
type LineError struct {
	Line int // 1-based
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("trace: line %d: %v", e.Line, e.Err) }

func (e *LineError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrBadRecord].
func (e *LineError) Is(target error) bool { return target == ErrBadRecord }

// SkippedError reports the lines [ReadRecords] skipped because they were
// not records, each a [*LineError], in file order; the records of every
// other line were read. It matches [ErrBadRecord], and errors.AsType finds
// its first [*LineError].
type SkippedError struct {
	Lines []*LineError
}

func (e *SkippedError) Error() string { return e.skipped().Error() }

// Unwrap returns the skipped lines' errors.
func (e *SkippedError) Unwrap() []error { return e.skipped().Unwrap() }

// skipped is e as a trace's message says it: each line by its number.
func (e *SkippedError) skipped() lines.Skipped[*LineError] {
	return lines.Skipped[*LineError]{Prefix: "trace", Noun: "bad line", Lines: e.Lines,
		Name: func(l *LineError) string { return fmt.Sprintf("line %d: %v", l.Line, l.Err) }}
}

// ReadRecords parses a JSONL trace, as [JSONL] writes it, into its
// records, in file order. Blank lines are skipped and unknown fields
// ignored, so a newer trace still reads. A line that is not a record — a
// bad line in the middle, a line longer than [MaxLine], the torn last line
// of a process killed while it wrote — is skipped, and the read goes on:
// the records returned are those of every other line, and the error is a
// [*SkippedError] naming each line skipped and why. An error of r itself
// ends the read and is returned as it is, with the records read before it.
func ReadRecords(r io.Reader) ([]Record, error) {
	var recs []Record
	var bad []*LineError
	err := lines.Each(r, MaxLine, func(n int, line []byte, last, tooLong bool) {
		var err error
		switch {
		case tooLong:
			err = fmt.Errorf("longer than %d bytes", MaxLine)
		case len(bytes.TrimSpace(line)) == 0:
			return
		default:
			var rec Record
			if rec, err = parseRecord(line); err == nil {
				recs = append(recs, rec)
				return
			}
			if last && !json.Valid(line) {
				err = lines.ErrTorn
			}
		}
		bad = append(bad, &LineError{Line: n, Err: err})
	})
	if err != nil {
		return recs, err
	}
	if len(bad) > 0 {
		return recs, &SkippedError{Lines: bad}
	}
	return recs, nil
}

// jsonRecord is a Record as the JSON of a trace line spells it. The fields
// every record carries are pointers, so that a missing one is told apart
// from a zero one.
type jsonRecord struct {
	TS          *time.Time `json:"ts"`
	RunID       *string    `json:"run_id"`
	ParentRunID string     `json:"parent_run_id"`
	Seq         *int64     `json:"seq"`
	Event       *Event     `json:"event"`
	ElapsedMs   *int64     `json:"elapsed_ms"`
	RemainingMs *int64     `json:"remaining_ms"`
	Phase       *string    `json:"phase"`

	Step          string  `json:"step"`
	StepIndex     int     `json:"step_index"`
	Attempt       int     `json:"attempt"`
	GrantedMs     int64   `json:"granted_ms"`
	ResendCount   int     `json:"resend_count"`
	Outcome       Outcome `json:"outcome"`
	Status        int     `json:"status"`
	Keepalives    int64   `json:"keepalives"`
	Chunks        int64   `json:"chunks"`
	Tokens        int64   `json:"tokens"`
	InputTokens   int64   `json:"input_tokens"`
	OutputTokens  int64   `json:"output_tokens"`
	CachedTokens  int64   `json:"cached_tokens"`
	Reasoning     int64   `json:"reasoning_tokens"`
	FinishReason  string  `json:"finish_reason"`
	ResponseModel string  `json:"response_model"`
	CallID        string  `json:"tool_call_id"`
	Key           string  `json:"idempotency_key"`
	SleepMs       int64   `json:"sleep_ms"`
	Source        string  `json:"source"`
	GaveUp        bool    `json:"gave_up"`
	Reconciling   bool    `json:"reconciling"`
	Reason        string  `json:"reason"`
	RetryAfter    string  `json:"retry_after_invalid"`
	Units         int64   `json:"units"`
	Total         int64   `json:"total"`
	SilentMs      int64   `json:"silent_ms"`
	AllowanceMs   int64   `json:"allowance_ms"`
	Headers       bool    `json:"headers"`
	From          string  `json:"from"`
	To            string  `json:"to"`
	State         string  `json:"state"`
	TotalMs       int64   `json:"total_ms"`
	LateMs        int64   `json:"late_ms"`
	Cause         string  `json:"cause"`
	Result        string  `json:"result"`
	Message       string  `json:"message"`
}

func parseRecord(line []byte) (Record, error) {
	var j jsonRecord
	if err := json.Unmarshal(line, &j); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			if te.Field == "" {
				return Record{}, fmt.Errorf("a JSON %s, not an object", te.Value)
			}
			return Record{}, fmt.Errorf("%s is a JSON %s, want %v", te.Field, te.Value, te.Type)
		}
		if _, ok := errors.AsType[*time.ParseError](err); ok {
			return Record{}, fmt.Errorf("ts: %w", err) // the only time a record has
		}
		return Record{}, fmt.Errorf("not JSON: %w", err)
	}
	for _, f := range []struct {
		name    string
		missing bool
	}{
		{"ts", j.TS == nil},
		{"run_id", j.RunID == nil},
		{"seq", j.Seq == nil},
		{"event", j.Event == nil},
		{"elapsed_ms", j.ElapsedMs == nil},
		{"remaining_ms", j.RemainingMs == nil},
		{"phase", j.Phase == nil},
	} {
		if f.missing {
			return Record{}, fmt.Errorf("no %s", f.name)
		}
	}
	return Record{
		TS: *j.TS, RunID: *j.RunID, ParentRunID: j.ParentRunID, Seq: *j.Seq, Event: *j.Event,
		ElapsedMs: *j.ElapsedMs, RemainingMs: *j.RemainingMs, Phase: *j.Phase,
		Step: j.Step, StepIndex: j.StepIndex, Attempt: j.Attempt, GrantedMs: j.GrantedMs,
		ResendCount: j.ResendCount, Outcome: j.Outcome, Status: j.Status,
		Keepalives: j.Keepalives, Chunks: j.Chunks, Tokens: j.Tokens, InputTokens: j.InputTokens, OutputTokens: j.OutputTokens,
		CachedTokens: j.CachedTokens, ReasoningTokens: j.Reasoning, FinishReason: j.FinishReason, ResponseModel: j.ResponseModel, Key: j.Key, CallID: j.CallID,
		SleepMs: j.SleepMs, Source: j.Source, GaveUp: j.GaveUp, Reconciling: j.Reconciling, Reason: j.Reason, RetryAfterInvalid: j.RetryAfter,
		Units: j.Units, Total: j.Total, SilentMs: j.SilentMs, AllowanceMs: j.AllowanceMs, Headers: j.Headers, From: j.From, To: j.To, State: j.State,
		TotalMs: j.TotalMs, LateMs: j.LateMs, Cause: j.Cause, Result: j.Result, Message: j.Message,
	}, nil
}
