package conformance_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/temporal/durable"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

// A row is one scenario both hosts run. Its name is a sentence that says
// what both must do; diverges names the case of issue 25's "Why" it
// covers ("" for a scenario the hosts are only kept agreeing on).
type row struct {
	name     string
	diverges string

	tools, child string // tools.yaml and a sub-agent's child.yaml; "" for none
	sc           *sim.Scenario

	budget, reserve, quiet time.Duration
	quietMode              watchdog.Mode
	parallel               int
	interrupt              time.Duration // a first Ctrl-C this long after the start; 0: none
	noJournal              bool          // the run has no orphan journal
	api                    string        // the API the model speaks on both hosts (model.Config.API); "": chat

	// profile is how long kinds took on this machine before the run, as
	// a latency profile seeds both hosts' estimates (durable.Input's
	// Profile; harness run's budget/profile).
	profile map[string][]time.Duration

	// loose are events whose records depend on a race the row sets up
	// (a cancel that hangs ends with its own lease or with the run; how
	// often a running write's status is asked is the backoff's draw): their
	// records are compared by event and step only, and whether there are
	// any, not how many.
	loose []trace.Event

	// runs, above 1, runs the row that many times on each host; the first
	// run of each is compared.
	runs int
	// also checks what the records cannot say without their times, on
	// every run of both hosts (the in-process runs first); it returns a
	// line per divergence.
	also func(in, tmp []ending) []string
	// timed says also compares times the hosts measure: the row runs
	// alone, before the rows that run side by side, so that their load
	// is not in its figures: on CI's two cores, beside the other rows and
	// durable's tests, temporal's quiet clock fired 1.72s after the
	// in-process host's; alone, 0.34–0.45s after (three runs).
	timed bool
}

func (rw row) task() string { return "conformance: " + rw.name }

func calls(cs ...sim.ToolCall) []sim.ToolCall { return cs }

func call(name, args string) sim.ToolCall { return sim.ToolCall{Name: name, Arguments: args} }

func answer(n int, text string) sim.Rule { return sim.Rule{Request: n, Answer: text} }

// causeIs checks that every run of both hosts ended with cause ("": an
// answer) after steps steps: hosts that agree may still both be wrong.
func causeIs(cause landing.Cause, steps int) func(in, tmp []ending) []string {
	return func(in, tmp []ending) []string {
		var out []string
		for _, e := range slices.Concat(in, tmp) {
			if e.res.Cause != cause || e.res.Steps != steps {
				out = append(out, fmt.Sprintf("%s ended with cause %q after %d steps, want %q after %d", e.host, e.res.Cause, e.res.Steps, cause, steps))
			}
		}
		return out
	}
}

// count is how many of recs are of event e.
func count(recs []trace.Record, e trace.Event) int {
	n := 0
	for _, r := range recs {
		if r.Event == e {
			n++
		}
	}
	return n
}

// command is a subprocess tool's entry that sleeps for secs and answers.
func command(name, effect, extra, secs string) string {
	return fmt.Sprintf("  - name: %s\n    effect: %s\n%s    command: [sh, -c, \"sleep %s; echo '{\\\"ok\\\":true}'\"]\n", name, effect, extra, secs)
}

const researcher = "  - name: researcher\n    ceiling: 4s\n    agent:\n      instructions: You research.\n      tools: child.yaml\n"

