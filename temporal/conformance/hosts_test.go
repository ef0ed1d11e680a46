package conformance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/temporal"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/temporal/durable"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/demo"
	"github.com/glidepath/glidepath/trace"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.temporal.io/server/temporaltest"
)

// server is the one Temporal server of the suite (a server per row would
// cost seconds each; each row has a task queue and a worker of its own),
// remote its tool server (toolServer).
var (
	server *temporaltest.TestServer
	remote *toolServer
)

func TestMain(m *testing.M) {
	os.Setenv(secretEnv, secret)
	server = temporaltest.NewServer(temporaltest.WithBaseWorkerOptions(durable.WorkerOptions(worker.Options{})),
		temporaltest.WithBaseServerOptions(temporal.WithDynamicConfigClient(timers)))
	// The rows run with Glidepath's search attributes registered, as on
	// dev: a run's upserts must change nothing a row compares (issue 26).
	if err := durable.RegisterSearchAttributes(context.Background(), server.GetDefaultClient(), server.GetDefaultNamespace()); err != nil {
		panic(err)
	}
	remote = newToolServer()
	code := m.Run()
	remote.Close()
	server.Stop()
	os.Exit(code)
}

// timers is the server's dynamic config: temporaltest's own setting, and
// timers that fire when they are due. A Temporal server holds back every
// timer task due within history.timerProcessorMaxTimeShift (1s by
// default) of its creation until that shift has passed, so on a server
// left at its default a workflow's 50ms backoff sleeps about a second and
// an activity's lease ends up to a second late; the rows compare the
// hosts' rules, not that setting (durable's doc says what it costs a
// deployment).
var timers = dynamicconfig.StaticClient{
	dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): []dynamicconfig.ConstrainedValue{{Value: true}},
	dynamicconfig.TimerProcessorMaxTimeShift.Key():              []dynamicconfig.ConstrainedValue{{Value: 10 * time.Millisecond}},
}

// runID names every row's run on both hosts, so that the records and the
// boundary carry the same id.
const runID = "conformance"

// host names one of the two hosts in a failure message.
type host string

const (
	inProcess  host = "in-process"
	onTemporal host = "temporal"
)

// ending is how one run of a row ended on one host: what a user of that
// host sees.
type ending struct {
	host     host
	res      landing.Result
	recs     []trace.Record
	requests int   // the chat completion requests the model server received
	offered  []int // the tools each of them offered, in the order they came
	// reasoning is, for each model request in the order they came, the
	// ids of the reasoning items it carried back (the Responses API).
	reasoning [][]string
}

// files writes the row's tools files into a folder of their own and
// returns the path of tools.yaml, "" when the row has no tools.
func (rw row) files(t *testing.T) string {
	t.Helper()
	if rw.tools == "" {
		return ""
	}
	dir := t.TempDir()
	all := map[string]string{"tools.yaml": rw.tools}
	if rw.child != "" {
		all["child.yaml"] = rw.child
	}
	for name, body := range all {
		body = strings.ReplaceAll(body, toolURL, remote.URL)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "tools.yaml")
}

