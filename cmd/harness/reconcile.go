package main

import (
	"bytes"
	"context"
	"errors"
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
	toolsFile := fs.String("tools", "", "the tools `FILE` to build an orphan's tool from when the tools file its entry names cannot be read (it moved)")
	var total *time.Duration
	fs.Func("budget", "the `duration` the whole command may take (default 30s)", durationFlag(&total))
	settle := fs.String("settle", "", "record that the orphan `KEY=STATE` settled, as a person found it by hand (STATE: done, failed or never_received); no tool is asked")
	pos, help, err := parseFlags(fs, "reconcile", args, c.stdout, func(w io.Writer) { reconcileUsage(w, fs) })
	if help || err != nil {
		return err
	}
	if len(pos) > 0 {
		return &usageError{cmd: "reconcile", err: fmt.Errorf("unexpected argument %q", pos[0])}
	}
	if *settle != "" && (*toolsFile != "" || total != nil) {
		return &usageError{cmd: "reconcile", err: errors.New("--settle records what a person found and asks no tool: not with --tools or --budget")}
	}
	cfg := budget.Config{Total: defaultReconcileBudget}
	if total != nil {
		cfg.Total = *total
	}
	b, err := budget.New(cfg)
	if err != nil {
		return &usageError{cmd: "reconcile", err: fmt.Errorf("--budget %v: must be positive", cfg.Total)}
	}
	src := newToolsSource()
	if *toolsFile != "" {
		if src.moved, err = src.add(*toolsFile); err != nil {
			return &usageError{cmd: "reconcile", err: err}
		}
	}
	path, err := journalPath(*journal, "reconcile")
	if err != nil {
		return err
	}
	open, err := readOrphans(path, c.stderr, "reconcile")
	if err != nil {
		return err
	}
	if *settle != "" {
		return c.settleByHand(path, open, *settle)
	}
	if len(open) == 0 {
		fmt.Fprintf(c.stderr, "harness reconcile: no open orphans in %s\n", path)
		return nil
	}

	j, err := cancel.OpenJournal(path)
	if err != nil {
		return err
	}
	settlements, serr := cancel.ReconcileJournal(ctx, j, b, src.reader)
	if _, ok := serr.(*cancel.SkippedError); ok {
		serr = nil // its lines were named as the journal was first read
	}
	// A journal or stdout that failed is an internal error, and wins over
	// the orphans left open, which the journal may not even hold now.
	if cerr := j.Close(); serr == nil {
		serr = cerr
	}
	var out bytes.Buffer
	tw := tabwriter.NewWriter(&out, 0, 8, 2, ' ', 0)
	settled := map[cancel.State]int{}
	byHand := 0
	for _, s := range settlements {
		e := s.Entry
		switch {
		case s.Recorded:
			settled[s.Status.State]++
			fmt.Fprintf(tw, "%s\t%s\t%s\n", e.IdempotencyKey, e.Tool, settledNote(s.Status))
		case errors.Is(s.Err, cancel.ErrNoStatusReader):
			byHand++
			fmt.Fprintf(tw, "%s\t%s\tstill open: %v; %s\n", e.IdempotencyKey, e.Tool, s.Err, settleWords(path, e))
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
		return &stillOpenError{n: stillOpen, byHand: byHand, again: cancel.ReconcileCommand(path)}
	}
	return nil
}

// settleByHand appends the settled entry a person asked for with --settle
// KEY=STATE: the orphan's open entry, with that state, marked by hand.
// A key that is not an open orphan of the journal is bad usage.
func (c *reconcileCommand) settleByHand(path string, open []cancel.Entry, arg string) error {
	key, state, ok := strings.Cut(arg, "=")
	switch st := cancel.State(state); {
	case !ok || key == "":
		return &usageError{cmd: "reconcile", err: fmt.Errorf("--settle %q: want KEY=STATE, e.g. --settle gp_…=done", arg)}
	case st != cancel.Done && st != cancel.Failed && st != cancel.NeverReceived:
		return &usageError{cmd: "reconcile", err: fmt.Errorf("--settle %s: state %q: want done, failed or never_received", arg, state)}
	}
	i := slices.IndexFunc(open, func(e cancel.Entry) bool { return string(e.IdempotencyKey) == key })
	if i < 0 {
		return &usageError{cmd: "reconcile", err: fmt.Errorf("--settle %s: %s is not an open orphan of %s (harness orphans lists them)", arg, key, path)}
	}
	e := open[i]
	e.TS, e.State, e.ByHand = time.Time{}, state, true // Append stamps it now
	j, err := cancel.OpenJournal(path)
	if err != nil {
		return err
	}
	err = j.Append(e)
	if cerr := j.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.stdout, "%s  %s  %s, settled by hand\n", e.IdempotencyKey, e.Tool, state)
	return err
}

