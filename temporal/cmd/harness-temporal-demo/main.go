// Command harness-temporal-demo is `make temporal-demo` (SPEC §9, issue
// 19): a worker that dies mid-call is a non-event. It runs, as a user
// would, the binaries make builds into bin/:
//
//  1. `harness-temporal dev` on a free loopback port (its data in a
//     temporary folder it removes on exit);
//  2. examples/toolserver at the address the tools file names
//     (examples/temporal/tools.yaml: its search and commit);
//  3. worker A with that tools file;
//  4. `harness-temporal run --trace` of a task the simulated model
//     answers by calling search and commit (a payment);
//  5. when the payment is in flight — its idempotency key read from the
//     run's Temporal history, its state "running" read from the tool
//     server's status endpoint by that key, never a fixed sleep — worker B,
//     and SIGKILL for worker A;
//  6. then it checks what must hold: the run completed on B (the
//     identities in the history), inside its original deadline (the trace's
//     run_end and the wall clock), the payment sent once (the trace) and
//     committed once (the tool server's status by key: done, its first and
//     only commit), and prints `harness report` of the trace.
//
// Every process it started is stopped when it returns, on success, on a
// failure and on Ctrl-C or SIGTERM; it exits 0 when all held, 1 when
// anything did not, 2 on bad usage.
//
// Usage, from the repository's root:
//
//	harness-temporal-demo [--bin bin] [--tools examples/temporal/tools.yaml] [--budget 30s]
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/temporal/durable"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/demo"
	"github.com/glidepath/glidepath/trace"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	case errors.As(err, new(usageError)):
		fmt.Fprintln(os.Stderr, "temporal-demo:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "temporal-demo: FAILED:", err)
		os.Exit(1)
	}
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg + " (try: harness-temporal-demo --help)" }

// The task queue of the demo's workers and run, and the task: the
// simulated model calls every tool it is offered, so with search and
// commit it pays and looks up at once, then answers from both.
const (
	queue = "temporal-demo"
	task  = "Pay invoice 42, then look up deadline budgets"
)

// patience bounds each wait for a process to say it is ready: a cold
// start on a busy 2-core machine takes seconds, never this long.
const patience = 2 * time.Minute

func run(ctx context.Context, args []string, stdout io.Writer) (err error) {
	fs := flag.NewFlagSet("harness-temporal-demo", flag.ContinueOnError)
	bin := fs.String("bin", "bin", "the folder of the built binaries (harness, harness-temporal, toolserver); the trace and logs go there too")
	toolsFile := fs.String("tools", "examples/temporal/tools.yaml", "the workers' tools file: a search and a commit of one tool server")
	budget := fs.Duration("budget", 30*time.Second, "the run's budget")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if *budget <= 0 {
		return usageError{"--budget must be positive"}
	}
	toolURL, err := commitURL(*toolsFile)
	if err != nil {
		return usageError{err.Error()}
	}
	for _, b := range []string{"harness", "harness-temporal", "toolserver"} {
		if _, err := os.Stat(filepath.Join(*bin, b)); err != nil {
			return usageError{fmt.Sprintf("%s: %v: build it first (make temporal-demo does)", b, errors.Unwrap(err))}
		}
	}
	d := &demoRun{bin: *bin, out: stdout}
	defer func() {
		if stopErr := d.stopAll(); err == nil {
			err = stopErr
		}
	}()
	return d.play(ctx, *toolsFile, toolURL, *budget)
}

// commitURL is the base URL of the commit tool the tools file names: the
// tool server the demo starts, and asks by key.
func commitURL(path string) (*url.URL, error) {
	cfg, err := tools.LoadConfig(path, demo.Builtins())
	if err != nil {
		return nil, err
	}
	for _, e := range cfg.Entries {
		if e.Name == "commit" && e.URL != "" {
			u, err := url.Parse(e.URL)
			if err != nil || u.Host == "" {
				return nil, fmt.Errorf("%s: commit's url %q: want http://HOST:PORT", path, e.URL)
			}
			return u, nil
		}
	}
	return nil, fmt.Errorf("%s: no commit tool with a url: the demo kills a worker while a remote payment is in flight", path)
}

