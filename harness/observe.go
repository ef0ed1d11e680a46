package harness

import (
	"errors"
	"slices"
	"strings"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

// write appends rec to the trace, keeping the first failure for Run to
// return.
func (r *run) write(rec trace.Record) {
	if r.tw == nil {
		return
	}
	if err := r.tw.Write(rec); err != nil {
		r.mu.Lock()
		if r.werr == nil {
			r.werr = err
		}
		r.mu.Unlock()
	}
}

func (r *run) phaseName() string { return landing.Phase(r.phase.Load()).String() }

// phaseChanged is the ladder's OnChange: it runs under the ladder's lock,
// so it reads the phase from the change, never from the Ladder.
func (r *run) phaseChanged(c landing.Change) {
	r.phase.Store(uint32(c.To))
	rec := trace.Record{Event: trace.PhaseChange, From: c.From.String(), To: c.To.String()}
	if c.Forced {
		rec.Reason = "forced"
	}
	r.write(rec)
	r.status()
}

// status reports the live status, if anyone listens.
func (r *run) status() {
	if r.cfg.Status == nil {
		return
	}
	r.statusMu.Lock()
	defer r.statusMu.Unlock()
	r.emit()
}

// emit calls Config.Status; statusMu is held, which serializes the calls.
func (r *run) emit() {
	if r.cfg.Status == nil {
		return
	}
	r.cfg.Status(Status{
		Spent:    r.b.Spent(),
		Total:    r.b.Total(),
		Phase:    landing.Phase(r.phase.Load()),
		Step:     r.step,
		InFlight: strings.Join(r.flying, ", "),
	})
}

func (r *run) setStep(n int) {
	r.statusMu.Lock()
	defer r.statusMu.Unlock()
	r.step = n
	r.emit()
}

// begin and end track what is in flight, for the status line.
func (r *run) begin(what string) {
	r.statusMu.Lock()
	defer r.statusMu.Unlock()
	r.flying = append(r.flying, what)
	r.emit()
}

func (r *run) end(what string) {
	r.statusMu.Lock()
	defer r.statusMu.Unlock()
	if i := slices.Index(r.flying, what); i >= 0 {
		r.flying = slices.Delete(r.flying, i, i+1)
	}
	r.emit()
}

// modelObserver writes the trace records of a model turn (step ≥ 1) or of
// the landing call (step 0: it is not one of the run's steps) and feeds
// the stream's events to w.
func (r *run) modelObserver(step int, w *watchdog.Watchdog) model.Observer {
	return model.Observer{
		AttemptStart: func(a model.Attempt) {
			r.attempts.Add(1)
			r.write(attemptRecord(trace.AttemptStart, model.Kind, step, a.N, a.Lease))
		},
		AttemptEnd: func(a model.Attempt) {
			rec := attemptRecord(trace.AttemptEnd, model.Kind, step, a.N, a.Lease)
			rec.Outcome, rec.Status, rec.Keepalives = a.Outcome, a.Status, a.Keepalives
			rec.Chunks, rec.Tokens, rec.Message = a.Chunks, a.Usage.TotalTokens, errText(a.Err)
			r.write(rec)
		},
		Backoff: func(after int, d budget.Delay) {
			r.write(backoffRecord(model.Kind, step, after, "", d))
		},
		Refused: func(n int, err error) {
			r.write(refusedRecord(model.Kind, step, n, "", err))
		},
		Event: func(e model.Event) {
			switch e {
			case model.MessageCompleted, model.ToolCallCompleted:
				w.Mark(watchdog.ModelMessage)
			case model.Keepalive:
				w.Keepalive()
			case model.Chunk:
				w.Token(1)
			}
		},
	}
}

// toolObserver writes the trace records of the tool calls of a step and
// feeds their events to the run's watchdog.
func (r *run) toolObserver(step int) tools.Observer {
	return tools.Observer{
		AttemptStart: func(a tools.Attempt) {
			r.attempts.Add(1)
			rec := attemptRecord(trace.AttemptStart, tools.KindPrefix+a.Tool, step, a.N, a.Lease)
			rec.Key = string(a.Key)
			r.write(rec)
		},
		AttemptEnd: func(a tools.Attempt) {
			rec := attemptRecord(trace.AttemptEnd, tools.KindPrefix+a.Tool, step, a.N, a.Lease)
			rec.Key, rec.Outcome, rec.Status, rec.Keepalives = string(a.Key), a.Outcome, a.Status, a.Keepalives
			rec.Message = errText(a.Err)
			r.write(rec)
		},
		Backoff: func(tool string, key cancel.Key, after int, d budget.Delay) {
			r.write(backoffRecord(tools.KindPrefix+tool, step, after, string(key), d))
		},
		Refused: func(tool string, n int, err error) {
			r.write(refusedRecord(tools.KindPrefix+tool, step, n, "", err))
		},
		CancelSent: func(tool string, key cancel.Key, err error) {
			state := "accepted"
			if err != nil {
				state = "failed"
			}
			r.write(trace.Record{Event: trace.CancelSent, Step: tools.KindPrefix + tool, StepIndex: step,
				Key: string(key), State: state, Message: errText(err)})
		},
		Reconcile: func(tool string, key cancel.Key, res cancel.Resolution) {
			state := string(res.State)
			if state == "" {
				state = "unreachable" // no status request was answered
			}
			r.write(trace.Record{Event: trace.Reconcile, Step: tools.KindPrefix + tool, StepIndex: step,
				Key: string(key), State: state, Message: errText(res.Err)})
		},
		Orphan: func(e cancel.Entry, err error) {
			r.orphans.Add(1)
			r.write(trace.Record{Event: trace.Orphan, Step: tools.KindPrefix + e.Tool, StepIndex: step,
				Key: string(e.IdempotencyKey), State: e.State, Message: errText(err)})
		},
		Event: func(e tools.Event) {
			switch e.Kind {
			case tools.CallIssued:
				r.w.Mark(watchdog.ToolCall)
			case tools.ResultReturned:
				r.w.Mark(watchdog.ToolResult)
			case tools.Heartbeat:
				// The registry has checked that the units went up for
				// this call; the watchdog need not check again.
				r.w.Mark(watchdog.Progress)
				r.write(trace.Record{Event: trace.Progress, Step: tools.KindPrefix + e.Tool, StepIndex: step,
					Key: string(e.Key), Units: e.Units, Total: e.Total, Message: e.Message})
			case tools.StaleHeartbeat:
				r.w.Mark(watchdog.StaleProgress)
			case tools.Keepalive:
				r.w.Keepalive()
			}
		},
	}
}

func attemptRecord(ev trace.Event, step string, index, n int, lease budget.Lease) trace.Record {
	return trace.Record{Event: ev, Step: step, StepIndex: index, Attempt: n,
		GrantedMs: lease.Granted.Milliseconds(), ResendCount: n - 1}
}

func backoffRecord(step string, index, after int, key string, d budget.Delay) trace.Record {
	src := "jitter"
	if d.Source == budget.FromRetryAfter {
		src = "retry_after"
	}
	return trace.Record{Event: trace.Backoff, Step: step, StepIndex: index, Attempt: after, Key: key,
		SleepMs: d.Sleep.Milliseconds(), Source: src, GaveUp: d.GiveUp, Reason: d.Reason}
}

// refusedRecord is a refused attempt: by the budget (the reason is the
// lease rule) or by the ladder (the reason is "gated").
func refusedRecord(step string, index, n int, key string, err error) trace.Record {
	rec := trace.Record{Event: trace.Refused, Step: step, StepIndex: index, Attempt: n,
		ResendCount: n - 1, Key: key, Message: errText(err)}
	if re, ok := errors.AsType[*budget.RefusedError](err); ok {
		rec.Reason = re.Rule.String()
	} else if errors.Is(err, landing.ErrGated) {
		rec.Reason = "gated"
	}
	return rec
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
