package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/glidepath/glidepath/budget"
)

// Exit codes.
const (
	exitOK       = 0
	exitInternal = 1
	exitUsage    = 2 // bad usage or config; nothing was started
)

// A command is one subcommand, built for one invocation with its streams.
type command interface {
	Run(ctx context.Context, args []string) error
}

// streams are the standard streams a command reads and writes.
type streams struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	// setStderr, if not nil, makes w the stderr the command's error is
	// written to when it returns: a run logging JSON wants that line JSON
	// too.
	setStderr func(w io.Writer)
}

type subcommand struct {
	name    string
	summary string
	new     func(streams) command
}

// subcommands is the dispatch table; a new command is one more entry.
func subcommands() []subcommand {
	return []subcommand{
		{"run", "run an agent on one deadline; it lands with a labeled answer", func(s streams) command { return &runCommand{streams: s} }},
		{"plan", "show the worst case a configuration ships, against a budget", func(s streams) command { return &planCommand{streams: s} }},
		{"report", "summarize the traces of many runs: utilization, time by step, outcomes", func(s streams) command { return &reportCommand{streams: s} }},
		{"orphans", "list the open orphans of the journal", func(s streams) command { return &orphansCommand{streams: s} }},
		{"reconcile", "ask the tools of open orphans again and record what settled", func(s streams) command { return &reconcileCommand{streams: s} }},
		{"profile", "show the latency profile: per step kind, the p50 and p95 of the last 7 days", func(s streams) command { return &profileCommand{streams: s} }},
		{"serve", "serve the agent entries of a tools file as remote tools, each call a child on the caller's deadline", func(s streams) command { return &serveCommand{streams: s} }},
		{"sim", "serve the simulated OpenAI-compatible model: harness sim serve", func(s streams) command { return &simCommand{streams: s} }},
	}
}

// usageError is bad usage or a bad configuration: exit code 2, with a hint
// on where to read how to do it right.
type usageError struct {
	cmd string // the subcommand whose help the hint names; "" for harness itself
	err error
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func (e *usageError) hint() string {
	if e.cmd == "" {
		return "try: harness help"
	}
	return "try: harness " + e.cmd + " --help"
}

// run is the whole command, minus the process: it returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	s := streams{stdin: stdin, stdout: stdout, stderr: stderr, setStderr: func(w io.Writer) { stderr = w }}
	name, err := dispatch(ctx, args, s)
	if err == nil {
		return exitOK
	}
	prefix := "harness: "
	if name != "" {
		prefix = "harness " + name + ": "
	}
	for line := range strings.Lines(err.Error()) {
		fmt.Fprint(stderr, prefix, line)
		if !strings.HasSuffix(line, "\n") {
			fmt.Fprintln(stderr)
		}
	}
	if ue, ok := errors.AsType[*usageError](err); ok {
		fmt.Fprintln(stderr, ue.hint())
		return exitUsage
	}
	if ce, ok := errors.AsType[exitCoder](err); ok {
		return ce.exitCode()
	}
	return exitInternal
}

// An exitCoder is an error that ends a command with an exit code of its
// own: a run that landed early, orphans still open after reconciling.
type exitCoder interface {
	error
	exitCode() int
}

// durationValue is a duration flag whose error says what a duration looks
// like: time.ParseDuration's "missing unit in duration" does not tell a
// person that "10" wants an "s".
type durationValue time.Duration

func durationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var((*durationValue)(p), name, usage)
}

func (d *durationValue) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("want a duration such as 10s, 500ms or 2m")
	}
	*d = durationValue(v)
	return nil
}

func (d *durationValue) String() string { return time.Duration(*d).String() }

// badFlagValue is the flag package's message for a value its flag cannot
// take: `invalid value "abc" for flag -max-steps: parse error`, or for a
// boolean flag `invalid boolean value "x" for -json: parse error`.
var badFlagValue = regexp.MustCompile(`^invalid (?:boolean )?value "((?:[^"\\]|\\.)*)" for (?:flag )?-([^:]+): (.*)$`)

