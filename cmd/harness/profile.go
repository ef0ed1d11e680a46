package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/budget/profile"
	"github.com/glidepath/glidepath/model"
)

// profileCommand is "harness profile [--profile FILE] [--json]": what the
// latency profile says of each step kind (SPEC §5b).
//
// A missing or empty profile is not an error: it says so on stderr and
// exits 0 (with --json, {"kinds":[]} on stdout). A corrupt one is: its
// whole job is to show the file, so it names the file and what is wrong
// and exits 1, although runs go on without it.
type profileCommand struct {
	streams
}

func (c *profileCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("profile", flag.ContinueOnError)
	file := profileFlag(fs)
	asJSON := fs.Bool("json", false, `print one JSON object: {"kinds":[{"kind","where","count","p50_ms","p95_ms","cuts","cut_ms","oldest","newest"}]}`)
	pos, help, err := parseFlags(fs, "profile", args, c.stdout, func(w io.Writer) { profileUsage(w, fs) })
	if help || err != nil {
		return err
	}
	if len(pos) > 0 {
		return &usageError{cmd: "profile", err: fmt.Errorf("unexpected argument %q", pos[0])}
	}
	path, err := profilePath(*file, "profile")
	if err != nil {
		return err
	}
	if path == "" {
		return &usageError{cmd: "profile", err: errors.New("--profile off: there is no profile to show")}
	}
	p, err := profile.Load(path)
	if errors.Is(err, profile.ErrCorrupt) {
		return fmt.Errorf("%w\nruns ignore it; the next to record one keeps it as %s.corrupt and starts afresh", err, path)
	}
	if err != nil {
		return err
	}
	s := p.Summary(time.Now())

	// Rendered whole before writing, as orphans does.
	var out bytes.Buffer
	if *asJSON {
		enc := json.NewEncoder(&out)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			return err
		}
	} else {
		if len(s.Kinds) == 0 {
			what := "no observations of the last 7 days in " + path
			if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
				what = "no profile at " + path + " yet: no run has recorded one"
			}
			fmt.Fprintf(c.stderr, "harness profile: %s\n", what)
			return nil
		}
		writeProfile(&out, s)
	}
	_, err = c.stdout.Write(out.Bytes())
	return err
}

// writeProfile writes s as a table, one line per kind and place. A
// version 1 profile's kinds, placed nowhere, show "-": they seed no run.
// A tool's or sub-agent's kind with fewer than [budget.MinObserved]
// observations is marked, and a line under the table says why: a run
// leases it by what it declares until it has that many, so its numbers
// here are not used yet (issue 24: they were ignored without a word). The
// model declares nothing; its kinds are used from the first observation.
// CUT is the longest attempt a quiet clock cut there, "—" for none, and
// P50 and P95 are "—" for a place with cuts alone (issue 27).
func writeProfile(w io.Writer, s profile.Summary) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tWHERE\tCOUNT\tP50\tP95\tCUT\tOLDEST\tNEWEST")
	few := false
	for _, k := range s.Kinds {
		count := strconv.Itoa(k.Count)
		if k.Kind != model.Kind && k.Where != "" && k.Count < budget.MinObserved {
			count += "*"
			few = true
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.Kind, cmp.Or(k.Where, "-"), count,
			known(k.Count, k.P50), known(k.Count, k.P95), known(k.Cuts, k.Cut),
			k.Oldest.UTC().Format(time.RFC3339), k.Newest.UTC().Format(time.RFC3339))
	}
	tw.Flush()
	if few {
		fmt.Fprintf(w, "\n* fewer than %d: not used yet. A run leases a tool or sub-agent by the p50 and p95 it declares\n"+
			"  until it has %d observations of it there, these and its own.\n", budget.MinObserved, budget.MinObserved)
	}
}

// known is latency(d) for a figure drawn from n > 0 samples, and "—" for
// one drawn from none.
func known(n int, d time.Duration) string {
	if n == 0 {
		return "—"
	}
	return latency(d)
}

// latency rounds d for a person reading latencies: microseconds under a
// millisecond (350µs), milliseconds under 10s (812ms, 1.434s), tenths
// under a minute (12.3s), seconds above (1m12s).
func latency(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		d = d.Round(time.Microsecond)
	case d < 10*time.Second:
		d = d.Round(time.Millisecond)
	case d < time.Minute:
		d = d.Round(100 * time.Millisecond)
	default:
		d = d.Round(time.Second)
	}
	return d.String()
}

// profileFlag defines --profile on fs, which run and profile share.
func profileFlag(fs *flag.FlagSet) *string {
	return fs.String("profile", "", "the latency profile `FILE`, or off (default $XDG_STATE_HOME/glidepath/profile.json)")
}

// profilePath is the --profile value, or the default profile of SPEC §5b;
// "" when the value is "off". Without a value and a home folder to put the
// default in, it is a [*usageError] for cmd; a run, for which the profile
// is never fatal, reports it and goes on without one.
func profilePath(flagValue, cmd string) (string, error) {
	switch flagValue {
	case "off":
		return "", nil
	case "":
	default:
		return flagValue, nil
	}
	path, err := profile.DefaultPath()
	if err != nil {
		return "", &usageError{cmd: cmd, err: fmt.Errorf("%w; name one with --profile, or say --profile off", err)}
	}
	return path, nil
}

func profileUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `usage: harness profile [--profile FILE] [--json]

Profile shows the latency profile: per step kind and the place it ran
against, the durations of the attempts that runs on this machine recorded
in the last 7 days, from which the next run that calls the kind at the
same place starts its p50 and p95 estimates instead of cold, and the
longest attempt a quiet clock cut there. One line each:

  KIND  WHERE  COUNT  P50  P95  CUT  OLDEST  NEWEST

WHERE is the model's name and server ("gpt-5 @ api.openai.com", "sim
(embedded)"), a tool's URL, command or builtin, an MCP server, or a
sub-agent's entry: one model's or server's latency never refuses
another's calls. "-" marks a kind from a profile of an older version,
which seeds nothing and is dropped at the next run's record.

P50 and P95 are nearest-rank percentiles of the COUNT attempts that
finished; OLDEST and NEWEST (RFC 3339, UTC) are the dates of the first and
last attempt kept, cuts included.

CUT is the longest attempt of the kind there that a run's quiet clock
(--quiet) cut: it went that long without finishing, so the kind can take
at least that long, and it never counts in COUNT, P50 or P95. The next run
at this place allows each call of that kind at least twice CUT of silence
before it counts the run as stalled, capped by --max-silence (default
5m), rather than cut it again where it was cut. "—": no cut (or, under
P50 and P95, no attempt that finished).

A tool's or sub-agent's COUNT marked * is fewer than 5: a run leases it by
the p50 and p95 it declares (its entry or manifest) until it has 5
observations of it at that place, the profile's and its own; a model's
are used from the first. A missing or empty profile has no kinds. A
corrupt one is reported and exits 1; runs ignore it.

Flags:

`)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}