// demoRun is one play of the demo and the processes it started.
type demoRun struct {
	bin   string
	out   io.Writer
	procs []*proc // in the order started; stopAll stops them in reverse
}

func (d *demoRun) say(format string, a ...any) {
	fmt.Fprintf(d.out, "temporal-demo: "+format+"\n", a...)
}

func (d *demoRun) play(ctx context.Context, toolsFile string, toolURL *url.URL, budget time.Duration) error {
	journal := filepath.Join(d.bin, "temporal-demo-orphans.jsonl")
	tracePath := filepath.Join(d.bin, "temporal-demo.jsonl")
	for _, f := range []string{journal, tracePath} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}

	dev, m, err := d.start(ctx, "dev", `ready at (\S+) \(namespace default; data in (\S+), removed on exit\)`, false,
		"harness-temporal", "dev", "--address", "127.0.0.1:0")
	if err != nil {
		return err
	}
	address, dataDir := m[1], m[2]
	dev.dataDir = dataDir
	d.say("Temporal (harness-temporal dev) is ready at %s, its data in %s", address, dataDir)

	if _, _, err := d.start(ctx, "the tool server", `listening on (\S+)`, false, "toolserver", "--addr", toolURL.Host); err != nil {
		return err
	}
	d.say("the tool server (examples/toolserver) is at %s: search, and commit, a payment that takes 1.5s", toolURL)

	workerArgs := []string{"harness-temporal", "worker", "--address", address, "--task-queue", queue, "--tools", toolsFile, "--journal", journal}
	a, _, err := d.start(ctx, "worker A", `serving task queue`, false, workerArgs...)
	if err != nil {
		return err
	}
	d.say("worker A (pid %d) serves task queue %q with the tools of %s", a.pid(), queue, toolsFile)

	cl, err := client.DialContext(ctx, client.Options{HostPort: address, Namespace: "default", Logger: quiet{}})
	if err != nil {
		return fmt.Errorf("dialing Temporal at %s: %w", address, err)
	}
	defer cl.Close()

	started := time.Now()
	// --profile off: a profile's place is the server's address, a new
	// port each demo, which would only fill the user's own profile.
	r, _, err := d.start(ctx, "the run", "", true, "harness-temporal", "run", "--address", address, "--task-queue", queue,
		"--budget", budget.String(), "--trace", tracePath, "--profile", "off", task)
	if err != nil {
		return err
	}
	d.say("harness-temporal run %q on a %v budget, its deadline %s", task, budget, started.Add(budget).Format("15:04:05.000"))

	wf, key, err := d.commitInFlight(ctx, cl, r, toolURL)
	if err != nil {
		return err
	}
	b, _, err := d.start(ctx, "worker B", "", false, workerArgs...)
	if err != nil {
		return err
	}
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing worker A: %w", err)
	}
	d.say("worker B (pid %d) started; worker A killed with SIGKILL, %.1fs into the run", b.pid(), time.Since(started).Seconds())

	select {
	case <-r.done:
	case <-time.After(budget + time.Minute):
		return fmt.Errorf("the run did not end within its budget and a minute: the deadline was not kept")
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	took := time.Since(started)
	if code := r.cmd.ProcessState.ExitCode(); code != 0 {
		return fmt.Errorf("harness-temporal run exited %d, want 0 (complete)", code)
	}
	if took > budget {
		return fmt.Errorf("the run took %v of its %v budget", took.Round(time.Millisecond), budget)
	}
	return d.verify(ctx, cl, wf, key, toolURL, tracePath, a, b, took, budget)
}