// flagParseError restates the flag package's error for a bad value as the
// user wrote it, with what is wrong: "--max-steps abc: not a whole
// number", not "invalid value "abc" for flag -max-steps: parse error"
// (issue 18). Other errors (an unknown flag, a missing value) pass as
// they are.
func flagParseError(fs *flag.FlagSet, err error) error {
	m := badFlagValue.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	value, name, why := m[1], m[2], m[3]
	if v, uerr := strconv.Unquote(`"` + value + `"`); uerr == nil {
		value = v
	}
	if why == "parse error" || why == "value out of range" {
		var kind any
		if f := fs.Lookup(name); f != nil {
			if g, ok := f.Value.(flag.Getter); ok {
				kind = g.Get()
			}
		}
		switch kind.(type) {
		case int, int64, uint, uint64:
			why = "not a whole number"
			if m[3] == "value out of range" {
				why = "too large a number"
			}
		case float64:
			why = "not a number"
		case bool:
			why = "want true or false"
		}
	}
	return fmt.Errorf("--%s %s: %s", name, value, why)
}

// budgetFlagError names, in a budget's config error, the flag the user
// gave (issue 18): "--budget 1ns: must be more than the floor 50ms", not
// "--floor 50ms: must be less than the total" to someone who never wrote
// --floor. A reserve or floor the user gave keeps its own name, and says
// which budget it must fit. Any other error passes as it is.
func budgetFlagError(fs *flag.FlagSet, total time.Duration, err error) error {
	be, ok := errors.AsType[*budget.ConfigError](err)
	if !ok || be.Field == "total" || be.Value < total {
		return err // not a reserve or floor that does not fit the total
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	switch {
	case given[be.Field] && given["budget"]:
		return fmt.Errorf("--%s %v: must be less than --budget %v", be.Field, be.Value, total)
	case given[be.Field]:
		return fmt.Errorf("--%s %v: must be less than the budget, %v by default", be.Field, be.Value, total)
	}
	return fmt.Errorf("--budget %v: must be more than the %s, %v (--%s)", total, be.Field, be.Value, be.Field)
}

// dispatch runs the subcommand args name and returns its name (if it
// exists) and its error.
func dispatch(ctx context.Context, args []string, s streams) (string, error) {
	if len(args) == 0 {
		usage(s.stderr)
		return "", &usageError{err: errors.New("no command given")}
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && name == "help" {
			// "harness help plan" is "harness plan --help".
			return dispatch(ctx, []string{args[1], "--help"}, s)
		}
		usage(s.stdout)
		return "", nil
	}
	for _, sc := range subcommands() {
		if sc.name == name {
			return name, sc.new(s).Run(ctx, args[1:])
		}
	}
	usage(s.stderr)
	return "", &usageError{err: fmt.Errorf("unknown command %q", name)}
}

func usage(w io.Writer) {
	fmt.Fprint(w, "harness runs an agent on one deadline and lands it inside its budget.\n\n")
	fmt.Fprint(w, "usage: harness <command> [arguments]\n\ncommands:\n")
	for _, sc := range subcommands() {
		fmt.Fprintf(w, "  %-10s %s\n", sc.name, sc.summary)
	}
	fmt.Fprint(w, "\n\"harness help <command>\" shows a command's flags.\n")
	fmt.Fprint(w, "exit codes: 0 ok, 1 internal error, 2 bad usage or config, 3 partial result (run) or orphans still open (reconcile), 130 second Ctrl-C.\n")
}

// parseFlags parses args into fs, letting flags and positional arguments
// mix ("plan agent.yaml --json"), and returns the positional ones. It
// reports help=true when help was asked for; printHelp has then written it
// to stdout. Errors are [*usageError] for cmd.
func parseFlags(fs *flag.FlagSet, cmd string, args []string, stdout io.Writer, printHelp func(io.Writer)) (pos []string, help bool, err error) {
	// The flag package would print its own message and usage; errors go
	// out once, through run, and help goes to stdout.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			printHelp(stdout)
			return nil, true, nil
		}
		if err != nil {
			return nil, false, &usageError{cmd: cmd, err: flagParseError(fs, err)}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, false, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), false, nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}