var rows = []row{
	{
		name:     "a hung cancel does not hold the call",
		timed:    true,
		diverges: "a hung cancel blocks the temporal call up to 1s (in process cancels never wait)",
		tools:    "tools:\n  - name: hang\n    url: " + toolURL + "\n    ceiling: 800ms\n",
		sc:       &sim.Scenario{Rules: []sim.Rule{{Request: 1, ToolCalls: calls(call("hang", `{}`))}, answer(2, "It hung.")}},
		budget:   8 * time.Second, // three cut attempts and their backoffs end well before narrow
		loose:    []trace.Event{trace.CancelSent},
		also: func(in, tmp []ending) []string {
			// The retry waits for its backoff (at most 250ms), never for
			// the cancel of the attempt before it.
			var out []string
			for _, e := range []ending{in[0], tmp[0]} {
				if d, ok := gap(e, "tool:hang", 1); ok && d > 700*time.Millisecond {
					out = append(out, fmt.Sprintf("%s: the second attempt started %v after the first was cut: it waited for the hung cancel", e.host, d))
				}
			}
			return out
		},
	},
	{
		name:     "after a pause with an event inside the quiet clock keeps the time it had left",
		timed:    true,
		diverges: "after a pause with an event inside it, the quiet clock fires later on temporal than in process",
		// busy is silent 1.2s then asks for 2s (a pause from 1.2s to
		// 3.2s, with 0.3s of Q left); answer's result at 1.8s is the event
		// inside it; busy's retry then hangs. In process the clock fires
		// at max(1.8s + Q, 3.2s + 0.3s) = 3.5s.
		tools: "tools:\n  - name: busy\n    url: " + toolURL + "\n    ceiling: 3s\n" + command("answer", "read", "", "1.8"),
		sc: &sim.Scenario{Rules: []sim.Rule{
			{Request: 1, ToolCalls: calls(call("busy", `{}`), call("answer", `{}`))}, answer(2, "Quiet."),
		}},
		// 16s: narrow (9.6s) is far from the stall, and a quarter of the
		// reserve (1s) outlasts the heartbeat that brings the cut attempt
		// its cancellation (see the Ctrl-C row).
		budget: 16 * time.Second, quiet: 1500 * time.Millisecond,
		also: func(in, tmp []ending) []string {
			ref, ok1 := quietAt(in[0])
			got, ok2 := quietAt(tmp[0])
			if !ok1 || !ok2 {
				return []string{fmt.Sprintf("no attempt ended quiet: in-process %v, temporal %v", ok1, ok2)}
			}
			// Temporal stamps the quiet attempt's end when the attempt's
			// own answer comes back (a heartbeat, durable.CancelWithin)
			// or a quarter of the reserve has passed, whichever is first;
			// 600ms is the rest of what two loaded hosts may differ by.
			// Before issue 25 it fired 2.2–3s late.
			if d := got - ref; d > durable.CancelWithin+600*time.Millisecond || d < -600*time.Millisecond {
				return []string{fmt.Sprintf("temporal's quiet clock fired at %v, in-process's at %v", got, ref)}
			}
			return nil
		},
	},
	{
		name:     "a secret a tool echoes in its error is redacted",
		diverges: "attempt messages are not redacted on temporal",
		tools: "tools:\n  - name: login\n    effect: read\n    max_attempts: 1\n    env: {TOKEN: \"${" + secretEnv + "}\"}\n" +
			"    command: [sh, -c, \"echo bad token $TOKEN >&2; exit 1\"]\n",
		sc:     &sim.Scenario{Rules: []sim.Rule{{Request: 1, ToolCalls: calls(call("login", `{}`))}, answer(2, "Login failed.")}},
		budget: 3 * time.Second,
		also: func(in, tmp []ending) []string {
			var out []string
			for _, e := range []ending{in[0], tmp[0]} {
				for _, r := range e.recs {
					if strings.Contains(r.Message, secret) {
						out = append(out, fmt.Sprintf("%s: a %s record carries the key: %q", e.host, r.Event, r.Message))
					}
				}
				if strings.Contains(e.res.Boundary, secret) {
					out = append(out, fmt.Sprintf("%s: the boundary carries the key", e.host))
				}
			}
			return out
		},
	},
	{
		name:  "a model that repeats the same call and gets the same answer lands stuck at its third repeat",
		tools: "tools:\n  - name: search\n    builtin: search\n",
		sc: &sim.Scenario{Rules: []sim.Rule{
			{Times: 4, ToolCalls: calls(call("search", `{"query":"deadline budget"}`))}, answer(5, "Landed."),
		}},
		budget: 8 * time.Second,
		also:   causeIs(landing.CauseStuck, 4),
	},
	{
		name:  "a model whose calls differ is never taken for stuck",
		tools: "tools:\n  - name: search\n    builtin: search\n",
		sc: &sim.Scenario{Rules: []sim.Rule{
			{Request: 1, ToolCalls: calls(call("search", `{"query":"deadline"}`))},
			{Request: 2, ToolCalls: calls(call("search", `{"query":"budget"}`))},
			{Request: 3, ToolCalls: calls(call("search", `{"query":"reserve"}`))},
			{Request: 4, ToolCalls: calls(call("search", `{"query":"floor"}`))},
			answer(5, "Four searches."),
		}},
		budget: 8 * time.Second,
		also:   causeIs("", 5),
	},
	{
		name:   "a run that searches and answers completes the same on both hosts",
		tools:  "tools:\n  - name: search\n    builtin: search\n",
		sc:     &sim.Scenario{Rules: []sim.Rule{{Request: 1, ToolCalls: calls(call("search", `{"query":"deadline budget"}`))}, answer(2, "One deadline.")}},
		budget: 4 * time.Second,
	},
	{
		name:     "a sub-agent's valid arguments are accepted when its parent has a same-named tool of another schema",
		diverges: "the compiled schema is cached by tool name across toolsets on temporal",
		tools: "tools:\n" + command("lookup", "read", "    parameters: {type: object, properties: {id: {type: integer}}, required: [id]}\n", "0") +
			researcher,
		child: "tools:\n" + command("lookup", "read", "    parameters: {type: object, properties: {query: {type: string}}, required: [query]}\n", "0"),
		// The parent's lookup is checked first, then the child's.
		sc: &sim.Scenario{Rules: []sim.Rule{
			{Request: 1, ToolCalls: calls(call("lookup", `{"id":42}`))},
			{Request: 2, ToolCalls: calls(call("researcher", `{"task":"look it up"}`))},
			{Request: 3, ToolCalls: calls(call("lookup", `{"query":"deadlines"}`))},
			answer(4, "The child found it."), answer(5, "The parent is done."),
		}},
		budget: 6 * time.Second,
	},
	{
		name:     "a Retry-After of 999999999 gives up at once",
		diverges: "temporal retries after ~140ms of jitter; in process: retry_after_exceeds_budget at once",
		sc:       &sim.Scenario{Rules: []sim.Rule{{Request: 1, Status: 429, RetryAfter: "999999999"}}},
		budget:   3 * time.Second,
	},
	{
		name:     "a Retry-After of 1 is spread over runs",
		diverges: "every run told Retry-After: 1 comes back at exactly 1s on temporal (no spread)",
		sc:       &sim.Scenario{Rules: []sim.Rule{{Request: 1, Status: 429, RetryAfter: "1"}}},
		budget:   4 * time.Second,
		runs:     4,
		also: func(in, tmp []ending) []string {
			var out []string
			for _, es := range [][]ending{in, tmp} {
				var sleeps []int64
				for _, e := range es {
					if b, ok := first(e.recs, trace.Backoff, "model"); ok {
						sleeps = append(sleeps, b.SleepMs)
					}
				}
				if len(sleeps) > 1 && !slices.ContainsFunc(sleeps, func(s int64) bool { return s != sleeps[0] }) {
					out = append(out, fmt.Sprintf("%s: %d runs told Retry-After: 1 all slept %dms: no spread", es[0].host, len(sleeps), sleeps[0]))
				}
			}
			return out
		},
	},
	{
		name:     "the model's p50 is not taken from one observation",
		diverges: "after one 5s model attempt the next turn is refused under 5s on temporal; in process the declared figures hold until enough observations",
		tools:    "tools:\n  - name: search\n    builtin: search\n",
		sc: &sim.Scenario{Rules: []sim.Rule{
			{Request: 1, Delay: 2200 * time.Millisecond, ToolCalls: calls(call("search", `{"query":"p50"}`))},
			answer(2, "Found."),
		}},
		budget: 5 * time.Second,
	},
	{
		name:     "in fit a tool with a ceiling but no p95 is refused",
		diverges: "temporal admits it in fit; in process it is refused",
		// Its ceiling, 2s, is what the gate has for its p95, and does not
		// fit in the time before landing.
		tools: "tools:\n" + command("probe", "read", "    ceiling: 2s\n", "0"),
		// The call comes at 8.1s of 10s: fit is from 8s to land at 9s.
		sc: &sim.Scenario{Rules: []sim.Rule{
			{Request: 1, Delay: 8100 * time.Millisecond, ToolCalls: calls(call("probe", `{}`))},
			answer(2, "Probed."),
		}},
		budget: 10 * time.Second, reserve: time.Second,
	},
	{
		name:     "a silent model gets one request and the harness's summary",
		diverges: "temporal sends a landing call to the same silent endpoint (2 requests); in process 1 request and the harness summarizes",
		sc:       &sim.Scenario{Rules: []sim.Rule{{Hang: true}}},
		// 20s: see the Ctrl-C row; a quarter of the reserve outlasts the
		// heartbeat that brings the cut attempt its cancellation.
		budget: 20 * time.Second, quiet: time.Second,
	},
	{
		name:     "a retry the budget cannot wait for lands with cause budget",
		diverges: "a backoff give-up lands with cause upstream on temporal, budget in process",
		// After the first attempt 0.5s are left before the reserve, and
		// the server asks for 1s: a give-up whatever the jitter draws.
		sc:     &sim.Scenario{Rules: []sim.Rule{{Status: 503, RetryAfter: "1", Delay: time.Second}}},
		budget: 2 * time.Second,
	},
	{
		name:     "a reply that says nothing lands upstream and says its answer was empty",
		diverges: "temporal's boundary said \"the model's reply is not a whole answer\" where the process says \"its answer was empty\" (found by this session)",
		sc:       &sim.Scenario{Rules: []sim.Rule{answer(1, " ")}},
		budget:   5 * time.Second,
	},
	{
		name:     "a turn the budget refuses below the model's p50 is no step",
		diverges: "temporal counted a turn refused below the model's p50 as a step, and its boundary named a step too many (found by this session)",
		tools:    "tools:\n  - name: search\n    builtin: search\n",
		// Five 3s turns make the model's p50 (budget.MinObserved); the
		// sixth finds less than that before the reserve (R = 5.75s of
		// 23s: the turns end at 15s in process, and by 17s on a loaded
		// Temporal, whose every activity costs it some 100ms more) and is
		// refused on both hosts.
		// Each turn searches for something else: the same call five
		// times over would land stuck first (issue 27).
		sc: &sim.Scenario{Rules: []sim.Rule{
			{Request: 1, Delay: 3 * time.Second, ToolCalls: calls(call("search", `{"query":"p50 1"}`))},
			{Request: 2, Delay: 3 * time.Second, ToolCalls: calls(call("search", `{"query":"p50 2"}`))},
			{Request: 3, Delay: 3 * time.Second, ToolCalls: calls(call("search", `{"query":"p50 3"}`))},
			{Request: 4, Delay: 3 * time.Second, ToolCalls: calls(call("search", `{"query":"p50 4"}`))},
			{Request: 5, Delay: 3 * time.Second, ToolCalls: calls(call("search", `{"query":"p50 5"}`))},
		}},
		budget: 23 * time.Second,
		// The refused record's message is the model turn's to write
		// (temporal/durable/turn.go leaves it out): compared by event and
		// step here, the step count and the boundary are this row's.
		loose: []trace.Event{trace.Refused},
	},
	{
		name:     "a tool's p50 is learned from its calls and refuses a call below it",
		diverges: "a tool's figures never learned on temporal: its declared p50 admitted a call its observed calls say cannot fit (issue 25, found by this session)",
		// slow declares a p50 of 100ms and takes 4s. Its five calls side
		// by side (budget.MinObserved) end about 4.2s in; the sixth comes
		// 5.6s later, near 9.9s, with about 2s left before the reserve
		// (12s of 16s): under the 4s its calls took, over the 100ms it
		// declared. Either side is 2s away, for a loaded host's delays.
		tools: "tools:\n" + command("slow", "read", "    p50: 100ms\n", "4"),
		sc: &sim.Scenario{Rules: []sim.Rule{
			{Request: 1, ToolCalls: calls(call("slow", `{}`), call("slow", `{}`), call("slow", `{}`), call("slow", `{}`), call("slow", `{}`))},
			{Request: 2, Delay: 5600 * time.Millisecond, ToolCalls: calls(call("slow", `{}`))},
			answer(3, "Five calls were slow."),
		}},
		budget: 16 * time.Second, parallel: 5,
		also: func(in, tmp []ending) []string {
			// The records compared can agree with no refusal at all, had
			// the hosts been too slow or fast for the row's margins.
			var out []string
			for _, e := range []ending{in[0], tmp[0]} {
				if r, ok := first(e.recs, trace.Refused, "tool:slow"); !ok || r.Reason != budget.BelowP50.String() {
					out = append(out, fmt.Sprintf("%s: the sixth call of tool:slow was not refused below its learned p50 (refused: %v, reason %q)", e.host, ok, r.Reason))
				}
			}
			return out
		},
	},
	{
		name:     "a sub-agent's orphaned write reaches its parent's in_flight",
		diverges: "on temporal a sub-agent's orphaned write never reaches the parent's in_flight (the parent can say complete)",
		tools:    "tools:\n" + researcher,
		child:    "tools:\n" + command("transfer", "write", "    ceiling: 500ms\n", "5"),
		sc: &sim.Scenario{Rules: []sim.Rule{
			{Request: 1, ToolCalls: calls(call("researcher", `{"task":"transfer it"}`))},
			{Request: 2, ToolCalls: calls(call("transfer", `{"to":"acct-1","amount":5}`))},
			answer(3, "The transfer's outcome is unknown."), answer(4, "The parent is done."),
		}},
		budget: 8 * time.Second,
	},
	{
		name: "a sub-agent starts from its parent's model estimate",
		diverges: "on temporal a sub-agent's model estimate started empty (found in this session): " +
			"its child made a model turn that its parent's estimate, as in process, says cannot fit",
		// Six turns of 600ms give the parent a model p50 (budget.MinObserved
		// is five); the child's slice of 450ms is under 600ms even with its
		// reserve, so it refuses its turn and its landing call, and the
		// harness summarizes. (A slice of 700ms left the landing call to
		// the hosts' start-up latency: in process it fit, on Temporal the
		// child workflow's start ate the 100ms that made it fit.)
		tools: "tools:\n  - name: search\n    builtin: search\n" +
			"  - name: researcher\n    ceiling: 450ms\n    agent:\n      instructions: You research.\n      tools: child.yaml\n",
		child: "tools:\n  - name: search\n    builtin: search\n",
		sc: &sim.Scenario{Rules: []sim.Rule{
			{Request: 1, Delay: 600 * time.Millisecond, ToolCalls: calls(call("search", `{"query":"one"}`))},
			{Request: 2, Delay: 600 * time.Millisecond, ToolCalls: calls(call("search", `{"query":"two"}`))},
			{Request: 3, Delay: 600 * time.Millisecond, ToolCalls: calls(call("search", `{"query":"three"}`))},
			{Request: 4, Delay: 600 * time.Millisecond, ToolCalls: calls(call("search", `{"query":"four"}`))},
			{Request: 5, Delay: 600 * time.Millisecond, ToolCalls: calls(call("search", `{"query":"five"}`))},
			{Request: 6, Delay: 600 * time.Millisecond, ToolCalls: calls(call("researcher", `{"task":"look it up"}`))},
			answer(7, "The parent is done."),
		}},
		budget: 14 * time.Second, // narrow at 8.4s, well after the sixth turn
	},
	{
		name:     "a tool server that is down is unavailable and its setup attempt is counted",
		diverges: "temporal never sets unavailable and does not count setup attempts",
		tools:    "tools:\n  - name: search\n    builtin: search\n  - name: gone\n    url: http://127.0.0.1:1\n",
		sc:       &sim.Scenario{Rules: []sim.Rule{answer(1, "Nothing to call.")}},
		budget:   3 * time.Second,
	},
	{
		name: "a tool whose ceiling is below its p50 on this machine is unavailable and not offered",
		diverges: "temporal offered every tool of its worker and never listed one whose p50 is above its ceiling; " +
			"in process it is left out and unavailable (issue 25, found by this session)",
		tools:   "tools:\n  - name: search\n    builtin: search\n" + command("slow", "read", "    ceiling: 1s\n", "0"),
		profile: map[string][]time.Duration{"tool:slow": {3 * time.Second, 3 * time.Second, 3 * time.Second, 3 * time.Second, 3 * time.Second}},
		sc:      &sim.Scenario{Rules: []sim.Rule{answer(1, "Nothing slow was called.")}},
		budget:  3 * time.Second,
		also:    offers([]int{1}),
	},
	{
		name:     "explore runs a turn's calls as a sliding window",
		timed:    true,
		diverges: "explore's parallel calls run in fixed batches on temporal and as a sliding window in process",
		tools:    "tools:\n" + command("slow", "read", "", "1.2") + command("quick1", "read", "", "0.1") + command("quick2", "read", "", "0.1"),
		sc: &sim.Scenario{Rules: []sim.Rule{
			{Request: 1, ToolCalls: calls(call("slow", `{}`), call("quick1", `{}`), call("quick2", `{}`))},
			answer(2, "All three answered."),
		}},
		budget: 6 * time.Second, parallel: 2,
		also: func(in, tmp []ending) []string {
			// The third call starts when the first of the two before it
			// ends (quick1, 0.1s), not when both have (slow, 1.2s).
			var out []string
			for _, e := range []ending{in[0], tmp[0]} {
				slow, ok1 := first(e.recs, trace.AttemptStart, "tool:slow")
				third, ok2 := first(e.recs, trace.AttemptStart, "tool:quick2")
				if ok1 && ok2 && third.ElapsedMs-slow.ElapsedMs > 900 {
					out = append(out, fmt.Sprintf("%s: the third call started %dms after the first, when the slow one ended: fixed batches, not a sliding window",
						e.host, third.ElapsedMs-slow.ElapsedMs))
				}
			}
			return out
		},
	},
	{
		name:  "a cut write is reconciled by its key",
		tools: "tools:\n  - name: pay\n    builtin: late_commit\n    ceiling: 500ms\n",
		// How often the status is asked while the write runs is the
		// backoff's draw; the result says whether it was settled.
		loose: []trace.Event{trace.Reconcile, trace.Backoff},
		sc:    &sim.Scenario{Rules: []sim.Rule{{Request: 1, ToolCalls: calls(call("pay", `{"id":"inv-1","amount":5}`))}, answer(2, "Paid.")}},
		// The write settles about 3s in; on 12s, narrow (7.2s) is far from
		// it even on a loaded machine, so the row tests the reconciliation,
		// not which side of 60% a slow host ends on.
		budget: 12 * time.Second,
	},
	{
		name:  "a Ctrl-C lands with cause cancelled",
		tools: "tools:\n  - name: deep_research\n    builtin: deep_research\n",
		sc:    &sim.Scenario{Rules: []sim.Rule{{Request: 1, ToolCalls: calls(call("deep_research", `{"topic":"deadlines"}`))}}},
		// 20s, so that a quarter of the reserve (1.25s) outlasts the
		// heartbeat that brings a Temporal activity its cancellation
		// (durable.CancelWithin): the workflow waits that long for a cut
		// attempt's own answer, which names how it ended (its work
		// stopped; what its stream carried), and in process that answer
		// is there at once. The run ends on its cancel or quiet clock,
		// not on its budget, so the row is no slower.
		budget:    20 * time.Second,
		interrupt: 800 * time.Millisecond,
	},
	{
		name:     "a Ctrl-C during a backoff says the model had not answered yet",
		diverges: "the landing record's doing (\"the model had not answered yet\") was the process's only: temporal's boundary said nothing of where the run was (issue 25, found by this session)",
		// A 503 that asks for 3s; the Ctrl-C at 800ms comes in the
		// backoff sleep, with no failure to name and no call to list.
		sc:        &sim.Scenario{Rules: []sim.Rule{{Request: 1, Status: 503, RetryAfter: "3"}, answer(2, "Landed.")}},
		budget:    20 * time.Second,
		interrupt: 800 * time.Millisecond,
	},
	{
		name:     "a Ctrl-C lands within the reserve of the Ctrl-C",
		timed:    true,
		diverges: "a cancelled run's reserve counted from the landing's start on temporal, from the Ctrl-C in process (SPEC §3: an answer within R; issue 25, found by this session)",
		tools:    "tools:\n  - name: deep_research\n    builtin: deep_research\n",
		// On Temporal the landing begins only once the cut call has
		// answered (durable.CancelWithin): its lease must end within R of
		// the Ctrl-C all the same, as a Session's landing does.
		sc:        &sim.Scenario{Rules: []sim.Rule{{Request: 1, ToolCalls: calls(call("deep_research", `{"topic":"deadlines"}`))}}},
		budget:    20 * time.Second, // see the Ctrl-C row
		interrupt: 800 * time.Millisecond,
		also: func(in, tmp []ending) []string {
			var out []string
			for _, e := range []ending{in[0], tmp[0]} {
				start, ok1 := first(e.recs, trace.RunStart, "")
				var land trace.Record // the landing call's start: the model attempt of the land phase
				for _, r := range e.recs {
					if r.Event == trace.AttemptStart && r.Step == "model" && r.Phase == "land" {
						land = r
					}
				}
				if !ok1 || land.Event == "" {
					out = append(out, fmt.Sprintf("%s: no run_start or landing call", e.host))
					continue
				}
				// 300ms for the moment the Ctrl-C's timer fires after the
				// run's start, on a loaded machine.
				r := time.Duration(e.res.Budget.ReserveMs) * time.Millisecond
				by := land.TS.Add(time.Duration(land.GrantedMs) * time.Millisecond).Sub(start.TS)
				if by > 800*time.Millisecond+r+300*time.Millisecond {
					out = append(out, fmt.Sprintf("%s: the landing call's lease ran to %v after the start, past the Ctrl-C at 800ms and its reserve of %v", e.host, by, r))
				}
			}
			return out
		},
	},
	{
		// Issue 27: a tool whose declared p95 is 1s is allowed 2s of
		// silence; silent 1.5s with Q 1s, it was cut 10 times of 10.
		name:   "a tool silent past Q but within its allowance is held, not cut",
		tools:  "tools:\n" + command("slow", "read", "    p95: 1s\n", "1.5"),
		sc:     &sim.Scenario{Rules: []sim.Rule{{Request: 1, ToolCalls: calls(call("slow", `{}`))}, answer(2, "Held.")}},
		budget: 20 * time.Second, quiet: time.Second,
		also: causeIs("", 2),
	},
	{
		name:   "a tool that hangs past its allowance lands on quiet, named with its allowance",
		tools:  "tools:\n" + command("stuck", "read", "    p95: 1s\n", "30"),
		sc:     &sim.Scenario{Rules: []sim.Rule{{Request: 1, ToolCalls: calls(call("stuck", `{}`))}, answer(2, "Stuck.")}},
		budget: 20 * time.Second, quiet: time.Second,
		also: func(in, tmp []ending) []string {
			out := causeIs(landing.CauseQuiet, 1)(in, tmp)
			for _, e := range slices.Concat(in, tmp) {
				if !strings.Contains(e.res.Boundary, "tool:stuck was silent past its usual time: its allowance is 2s (2 × its declared p95)") {
					out = append(out, fmt.Sprintf("%s: boundary %q does not name the call and its allowance", e.host, e.res.Boundary))
				}
			}
			return out
		},
	},
	{
		// Issue 27: the model's p95 of 1s from the profile allows its
		// turn 2s of silence from its server's headers: a first token at
		// 1.5s is held, with Q 1s; on temporal the worker signals the
		// headers.
		name:    "a model slower than Q but within its allowance from the profile is held, not cut",
		sc:      &sim.Scenario{Rules: []sim.Rule{{Request: 1, FirstToken: 1500 * time.Millisecond, Answer: "Thought."}}},
		profile: map[string][]time.Duration{"model": {time.Second, time.Second, time.Second, time.Second, time.Second}},
		budget:  20 * time.Second, quiet: time.Second,
		also: causeIs("", 1),
	},
	{
		// Issue 27: the allowance counts from the call's start, not from
		// its headers: headers at 0.8s then only keepalives are warned of
		// at 2s, E; counted from the headers it was 2.8s, past max(Q, E).
		// Warn mode, so that the warning's record says when and how long.
		name: "a model that answers late and then says nothing is caught at its allowance from its start",
		sc: &sim.Scenario{Rules: []sim.Rule{{Request: 1, Delay: 800 * time.Millisecond, Keepalive: 3 * time.Second,
			KeepaliveEvery: 200 * time.Millisecond, Answer: "Late."}}},
		profile: map[string][]time.Duration{"model": {time.Second, time.Second, time.Second, time.Second, time.Second}},
		budget:  20 * time.Second, quiet: time.Second, quietMode: watchdog.Warn,
		also: func(in, tmp []ending) []string {
			out := causeIs("", 1)(in, tmp)
			for _, e := range slices.Concat(in, tmp) {
				w, ok := first(e.recs, trace.QuietWarning, "model")
				if !ok || !w.Headers || w.AllowanceMs != 2000 || w.SilentMs < 2000 || w.SilentMs >= 2400 {
					out = append(out, fmt.Sprintf("%s: quiet_warning %+v; want the model, headers sent, silent 2s of its 2s allowance from its start", e.host, w))
				}
			}
			return out
		},
	},
	{
		name:   "a quiet clock in warn mode warns of the stall and the run goes on",
		tools:  "tools:\n" + command("slow", "read", "", "1.5"),
		sc:     &sim.Scenario{Rules: []sim.Rule{{Request: 1, ToolCalls: calls(call("slow", `{}`))}, answer(2, "Warned.")}},
		budget: 20 * time.Second, quiet: time.Second, quietMode: watchdog.Warn,
		also: func(in, tmp []ending) []string {
			out := causeIs("", 2)(in, tmp)
			for _, e := range slices.Concat(in, tmp) {
				if n := count(e.recs, trace.QuietWarning); n != 1 {
					out = append(out, fmt.Sprintf("%s: %d quiet_warning records, want 1", e.host, n))
				}
			}
			return out
		},
	},
	{
		name: "a model that hangs mid-answer lands on quiet",
		sc:   &sim.Scenario{Rules: []sim.Rule{{HangAfterChunks: new(1)}}},
		// 20s: see the Ctrl-C row; a quarter of the reserve outlasts the
		// heartbeat that brings the cut attempt its cancellation.
		budget: 20 * time.Second, quiet: time.Second,
	},
	{
		name:  "a tool that hangs lands on quiet",
		tools: "tools:\n" + command("stuck", "read", "", "30"),
		sc:    &sim.Scenario{Rules: []sim.Rule{{Request: 1, ToolCalls: calls(call("stuck", `{}`))}, answer(2, "Stuck.")}},
		// 20s: see the Ctrl-C row; a quarter of the reserve outlasts the
		// heartbeat that brings the cut attempt its cancellation.
		budget: 20 * time.Second, quiet: time.Second,
	},
	{
		name: "a model that only sends keepalives lands on quiet",
		sc:   &sim.Scenario{Rules: []sim.Rule{{Keepalive: sim.Forever, KeepaliveEvery: 200 * time.Millisecond}}},
		// 20s, so that a quarter of the reserve (1.25s) outlasts the
		// heartbeat that brings a Temporal activity its cancellation
		// (durable.CancelWithin): the workflow waits that long for a cut
		// attempt's own answer, which names how it ended (its work
		// stopped; what its stream carried), and in process that answer
		// is there at once. The run ends on its quiet clock,
		// not on its budget, so the row is no slower.
		budget: 20 * time.Second, quiet: time.Second,
	},
	{
		name:     "a model cut at its lease is named by what it sent, and is not tried again",
		diverges: "on temporal the attempt its lease cut was retried, named \"lease expired\", and the boundary said it sent no answer within its lease; in process what it sent",
		sc:       &sim.Scenario{Rules: []sim.Rule{{Request: 1, Keepalive: sim.Forever, KeepaliveEvery: 200 * time.Millisecond}}},
		// The lease, 10s − 1s − 50ms, ends after the clock's narrow and
		// fit, before land: the run is landed by the cut, at once.
		budget: 10 * time.Second, reserve: time.Second, quiet: time.Minute,
	},
	{
		name:     "a call the gate refuses names the model's call on both hosts",
		diverges: "a refused record carried tool_call_id on temporal only (issue 25, the host's review)",
		// As the fit row: the call comes at 8.1s of 10s, in fit, and its
		// ceiling does not fit before landing.
		tools: "tools:\n" + command("probe", "read", "    ceiling: 2s\n", "0"),
		sc: &sim.Scenario{Rules: []sim.Rule{
			{Request: 1, Delay: 8100 * time.Millisecond, ToolCalls: calls(call("probe", `{}`))},
			answer(2, "Probed."),
		}},
		budget: 10 * time.Second, reserve: time.Second,
		also: func(in, tmp []ending) []string {
			var out []string
			for _, e := range []ending{in[0], tmp[0]} {
				if r, ok := first(e.recs, trace.Refused, "tool:probe"); !ok || r.CallID == "" {
					out = append(out, fmt.Sprintf("%s: no refused record of tool:probe that names the model's call: %+v", e.host, r))
				}
			}
			return out
		},
	},
	{
		name:     "a call the budget refuses says why on both hosts",
		diverges: "a tool call refused for budget had no message on temporal, one in process (issue 25, the host's review)",
		// Its declared p50, 5s, is more than the 4s run has before its
		// reserve: its lease is refused before any attempt.
		tools:  "tools:\n" + command("slowpoke", "read", "    p50: 5s\n", "0"),
		sc:     &sim.Scenario{Rules: []sim.Rule{{Request: 1, ToolCalls: calls(call("slowpoke", `{}`))}, answer(2, "Refused.")}},
		budget: 4 * time.Second,
	},
	{
		name:     "an orphan with no journal says so in the same words on both hosts",
		diverges: "the orphan record's message was \"tools: no orphan journal\" in process, \"no orphan journal is configured\" on temporal (issue 25, the host's review)",
		tools:    "tools:\n" + command("transfer", "write", "    ceiling: 500ms\n", "5"),
		sc: &sim.Scenario{Rules: []sim.Rule{
			{Request: 1, ToolCalls: calls(call("transfer", `{"to":"acct-1","amount":5}`))}, answer(2, "Its outcome is unknown."),
		}},
		budget: 8 * time.Second, noJournal: true,
	},
	{
		name: "parallel calls that cross 60% of the budget end the same",
		// Started at 4.3s of 8s, in explore, they end in narrow (4.8s on),
		// 0.7s before land (6s on).
		tools: "tools:\n" + command("left", "read", "", "1") + command("right", "read", "", "1"),
		sc: &sim.Scenario{Rules: []sim.Rule{
			{Request: 1, Delay: 4300 * time.Millisecond, ToolCalls: calls(call("left", `{}`), call("right", `{}`))},
			answer(2, "Both answered."),
		}},
		budget: 8 * time.Second,
	},
}