// commitInFlight waits until the run's commit has reached the tool server
// and is still running there: its key from the history's scheduled tool
// activities, its state from the status endpoint by that key. Worker A is
// the only worker, so it is A's call.
func (d *demoRun) commitInFlight(ctx context.Context, cl client.Client, r *proc, toolURL *url.URL) (client.WorkflowRun, string, error) {
	wait, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	var wf client.WorkflowRun
	for {
		select {
		case <-wait.Done():
			return nil, "", fmt.Errorf("the run's payment was never seen in flight: %w", context.Cause(wait))
		case <-r.done:
			return nil, "", fmt.Errorf("the run ended before its payment was seen in flight (exit %d)", r.cmd.ProcessState.ExitCode())
		case <-time.After(20 * time.Millisecond):
		}
		if wf == nil {
			resp, err := cl.ListWorkflow(wait, &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", PageSize: 10})
			if err != nil || len(resp.Executions) == 0 {
				continue
			}
			e := resp.Executions[0].Execution
			wf = cl.GetWorkflow(wait, e.GetWorkflowId(), e.GetRunId())
		}
		events, err := history(wait, cl, wf)
		if err != nil {
			continue
		}
		for _, ev := range events {
			req, ok := toolRequest(ev)
			if !ok || req.Tool != "commit" {
				continue
			}
			st, err := callStatus(wait, toolURL, req.Key)
			if err != nil {
				continue
			}
			switch st.State {
			case "running":
				d.say("the payment is in flight on worker A: the run's history has commit scheduled with key %s, and the tool server says running", req.Key)
				return wf, req.Key, nil
			case "done", "failed":
				return nil, "", fmt.Errorf("the payment %s was already %s when first seen: nothing was in flight to kill", req.Key, st.State)
			}
		}
	}
}

// verify checks, after the run, what the demo promises, and says it.
func (d *demoRun) verify(ctx context.Context, cl client.Client, wf client.WorkflowRun, key string, toolURL *url.URL,
	tracePath string, a, b *proc, took, budget time.Duration) error {
	events, err := history(ctx, cl, wf)
	if err != nil {
		return fmt.Errorf("the run's history: %w", err)
	}
	if err := writeHistory(filepath.Join(d.bin, "temporal-demo-history.log"), events); err != nil {
		return err
	}
	var commitID int64
	var cut enumspb.TimeoutType
	var sentBy string // the identity of the worker that started the payment's activity
	var last string   // the identity of the worker that completed the run
	completed := false
	for _, ev := range events {
		if req, ok := toolRequest(ev); ok && req.Tool == "commit" && commitID == 0 {
			commitID = ev.GetEventId()
		}
		if as := ev.GetActivityTaskStartedEventAttributes(); as != nil && as.GetScheduledEventId() == commitID {
			sentBy = as.GetIdentity()
		}
		if at := ev.GetActivityTaskTimedOutEventAttributes(); at != nil && at.GetScheduledEventId() == commitID {
			cut = at.GetFailure().GetTimeoutFailureInfo().GetTimeoutType()
		}
		if wt := ev.GetWorkflowTaskCompletedEventAttributes(); wt != nil {
			last = wt.GetIdentity()
		}
		completed = completed || ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
	}
	if !a.is(sentBy) {
		return fmt.Errorf("the payment's activity was started by %q, want worker A (pid %d)", sentBy, a.pid())
	}
	// A dead worker's attempt ends by its heartbeat timeout (SPEC §9), or,
	// were its lease too short for one, by its lease.
	if cut != enumspb.TIMEOUT_TYPE_HEARTBEAT && cut != enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE {
		return fmt.Errorf("the payment's activity on worker A did not time out (%v): was A's death seen?", cut)
	}
	d.say("Temporal saw worker A die: the payment's activity on A (%s) ended by its %s timeout", sentBy,
		strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(cut.String(), "TIMEOUT_TYPE_")), "_", "-"))
	if !completed {
		return errors.New("the run's workflow did not complete")
	}
	if !b.is(last) {
		return fmt.Errorf("the run was completed by %q, want worker B (pid %d)", last, b.pid())
	}
	f, err := os.Open(tracePath)
	if err != nil {
		return fmt.Errorf("the run's trace: %w", err)
	}
	recs, err := trace.ReadRecords(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("the run's trace: %w", err)
	}
	sent, settled := 0, ""
	var end *trace.Record
	for i, rec := range recs {
		switch {
		case rec.Event == trace.AttemptStart && rec.Step == "tool:commit":
			sent++
			if rec.Key != key {
				return fmt.Errorf("commit was sent with key %s, want %s", rec.Key, key)
			}
		case rec.Event == trace.Reconcile && rec.Step == "tool:commit":
			settled = rec.State
		case rec.Event == trace.RunEnd:
			end = &recs[i]
		}
	}
	if end == nil || end.Result != string(landing.Complete) || end.LateMs != 0 {
		return fmt.Errorf("the trace's run_end is %+v: want complete, by its deadline", end)
	}
	if sent != 1 || settled != "done" {
		return fmt.Errorf("the trace shows commit sent %d times and reconciled %q: want once, done", sent, settled)
	}
	d.say("worker B (%s) took the run over and completed it %.1fs into its %v budget, by its original deadline (run_end: complete, late_ms 0)",
		last, took.Seconds(), budget)
	st, err := callStatus(ctx, toolURL, key)
	if err != nil {
		return fmt.Errorf("the payment's status: %w", err)
	}
	var out struct {
		Commit int `json:"commit"`
	}
	if st.State != "done" || json.Unmarshal(st.Output, &out) != nil || out.Commit != 1 {
		return fmt.Errorf("the tool server says the payment %s is %s with %s: want done, its first and only commit", key, st.State, st.Output)
	}
	d.say("the payment was sent once (one commit attempt in the trace, reconciled by key: done) and committed once (the tool server: key %s done, its commit #%d)",
		key, out.Commit)
	d.say("bin/harness report %s:", tracePath)
	rep := exec.CommandContext(ctx, filepath.Join(d.bin, "harness"), "report", tracePath)
	rep.Stdout, rep.Stderr = d.out, d.out
	if err := rep.Run(); err != nil {
		return fmt.Errorf("harness report: %w", err)
	}
	return nil
}

