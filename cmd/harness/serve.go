package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/glidepath/glidepath/admit"
	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/internal/redact"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/demo"
	"github.com/glidepath/glidepath/tools/kit"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	"go.opentelemetry.io/otel/propagation"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// Defaults of harness serve.
const (
	defaultServeAddr = "127.0.0.1:8091"
	defaultMaxBudget = 10 * time.Minute
)

// serveCommand is "harness serve --tools F [flags]": every agent entry of
// F as a remote tool (SPEC §5c).
type serveCommand struct {
	streams
}

func (c *serveCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", defaultServeAddr, "listen `address`; a bare :PORT listens on loopback")
	toolsFile := fs.String("tools", "", "tool config `file` whose agent entries are served (required)")
	var maxBudget, quiet time.Duration
	durationVar(fs, &maxBudget, "max-budget", defaultMaxBudget, "the most a child may run, a `duration`, whatever a caller's Budget-Remaining-Ms says")
	durationVar(fs, &quiet, "quiet", watchdog.DefaultQuiet, "each child's quiet period, a `duration` (0: the default)")
	modelName := fs.String("model", sim.ModelID, "model `name` of the children whose entry names none; sim is the embedded simulated model")
	baseURL := fs.String("base-url", "", "OpenAI-compatible `URL`, including /v1, of every model but sim")
	var api string
	apiVar(fs, &api, "the `API` of the children's models whose entry names none")
	traceFile := fs.String("trace", "", "write every child's JSONL trace records to `file`")
	journal := journalFlag(fs)
	maxRuns := fs.Int("max-runs", 0, "the most children running at once; a call past it is answered at once with a labeled result, cause at_capacity, and starts nothing (0: no limit)")
	var maxWait time.Duration
	durationVar(fs, &maxWait, "max-wait", 0, "the most a call may wait, a `duration`, from its arrival until its child starts; one that waited longer (the process is queueing for the CPU) is answered at_capacity (0: no bound)")
	pos, help, err := parseFlags(fs, "serve", args, c.stdout, func(w io.Writer) { serveUsage(w, fs) })
	if help || err != nil {
		return err
	}
	usage := func(err error) error { return &usageError{cmd: "serve", err: err} }
	switch {
	case len(pos) > 0:
		return usage(fmt.Errorf("unexpected argument %q", pos[0]))
	case *toolsFile == "":
		return usage(errors.New("--tools: required: the tools file whose agent entries to serve"))
	case maxBudget <= 0:
		return usage(fmt.Errorf("--max-budget %v: must be positive", maxBudget))
	case quiet < 0:
		return usage(fmt.Errorf("--quiet %v: must not be negative", quiet))
	case *maxRuns < 0:
		return usage(fmt.Errorf("--max-runs %d: must not be negative", *maxRuns))
	case maxWait < 0:
		return usage(fmt.Errorf("--max-wait %v: must not be negative", maxWait))
	case *modelName == sim.ModelID && *baseURL != "":
		return usage(errors.New("--base-url: not used with --model sim, the embedded simulated model"))
	}
	if err := checkAPI(api); err != nil {
		return usage(err)
	}

	var closers []func() error
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}()
	tc, err := tools.LoadConfig(*toolsFile, demo.Builtins())
	if err != nil {
		return usage(err)
	}
	models := &modelSource{name: *modelName, baseURL: *baseURL, api: api, closers: &closers}
	parent, err := models.get("", "")
	if err != nil {
		return usage(err)
	}
	if err := models.check(tc); err != nil {
		return usage(err)
	}
	// The children's command tools must be there, as for harness run
	// (SPEC §4): a missing program is bad config before anything is served.
	if err := lookCommands(tc); err != nil {
		return usage(err)
	}
	// As for harness run, what the MCP servers say is shown line by line,
	// scrubbed of secrets, once the servers are closed too (issue 24).
	secrets := append([]string{os.Getenv("OPENAI_API_KEY")}, tc.Secrets()...)
	// What serve prints is scrubbed as harness run's is: a warning may
	// quote what a server or tool said with a key in it.
	c.stderr = &redacting{w: c.stderr, secrets: secrets}
	serverErr := &serverLines{w: c.stderr, secrets: secrets}
	closers = append(closers, serverErr.Close)
	ts := &harness.Toolset{Config: tc, Model: parent, Models: models.get, Quiet: quiet, Stderr: serverErr, Secrets: secrets,
		Warn: func(err error) { fmt.Fprintf(c.stderr, "harness serve: warning: %v\n", err) }}
	closeTrace := func() error { return nil }
	if *traceFile != "" {
		sink, close, err := openTrace(*traceFile)
		if err != nil {
			return usage(err)
		}
		closeTrace = close
		closers = append(closers, closeTrace)
		ts.Sinks = []trace.Sink{sink}
	}
	if *journal != "" || mayWrite(tc) {
		if ts.Journal, err = openJournal(*journal); err != nil {
			return usage(err) // as for harness run: nothing is served
		}
		closers = append(closers, ts.Journal.Close)
	}
	// The children's spans, when OTEL_* says where: each child's run is a
	// child of its caller's span, read from the call's traceparent (SPEC §8).
	exp, err := exportSpans(ctx, *modelName, *baseURL, func(err error) { fmt.Fprintf(c.stderr, "harness serve: warning: %v\n", err) })
	if err != nil {
		return usage(err)
	}
	if exp != nil {
		ts.Sinks = append(ts.Sinks, exp.sink)
		closers = append(closers, func() error {
			// Every child has landed, and the server has no budget of its
			// own: what is left to export gets spanExportBound.
			if err := exp.shutdown(time.Now().Add(spanExportBound)); err != nil {
				fmt.Fprintf(c.stderr, "harness serve: warning: spans: %v\n", err)
			}
			return nil
		})
	}

	// The door of every child this process serves: children past it are
	// refused at once, rather than run late (issue 25).
	door, err := admit.New(admit.Config{Limit: *maxRuns, Late: maxWait})
	if err != nil {
		return usage(err)
	}
	srv := &kit.Server{}
	var served []string
	ts.Resolve(ctx, nil)
	closers = append(closers, func() error { return ts.Close(context.Background()) })
	for _, e := range tc.Entries {
		if e.Agent == nil {
			fmt.Fprintf(c.stderr, "harness serve: tool %s is not an agent entry: not served\n", e.Name)
			continue
		}
		a, err := ts.Agent(e)
		if err != nil {
			return usage(err)
		}
		closers = append(closers, func() error { return a.Close(context.Background()) })
		s := a.Spec()
		kt := kit.Tool{Name: s.Name, Description: s.Description, Parameters: s.Parameters, Effect: kit.Effect(s.Effect),
			Cancellable: true, P50: s.P50, P95: s.P95, Max: maxBudget, Agent: true,
			Handler: (&child{agent: a, log: c.stderr, spans: exp, secrets: secrets, door: door, max: maxBudget}).serve}
		if err := srv.Register(kt); err != nil {
			return usage(fmt.Errorf("agent %s: %w", e.Name, err))
		}
		served = append(served, s.Name)
	}
	if len(served) == 0 {
		return usage(fmt.Errorf("%s has no agent entries to serve", *toolsFile))
	}

	l, err := kit.Listen(*addr)
	if err != nil {
		return usage(err)
	}
	base := "http://" + l.Addr().String()
	fmt.Fprintf(c.stderr, "harness serve: serving %d %s at %s (manifest %s/tools), children at most %v each\n",
		len(served), pluralWord(len(served), "agent", "agents"), base, base, maxBudget)
	for _, name := range served {
		fmt.Fprintf(c.stderr, "harness serve:   %s: POST %s/tools/%s\n", name, base, name)
	}
	fmt.Fprintf(c.stderr, "harness serve: a parent calls them with a tools entry such as {name: %s, url: %s}\n", served[0], base)
	if exp == nil {
		err = kit.Serve(ctx, l, srv)
	} else {
		err = serveTraced(ctx, l, srv)
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(c.stderr, "harness serve: stopped; every child landed")
	return closeTrace()
}

