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
	"strings"
	"text/tabwriter"
	"time"

	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/internal/redact"
)

// orphansCommand is "harness orphans [--journal FILE] [--json]".
type orphansCommand struct {
	streams
}

func (c *orphansCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("orphans", flag.ContinueOnError)
	journal := journalFlag(fs)
	asJSON := fs.Bool("json", false, "print the open entries as one JSON array")
	pos, help, err := parseFlags(fs, "orphans", args, c.stdout, func(w io.Writer) { orphansUsage(w, fs) })
	if help || err != nil {
		return err
	}
	if len(pos) > 0 {
		return &usageError{cmd: "orphans", err: fmt.Errorf("unexpected argument %q", pos[0])}
	}
	path, err := journalPath(*journal, "orphans")
	if err != nil {
		return err
	}
	open, err := readOrphans(path, c.stderr, "orphans")
	if err != nil {
		return err
	}

	// Rendered whole before writing, as plan does.
	var out bytes.Buffer
	if *asJSON {
		enc := json.NewEncoder(&out)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(append([]cancel.Entry{}, open...)); err != nil { // [] rather than null
			return err
		}
	} else {
		if len(open) == 0 {
			fmt.Fprintf(c.stderr, "harness orphans: no open orphans in %s\n", path)
			return nil
		}
		tw := tabwriter.NewWriter(&out, 0, 8, 2, ' ', 0)
		for _, e := range open {
			fmt.Fprintf(tw, "%s\t%s\t%s\tsince %s\trun %s\n",
				e.IdempotencyKey, e.Tool, orDash(where(e)), e.TS.UTC().Format(time.RFC3339), orDash(e.RunID))
		}
		tw.Flush()
	}
	if _, err = c.stdout.Write(out.Bytes()); err != nil {
		return err
	}
	// What to do next, on stderr so that the list stays one line per
	// orphan for a script: the same command the run's boundary and
	// harness reconcile name (issue 24).
	src := newToolsSource()
	var asked []string
	for _, e := range open {
		if _, err := src.reader(e); err != nil {
			fmt.Fprintf(c.stderr, "harness orphans: %s (%s): %v; %s\n", e.IdempotencyKey, e.Tool, err, settleWords(path, e))
			continue
		}
		asked = append(asked, string(e.IdempotencyKey))
	}
	if len(asked) > 0 {
		whose := "their tools"
		if len(asked) == 1 {
			whose = "its tool"
		}
		fmt.Fprintf(c.stderr, "harness orphans: %s: %s asks %s again\n", strings.Join(asked, ", "), cancel.ReconcileCommand(path), whose)
	}
	return nil
}

// journalFlag defines --journal on fs, as orphans and reconcile share it.
func journalFlag(fs *flag.FlagSet) *string {
	return fs.String("journal", "", "the orphan journal `FILE` (default $XDG_STATE_HOME/glidepath/orphans.jsonl)")
}

// journalPath is the --journal value, or the default journal of SPEC §5.
func journalPath(flagValue, cmd string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	path, err := cancel.DefaultJournalPath()
	if err != nil {
		return "", &usageError{cmd: cmd, err: fmt.Errorf("%w; name one with --journal", err)}
	}
	return path, nil
}

// readOrphans returns the open orphans of the journal at path. A journal
// that does not exist has none: no run has reported one yet. A line that
// is not an entry is named on stderr as FILE:LINE: why, and skipped, and a
// last line counts them: one bad line, a torn last one among them, must
// not hide the orphans of every other (issue 24).
func readOrphans(path string, stderr io.Writer, cmd string) ([]cancel.Entry, error) {
	entries, err := cancel.ReadJournal(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if se, ok := err.(*cancel.SkippedError); ok {
		for _, l := range se.Lines {
			fmt.Fprintf(stderr, "%s:%d: %v, skipped\n", l.Path, l.Line, l.Err)
		}
		read := fmt.Sprintf("%d entries", len(entries))
		if len(entries) == 1 {
			read = "1 entry"
		}
		fmt.Fprintf(stderr, "harness %s: %s: %s skipped, %s read\n", cmd, path, plural(len(se.Lines), "bad line"), read)
		err = nil
	}
	if err != nil {
		return nil, err
	}
	return cancel.OpenOrphans(entries), nil
}

// where is how an orphan's tool is reached again: its URL, redacted; else
// the tools file that built it; else its kind, which only the program that
// made the call knows how to ask.
func where(e cancel.Entry) string {
	switch {
	case e.URL != "":
		return redact.URL(e.URL)
	case e.ToolsFile != "":
		return e.ToolsFile
	}
	return e.Kind
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func orphansUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `usage: harness orphans [--journal FILE] [--json]

Orphans lists the open orphans of the journal: write calls whose outcome a
run could not learn before it had to land, because the tool still said
running, its status did not answer, or it has no status to ask. One line
each:

  KEY  TOOL  WHERE  since TS  run RUN_ID

WHERE is how to reach the tool again: its URL, else the tools file that
built it, else its kind. KEY is the call's Idempotency-Key, under which
the tool knows it.

Standard error then says what to do next, with the command the run's
boundary named: for the orphans whose tool can be asked, "harness
reconcile" (with --journal FILE for a journal of one's own), which asks
them again and closes those that settled; for each one whose tool no
program can ask (a builtin, an MCP server's tool, a sub-agent, a command
with no status command), why, and the "harness reconcile --settle
KEY=done" with which a person records what they found by hand.

A journal that does not exist has no orphans. A line of it that is not an
entry (a torn last line a crash left, among them) is named on stderr and
skipped; the rest is listed.

Flags:

`)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}
