// Package timeline draws the records of runs (package trace, SPEC §6) as
// one self-contained HTML page, so that a person sees in a few seconds
// where a run's time went (SPEC §8, issue 12). `harness report --html
// FILE` writes it.
//
//	recs, err := trace.ReadRecords(file)
//	if err != nil {
//		return err
//	}
//	var page bytes.Buffer
//	if err := timeline.Write(&page, recs, timeline.Options{Sources: []string{"run.jsonl"}}); err != nil {
//		return err
//	}
//
// # The page
//
// One page, its SVG, CSS and script inline: it fetches nothing when it is
// viewed, names no font outside the viewer's own and needs no network.
// It fits the window it is opened in (SPEC §8): each timeline is laid out
// once, 1200 units wide, and drawn by its viewBox at the width of the
// window, so that no run's end is off-screen at 1000px; the utilization
// histogram and the tables beside it stack where they would not fit side
// by side.
//
// Every run shown on its own gets a title with its result and cause
// ("Partial — ran out of budget: 852ms of 1.2s (71%)"), what its time went
// to by step kind (trace.Summarize over that run), the landing's
// boundary, a strip with its whole budget (the ladder's phases as
// planned, the 60%, 80% and reserve lines and the time spent), and a
// timeline. The timeline has a lane per step kind, "setup" first, then
// "model", then each "tool:NAME" and "agent:NAME" in the order of its
// first record; calls that ran at once take a row each. Each attempt is
// a bar from its attempt_start to its attempt_end, coloured by outcome —
// ok; we gave up (gave_up, quiet, cancelled); they failed
// (upstream_error, rate_limited, invalid); grey for one that never ended,
// which runs to the trace's last record — and labeled with its granted
// lease and outcome where there is room; a thin line under it reaches to
// the end of its lease. Its hover title holds everything the trace says
// of it, message included. Backoff sleeps are hatched gaps before the
// retry, and reconcile waits are dotted ones; a backoff that gave up, a
// cancel, a reconciliation and an orphan are marks on the call's row, and
// a refusal is a mark on its step's lane. A mark is set at its record's
// time, and marks and bars that meet at one instant in the order of
// their records: a refusal just before a landing call is left of its
// bar, one just after a turn right of it, one with no room between the
// two at its time, over both. The phases the run went through are shaded
// behind the lanes and named, with lines where the ladder turns at 60%
// and 80% of the budget and where the reserve begins, each labeled
// ("60%", "80%", "reserve 300ms"; a line inside the reserve, where its
// phase never comes, in grey), where the run landed and where it ended.
// A row above the lanes has a tick for every reset of the quiet clock:
// each progress record and each attempt end.
//
// The timeline shows the whole budget when the run spent half of it or
// more; else it shows the stretch the run took, so that a run that spent
// 10% is not a sliver, and the strip above says so.
//
// The trace does not carry the reserve: it is read off a phase record
// that moved to land on its own (not "forced"), as the budget less where
// that happened, else it is the default rule's ([budget.DefaultReserve]),
// and the run's subtitle says which.
//
// # Cancels
//
// A trace writes a cancel twice: a cancel_sent record of state sent, on
// its lease, as it goes out, and one of its answer (accepted, unknown or
// failed) when that comes; a cancel that could not be sent at all is its
// failed record alone (SPEC §6). The timeline draws each cancel once,
// where it was sent, in the shape of how it settled — accepted, unknown,
// failed, or sent when no answer came (an MCP cancel expects none) — with
// those words beside it where there is room and, in its title, its lease
// and when it was answered. An answer settles the oldest cancel of its
// call not yet answered. Across runs, cancels are counted once each:
// "sent N: accepted a, unknown u, failed f, unanswered s".
//
// A run whose result existed (its landing record, or for a run the model
// answered the last record before run_end) while a cancel was still
// unanswered gives those cancels their grace before it ends: that wait,
// from the result to run_end, is a hatched stretch labeled "waiting for
// cancel answers" in a lane of its own under the run's others, its title
// naming each cancel it waited for and how it settled.
//
// # Late runs
//
// A run that ended after its deadline (run_end's late_ms, or an
// elapsed_ms past the budget in a trace without it) is drawn as time
// passed (SPEC §3): the timeline and the budget strip reach to its end,
// a line marks the budget's end, the end's label and the run's title say
// by how much ("ended 87ms late"), and the strip shows the time past the
// budget in red.
//
// # Sub-agents
//
// A sub-agent's run is nested under the attempt of its parent that ran
// it, at the same scale, in a block of its own with its budget slice and
// its lanes: the run whose attempt carries the idempotency key its
// run_start carries, as [trace.Summarize] finds it, so that a child
// served by `harness serve` in another process is found as well as one
// in the parent's (whose records also carry parent_run_id). Where it
// starts inside the parent's attempt is read off the two timestamps and
// kept inside the attempt. A child whose parent is not among the records
// is shown as a run of its own, saying whose it is.
//
// # Across runs
//
// Above the runs, over all of them: the utilization histogram (spent /
// total per finished run, by tenths, with the p50, p90 and p99 of
// [trace.Report]), what spent the budget of each run that ran out
// ([trace.Report.Exhausted]), the time by step kind, the outcomes with
// "we gave up" apart from "they failed", and the sub-agents by the step
// that ran them.
//
// # Labels
//
// No label is drawn over another or over a bar: the layout gives each
// label room by a generous estimate of its width and leaves out one that
// has none (its element keeps its hover title). The labels of the lines
// above a timeline and under a budget strip are laid out together, in
// three rows, each right or left of its line and in a shorter form where
// the longer has no room ("reserve 300ms from 900ms", "reserve 300ms",
// "reserve"), the layout that labels every line chosen over one that
// does not. The page's script,
// once loaded, measures every label as the browser set it and hides any
// that still covers something, counting them in the body's
// data-labels-hidden. Hovering any part of a call outlines all of it.
//
// # Escaping
//
// A trace holds text from elsewhere: error messages, tool output, IDs.
// The page is written by html/template, so every string of a record is
// escaped for where it goes, and the script reads nothing from the trace.
//
// # Finding the bars
//
// Every attempt's bar is an SVG rect of class "bar" with data-run,
// data-step, data-step-index, data-attempt, data-key, data-outcome,
// data-granted-ms, data-start-ms and data-end-ms, as the trace has them;
// every mark is an SVG g of class "mark KIND" (a cancel's also
// "st-STATE", how it settled) with data-at-ms and data-seq, its record's;
// the body's data-bars counts them as written and, once the script ran,
// data-drawn as found in the DOM, and data-ready is "true".
//
// # Errors
//
// [Write] blocks until the page is written and returns w's first error.
// Records in any order, from one trace or many, are grouped by run ID
// and ordered by seq; none is an error, and no record at all is a page
// that says so.
package timeline