// settleWords is what a person does about an orphan no program can ask:
// check by hand, then record it with the command that --settle gives.
// The run's boundary and harness orphans say the same (issue 24).
func settleWords(journal string, e cancel.Entry) string {
	return "check it by hand, then record what you found: " +
		cancel.SettleCommand(journal, e.IdempotencyKey, cancel.Done) + " if it happened, or =failed if not"
}

// stillOpenError ends a reconcile that left orphans open with exit code 3,
// so that a script does not take "nothing failed" for "all settled". It
// says what is left to do: ask again later, the command again, for those
// a tool may yet answer; settle by hand those none can, as their lines say.
type stillOpenError struct {
	n, byHand int
	again     string // the command that asks again
}

func (e *stillOpenError) Error() string {
	head := fmt.Sprintf("%d orphans are still open", e.n)
	it, lines := "them", "their lines say"
	if e.n == 1 {
		head, it, lines = "1 orphan is still open", "it", "its line says"
	}
	switch {
	case e.byHand == 0:
		return fmt.Sprintf("%s: run %s again later", head, e.again)
	case e.byHand == e.n:
		return fmt.Sprintf("%s: only a person can settle %s, as %s", head, it, lines)
	}
	asked, whose := fmt.Sprintf("the %d", e.n-e.byHand), "tools"
	if e.n-e.byHand == 1 {
		asked, whose = "the one", "tool"
	}
	other, lines := fmt.Sprintf("the other %d", e.byHand), "their lines say"
	if e.byHand == 1 {
		other, lines = "the other one", "its line says"
	}
	return fmt.Sprintf("%s: run %s again later for %s whose %s may yet answer; only a person can settle %s, as %s",
		head, e.again, asked, whose, other, lines)
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

// toolsSource is the tools files the orphans name, built again, and those
// of their sub-agents: the tools whose orphans name one of them are asked
// through their own status reader. Each file is read once, when an orphan
// first names it, from the path the journal recorded, so that the command
// the run's boundary names works as it is printed (issue 24). --tools
// gives the file that stands in for one that cannot be read there any
// more (it moved).
type toolsSource struct {
	files  map[string]*toolsFile // by absolute path, as orphans record it
	failed map[string]error      // why a file an orphan names could not be read
	moved  *toolsFile            // the --tools file; nil without it
}

// toolsFile is one tools file of a toolsSource, its tools built.
type toolsFile struct {
	cfg   *tools.Config
	built map[string]tools.Tool // by entry name
}

func newToolsSource() *toolsSource {
	return &toolsSource{files: map[string]*toolsFile{}, failed: map[string]error{}}
}

// add reads the tools file at path and those of its sub-agents, builds
// their tools, and returns the file at path's.
func (src *toolsSource) add(path string) (*toolsFile, error) {
	cfg, err := tools.LoadConfig(path, demo.Builtins())
	if err != nil {
		return nil, err
	}
	var top *toolsFile
	for _, c := range cfg.Configs() {
		abs, err := filepath.Abs(c.File)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.File, err)
		}
		f := src.files[abs]
		if f == nil {
			f = &toolsFile{cfg: c, built: map[string]tools.Tool{}}
			for _, t := range c.Tools(nil) {
				f.built[t.Spec().Name] = t
			}
			src.files[abs] = f
		}
		if top == nil {
			top = f // Configs lists the file itself first
		}
	}
	return top, nil
}