// offers is a row's check that each model request offered the tools
// want says, on both hosts: those the run can use, and none at landing.
func offers(want []int) func(in, tmp []ending) []string {
	return func(in, tmp []ending) []string {
		var out []string
		for _, e := range []ending{in[0], tmp[0]} {
			if !slices.Equal(e.offered, want) {
				out = append(out, fmt.Sprintf("%s: the model requests offered %v tools, want %v", e.host, e.offered, want))
			}
		}
		return out
	}
}

// gap is the time from the end of step's attempt n to the start of its
// next, as a host's records say.
func gap(e ending, step string, n int) (time.Duration, bool) {
	var end, next *trace.Record
	for i, r := range e.recs {
		switch {
		case r.Step == step && r.Attempt == n && r.Event == trace.AttemptEnd:
			end = &e.recs[i]
		case r.Step == step && r.Attempt == n+1 && r.Event == trace.AttemptStart:
			next = &e.recs[i]
		}
	}
	if end == nil || next == nil {
		return 0, false
	}
	return time.Duration(next.ElapsedMs-end.ElapsedMs) * time.Millisecond, true
}

// quietAt is when a host's run found itself quiet: its first attempt that
// ended with outcome quiet.
func quietAt(e ending) (time.Duration, bool) {
	for _, r := range e.recs {
		if r.Event == trace.AttemptEnd && r.Outcome == trace.Quiet {
			return time.Duration(r.ElapsedMs) * time.Millisecond, true
		}
	}
	return 0, false
}

