package trace

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// Event names a trace record (SPEC §6).
type Event string

const (
	RunStart     Event = "run_start"
	PhaseChange  Event = "phase"
	AttemptStart Event = "attempt_start"
	AttemptEnd   Event = "attempt_end"
	Refused      Event = "refused"
	Backoff      Event = "backoff"
	Progress     Event = "progress"
	QuietWarning Event = "quiet_warning" // a would-be stall of a quiet clock in warn mode (issue 27)
	CancelSent   Event = "cancel_sent"
	Reconcile    Event = "reconcile"
	Orphan       Event = "orphan"
	Landing      Event = "landing"
	RunEnd       Event = "run_end"
)

// attempt reports whether e is one of the attempt records, which always
// carry step, step_index, attempt, granted_ms and resend_count.
func (e Event) attempt() bool { return e == AttemptStart || e == AttemptEnd || e == Refused }

// Record is one line of a trace. The [Recorder] fills TS, RunID, Seq,
// ElapsedMs, RemainingMs and Phase; the caller sets Event and the fields
// that event carries. [AppendJSON] omits zero-valued optional fields, but
// always writes the ones SPEC §6 requires: ts, run_id, seq, event,
// elapsed_ms, remaining_ms and phase on every record; step, step_index,
// attempt, granted_ms and resend_count on attempt records; and the fields
// that make an event what it is (see [AppendJSON]).
type Record struct {
	TS          time.Time // RFC 3339 with nanoseconds, in UTC; years 0 to 9999, as RFC 3339 allows
	RunID       string
	ParentRunID string // a sub-agent's parent run, on every record of the child; "" for a run of its own
	Seq         int64
	Event       Event
	ElapsedMs   int64
	RemainingMs int64
	Phase       string

	// attempt_start / attempt_end / refused
	Step            string  // "model", "tool:NAME", "agent:NAME"
	StepIndex       int     // the step (model turn) the attempt belongs to
	Attempt         int     // 1-based
	GrantedMs       int64   // the lease granted = the Budget-Remaining-Ms sent
	ResendCount     int     // as OpenTelemetry's http.request.resend_count: attempt − 1
	Outcome         Outcome // attempt_end
	Status          int     // attempt_end: HTTP status, if any
	Keepalives      int64   // attempt_end
	Chunks          int64   // attempt_end (model)
	Tokens          int64   // attempt_end (model): total tokens reported, if any
	InputTokens     int64   // attempt_end (model): the prompt's tokens, if reported
	OutputTokens    int64   // attempt_end (model): the answer's tokens, if reported
	CachedTokens    int64   // attempt_end (model): of InputTokens, those read from the provider's cache, if reported
	ReasoningTokens int64   // attempt_end (model): of OutputTokens, the reasoning tokens, if reported
	FinishReason    string  // attempt_end (model): why the model stopped ("stop", "length", "tool_calls", …), if it said
	ResponseModel   string  // attempt_end (model): the model the server says answered (gen_ai.response.model), if it said
	Key             string  // idempotency_key, for tool records
	CallID          string  // tool_call_id: the model's id of the tool call an attempt answers, if any

	// backoff
	SleepMs int64
	Source  string // "jitter" | "retry_after"
	GaveUp  bool
	Reason  string // "backoff_exceeds_budget" | "retry_after_exceeds_budget"; also refusal rule / landing reason

	// Reconciling marks a backoff record of a write being reconciled: the
	// sleep between two asks of its status, or the give-up when the next
	// ask would not fit. Nothing is sent again after it: it is not a retry.
	Reconciling bool

	// RetryAfterInvalid is, on a backoff record, the raw Retry-After (or
	// retry-after-ms) the server sent that could not be read; the sleep is
	// then the jittered one.
	RetryAfterInvalid string

	// progress
	Units, Total int64

	// quiet_warning, and the landing of a run whose quiet clock fired:
	// the silent call (Step, Key), how long it was silent, its allowance
	// and where that came from (Source), and whether a model call's
	// server had sent its headers (issue 27).
	SilentMs, AllowanceMs int64
	Headers               bool

	// phase
	From, To string

	// cancel_sent / reconcile / orphan
	State string // reconcile: done|failed|never_received|running; orphan: open; cancel_sent: accepted|failed

	// run_start / run_end
	TotalMs int64 // the budget B, on run_start and run_end

	// LateMs is, on run_end, how many whole milliseconds after the
	// deadline D the run ended; zero (and left out) when it ended by D.
	// The [Recorder] stamps it (SPEC §3, §6).
	LateMs int64

	// run_end / landing
	Cause   string // run_end: budget|quiet|cancelled|max_steps|upstream, "" when complete; landing: why
	Result  string // run_end: complete|partial; landing: model|harness (who summarized)
	Message string // free text, e.g. an error (never a secret)
}

// tsLayout is RFC 3339 with all nine digits of nanoseconds, so that the
// timestamps of a trace line up and sort as text.
const tsLayout = "2006-01-02T15:04:05.000000000Z07:00"

