package conformance_test

import (
	"fmt"
	"time"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/sim"
)

// agentRows are the sub-agent scenarios of this file, beside rows:
// TestBothHostsAgree runs both tables.
var agentRows = []row{
	{
		name:     "a sub-agent called with a blank task is rejected before any attempt",
		diverges: "in process an invalid attempt was recorded; temporal recorded \"bad arguments\" with no attempt",
		tools:    "tools:\n" + researcher,
		child:    "tools: []\n",
		sc: &sim.Scenario{Rules: []sim.Rule{
			{Request: 1, ToolCalls: calls(call("researcher", `{"task":"  "}`))},
			answer(2, "No task, no research."),
		}},
		budget: 4 * time.Second,
		also: func(in, tmp []ending) []string {
			var out []string
			for _, e := range []ending{in[0], tmp[0]} {
				for _, r := range e.recs {
					if r.Step == "agent:researcher" {
						out = append(out, fmt.Sprintf("%s: a %s record of the rejected call: its arguments are read before any I/O", e.host, r.Event))
					}
				}
				// The run goes on after the rejected call, and its answer,
				// made without the sub-agent's result, says so.
				if len(e.res.InFlight) != 0 || e.res.Status != landing.Partial || e.res.Cause != landing.CauseToolsFailed {
					out = append(out, fmt.Sprintf("%s: result %s (cause %q), %d in flight: want partial, tools_failed, none in flight", e.host, e.res.Status, e.res.Cause, len(e.res.InFlight)))
				}
			}
			return out
		},
	},
	{
		name: "a sub-agent's call teaches its kind's p50, and a p50 above its ceiling makes it unavailable",
		diverges: "on temporal a sub-agent's call taught its kind nothing: after it, the sub-agent was still offered, " +
			"where in process its p50 was above its ceiling (issue 25, found by this session)",
		tools: "tools:\n  - name: search\n    builtin: search\n" +
			"  - name: researcher\n    ceiling: 2s\n    agent:\n      instructions: You research.\n      tools: child.yaml\n",
		child: "tools: []\n",
		// Four of the five observations a p50 needs (budget.MinObserved):
		// the call makes the fifth, and the p50 is 3s, above the ceiling.
		profile: map[string][]time.Duration{"agent:researcher": {3 * time.Second, 3 * time.Second, 3 * time.Second, 3 * time.Second}},
		sc: &sim.Scenario{Rules: []sim.Rule{
			{Request: 1, ToolCalls: calls(call("researcher", `{"task":"look it up"}`))},
			answer(2, "The child found it."), answer(3, "The parent is done."),
		}},
		budget: 8 * time.Second,
		// The parent offers both, its child none, and then the parent
		// only search.
		also: offers([]int{2, 0, 1}),
	},
}
