package main

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

// writeStory writes, per run of recs in the order the runs began, the few
// lines a person needs to see what the run's clocks did (issue 18): each
// attempt cut and by what, each retry with its key and how it ended, each
// cancel and how it settled, each write reconciled by key, each refusal,
// each orphan, the landing and the end. Every line is read from a record;
// nothing is said that the trace does not hold.
func writeStory(w io.Writer, recs []trace.Record) {
	var order []string
	runs := map[string][]trace.Record{}
	for _, r := range recs {
		if _, ok := runs[r.RunID]; !ok {
			order = append(order, r.RunID)
		}
		runs[r.RunID] = append(runs[r.RunID], r)
	}
	for i, id := range order {
		if i > 0 {
			fmt.Fprintln(w)
		}
		story(w, id, runs[id])
	}
}

// story writes one run's lines.
func story(w io.Writer, id string, recs []trace.Record) {
	fmt.Fprint(w, "run ", id)
	if i := slices.IndexFunc(recs, func(r trace.Record) bool { return r.Event == trace.RunStart }); i >= 0 {
		fmt.Fprint(w, ", budget ", latency(time.Duration(recs[i].TotalMs)*time.Millisecond))
		if recs[i].ParentRunID != "" {
			fmt.Fprint(w, ", a sub-agent of ", recs[i].ParentRunID)
		}
	}
	fmt.Fprintln(w)
	line := func(r trace.Record, format string, args ...any) {
		fmt.Fprintf(w, "  %6.2fs  %s\n", float64(r.ElapsedMs)/1000, fmt.Sprintf(format, args...))
	}
	// A cancel's answer is its own record, after the one that sent it:
	// the line is written when the answer comes, or at the end when none
	// did.
	type sent struct {
		rec  trace.Record
		tool string
	}
	pending := map[string]sent{}
	var pendingOrder []string
	for _, r := range recs {
		tool := toolName(r.Step)
		switch r.Event {
		case trace.AttemptEnd:
			switch {
			case r.Outcome == trace.GaveUp || r.Outcome == trace.Quiet || r.Outcome == trace.Cancelled:
				line(r, "%s cut %s, attempt %d%s", tool, cutBy(r), r.Attempt, withKey(r.Key))
			case r.Attempt > 1:
				line(r, "%s retried with the same key %s: attempt %d %s", tool, r.Key, r.Attempt, r.Outcome)
			}
		case trace.CancelSent:
			if r.State == string(trace.CancelStateSent) {
				if _, ok := pending[r.Key]; !ok {
					pendingOrder = append(pendingOrder, r.Key)
				}
				pending[r.Key] = sent{r, tool}
				continue
			}
			from, ok := pending[r.Key]
			delete(pending, r.Key)
			if !ok {
				line(r, "%s: its cancel %s, key %s", tool, settledWords(r.State), r.Key)
				continue
			}
			line(r, "%s: its cancel, key %s, sent at %.2fs: %s", tool, r.Key, float64(from.rec.ElapsedMs)/1000,
				settledWords(r.State))
		case trace.Reconcile:
			line(r, "%s: its status asked by key %s: %s after %s, %s", tool, r.Key, r.State,
				plural(r.Attempt, "ask"), reconcileWords(r.State))
		case trace.Orphan:
			journal := "recorded in the orphan journal (harness orphans lists it)"
			if r.Message != "" {
				journal = "NOT in the orphan journal (" + r.Message + ")"
			}
			line(r, "%s orphaned: whether it took effect is unknown, key %s, %s", tool, r.Key, journal)
		case trace.Refused:
			why := r.Message
			if i := strings.Index(why, r.Step+": "); i >= 0 {
				why = why[i+len(r.Step)+2:]
			}
			line(r, "%s refused before it started: %s", tool, roundDurations(why))
		case trace.QuietWarning:
			line(r, "quiet clock would have stopped the run (warn mode): %s%s", r.Message, withKey(r.Key))
		case trace.Landing:
			by := "the model's summary"
			if r.Result == "harness" {
				by = "the harness's own summary"
			}
			line(r, "landed (cause %s) with %s", r.Cause, by)
		case trace.RunEnd:
			for _, k := range pendingOrder {
				if p, ok := pending[k]; ok {
					line(p.rec, "%s: cancel sent for key %s: no answer by the run's end", p.tool, k)
				}
			}
			pending, pendingOrder = map[string]sent{}, nil
			end := r.Result
			if r.Cause != "" {
				end += ", cause " + r.Cause
			}
			if r.LateMs > 0 {
				end += fmt.Sprintf(", %dms late", r.LateMs)
			}
			line(r, "ended %s: spent %s of %s", end, latency(time.Duration(r.ElapsedMs)*time.Millisecond),
				latency(time.Duration(r.TotalMs)*time.Millisecond))
		}
	}
	for _, k := range pendingOrder {
		if p, ok := pending[k]; ok {
			line(p.rec, "%s: cancel sent for key %s: no answer in the trace", p.tool, k)
		}
	}
}

// aDuration is a duration as Go prints it, in a refusal's message.
var aDuration = regexp.MustCompile(`\b[0-9][0-9.]*(?:ns|µs|ms|s|m|h)(?:[0-9.]+(?:ns|µs|ms|s|m))*\b`)

// roundDurations rounds the durations in s for a person: "814.726313ms
// left" reads "815ms left".
func roundDurations(s string) string {
	return aDuration.ReplaceAllStringFunc(s, func(d string) string {
		v, err := time.ParseDuration(d)
		if err != nil {
			return d
		}
		return latency(v)
	})
}

// toolName is the step's tool or agent name, or the step itself.
func toolName(step string) string {
	if _, name, ok := strings.Cut(step, ":"); ok {
		return name
	}
	return step
}

func withKey(key string) string {
	if key == "" {
		return ""
	}
	return ", key " + key
}

// cutBy says what ended an attempt that gave up, as its record's message
// names the cause of the attempt's context.
func cutBy(r trace.Record) string {
	lease := latency(time.Duration(r.GrantedMs) * time.Millisecond)
	switch {
	case r.Outcome == trace.Quiet || strings.Contains(r.Message, watchdog.ErrQuiet.Error()):
		return "by the quiet clock"
	case r.Outcome == trace.Cancelled:
		return "by a cancel of the run"
	case strings.Contains(r.Message, budget.ErrLeaseExpired.Error()):
		return "at its ceiling (lease " + lease + ")"
	}
	return "at the run's time for work (lease " + lease + ")"
}

// settledWords says how a cancel was answered.
func settledWords(state string) string {
	switch trace.CancelState(state) {
	case trace.CancelStateAccepted:
		return "accepted"
	case trace.CancelStateUnknown:
		return "the tool did not know the call"
	case trace.CancelStateFailed:
		return "failed"
	}
	return state
}

// reconcileWords says what a reconcile record's state means for the call.
func reconcileWords(state string) string {
	switch state {
	case "done":
		return "reconciled: it took effect once and was not sent again"
	case "failed":
		return "it did not take effect"
	case "never_received":
		return "it never reached the tool"
	case "running":
		return "still running when the time to ask ran out"
	}
	return "no status answered"
}