// child serves one agent's calls: each runs a child on exactly the time
// its caller sent.
type child struct {
	agent *harness.Agent
	log   io.Writer
	spans *spanExport // nil: no spans exported
	mu    sync.Mutex  // serializes the log's lines

	door *admit.Limiter // the process's admission, shared by every child
	max  time.Duration  // --max-budget: the most a child may run

	// secrets are kept from the result the caller gets, which crosses to
	// another process and perhaps machine: a child's answer may quote
	// what its tools said (issue 24).
	secrets []string
}

// serve is the kit handler of one call. The kit has made ctx end at the
// caller's Budget-Remaining-Ms from the request's arrival, clamped to
// --max-budget: that is the child's budget. A DELETE, the caller hanging
// up or the server closing ends ctx early, and the child lands at once,
// cancelled; either way its labeled result is the call's output.
func (c *child) serve(ctx context.Context, call *kit.Call) (any, error) {
	var args struct {
		Task string `json:"task"`
	}
	if err := json.Unmarshal(call.Args, &args); err != nil {
		return nil, &kit.Error{Message: fmt.Sprintf("%s: the arguments are not {\"task\": \"…\"}: %v", call.Tool, err)}
	}
	deadline, _ := ctx.Deadline() // the kit always sets one
	// The child's budget starts at the call's arrival, its submission,
	// which the kit's deadline is counted from (min(lease, max) later):
	// the time the call waited for this handler is spent from it, and is
	// what --max-wait bounds (issue 25).
	granted := c.max
	if call.Lease > 0 {
		granted = min(call.Lease, c.max)
	}
	b, err := budget.New(budget.Config{Total: granted, Start: deadline.Add(-granted)})
	if err != nil {
		return nil, &kit.Error{Message: fmt.Sprintf("%s: no time left to run a child", call.Tool), Retryable: false}
	}
	if c.spans != nil {
		// The caller's traceparent, which serveTraced put in the request's
		// context: the child's run is a child of the caller's attempt.
		c.spans.sink.ParentCall(call.Key, oteltrace.SpanContextFromContext(ctx))
	}
	res, err := c.agent.Run(ctx, b, args.Task, harness.ChildCall{Key: call.Key,
		Progress: func(units int64, msg string) { call.Progress(units, 0, msg) }, Admit: c.door})
	if err != nil {
		return nil, &kit.Error{Message: err.Error()}
	}
	cause := "none"
	if res.Cause != "" {
		cause = string(res.Cause)
	}
	c.mu.Lock()
	fmt.Fprintf(c.log, "harness serve: %s %s: %s (cause %s) · budget %s · spent %s · %d attempts · %d orphans\n",
		call.Tool, call.Key, res.Status, cause, landing.Rounded(b.Total()), landing.Rounded(time.Duration(res.Budget.SpentMs)*time.Millisecond),
		res.Attempts, res.Orphans)
	c.mu.Unlock()
	data, err := json.Marshal(res)
	if err == nil {
		data, err = redact.JSON(data, c.secrets...)
	}
	if err != nil {
		return nil, &kit.Error{Message: fmt.Sprintf("%s: the child's result cannot be encoded: %v", call.Tool, err)}
	}
	return json.RawMessage(data), nil
}

