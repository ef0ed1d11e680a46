package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/temporal/durable"
	"go.temporal.io/sdk/client"
)

// statusWait bounds the status query: a worker answers it (the server
// holds no run state of ours), and a queue with no worker never does.
const statusWait = 5 * time.Second

// lookUp are the flags that name the server and namespace of a run, for
// the commands that find it by its workflow ID (status, land).
func lookUp(fs *flag.FlagSet, c *conn) {
	fs.StringVar(&c.address, "address", "", "the Temporal server's frontend, HOST:PORT (required)")
	fs.StringVar(&c.namespace, "namespace", "default", "the Temporal namespace")
	c.keyFlag(fs)
}

// lookUpArgs are the flags that find a run of c's again, as a command
// line shows them: --address, and --namespace unless it is the default.
func lookUpArgs(c conn) string {
	s := "--address " + c.address + " "
	if c.namespace != "default" {
		s += "--namespace " + c.namespace + " "
	}
	if c.keyFile != "" {
		s += "--encrypt-key " + c.keyFile + " "
	}
	return s
}

// lookUpRun parses args on fs, a command's flags, with those of lookUp,
// and dials the server: the client, the flags that find the run again and
// the run's workflow ID, the one argument of status and land, which `run`
// printed when it started the run. A nil client with a nil error: --help
// was asked for, and shown.
func lookUpRun(ctx context.Context, fs *flag.FlagSet, args []string, stderr io.Writer) (client.Client, conn, string, error) {
	fs.SetOutput(stderr)
	var c conn
	lookUp(fs, &c)
	if err := fs.Parse(args); err != nil {
		return nil, c, "", parseError(err, fs.Name())
	}
	if fs.NArg() != 1 || fs.Arg(0) == "" {
		return nil, c, "", usage("give exactly one run: the workflow ID harness-temporal run printed (try: harness-temporal %s --help)", fs.Name())
	}
	cl, err := c.dial(ctx)
	return cl, c, fs.Arg(0), err
}

func statusCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the status as one JSON object")
	cl, _, id, err := lookUpRun(ctx, fs, args, stderr)
	if err != nil || cl == nil {
		return err
	}
	defer cl.Close()
	qctx, cancel := context.WithTimeout(ctx, statusWait)
	defer cancel()
	v, err := cl.QueryWorkflow(qctx, id, "", durable.QueryStatus)
	if err != nil {
		return fmt.Errorf("run %s: no worker told its status (%w); %s", id, err, serverSays(ctx, cl, id))
	}
	var st durable.Status
	if err := v.Get(&st); err != nil {
		return fmt.Errorf("run %s: %w", id, err)
	}
	st = live(st, time.Now())
	if *asJSON {
		return json.NewEncoder(stdout).Encode(st)
	}
	_, err = fmt.Fprintln(stdout, statusLine(st))
	return err
}

// serverSays is what the server knows of run id when no worker answers
// for it: whether it is running, has ended, or is unknown to it.
func serverSays(ctx context.Context, cl client.Client, id string) string {
	d, err := cl.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return "the server does not say: " + err.Error()
	}
	return "the server says it is " + d.GetWorkflowExecutionInfo().GetStatus().String()
}

// live reads st's budget at now from the run's frame, for a run that has
// not ended: the figures a query returns are those of the run's last
// workflow task, which a long call leaves behind.
func live(st durable.Status, now time.Time) durable.Status {
	if st.Ended || st.Start.IsZero() {
		return st
	}
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	f := landing.NewFrame(st.RunID, "", st.Start, ms(st.Budget.TotalMs), ms(st.Budget.ReserveMs), 0)
	spent, remaining, _ := f.Clock(now)
	st.Budget = landing.Report(f.Total(), f.Reserve(), spent, remaining)
	if st.Held != nil && !st.Held.Paused && now.After(st.At) {
		held := *st.Held // the held call has been silent since At too, unless a wait of the run's paused it
		held.SilentMs += now.Sub(st.At).Milliseconds()
		st.Held = &held
	}
	return st
}

// statusLine is st in one line, as harness run's live line reads, with
// the calls in flight and their hashed keys:
//
//	ID · running · 3.0s of 10s, 7.0s left · explore · step 1 · 2 attempts · in flight: slow (tool:slow, key-sha256:1a2b3c4d5e6f, attempt 1)
func statusLine(st durable.Status) string {
	state := "running"
	switch {
	case st.Ended:
		state = "ended " + st.Result
		if st.Cause != "" {
			state += ", cause " + st.Cause
		}
	case st.Landing:
		state = "landing"
	}
	spent := time.Duration(st.Budget.SpentMs) * time.Millisecond
	total := time.Duration(st.Budget.TotalMs) * time.Millisecond
	left := time.Duration(st.Budget.RemainingMs) * time.Millisecond
	line := fmt.Sprintf("%s · %s · %s of %s, %s left · %s · step %d · %d attempts · in flight: ",
		st.RunID, state, landing.Rounded(spent), landing.Rounded(total), landing.Rounded(left), st.Phase, st.Step, st.Attempts)
	if st.Held != nil {
		if w := landing.HeldWarning(st.Held.Silent()); w != "" {
			line = w + " · " + line
		}
	}
	if len(st.InFlight) == 0 {
		return line + "-"
	}
	calls := make([]string, len(st.InFlight))
	for i, f := range st.InFlight {
		what := []string{f.Kind}
		if f.Key != "" {
			what = append(what, f.Key)
		}
		what = append(what, fmt.Sprintf("attempt %d", f.Attempt))
		calls[i] = fmt.Sprintf("%s (%s)", cmp.Or(f.Tool, f.Kind), strings.Join(what, ", "))
	}
	return line + strings.Join(calls, ", ")
}