// history is the run's events so far.
func history(ctx context.Context, cl client.Client, wf client.WorkflowRun) ([]*historypb.HistoryEvent, error) {
	it := cl.GetWorkflowHistory(ctx, wf.GetID(), wf.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var events []*historypb.HistoryEvent
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, err
		}
		events = append(events, ev)
	}
	return events, nil
}

// writeHistory writes the run's events, one a line with its time from
// the first, for a person who wants to see what Temporal saw.
func writeHistory(path string, events []*historypb.HistoryEvent) error {
	var b strings.Builder
	for _, ev := range events {
		at := ev.GetEventTime().AsTime().Sub(events[0].GetEventTime().AsTime())
		fmt.Fprintf(&b, "%8.3fs %3d %s", at.Seconds(), ev.GetEventId(), strings.TrimPrefix(ev.GetEventType().String(), "EVENT_TYPE_"))
		if req, ok := toolRequest(ev); ok {
			fmt.Fprintf(&b, " tool %s key %s", req.Tool, req.Key)
		} else if s := ev.GetActivityTaskScheduledEventAttributes(); s != nil {
			fmt.Fprintf(&b, " %s", s.GetActivityType().GetName())
		}
		for _, id := range []string{ev.GetActivityTaskStartedEventAttributes().GetIdentity(), ev.GetWorkflowTaskStartedEventAttributes().GetIdentity(),
			ev.GetWorkflowTaskCompletedEventAttributes().GetIdentity()} {
			if id != "" {
				fmt.Fprintf(&b, " by %s", id)
			}
		}
		if f := ev.GetActivityTaskTimedOutEventAttributes().GetFailure(); f != nil {
			fmt.Fprintf(&b, " (%s)", f.GetMessage())
		}
		if f := ev.GetWorkflowTaskTimedOutEventAttributes(); f != nil {
			fmt.Fprintf(&b, " (%s)", f.GetTimeoutType())
		}
		b.WriteByte('\n')
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// toolRequest is the tool call a scheduled tool activity carries.
func toolRequest(ev *historypb.HistoryEvent) (durable.ToolRequest, bool) {
	s := ev.GetActivityTaskScheduledEventAttributes()
	if s == nil || s.GetActivityType().GetName() != durable.ToolActivity {
		return durable.ToolRequest{}, false
	}
	var req durable.ToolRequest
	if err := converter.GetDefaultDataConverter().FromPayloads(s.GetInput(), &req); err != nil {
		return durable.ToolRequest{}, false
	}
	return req, true
}

type status struct {
	State  string          `json:"state"`
	Output json.RawMessage `json:"output"`
}

// callStatus asks the tool server how the commit with key went (SPEC §5);
// a call it never received is an error.
func callStatus(ctx context.Context, base *url.URL, key string) (status, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base.JoinPath("tools", "commit", "calls", key).String(), nil)
	if err != nil {
		return status{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return status{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return status{}, fmt.Errorf("status of %s: %s", key, resp.Status)
	}
	var st status
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// A proc is one process the demo started, its output in a log file under
// bin/ (and, when echoed, on the demo's stdout).
type proc struct {
	name    string
	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has exited and its output is read
	dataDir string        // dev's data folder, which must be gone once dev stopped
	log     string
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// is reports whether a Temporal worker identity is this process's: the
// SDK's default identity is "PID@HOST@".
func (p *proc) is(identity string) bool {
	return strings.HasPrefix(identity, fmt.Sprintf("%d@", p.pid()))
}

// start starts bin/ARGS[0] with the rest of args and, when ready is not
// empty, waits until a line of its output matches it, returning the
// match. Its output goes to bin/temporal-demo-NAME.log, and to the demo's
// stdout, indented, when echo is set.
func (d *demoRun) start(ctx context.Context, name, ready string, echo bool, args ...string) (*proc, []string, error) {
	logPath := filepath.Join(d.bin, "temporal-demo-"+strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, "the "), " ", "-"))+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		logFile.Close()
		return nil, nil, err
	}
	cmd := exec.Command(filepath.Join(d.bin, args[0]), args[1:]...)
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		logFile.Close()
		return nil, nil, fmt.Errorf("starting %s: %w", name, err)
	}
	pw.Close() // the child holds its own copy: the pipe ends when it exits
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), log: logPath}
	d.procs = append(d.procs, p)
	var re *regexp.Regexp
	if ready != "" {
		re = regexp.MustCompile(ready)
	}
	matched := make(chan []string, 1)
	go func() {
		defer close(p.done)
		defer logFile.Close()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logFile, line)
			if echo {
				fmt.Fprintln(d.out, "    "+line)
			}
			if re != nil {
				if m := re.FindStringSubmatch(line); m != nil {
					matched <- m
					re = nil
				}
			}
		}
		io.Copy(io.Discard, pr)
		pr.Close()
		cmd.Wait()
	}()
	if ready == "" {
		return p, nil, nil
	}
	select {
	case m := <-matched:
		return p, m, nil
	case <-p.done:
		return nil, nil, fmt.Errorf("%s exited (%v) before it was ready:\n%s", name, cmd.ProcessState, tail(logPath))
	case <-time.After(patience):
		return nil, nil, fmt.Errorf("%s was not ready within %v:\n%s", name, patience, tail(logPath))
	case <-ctx.Done():
		return nil, nil, context.Cause(ctx)
	}
}

