package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/glidepath/glidepath/sim"
)

// simCommand is "harness sim serve [--addr A] [--scenario FILE]".
type simCommand struct {
	streams
}

func (c *simCommand) Run(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "serve" {
		if len(args) > 0 && isHelp(args[0]) {
			simUsage(c.stdout, nil)
			return nil
		}
		return &usageError{cmd: "sim", err: errors.New(`the only sim command is "serve"`)}
	}
	fs := flag.NewFlagSet("sim serve", flag.ContinueOnError)
	addr := fs.String("addr", sim.DefaultAddr, "listen `address`; a bare :PORT listens on loopback")
	file := fs.String("scenario", "", "scenario `file` (YAML or JSON) scripting faults; none: the default policy")
	pos, help, err := parseFlags(fs, "sim", args[1:], c.stdout, func(w io.Writer) { simUsage(w, fs) })
	if help || err != nil {
		return err
	}
	if len(pos) > 0 {
		return &usageError{cmd: "sim", err: fmt.Errorf("unexpected argument %q", pos[0])}
	}
	var sc *sim.Scenario
	if *file != "" {
		if sc, err = sim.LoadScenario(*file); err != nil {
			return &usageError{cmd: "sim", err: err}
		}
	}
	return sim.Serve(ctx, *addr, sc, c.stderr)
}

func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "help"
}

func simUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, "usage: harness sim serve [--addr 127.0.0.1:PORT] [--scenario FILE]\n\n")
	fmt.Fprint(w, "Serves the simulated OpenAI-compatible model (model id \"sim\") at http://ADDR/v1 until interrupted:\nChat Completions (POST /v1/chat/completions) and the Responses API (POST /v1/responses).\n")
	if fs != nil {
		fmt.Fprint(w, "\nFlags:\n\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
}