// AppendJSON appends r as one JSON object, without a newline, to dst and
// returns the extended buffer. Fields come in a fixed order, ts first. It
// uses no reflection and, given a dst with room, allocates nothing, so a
// record encodes in well under the microsecond SPEC §7 allows.
//
// Beside the fields every record carries and those of attempt records, a
// field is written even when zero where its event needs it: outcome and
// keepalives on attempt_end; sleep_ms and source on backoff (gave_up only
// when true); units on progress; from and to on phase; state on
// cancel_sent, reconcile and orphan; total_ms on run_start and run_end;
// result on run_end. Strings are escaped as encoding/json escapes them
// without HTML escaping: invalid UTF-8 becomes U+FFFD, and U+2028 and
// U+2029 are escaped.
func AppendJSON(dst []byte, r Record) []byte {
	dst = append(dst, `{"ts":"`...)
	dst = r.TS.UTC().AppendFormat(dst, tsLayout)
	dst = append(dst, `","run_id":`...)
	dst = appendString(dst, r.RunID)
	dst = appendStr(dst, `,"parent_run_id":`, r.ParentRunID, false)
	dst = appendInt(dst, `,"seq":`, r.Seq, true)
	dst = appendStr(dst, `,"event":`, string(r.Event), true)
	dst = appendInt(dst, `,"elapsed_ms":`, r.ElapsedMs, true)
	dst = appendInt(dst, `,"remaining_ms":`, r.RemainingMs, true)
	dst = appendStr(dst, `,"phase":`, r.Phase, true)

	a := r.Event.attempt()
	end := r.Event == AttemptEnd
	dst = appendStr(dst, `,"step":`, r.Step, a)
	dst = appendInt(dst, `,"step_index":`, int64(r.StepIndex), a)
	dst = appendInt(dst, `,"attempt":`, int64(r.Attempt), a)
	dst = appendInt(dst, `,"granted_ms":`, r.GrantedMs, a)
	dst = appendInt(dst, `,"resend_count":`, int64(r.ResendCount), a)
	dst = appendStr(dst, `,"outcome":`, string(r.Outcome), end)
	dst = appendInt(dst, `,"status":`, int64(r.Status), false)
	dst = appendInt(dst, `,"keepalives":`, r.Keepalives, end)
	dst = appendInt(dst, `,"chunks":`, r.Chunks, false)
	dst = appendInt(dst, `,"tokens":`, r.Tokens, false)
	dst = appendInt(dst, `,"input_tokens":`, r.InputTokens, false)
	dst = appendInt(dst, `,"output_tokens":`, r.OutputTokens, false)
	dst = appendInt(dst, `,"cached_tokens":`, r.CachedTokens, false)
	dst = appendInt(dst, `,"reasoning_tokens":`, r.ReasoningTokens, false)
	dst = appendStr(dst, `,"finish_reason":`, r.FinishReason, false)
	dst = appendStr(dst, `,"response_model":`, r.ResponseModel, false)
	dst = appendStr(dst, `,"idempotency_key":`, r.Key, false)
	dst = appendStr(dst, `,"tool_call_id":`, r.CallID, false)

	backoff := r.Event == Backoff
	dst = appendInt(dst, `,"sleep_ms":`, r.SleepMs, backoff)
	dst = appendStr(dst, `,"source":`, r.Source, backoff)
	if r.GaveUp {
		dst = append(dst, `,"gave_up":true`...)
	}
	if r.Reconciling {
		dst = append(dst, `,"reconciling":true`...)
	}
	dst = appendStr(dst, `,"reason":`, r.Reason, false)
	dst = appendStr(dst, `,"retry_after_invalid":`, r.RetryAfterInvalid, false)

	dst = appendInt(dst, `,"units":`, r.Units, r.Event == Progress)
	dst = appendInt(dst, `,"total":`, r.Total, false)
	warning := r.Event == QuietWarning
	dst = appendInt(dst, `,"silent_ms":`, r.SilentMs, warning)
	dst = appendInt(dst, `,"allowance_ms":`, r.AllowanceMs, warning)
	if r.Headers {
		dst = append(dst, `,"headers":true`...)
	}
	phase := r.Event == PhaseChange
	dst = appendStr(dst, `,"from":`, r.From, phase)
	dst = appendStr(dst, `,"to":`, r.To, phase)
	dst = appendStr(dst, `,"state":`, r.State, r.Event == CancelSent || r.Event == Reconcile || r.Event == Orphan)
	dst = appendInt(dst, `,"total_ms":`, r.TotalMs, r.Event == RunStart || r.Event == RunEnd)
	dst = appendInt(dst, `,"late_ms":`, r.LateMs, false)
	dst = appendStr(dst, `,"cause":`, r.Cause, false)
	dst = appendStr(dst, `,"result":`, r.Result, r.Event == RunEnd)
	dst = appendStr(dst, `,"message":`, r.Message, false)
	return append(dst, '}')
}

// appendInt appends key and v, unless v is zero and not always wanted.
func appendInt(dst []byte, key string, v int64, always bool) []byte {
	if v == 0 && !always {
		return dst
	}
	return strconv.AppendInt(append(dst, key...), v, 10)
}

// appendStr appends key and v, unless v is empty and not always wanted.
func appendStr(dst []byte, key, v string, always bool) []byte {
	if v == "" && !always {
		return dst
	}
	return appendString(append(dst, key...), v)
}

const hex = "0123456789abcdef"

// appendString appends s as a JSON string, byte for byte as encoding/json
// writes it with HTML escaping off: a message may hold anything an error
// said, and a trace must stay one valid object per line whatever it is.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			// Valid JSON, but not valid JavaScript before ES2019: escaped, as
			// encoding/json does, so a trace survives being pasted into a script.
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
