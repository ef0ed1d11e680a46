package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/trace/timeline"
)

// reportCommand is "harness report [--json] [--html FILE] TRACE...".
type reportCommand struct {
	streams
}

func (c *reportCommand) Run(ctx context.Context, args []string) error {
	flags := flag.NewFlagSet("report", flag.ContinueOnError)
	asJSON := flags.Bool("json", false, "print one JSON object instead of the tables")
	htmlFile := flags.String("html", "", "also write the runs' timelines as one self-contained HTML page to `FILE`")
	asStory := flags.Bool("story", false, "print, per run, one line per event that shows what its clocks did, instead of the tables")
	pos, help, err := parseFlags(flags, "report", args, c.stdout, func(w io.Writer) { reportUsage(w, flags) })
	if help || err != nil {
		return err
	}
	if len(pos) == 0 {
		return &usageError{cmd: "report", err: errors.New("no TRACE given")}
	}
	if *asStory && (*asJSON || *htmlFile != "") {
		return &usageError{cmd: "report", err: errors.New("--story prints lines for a person: not with --json or --html")}
	}
	if *htmlFile == "-" {
		return &usageError{cmd: "report", err: errors.New("--html -: the page goes to a file; standard output has the report")}
	}
	var recs []trace.Record
	bad := 0
	for _, name := range pos {
		r, n, err := c.read(name)
		if err != nil {
			// A trace that cannot be read is a bad argument: nothing is
			// reported from a part of what was asked for.
			return &usageError{cmd: "report", err: err}
		}
		recs = append(recs, r...)
		bad += n
	}
	// Bad lines were named on stderr and skipped; the rest is reported,
	// unless nothing was left of what was given (issue 12).
	if len(recs) == 0 && bad > 0 {
		return &usageError{cmd: "report", err: fmt.Errorf("no record could be read: %s skipped", plural(bad, "bad line"))}
	}
	rep := trace.Summarize(recs)

	// Rendered whole before writing, as plan does.
	var out bytes.Buffer
	if *asStory {
		writeStory(&out, recs)
	} else if *asJSON {
		enc := json.NewEncoder(&out)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		writeReport(&out, rep)
	}
	if *htmlFile != "" {
		var page bytes.Buffer
		if err := timeline.Write(&page, recs, timeline.Options{Title: "harness report", Sources: pos}); err != nil {
			return fmt.Errorf("--html: %w", err)
		}
		if err := os.WriteFile(*htmlFile, page.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--html: %w", err) // a *PathError names the file and why
		}
		if !*asJSON {
			// The page was asked for: one line says where it went, not a
			// screen of tables that hides it (issue 18). JSON asked for
			// as well is still printed, for the script that reads it.
			_, err = fmt.Fprintf(c.stdout, "wrote %s: the timeline of %s\n", *htmlFile, plural(rep.Runs, "run"))
			return err
		}
	}
	_, err = c.stdout.Write(out.Bytes())
	return err
}

// read returns the records of the trace name, or of standard input for
// "-", and how many of its lines were not records. Each bad line is named
// on stderr as FILE:LINE: why, and skipped, and a last line counts them:
// a torn last line, left by a process killed as it wrote, costs that line
// and no other (issue 24). A file that cannot be read at all is an error.
func (c *reportCommand) read(name string) ([]trace.Record, int, error) {
	var r io.Reader = c.stdin
	if name == "-" {
		name = "stdin"
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, 0, err
		}
		defer f.Close()
		r = f
	}
	recs, err := trace.ReadRecords(r)
	if se, ok := errors.AsType[*trace.SkippedError](err); ok {
		for _, l := range se.Lines {
			fmt.Fprintf(c.stderr, "%s:%d: %v, skipped\n", name, l.Line, l.Err)
		}
		fmt.Fprintf(c.stderr, "harness report: %s: %s skipped, %s read\n", name, plural(len(se.Lines), "bad line"), plural(len(recs), "record"))
		return recs, len(se.Lines), nil
	}
	if _, ok := errors.AsType[*fs.PathError](err); ok {
		return nil, 0, err // it names the file
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", name, err)
	}
	return recs, 0, nil
}

func reportUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `usage: harness report [--json] [--html FILE] [--story] TRACE...

Report reads the JSONL traces of runs ("harness run --trace FILE"; "-"
reads standard input) and prints, over all the runs they hold, grouped by
run ID across files:

  budget utilization   spent/total per run, p50/p90/p99 (nearest rank)
  time by step kind    model, tool:NAME, agent:NAME: attempt durations,
                       attempt_start to attempt_end, plus backoff sleeps
  exhausted runs       for each run that spent its budget, the step that
                       spent most of it, beside the one that held it last
                       (a run landed by a server's wait it could not
                       afford did not spend it, and is counted apart)
  sub-agents           the runs of sub-agents (records with parent_run_id),
                       by the parent's agent step: how they ended, the
                       slices they got, what they spent them on; their
                       time is their parent's agent step's, and is not
                       counted again above
  attempt outcomes     "we gave up" (gave_up, quiet, cancelled) apart from
                       "they failed" (upstream_error, rate_limited, invalid)
  reconciliation       reconcile records by state, and orphans

--html FILE also writes one self-contained HTML page (inline SVG, CSS
and script; nothing is fetched when it is viewed): per run a timeline, a
lane per step kind, each attempt a bar labeled with its lease and outcome
and coloured by it (ok, we gave up, they failed), backoff sleeps as
hatched gaps, the phases shaded with the 60%, 80% and reserve lines,
quiet-clock resets as ticks, refusals and the landing marked, and each
sub-agent's run nested under the call that ran it; over all runs the
utilization histogram and what spent the budget of the runs that ran out.
With --html the tables are not printed: one line says where the page
was written; with --json as well, the JSON is printed. A FILE that
cannot be written is an error (exit 1).

--story prints, instead of the tables, per run one line per event that
shows what its clocks did, each read from a record: an attempt cut and by
what (its ceiling, the run's time for work, the quiet clock, a cancel), a
retry with its idempotency key, a cancel and how it settled, a write's
status asked by key, a refusal, an orphan, the landing and the end. make
demo prints it after each run.

A line that is not a record is named on standard error as FILE:LINE: why,
and skipped; the rest is reported. A trace that cannot be read, or traces
of which no line is a record, are bad usage.

Flags:

`)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// writeReport prints rep as short aligned tables, leaving out those with
// nothing to say.
func writeReport(w io.Writer, rep trace.Report) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	row := func(cells ...string) { fmt.Fprintln(tw, "  "+strings.Join(cells, "\t")) }
	defer tw.Flush()

	runs := fmt.Sprintf("%s: %d complete, %d partial", plural(rep.Runs, "run"), rep.Results["complete"], rep.Results["partial"])
	if causes := nonZero(rep.Causes); causes != "" {
		runs += " (" + causes + ")"
	}
	if rep.Unfinished > 0 {
		runs += fmt.Sprintf(", %d unfinished (no run_end)", rep.Unfinished)
	}
	if rep.Late > 0 {
		// Ended after their deadline: time is told as it passed (SPEC §3).
		runs += fmt.Sprintf("; %d late (ended past the deadline, by up to %s)", rep.Late, millis(rep.LateMaxMs))
	}
	fmt.Fprintln(tw, runs)
	if rep.Runs == 0 {
		return
	}

	if u := rep.Utilization; u.Runs > 0 {
		fmt.Fprintf(tw, "\nbudget utilization (spent/total, %s)\n", plural(u.Runs, "run"))
		row("p50", percent(u.P50))
		row("p90", percent(u.P90))
		row("p99", percent(u.P99))
	}

	if len(rep.Steps) > 0 {
		fmt.Fprintln(tw, "\ntime by step kind (attempts and backoff sleeps)")
		row("step", "attempts", "time", "share")
		for _, s := range rep.Steps {
			row(s.Step, fmt.Sprint(s.Attempts), millis(s.Ms), percent(s.Share))
		}
	}

	if len(rep.Exhausted) > 0 {
		fmt.Fprintln(tw, "\nruns out of budget: the step that spent most")
		row("run", "spent", "step", "mostly", "time", "of run", "held at the end")
		for _, e := range rep.Exhausted {
			step, held := "-", "-"
			if e.StepIndex >= 0 {
				step = fmt.Sprint(e.StepIndex)
			}
			if e.HeldBy != "" {
				held = fmt.Sprintf("step %d %s", e.HeldByIndex, e.HeldBy)
			}
			row(e.RunID, millis(e.SpentMs), step, orDash(e.Step), millis(e.Ms), percent(e.Share), held)
		}
	}

	if len(rep.SubAgents) > 0 {
		fmt.Fprintln(tw, "\nsub-agents: the children of each agent step, whose time is that step's")
		row("step", "runs", "results", "slice p50", "slice max", "spent", "mostly")
		for _, a := range rep.SubAgents {
			results := fmt.Sprintf("%d complete, %d partial", a.Results["complete"], a.Results["partial"])
			if causes := nonZero(a.Causes); causes != "" {
				results += " (" + causes + ")"
			}
			if a.Unfinished > 0 {
				results += fmt.Sprintf(", %d unfinished", a.Unfinished)
			}
			if a.Late > 0 {
				results += fmt.Sprintf(", %d late", a.Late)
			}
			mostly := "-"
			if len(a.Steps) > 0 {
				mostly = fmt.Sprintf("%s %s", a.Steps[0].Step, millis(a.Steps[0].Ms))
			}
			row(a.Step, fmt.Sprint(a.Runs), results, millis(a.SliceP50Ms), millis(a.SliceMaxMs), millis(a.SpentMs), mostly)
		}
	}

	o := rep.Outcomes
	fmt.Fprintln(tw, "\nattempt outcomes")
	row("ok", fmt.Sprint(o.OK))
	row("we gave up", fmt.Sprint(o.Ours.Total), byOutcome(o.Ours.By, trace.GaveUp, trace.Quiet, trace.Cancelled))
	row("they failed", fmt.Sprint(o.Theirs.Total), byOutcome(o.Theirs.By, trace.UpstreamError, trace.RateLimited, trace.Invalid))
	if len(o.Other) > 0 {
		var n int
		for _, c := range o.Other {
			n += c
		}
		row("other", fmt.Sprint(n), nonZero(o.Other))
	}
	row("refused", fmt.Sprint(o.Refused), "not started: the budget or the phase refused them")
	row("retries given up", fmt.Sprint(o.RetriesGivenUp), "the backoff would have outlasted the budget")
	row("server waits given up", fmt.Sprint(o.ServerWaitsGivenUp), "a server asked, with Retry-After, for longer than the time left")
	row("retries", fmt.Sprint(rep.Retries), "attempts made again after a backoff sleep")

	fmt.Fprintln(tw, "\ncancels")
	row("sent", fmt.Sprint(rep.Cancels["sent"]), "calls cut short whose tool was asked to stop")
	row("accepted", fmt.Sprint(rep.Cancels["accepted"]))
	row("unknown", fmt.Sprint(rep.Cancels["unknown"]), "the tool did not know the call")
	row("failed", fmt.Sprint(rep.Cancels["failed"]), "no answer in time")

	fmt.Fprintln(tw, "\nreconciliation and orphans")
	for _, state := range []string{"done", "failed", "never_received", "running"} {
		row(state, fmt.Sprint(rep.Reconciled[state]))
	}
	for _, state := range slices.Sorted(maps.Keys(rep.Reconciled)) {
		switch state {
		case "done", "failed", "never_received", "running":
		default:
			row(orDash(state), fmt.Sprint(rep.Reconciled[state]))
		}
	}
	row("orphans", fmt.Sprint(rep.Orphans))
}

// nonZero lists the counts of m that are not zero, "name n", by name.
func nonZero(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] != 0 {
			parts = append(parts, fmt.Sprintf("%s %d", orDash(k), m[k]))
		}
	}
	return strings.Join(parts, ", ")
}

// byOutcome lists every outcome of one side with its count, in the SPEC's order.
func byOutcome(m map[trace.Outcome]int, order ...trace.Outcome) string {
	parts := make([]string, len(order))
	for i, o := range order {
		parts[i] = fmt.Sprintf("%s %d", o, m[o])
	}
	return strings.Join(parts, ", ")
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func percent(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

func millis(ms int64) string { return (time.Duration(ms) * time.Millisecond).String() }