// secret is a credential the tools file hands a tool from the
// environment (secretEnv, set by TestMain), which the tool echoes in its
// error: not shaped like a key, so only the tools file's secrets can keep
// it out of the records.
const (
	secret    = "hunter2-conformance-token"
	secretEnv = "GLIDEPATH_CONFORMANCE_TOKEN"
)

// Every row runs on both hosts, the two at once, and the rows side by
// side; a row fails with each way temporal diverged from the in-process
// host, the reference (issue 25). List the rows with -run
// 'TestBothHostsAgree' -v, or run one by its sentence.
func TestBothHostsAgree(t *testing.T) {
	for _, rw := range slices.Concat(rows, agentRows, responsesRows) {
		t.Run(rw.name, func(t *testing.T) {
			if !rw.timed {
				t.Parallel()
			}
			runs := max(rw.runs, 1)
			in, tmp := make([]ending, runs), make([]ending, runs)
			for i := range runs {
				// The hosts run at once, each on its own copy of the
				// tools files: a row costs its slower host.
				var wg sync.WaitGroup
				var err error
				path, j, queue := rw.files(t), journal(t), fmt.Sprintf("conformance-%s-%d", t.Name(), i)
				wg.Go(func() { tmp[i], err = runOnTemporal(t.Context(), rw, path, j, queue) })
				in[i] = runInProcess(t, rw, rw.files(t))
				wg.Wait()
				if err != nil {
					t.Fatalf("issue 25: %s\n%v", rw.diverges, err)
				}
			}
			diffs := agree(in[0], tmp[0], rw.loose)
			if rw.also != nil {
				diffs = append(diffs, rw.also(in, tmp)...)
			}
			if len(diffs) == 0 {
				return
			}
			covers := rw.diverges
			if covers == "" {
				covers = "(a scenario both hosts are kept agreeing on)"
			}
			t.Errorf("issue 25: %s\n%s", covers, strings.Join(diffs, "\n"))
		})
	}
}
