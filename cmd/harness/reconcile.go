package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/demo"
)

// defaultReconcileBudget bounds one "harness reconcile": every status
// request is leased from it, so a journal full of dead tools costs this
// much and no more.
const defaultReconcileBudget = 30 * time.Second

// reconcileCommand is "harness reconcile [--journal FILE] [--tools FILE]
// [--budget D]".
type reconcileCommand struct {
	streams
}

func (c *reconcileCommand) Run(ctx context.Context, args []string) (err error) {
	fs := flag.NewFlagSet("reconcile", flag.ContinueOnError)
	journal := journalFlag(fs)
	toolsFile := fs.String("tools", "", "the tools `FILE` the runs used: its tools are built again and asked, whatever their kind")
	var total *time.Duration
	fs.Func("budget", "the `duration` the whole command may take (default 30s)", durationFlag(&total))
	pos, help, err := parseFlags(fs, "reconcile", args, c.stdout, func(w io.Writer) { reconcileUsage(w, fs) })
	if help || err != nil {
		return err
	}
	if len(pos) > 0 {
		return &usageError{cmd: "reconcile", err: fmt.Errorf("unexpected argument %q", pos[0])}
	}
	cfg := budget.Config{Total: defaultReconcileBudget}
	if total != nil {
		cfg.Total = *total
	}
	b, err := budget.New(cfg)
	if err != nil {
		return &usageError{cmd: "reconcile", err: fmt.Errorf("--budget %v: must be positive", cfg.Total)}
	}
	var from *toolsSource
	if *toolsFile != "" {
		if from, err = loadToolsSource(*toolsFile); err != nil {
			return &usageError{cmd: "reconcile", err: err}
		}
	}
	path, err := journalPath(*journal, "reconcile")
	if err != nil {
		return err
	}
	open, err := readOrphans(path)
	if err != nil {
		return err
	}
	if len(open) == 0 {
		fmt.Fprintf(c.stderr, "harness reconcile: no open orphans in %s\n", path)
		return nil
	}

	j, err := cancel.OpenJournal(path)
	if err != nil {
		return err
	}
	settlements, serr := cancel.ReconcileJournal(ctx, j, b, from.reader)
	// A journal or stdout that failed is an internal error, and wins over
	// the orphans left open, which the journal may not even hold now.
	if cerr := j.Close(); serr == nil {
		serr = cerr
	}
	var out bytes.Buffer
	tw := tabwriter.NewWriter(&out, 0, 8, 2, ' ', 0)
	settled := map[cancel.State]int{}
	for _, s := range settlements {
		e := s.Entry
		switch {
		case s.Recorded:
			settled[s.Status.State]++
			fmt.Fprintf(tw, "%s\t%s\t%s\n", e.IdempotencyKey, e.Tool, settledNote(s.Status))
		case s.Err != nil:
			fmt.Fprintf(tw, "%s\t%s\tstill open: %v\n", e.IdempotencyKey, e.Tool, s.Err)
		case s.Status.State == cancel.Running:
			fmt.Fprintf(tw, "%s\t%s\tstill open: the tool says running (units %d)\n", e.IdempotencyKey, e.Tool, s.Status.Units)
		default: // settled, but the journal failed before its entry was appended
			fmt.Fprintf(tw, "%s\t%s\tstill open: %s, but not recorded\n", e.IdempotencyKey, e.Tool, s.Status.State)
		}
	}
	stillOpen := len(settlements) - settled[cancel.Done] - settled[cancel.Failed] - settled[cancel.NeverReceived]
	tw.Flush()
	noun := "orphans"
	if len(settlements) == 1 {
		noun = "orphan"
	}
	fmt.Fprintf(&out, "reconciled %d open %s: %d done, %d failed, %d never received; %d still open\n",
		len(settlements), noun, settled[cancel.Done], settled[cancel.Failed], settled[cancel.NeverReceived], stillOpen)
	// What was appended is printed even when a later append failed.
	if _, werr := c.stdout.Write(out.Bytes()); serr == nil {
		serr = werr
	}
	if serr != nil {
		return serr
	}
	if stillOpen > 0 {
		return &stillOpenError{n: stillOpen}
	}
	return nil
}

// stillOpenError ends a reconcile that left orphans open with exit code 3,
// so that a script does not take "nothing failed" for "all settled".
type stillOpenError struct{ n int }

func (e *stillOpenError) Error() string {
	if e.n == 1 {
		return "1 orphan is still open: run harness reconcile again later, or settle it by hand"
	}
	return fmt.Sprintf("%d orphans are still open: run harness reconcile again later, or settle them by hand", e.n)
}

func (e *stillOpenError) exitCode() int { return exitPartial }

// notAskedError is an orphan reconcile cannot ask about, and why. It
// matches [cancel.ErrNoStatusReader].
type notAskedError struct{ why string }

func notAsked(format string, args ...any) error {
	return &notAskedError{why: fmt.Sprintf(format, args...)}
}

func (e *notAskedError) Error() string { return "not asked: " + e.why }
func (e *notAskedError) Unwrap() error { return cancel.ErrNoStatusReader }