func journal(t *testing.T) *cancel.Journal {
	t.Helper()
	j, err := cancel.OpenJournal(filepath.Join(t.TempDir(), "orphans.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

func chatRequests(srv *sim.Server) int {
	n := 0
	for _, r := range srv.Requests() {
		if r.Completion > 0 {
			n++
		}
	}
	return n
}

// offered is the number of tools each chat completion request offered.
func offered(srv *sim.Server) []int {
	var out []int
	for _, r := range srv.Requests() {
		if r.Completion > 0 {
			out = append(out, r.Tools)
		}
	}
	return out
}

// carried is the ids of the reasoning items each model request carried
// back, in the order they came.
func carried(srv *sim.Server) [][]string {
	var out [][]string
	for _, r := range srv.Requests() {
		if r.Completion > 0 {
			out = append(out, r.Reasoning)
		}
	}
	return out
}

// sink keeps a run's records, as a trace file would.
type sink struct {
	mu   sync.Mutex
	recs []trace.Record
}

func (s *sink) Record(r trace.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs = append(s.recs, r)
	return nil
}

func (s *sink) records() []trace.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.recs)
}

// runInProcess runs the row as `harness run` does: the tools file loaded
// with the demo's builtins, resolved and registered on the session, the
// real model client on the sim, and the harness's own loop.
func runInProcess(t *testing.T, rw row, path string) ending {
	t.Helper()
	srv := sim.NewServer(rw.sc)
	defer srv.Close()
	m, err := model.New(model.Config{BaseURL: srv.URL, HTTPClient: srv.Client(), Model: sim.ModelID, API: rw.api})
	if err != nil {
		t.Fatal(err)
	}
	tc := &tools.Config{}
	if path != "" {
		if tc, err = tools.LoadConfig(path, demo.Builtins()); err != nil {
			t.Fatal(err)
		}
	}
	b, err := budget.New(budget.Config{Total: rw.budget, Reserve: rw.reserve})
	if err != nil {
		t.Fatal(err)
	}
	for kind, ds := range rw.profile { // as harness run seeds them from its profile
		b.Estimates().Kind(kind).Warm(ds)
	}
	var out sink
	reg := tools.NewRegistry(nil)
	// The keys the tools file hands its tools are kept from the records,
	// as harness run keeps them.
	cfg := harness.Config{Task: rw.task(), Quiet: rw.quiet, QuietMode: rw.quietMode, Model: m, Tools: reg, Parallel: rw.parallel,
		Sinks: []trace.Sink{&out}, Journal: journal(t), RunID: runID, Secrets: tc.Secrets()}
	if rw.noJournal {
		cfg.Journal = nil
	}
	ctx, interrupt := context.WithCancelCause(t.Context())
	defer interrupt(nil)
	s, rctx, err := harness.Start(ctx, b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := &harness.Toolset{Config: tc, Model: m}
	ts.Resolve(rctx, s)
	ts.Register(reg)
	if rw.interrupt > 0 {
		// The CLI's first Ctrl-C.
		stop := time.AfterFunc(rw.interrupt, func() { interrupt(harness.ErrInterrupted) })
		defer stop.Stop()
	}
	res := s.Run(rctx)
	s.Close()
	cctx, stop := budget.WithBudget(context.Background(), b)
	defer stop()
	ts.Close(cctx)
	return ending{host: inProcess, res: res, recs: out.records(), requests: chatRequests(srv), offered: offered(srv), reasoning: carried(srv)}
}

// runOnTemporal runs the row as `harness-temporal run` does: a worker with
// the same tools file (path, "" for none) on a task queue of the row's
// own, the workflow started with the same task and budget, and a first
// Ctrl-C as the workflow's cancellation. It runs beside the in-process
// host, off the test's goroutine, so it returns its failure.
func runOnTemporal(ctx context.Context, rw row, path string, j *cancel.Journal, queue string) (ending, error) {
	srv := sim.NewServer(rw.sc)
	defer srv.Close()
	acts := &durable.Activities{Model: model.Config{BaseURL: srv.URL, Model: sim.ModelID, API: rw.api}, Journal: j}
	if rw.noJournal {
		acts.Journal = nil
	}
	if path != "" {
		reg, err := durable.LoadTools(ctx, path, nil)
		if err != nil {
			// The in-process host runs with what it could load; a worker
			// that cannot start is this host's divergence (issue 25).
			return ending{}, fmt.Errorf("temporal diverged: its worker could not load the tools file the in-process run used: %w", err)
		}
		defer reg.Close(context.Background())
		acts.Tools = reg
	}
	c := server.GetDefaultClient()
	w := worker.New(c, queue, durable.WorkerOptions(worker.Options{}))
	w.RegisterWorkflowWithOptions(durable.Workflow, workflow.RegisterOptions{Name: durable.WorkflowName})
	acts.Register(w)
	if err := w.Start(); err != nil {
		return ending{}, err
	}
	defer w.Stop()
	ctx, cancel := context.WithTimeout(ctx, rw.budget+time.Minute)
	defer cancel()
	in := durable.Input{Task: rw.task(), Budget: rw.budget, Reserve: rw.reserve, Quiet: rw.quiet, QuietMode: rw.quietMode,
		Parallel: rw.parallel, RunID: runID, Profile: rw.profile}
	wr, err := c.ExecuteWorkflow(ctx, durable.StartOptions(client.StartWorkflowOptions{TaskQueue: queue}, in.Budget), durable.WorkflowName, in)
	if err != nil {
		return ending{}, err
	}
	if rw.interrupt > 0 {
		stop := time.AfterFunc(rw.interrupt, func() { c.CancelWorkflow(ctx, wr.GetID(), wr.GetRunID()) })
		defer stop.Stop()
	}
	var out durable.Output
	if err := wr.Get(ctx, &out); err != nil {
		return ending{}, fmt.Errorf("temporal diverged: the workflow returned no result: %w", err)
	}
	return ending{host: onTemporal, res: out.Result, recs: out.Trace, requests: chatRequests(srv), offered: offered(srv), reasoning: carried(srv)}, nil
}

// Times, ids and keys differ from run to run on one host; what is left is
// what the hosts must agree on.
var (
	durations = regexp.MustCompile(`\d+(\.\d+)?(ns|µs|us|ms|s|m|h)\b`)
	ids       = regexp.MustCompile(`\b[0-9a-zA-Z_-]{20,}\b`)
)

// words is s without its times and ids: ids first, so that a key whose
// tail looks like a duration is taken whole.
func words(s string) string {
	return durations.ReplaceAllString(ids.ReplaceAllString(s, "‹id›"), "‹d›")
}

// normal is a record without its times, ids and keys, as one line of
// JSON that leaves out the fields so taken out and those left zero.
func normal(r trace.Record, root string) string {
	if r.RunID != root {
		r.RunID = "child"
		r.TotalMs = 0 // a child's B is its slice, granted by the time left
	}
	if r.ParentRunID != "" {
		r.ParentRunID = "parent"
	}
	r.Message = words(r.Message) // Reason is a rule's word: kept as it is
	var fields map[string]any
	if err := json.Unmarshal(trace.AppendJSON(nil, r), &fields); err != nil {
		panic(err) // a record's own encoding always decodes
	}
	for _, k := range []string{"ts", "seq", "elapsed_ms", "remaining_ms", "granted_ms", "sleep_ms", "late_ms",
		"keepalives", "chunks", "tokens", "input_tokens", "output_tokens", "units", "total", "idempotency_key",
		"silent_ms", "allowance_ms"} {
		delete(fields, k)
	}
	if fields["tool_call_id"] != nil {
		fields["tool_call_id"] = "‹id›" // which record names the model's call is the hosts' to agree on
	}
	for k, v := range fields {
		if v == nil || v == "" || v == float64(0) || v == false {
			delete(fields, k)
		}
	}
	b, err := json.Marshal(fields) // its keys sorted
	if err != nil {
		panic(err)
	}
	return string(b)
}

// normals are a run's records as a sorted list of lines: the order of
// records of calls side by side is the scheduler's, not a rule. A record
// of a loose event is its event and step, kept once. Progress
// records count how often a tool spoke, which is timing: each distinct one
// is kept once.
func normals(recs []trace.Record, loose []trace.Event) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range recs {
		line := normal(r, runID)
		loosely := slices.Contains(loose, r.Event)
		if loosely {
			line = fmt.Sprintf(`{"event":%q,"step":%q}`, r.Event, r.Step)
		}
		if r.Event == trace.Progress || loosely {
			if seen[line] {
				continue
			}
			seen[line] = true
		}
		out = append(out, line)
	}
	slices.Sort(out)
	return out
}

// attempts counts the attempts of a run by step and how they ended.
func attempts(recs []trace.Record) map[string]int {
	n := map[string]int{}
	for _, r := range recs {
		if r.Event == trace.AttemptEnd {
			run := "run"
			if r.RunID != runID {
				run = "child"
			}
			n[fmt.Sprintf("%s %s %s", run, r.Step, r.Outcome)]++
		}
	}
	return n
}

// inFlight and unavailable are the result's lists as its JSON has them
// (none is [], as for a user of either host).
func inFlight(res landing.Result) string {
	if len(res.InFlight) == 0 {
		return "[]"
	}
	fl := slices.Clone(res.InFlight)
	for i := range fl {
		fl[i].IdempotencyKey = "‹key›"
	}
	b, _ := json.Marshal(fl)
	return words(string(b))
}

func unavailable(res landing.Result) string {
	if len(res.Unavailable) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(res.Unavailable)
	return words(string(b))
}

// hostOnly is the one list of records the suite leaves out of the
// comparison, because one host writes them and the other has no
// counterpart (issue 25): the attempts of a setup that ended ok. What a
// setup does is each host's own: in process it is the run's I/O to get
// its tools (a manifest fetched, an MCP server started; builtins need
// none, so no attempt), on Temporal the ToolInfos activity that asks the
// worker for the tools it loaded at its start — a round trip through the
// server on the run's time, on a lease of its budget, so an attempt on
// the record, which in process has no such call. Every attempt on the
// record is counted in Result.Attempts on both hosts, so the counts are
// compared less the attempts left out here (setups, of the root run).
// A sub-agent's parent tells of its child's setup in progress records
// ("step 0: setup", "step 0: setup ok", landing.ChildWork's words): they
// are left out with it. A setup that failed is not left out: how it
// failed is the run's.
func hostOnly(recs []trace.Record) (kept []trace.Record, setups int) {
	// Every setup is attempt 1 and a run's manifest fetches overlap, so a
	// failed end is paired with the start it names (its message quotes
	// the start's "manifest of URL"), else the first start not yet
	// paired; the starts of the ok ends are those left.
	drop := make([]bool, len(recs))
	starts := map[string][]int{} // run → its setup starts, in order
	var failed []int
	for i, r := range recs {
		switch {
		case r.Step != "setup":
		case r.Event == trace.AttemptStart:
			starts[r.RunID] = append(starts[r.RunID], i)
		case r.Event == trace.AttemptEnd && r.Outcome == trace.OK:
			drop[i] = true
			if r.RunID == runID {
				setups++
			}
		case r.Event == trace.AttemptEnd:
			failed = append(failed, i)
		}
	}
	paired := make([]bool, len(recs))
	for _, e := range failed {
		run := starts[recs[e].RunID]
		at := slices.IndexFunc(run, func(i int) bool {
			return !paired[i] && recs[i].Message != "" && strings.Contains(recs[e].Message, recs[i].Message)
		})
		if at < 0 {
			at = slices.IndexFunc(run, func(i int) bool { return !paired[i] })
		}
		if at >= 0 {
			paired[run[at]] = true
		}
	}
	for _, run := range starts {
		for _, i := range run {
			drop[i] = !paired[i]
		}
	}
	for i, r := range recs {
		if drop[i] || r.Event == trace.Progress && (r.Message == "step 0: setup" || r.Message == "step 0: setup ok") {
			continue
		}
		kept = append(kept, r)
	}
	return kept, setups
}

// agree reports every way temporal's ending differs from the in-process
// one, the reference, as lines that say which host diverged and how; the
// records of hostOnly are left out on both sides.
func agree(ref, got ending, loose []trace.Event) []string {
	var refSetups, gotSetups int
	ref.recs, refSetups = hostOnly(ref.recs)
	got.recs, gotSetups = hostOnly(got.recs)
	var diffs []string
	differ := func(what string, want, have any) {
		if fmt.Sprint(want) != fmt.Sprint(have) {
			diffs = append(diffs, fmt.Sprintf("%s diverged from %s on %s:\n\t%s: %v\n\t%s: %v", got.host, ref.host, what, ref.host, want, got.host, have))
		}
	}
	differ("status", ref.res.Status, got.res.Status)
	differ("cause", ref.res.Cause, got.res.Cause)
	differ("boundary", words(ref.res.Boundary), words(got.res.Boundary))
	differ("in_flight", inFlight(ref.res), inFlight(got.res))
	differ("unavailable", unavailable(ref.res), unavailable(got.res))
	differ("the result's steps, attempts (less hostOnly's setups) and orphans",
		fmt.Sprint(ref.res.Steps, " ", ref.res.Attempts-refSetups, " ", ref.res.Orphans),
		fmt.Sprint(got.res.Steps, " ", got.res.Attempts-gotSetups, " ", got.res.Orphans))
	differ("the model requests the server received", ref.requests, got.requests)
	differ("attempts per step and outcome", attempts(ref.recs), attempts(got.recs))
	want, have := normals(ref.recs, loose), normals(got.recs, loose)
	var only, extra []string
	for _, l := range want {
		if i := slices.Index(have, l); i >= 0 {
			have = slices.Delete(have, i, i+1)
			continue
		}
		only = append(only, l)
	}
	extra = have
	if len(only)+len(extra) > 0 {
		diffs = append(diffs, fmt.Sprintf("%s diverged from %s on the trace records (times, ids and keys aside):\n\tonly %s:\n\t\t%s\n\tonly %s:\n\t\t%s",
			got.host, ref.host, ref.host, strings.Join(only, "\n\t\t"), got.host, strings.Join(extra, "\n\t\t")))
	}
	return diffs
}

// first is the first record of event ev on step (any step: "") in recs.
func first(recs []trace.Record, ev trace.Event, step string) (trace.Record, bool) {
	for _, r := range recs {
		if r.Event == ev && (step == "" || r.Step == step) {
			return r, true
		}
	}
	return trace.Record{}, false
}
