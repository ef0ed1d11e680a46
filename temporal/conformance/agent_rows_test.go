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
}