// serveTraced is [kit.Serve] with the W3C trace context of each request
// read into its context, where the handler finds the caller's span: kit
// hands a handler the request's context values (not its cancellation).
// It shuts down as kit.Serve does: the handlers first, then the answers
// being written, for a few seconds.
func serveTraced(ctx context.Context, l net.Listener, srv *kit.Server) error {
	traced := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		srv.ServeHTTP(w, r.WithContext(pctx))
	})
	hs := &http.Server{Handler: traced, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(l) }()
	select {
	case err := <-served:
		srv.Close()
		return fmt.Errorf("harness serve: %w", err)
	case <-ctx.Done():
	}
	srv.Close()
	grace, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if hs.Shutdown(grace) != nil {
		hs.Close()
	}
	<-served
	return nil
}

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func serveUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `usage: harness serve --tools FILE [--addr 127.0.0.1:8091] [--max-budget 10m] [flags]

Serve makes every agent entry of FILE a remote tool (SPEC §5c), so that a
parent in another process, or on another machine, calls it as a url tool.
A POST runs a child on a budget of exactly the Budget-Remaining-Ms it
received, clamped to --max-budget (a malformed value is a 400), and answers
an event stream: progress whose units grow at each of the child's attempts,
then one result whose output is the child's labeled result, the JSON of
harness run --json. A repeated POST with a known Idempotency-Key follows the
child already running, or gets its result, and starts no second one; DELETE
of the call lands the child now, cancelled; GET gives its state. SIGTERM or
Ctrl-C lands every running child, answers their callers, and exits 0. With
OTEL_EXPORTER_OTLP_ENDPOINT set, each child's spans are exported, a child
of the caller's span named by the request's traceparent. With --max-runs or
--max-wait, a call the process cannot serve at once — as many children
running as it allows, or a call that waited too long to start — is answered
at once with a labeled result, cause at_capacity, and starts no child.

Flags:

`)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}