// stopAll stops every process still running, newest first, with SIGTERM
// (SIGKILL if it has not exited 10s later), waits for each, and checks
// that dev removed its data folder.
func (d *demoRun) stopAll() error {
	var errs, stopped []string
	folder := ""
	for i := len(d.procs) - 1; i >= 0; i-- {
		p := d.procs[i]
		select {
		case <-p.done:
		default:
			p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
				p.cmd.Process.Kill()
				<-p.done
				errs = append(errs, p.name+" did not stop on SIGTERM within 10s, and was killed")
			}
			stopped = append(stopped, p.name)
		}
		if p.dataDir != "" {
			if _, err := os.Stat(p.dataDir); !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, "dev's data folder "+p.dataDir+" is still there after dev stopped")
			} else {
				folder = " (dev's data folder is gone)"
			}
		}
	}
	if len(stopped) > 0 {
		d.say("stopped %s%s; the logs are in %s/temporal-demo-*.log", strings.Join(stopped, ", "), folder, d.bin)
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// tail is the end of a log, for a failure's message.
func tail(path string) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	lines = lines[max(0, len(lines)-15):]
	return "    " + strings.Join(lines, "\n    ")
}

// quiet is the SDK client's logger: nothing. The demo says what matters
// itself, and its failures carry the errors.
type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}
