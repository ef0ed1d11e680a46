package trace

import (
	"errors"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/internal/redact"
)

// The records of a call's attempts and of what follows them, built from
// plain data by one rule: the harness's observer and the Temporal
// workflow of temporal/durable write them alike (issue 25). A record of
// an attempt carries the model's id of the tool call it answers (CallID),
// a refused one included: it is an attempt record (SPEC §6).

// AttemptRecord is the record ev, attempt_start or attempt_end, of a,
// an attempt of step index: its step, key, call id, lease and resend
// count, and on attempt_end how it ended, its error's words its message,
// redacted, since what a server answered may quote a secret it was sent.
func AttemptRecord(ev Event, index int, a Attempt) Record {
	rec := Record{Event: ev, Step: a.Step, StepIndex: index, Attempt: a.N, Key: a.Key, CallID: a.CallID,
		GrantedMs: a.Lease.Granted.Milliseconds(), ResendCount: a.N - 1, Message: a.Message}
	if ev != AttemptEnd {
		return rec
	}
	rec.Outcome, rec.Status, rec.Keepalives = a.Outcome, a.Status, a.Keepalives
	rec.Chunks, rec.Tokens = a.Chunks, a.Usage.Total
	rec.InputTokens, rec.OutputTokens = a.Usage.Input, a.Usage.Output
	rec.CachedTokens, rec.ReasoningTokens = a.Usage.Cached, a.Usage.Reasoning
	rec.FinishReason, rec.ResponseModel = a.Finish, a.Model
	if a.Err != nil {
		rec.Message = redact.Secrets(a.Err.Error())
	}
	return rec
}

// RefusedRecord is the refused record of attempt n of the call key (the
// model's call callID; both "" for a model turn) of step index, which err
// refused: its message err's words, its reason the lease rule of a
// [*budget.RefusedError] (a ladder's refusal is "gated", its caller's
// to set).
func RefusedRecord(step string, index, n int, key, callID string, err error) Record {
	rec := Record{Event: Refused, Step: step, StepIndex: index, Attempt: n, ResendCount: n - 1, Key: key,
		CallID: callID, Message: errText(err)}
	if re, ok := errors.AsType[*budget.RefusedError](err); ok {
		rec.Reason = re.Rule.String()
	}
	return rec
}

// CancelSentRecord is the cancel_sent record of the cancel of the call key
// of step index as it goes out, on a lease of granted: state sent.
func CancelSentRecord(step string, index int, key string, granted time.Duration) Record {
	return Record{Event: CancelSent, Step: step, StepIndex: index, Key: key, State: string(CancelStateSent),
		GrantedMs: granted.Milliseconds()}
}

// CancelSettledRecord is the cancel_sent record of the cancel of the call
// key of step index once it settled in state, err its failure's words,
// redacted.
func CancelSettledRecord(step string, index int, key string, state CancelState, err error) Record {
	return Record{Event: CancelSent, Step: step, StepIndex: index, Key: key, State: string(state),
		Message: redact.Secrets(errText(err))}
}

// ReconcileRecord is the reconcile record of the write key of step index:
// the state its status said after asks asks, and err, why it was left an
// orphan.
func ReconcileRecord(step string, index int, key, state string, asks int, err error) Record {
	return Record{Event: Reconcile, Step: step, StepIndex: index, Key: key, State: state, Attempt: asks,
		Message: errText(err)}
}

// OrphanRecord is the orphan record of the write key of step index:
// state open, unjournaled why it is in no journal ("" when it is).
func OrphanRecord(step string, index int, key, unjournaled string) Record {
	return Record{Event: Orphan, Step: step, StepIndex: index, Key: key, State: "open", Message: unjournaled}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