// file is the tools file at the absolute path abs, read and built the
// first time it is asked for.
func (src *toolsSource) file(abs string) (*toolsFile, error) {
	if f := src.files[abs]; f != nil {
		return f, nil
	}
	if err, ok := src.failed[abs]; ok {
		return nil, err
	}
	f, err := src.add(abs)
	if err != nil {
		src.failed[abs] = err
	}
	return f, err
}

// reader finds how to ask the tool of the orphan e how its call went: the
// URL the call went to, for a remote tool (whatever the file says now);
// else the tool of e's tools file, built again, when the tool can say.
// Anything else stays open, and the error says why, so that a person
// knows what is left to do. reader is called from one goroutine.
func (src *toolsSource) reader(e cancel.Entry) (cancel.StatusReader, error) {
	if e.URL != "" {
		return cancel.Endpoint{URL: e.URL, Tool: e.Tool}, nil
	}
	if e.ToolsFile == "" {
		return nil, notAsked("its tool (%s) came from no tools file and has no URL: "+
			"the program that made the call can reconcile it (cancel.ReconcileJournal)", orDash(e.Kind))
	}
	file, err := src.file(e.ToolsFile)
	if err != nil && src.moved == nil {
		return nil, notAsked("its tools file cannot be read now (%v); if it moved, give it with --tools FILE", err)
	}
	if err != nil {
		file = src.moved
	}
	i := slices.IndexFunc(file.cfg.Entries, func(en tools.Entry) bool { return en.Name == e.Tool })
	if i < 0 {
		if strings.HasPrefix(e.Tool, "mcp__") && len(file.cfg.MCPServers) > 0 {
			return nil, notAsked("an MCP server's tool has no status to ask (SPEC §5b)")
		}
		return nil, notAsked("%s has no tool %s now", file.cfg.File, e.Tool)
	}
	switch en := file.cfg.Entries[i]; {
	case en.Builtin != "":
		// Asking a new copy of it would hear "never received", the one
		// answer that licenses sending the write again, and be wrong.
		return nil, notAsked("builtin %s lived inside the process that ran it, and its record of the call ended with that process",
			en.Builtin)
	case en.Agent != nil:
		return nil, notAsked("a sub-agent has no status to ask")
	case len(en.Command) > 0 && len(en.Status) == 0:
		return nil, notAsked("command tool %s has no status command (give its entry one, status: [...], for the next run)",
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
       harness reconcile [--journal FILE] --settle KEY=STATE

Reconcile asks the tool of every open orphan for the call's status, once,
and appends an entry with the settled state (done, failed or
never_received) for each that settled. Orphans still running or whose tool
does not answer stay open, for a later reconcile. The journal is only
appended to, never rewritten. Every status request is leased from one
budget (--budget). The exit code is 0 when every orphan settled (or there
was none) and 3 when some stay open.

A remote tool's orphan is asked at the URL its call went to. Any other
orphan a tools file built is asked through that file, read again from
where its entry says: its tools are built again and each that can say how
a call went is asked (a command entry with a status command). --tools
FILE stands in for a tools file that cannot be read there any more.

A kind that cannot say (a command with no status command, a builtin, which
lived inside the run's process, an MCP server's tool, a sub-agent) stays
open, and its line says why and what a person does: check by hand whether
the call took effect, then record it with --settle KEY=done (it happened),
KEY=failed (it did not) or KEY=never_received (the tool never got it).
--settle appends that state for the open orphan KEY, marked by_hand, and
asks no tool. An orphan of a program's own tool kind is reconciled by
that program (cancel.ReconcileJournal), or settled by hand.

A line of the journal that is not an entry (a torn last line a crash
left, among them) is named on stderr and skipped; the rest is reconciled.

Flags:

`)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}
