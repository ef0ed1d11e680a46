package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/glidepath/glidepath/bench/battery"
	"github.com/glidepath/glidepath/model"
)

// scenarios are the battery's scenarios the report runs: all of them, or
// those whose names -scenarios matches.
func (r *report) scenarios() []battery.Scenario {
	all := battery.Scenarios()
	if r.match == nil {
		return all
	}
	return slices.DeleteFunc(all, func(sc battery.Scenario) bool { return !r.match.MatchString(sc.Name) })
}

// responsesBeside puts Glidepath's cells of the Responses API scenarios
// beside their Chat Completions twins (issue 27): the same fault on the
// other API should land the same way, caught at the same bound. gp holds
// the Glidepath cells the battery ran, by scenario; a twin it did not run
// (-scenarios) is shown as "—" and not judged.
func responsesBeside(r *report, scs []battery.Scenario, gp map[string]battery.Result) {
	var rows [][]string
	var same, pairs, labeled, runs int
	var differ []string
	for _, sc := range scs {
		if sc.API != model.APIResponses {
			continue
		}
		res := gp[sc.Name]
		labeled, runs = labeled+res.Labeled, runs+res.Runs
		twin, ok := gp[sc.Twin]
		chatName, chatEnd, chatStall := "—", "—", "—"
		if sc.Twin != "" {
			chatName = sc.Twin
		}
		if ok {
			chatEnd, chatStall = endCell(twin), stallCell(twin.Stall)
			pairs++
			if landsAlike(res, twin) {
				same++
			} else {
				differ = append(differ, fmt.Sprintf("%s %s against %s %s", sc.Name, endCell(res), sc.Twin, endCell(twin)))
			}
		}
		rows = append(rows, []string{sc.Name, chatName, allowanceCell(res), endCell(res), chatEnd,
			stallCell(res.Stall), chatStall, fmt.Sprint(res.ModelRequests), res.Told})
	}
	if rows == nil {
		return
	}
	r.add("The Responses API beside Chat Completions", []string{
		"go run ./bench/cmd/benchmd -only battery -scenarios '^responses-|^(reasoning-cold|reasoning-warm|model-hang-headers|model-hang-after-headers|model-keepalive|midstream|429-short)$'",
		"go test -run 'Responses' -v ./bench/battery/"},
		table([]string{"scenario (Responses API)", "its Chat twin", "E (Glidepath's allowance)", "Glidepath: complete / partial / error", "on Chat", "stall seen p50 / p99 / max", "on Chat", "requests to /v1/responses", "what the user was told (most runs)"}, rows)+`
Glidepath's cells of the battery above, each Responses API scenario beside the Chat Completions scenario with
the same fault. On the Responses API every system speaks POST /v1/responses: Glidepath with
model.Config.API = model.APIResponses (`+"`harness run --api responses`"+`), the baselines with openai-go's
Responses.NewStreaming in the same loop, sending the whole input each turn with each response's output items
(its reasoning item included) and each call's function_call_output; their rows are in the battery table. The
sim keeps a reasoning model's timeline there: response.created, response.in_progress and the reasoning item's
output_item.added come with the headers, then the rule's silence, then the reasoning summary
(response.reasoning_summary_part.done, Glidepath's progress of the model call) and the output. An error
inside the stream (an error event, or response.failed) comes after a 200 and the opening events; Glidepath
classifies it as the status its code stands for and retries it as on Chat Completions, while openai-go
retries only an error status, so the defaults baseline fails at the first. *requests*: those the sim
received on /v1/responses in all runs of the cell (a request on the other API is not counted).
`)
	var judged string
	if pairs > 0 {
		judged = fmt.Sprintf("; %d of %d land as their Chat twin", same, pairs)
		if len(differ) > 0 {
			judged += " (not: " + strings.Join(differ, "; ") + ")"
		}
	}
	r.target("The Responses API under each model fault: every run labeled, each fault landing as on Chat Completions",
		fmt.Sprintf("%d of %d runs labeled over %d scenarios%s", labeled, runs, len(rows), judged),
		"the baselines on the same scenarios: the battery's table", labeled == runs && same == pairs, "")
}

// endCell is how a Glidepath cell's runs ended.
func endCell(res battery.Result) string {
	return fmt.Sprintf("%d / %d / %d", res.Complete, res.Partial, res.Errored+res.Capped)
}

// landsAlike reports whether two cells of the same fault ended the same
// way: as many runs complete, partial, and neither.
func landsAlike(a, b battery.Result) bool {
	return a.Runs == b.Runs && a.Complete == b.Complete && a.Partial == b.Partial
}
