package conformance_test

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/trace"
)

// responsesRows are the rows of this file, beside rows: both hosts'
// model speaks the Responses API (issue 27, item 6). TestBothHostsAgree
// runs them with the others.
var responsesRows = []row{
	{
		name:   "a run that searches and answers completes the same on both hosts over the Responses API",
		api:    model.APIResponses,
		tools:  "tools:\n  - name: search\n    builtin: search\n",
		sc:     &sim.Scenario{Rules: []sim.Rule{{Request: 1, ToolCalls: calls(call("search", `{"query":"deadline budget"}`))}, answer(2, "One deadline.")}},
		budget: 4 * time.Second,
		also:   all(causeIs("", 2), reasoningCarried),
	},
	{
		name:   "a Responses stream that sends an error event is retried the same on both hosts",
		api:    model.APIResponses,
		sc:     &sim.Scenario{Rules: []sim.Rule{{Request: 1, StreamError: "rate_limit_exceeded"}}},
		budget: 4 * time.Second,
		also:   all(causeIs("", 1), firstModelAttempt(trace.RateLimited)),
	},
	{
		name:   "a model's reasoning summary is progress on both hosts",
		api:    model.APIResponses,
		tools:  "tools:\n  - name: search\n    builtin: search\n",
		sc:     &sim.Scenario{Rules: []sim.Rule{{Request: 1, ToolCalls: calls(call("search", `{"query":"summary"}`))}, answer(2, "Summed up.")}},
		budget: 4 * time.Second,
		also:   reasoningIsProgress,
	},
}

// all is each of checks, one after the other.
func all(checks ...func(in, tmp []ending) []string) func(in, tmp []ending) []string {
	return func(in, tmp []ending) []string {
		var out []string
		for _, c := range checks {
			out = append(out, c(in, tmp)...)
		}
		return out
	}
}

// reasoningCarried checks that every run's second model request carried
// the first turn's reasoning item back, by the id the sim gave it: the
// workflow's conversation keeps a reply's output items as the process's
// does (model.AssistantOf, model.Reply.Message).
func reasoningCarried(in, tmp []ending) []string {
	var out []string
	for _, e := range slices.Concat(in, tmp) {
		if len(e.reasoning) < 2 || !slices.ContainsFunc(e.reasoning[1], func(id string) bool { return strings.HasPrefix(id, "rs_sim_") }) {
			out = append(out, fmt.Sprintf("%s: the reasoning items each model request carried back: %q; want the first turn's on the second", e.host, e.reasoning))
		}
	}
	return out
}

// firstModelAttempt checks that every run's first model attempt ended
// with outcome o.
func firstModelAttempt(o trace.Outcome) func(in, tmp []ending) []string {
	return func(in, tmp []ending) []string {
		var out []string
		for _, e := range slices.Concat(in, tmp) {
			if r, ok := first(e.recs, trace.AttemptEnd, model.Kind); !ok || r.Outcome != o {
				out = append(out, fmt.Sprintf("%s: the first model attempt ended %q, want %q", e.host, r.Outcome, o))
			}
		}
		return out
	}
}

// reasoningIsProgress checks that every run recorded the model's
// reasoning summary as progress in each of its two turns: the second
// turn's units rise above the first's on Temporal too, where each
// attempt has a client of its own.
func reasoningIsProgress(in, tmp []ending) []string {
	var out []string
	for _, e := range slices.Concat(in, tmp) {
		turns := map[int]bool{}
		for _, r := range e.recs {
			if r.Event == trace.Progress && r.Step == model.Kind {
				turns[r.StepIndex] = true
			}
		}
		if len(turns) != 2 {
			out = append(out, fmt.Sprintf("%s: the model's progress was recorded in %d turns, want 2", e.host, len(turns)))
		}
	}
	return out
}