// toolsSource is the tools file of --tools, and those of its sub-agents,
// built again: the tools whose orphans name one of them are asked through
// their own status reader.
type toolsSource struct {
	files map[string]*toolsFile // by absolute path, as orphans record it
}

// toolsFile is one tools file of a toolsSource, its tools built.
type toolsFile struct {
	cfg   *tools.Config
	built map[string]tools.Tool // by entry name
}

func loadToolsSource(path string) (*toolsSource, error) {
	cfg, err := tools.LoadConfig(path, demo.Builtins())
	if err != nil {
		return nil, err
	}
	src := &toolsSource{files: map[string]*toolsFile{}}
	for _, c := range cfg.Configs() {
		abs, err := filepath.Abs(c.File)
		if err != nil {
			return nil, fmt.Errorf("--tools %s: %w", c.File, err)
		}
		f := &toolsFile{cfg: c, built: map[string]tools.Tool{}}
		for _, t := range c.Tools(nil) {
			f.built[t.Spec().Name] = t
		}
		src.files[abs] = f
	}
	return src, nil
}

// reader finds how to ask the tool of the orphan e how its call went: the
// URL the call went to, for a remote tool (whatever the file says now);
// else the tool of e's tools file, built again, when it is the --tools
// file or one of its sub-agents' and the tool can say. Anything else stays
// open, and the error says why, so that a person knows what is left to do.
// src may be nil: no --tools.
func (src *toolsSource) reader(e cancel.Entry) (cancel.StatusReader, error) {
	if e.URL != "" {
		return cancel.Endpoint{URL: e.URL, Tool: e.Tool}, nil
	}
	switch {
	case e.ToolsFile == "":
		return nil, notAsked("its tool (%s) came from no tools file and has no URL: "+
			"reconcile it from the program that made the call (cancel.ReconcileJournal), or settle it by hand",
			orDash(e.Kind))
	case src == nil:
		return nil, notAsked("its tool is built by a tools file: run harness reconcile --tools %s", e.ToolsFile)
	case src.files[e.ToolsFile] == nil:
		return nil, notAsked("its tool is built by another tools file: run harness reconcile --tools %s", e.ToolsFile)
	}
	file := src.files[e.ToolsFile]
	i := slices.IndexFunc(file.cfg.Entries, func(en tools.Entry) bool { return en.Name == e.Tool })
	if i < 0 {
		if strings.HasPrefix(e.Tool, "mcp__") && len(file.cfg.MCPServers) > 0 {
			return nil, notAsked("an MCP server's tool has no status to ask (SPEC §5b): settle it by hand")
		}
		return nil, notAsked("%s has no tool %s now", file.cfg.File, e.Tool)
	}
	switch en := file.cfg.Entries[i]; {
	case en.Builtin != "":
		// Asking a new copy of it would hear "never received", the one
		// answer that licenses sending the write again, and be wrong.
		return nil, notAsked("builtin %s lives inside the process that ran it, and its record of the call ended with that process",
			en.Builtin)
	case en.Agent != nil:
		return nil, notAsked("a sub-agent has no status to ask: settle it by hand")
	case len(en.Command) > 0 && len(en.Status) == 0:
		return nil, notAsked("command tool %s has no status command: give its entry one (status: [...]) or settle it by hand",
			e.Tool)
	}
	if s, ok := file.built[e.Tool].(cancel.StatusReader); ok {
		return s, nil
	}
	return nil, notAsked("tool %s cannot say how a call went", e.Tool)
}

func settledNote(s cancel.Status) string {
	switch s.State {
	case cancel.Done:
		if len(s.Output) == 0 {
			return "done"
		}
		out := string(s.Output)
		if len(out) > 120 {
			out = strings.ToValidUTF8(out[:120], "") + "…"
		}
		return "done, output " + out
	case cancel.Failed:
		return "failed: the tool reports the call failed; it is not retried"
	case cancel.NeverReceived:
		return "never received: the tool never got the call; it may be sent again with the same key"
	}
	return string(s.State)
}

func reconcileUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `usage: harness reconcile [--journal FILE] [--tools FILE] [--budget D]

Reconcile asks the tool of every open orphan for the call's status, once,
and appends an entry with the settled state (done, failed or
never_received) for each that settled. Orphans still running or whose tool
does not answer stay open, for a later reconcile. The journal is only
appended to, never rewritten. Every status request is leased from one
budget (--budget). The exit code is 0 when every orphan settled (or there
was none) and 3 when some stay open.

A remote tool's orphan is asked at the URL its call went to. Any other
orphan a tools file built is asked with --tools, the same file (or one
whose sub-agents use that file): its tools are built again and each that can say how a call went is asked (a command
entry with a status command). A kind that cannot (a command with no
status command, a builtin, an MCP server's tool, a sub-agent), or an orphan
of another tools file, stays open, and the line says why. An orphan of a
program's own tool kind is reconciled by that program
(cancel.ReconcileJournal).

Flags:

`)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}
