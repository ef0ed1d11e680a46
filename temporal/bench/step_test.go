package bench_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/temporal/durable"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"
)

// The overhead bench's runs: a step is one model turn that asks for the
// lookup tool and that tool's call, and a run's last turn answers. Runs of
// shortRun and of longRun steps tell a step's cost from a run's fixed cost
// (see the package doc, # Overhead per step).
const (
	shortRun = 1
	longRun  = 5
)

// stepTask is the task of every run of the overhead bench.
const stepTask = "look up cats"

// stepBudget is B of the harness's runs in the overhead bench: long
// enough that every run completes in explore, its leases long enough
// that attempts heartbeat (DeadWorker) as they do in production.
const stepBudget = time.Minute

// stepEnv is a sim in memory whose runs make steps steps, the lookup tool
// on loopback and one worker serving both workflows on its own task
// queue of a Temporal server in this process.
type stepEnv struct {
	steps  int
	sim    *sim.Server
	posts  *posts
	c      client.Client
	queue  string
	system string // the harness's system prompt, as the sim received it
}

func newStepEnv(tb testing.TB, ts *temporaltest.TestServer, steps int) *stepEnv {
	tb.Helper()
	rules := make([]sim.Rule, steps)
	for i := range rules {
		rules[i] = sim.Rule{Turn: i + 1, ToolCalls: []sim.ToolCall{{Name: "lookup", Arguments: `{"query":"` + stepTask + `"}`}}}
	}
	e := &stepEnv{steps: steps, sim: sim.NewPipeServer(&sim.Scenario{Rules: rules}), posts: newPosts(),
		queue: fmt.Sprintf("step-%d", steps), c: ts.GetDefaultClient()}
	tb.Cleanup(e.sim.Close)
	url := toolServer(tb, e.posts, time.Millisecond)
	reg, err := durable.LoadTools(context.Background(), toolsFile(tb, tb.TempDir(), "tools.yaml", url, "lookup"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { reg.Close(context.Background()) })
	acts := &durable.Activities{Model: model.Config{BaseURL: e.sim.URL, Model: sim.ModelID, HTTPClient: e.sim.Client()}, Tools: reg}
	// One worker for both arms, with the options `harness-temporal worker`
	// runs with.
	ts.NewWorkerWithOptions(e.queue, func(r worker.Registry) { register(r, acts) }, durable.WorkerOptions(worker.Options{}))
	// The harness's system prompt, read from what the sim received of a
	// first run, is the plain workflow's too: the same payloads.
	if _, _, err := e.harness(context.Background()); err != nil {
		tb.Fatal(err)
	}
	reqs := e.sim.Requests()
	if len(reqs) == 0 || len(reqs[0].Messages) == 0 || reqs[0].Messages[0].Role != "system" {
		tb.Fatalf("the sim recorded no system prompt: %+v", reqs)
	}
	e.system = reqs[0].Messages[0].Content
	return e
}

// harness makes one run of durable.Workflow and returns its result.
func (e *stepEnv) harness(ctx context.Context) (landing.Result, client.WorkflowRun, error) {
	wr, err := e.c.ExecuteWorkflow(ctx, durable.StartOptions(client.StartWorkflowOptions{TaskQueue: e.queue}, stepBudget), durable.WorkflowName,
		// Its steps repeat one lookup on purpose, as its plain twin's do:
		// a measure of a step, not a stuck run (issue 27's MaxRepeats).
		durable.Input{Task: stepTask, Budget: stepBudget, MaxRepeats: 100})
	if err != nil {
		return landing.Result{}, nil, err
	}
	var out durable.Output
	if err := wr.Get(ctx, &out); err != nil {
		return landing.Result{}, wr, err
	}
	if out.Result.Status != landing.Complete || out.Result.Steps != e.steps+1 {
		return out.Result, wr, fmt.Errorf("harness run: %s after %d turns: %s", out.Result.Status, out.Result.Steps, out.Result.Boundary)
	}
	return out.Result, wr, nil
}

// plain makes one run of the plain workflow and returns its answer.
func (e *stepEnv) plain(ctx context.Context) (string, client.WorkflowRun, error) {
	wr, err := e.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: e.queue}, plainName,
		plainInput{Task: stepTask, System: e.system, Parallel: true})
	if err != nil {
		return "", nil, err
	}
	var answer string
	err = wr.Get(ctx, &answer)
	return answer, wr, err
}

// shape is what one run's history holds: its events, its activities, of
// them those with a HeartbeatTimeout (each sends a heartbeat at once, an
// RPC that writes the run's state), its markers (SideEffects) and its
// workflow tasks.
type shape struct {
	events, activities, heartbeating, markers, tasks int
}

func shapeOf(ctx context.Context, c client.Client, wr client.WorkflowRun) (shape, error) {
	var s shape
	it := c.GetWorkflowHistory(ctx, wr.GetID(), wr.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return s, err
		}
		s.events++
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			s.activities++
			if ev.GetActivityTaskScheduledEventAttributes().GetHeartbeatTimeout().AsDuration() > 0 {
				s.heartbeating++
			}
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			s.markers++
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			s.tasks++
		}
	}
	return s, nil
}

// withoutNotes is a recorded conversation without the harness's budget
// notes, the one thing of its requests the plain workflow does not send.
func withoutNotes(msgs []sim.Message) []sim.Message {
	return slices.DeleteFunc(slices.Clone(msgs), func(m sim.Message) bool {
		return m.Role == "system" && strings.HasPrefix(m.Content, "Budget: ")
	})
}

// The overhead bench is fair only if its baseline makes the calls the
// harness makes: the same model requests, with the same conversation but
// for the harness's budget note, and the same tool calls.
func TestThePlainWorkflowMakesTheSameCallsAsTheHarness(t *testing.T) {
	e := newStepEnv(t, newServer(t), longRun)
	before, tools := e.sim.Received(), e.posts.received("lookup")
	res, _, err := e.harness(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	harnessReqs := e.sim.Requests()[before:]
	harnessTools := e.posts.received("lookup") - tools
	mid := e.sim.Received()
	answer, _, err := e.plain(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	plainReqs := e.sim.Requests()[mid:]
	plainTools := e.posts.received("lookup") - tools - harnessTools

	if answer != res.Answer {
		t.Errorf("plain answered %q, the harness %q", answer, res.Answer)
	}
	if len(harnessReqs) != longRun+1 || len(plainReqs) != len(harnessReqs) {
		t.Fatalf("model requests: harness %d, plain %d, want %d each", len(harnessReqs), len(plainReqs), longRun+1)
	}
	if harnessTools != longRun || plainTools != harnessTools {
		t.Errorf("tool calls: harness %d, plain %d, want %d each", harnessTools, plainTools, longRun)
	}
	for i := range harnessReqs {
		h, p := withoutNotes(harnessReqs[i].Messages), plainReqs[i].Messages
		if harnessReqs[i].BudgetNote == "" {
			t.Errorf("harness request %d carries no budget note", i+1)
		}
		if len(h) != len(p) {
			t.Fatalf("request %d: harness sent %d messages (notes left out), plain %d", i+1, len(h), len(p))
		}
		for j := range h {
			if h[j].Role != p[j].Role || h[j].Content != p[j].Content || len(h[j].ToolCalls) != len(p[j].ToolCalls) {
				t.Errorf("request %d, message %d: harness %+v, plain %+v", i+1, j, h[j], p[j])
			}
		}
	}
}

// BenchmarkStepOverhead measures SPEC §7's "the harness's overhead per
// step is at most 1.2× a plain Temporal workflow making the same activity
// calls". See the package doc, # Overhead per step.
func BenchmarkStepOverhead(b *testing.B) {
	ts := newServer(b)
	envs := []*stepEnv{newStepEnv(b, ts, shortRun), newStepEnv(b, ts, longRun)}
	ctx := context.Background()
	// arms[2*i+k]: env i; k 0 the harness, 1 plain.
	type arm struct {
		env *stepEnv
		run func() (client.WorkflowRun, error)
	}
	var arms []arm
	for _, e := range envs {
		arms = append(arms,
			arm{e, func() (client.WorkflowRun, error) { _, wr, err := e.harness(ctx); return wr, err }},
			arm{e, func() (client.WorkflowRun, error) { _, wr, err := e.plain(ctx); return wr, err }})
	}
	shapes := make([]shape, len(arms))
	for range stepWarmUp {
		for i, a := range arms {
			wr, err := a.run()
			if err != nil {
				b.Fatal(err)
			}
			if shapes[i], err = shapeOf(ctx, a.env.c, wr); err != nil {
				b.Fatal(err)
			}
		}
	}
	wall, cpu := make([]time.Duration, len(arms)), make([]time.Duration, len(arms))
	b.ResetTimer()
	for i := range b.N {
		for k := range arms {
			a := (i + k) % len(arms) // the arms take turns to go first
			w, c := time.Now(), cpuTime()
			if _, err := arms[a].run(); err != nil {
				b.Fatal(err)
			}
			cpu[a] += cpuTime() - c
			wall[a] += time.Since(w)
		}
	}
	b.StopTimer()
	n := float64(b.N)
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) / n }
	// A step's cost is the long run's less the short run's, over the steps
	// between them; a run's fixed cost is the short run's less its step.
	perStep := func(d []time.Duration, k int) float64 { return (us(d[2+k]) - us(d[k])) / (longRun - shortRun) }
	perRun := func(d []time.Duration, k int) float64 { return us(d[k]) - shortRun*perStep(d, k) }
	b.ReportMetric(0, "ns/op")
	for _, m := range []struct {
		name string
		d    []time.Duration
	}{{"cpu-us", cpu}, {"us", wall}} {
		b.ReportMetric(perStep(m.d, 0), m.name+"/step-glidepath")
		b.ReportMetric(perStep(m.d, 1), m.name+"/step-plain")
		b.ReportMetric(perRun(m.d, 0), m.name+"/run-fixed-glidepath")
		b.ReportMetric(perRun(m.d, 1), m.name+"/run-fixed-plain")
		b.ReportMetric(us(m.d[2]), m.name+"/run-glidepath")
		b.ReportMetric(us(m.d[3]), m.name+"/run-plain")
	}
	b.ReportMetric(longRun, "steps/run")
	b.ReportMetric(perStep(cpu, 0)/perStep(cpu, 1), "cpu-step-glidepath/plain")
	b.ReportMetric(float64(cpu[2])/float64(cpu[3]), "cpu-run-glidepath/plain")
	b.ReportMetric(perStep(wall, 0)/perStep(wall, 1), "wall-step-glidepath/plain")
	b.ReportMetric(float64(wall[2])/float64(wall[3]), "wall-run-glidepath/plain")
	// The shape of a step and of a run's fixed part, from the histories.
	step := func(k int, f func(shape) int) float64 {
		return float64(f(shapes[2+k])-f(shapes[k])) / (longRun - shortRun)
	}
	for _, m := range []struct {
		name string
		f    func(shape) int
	}{
		{"events", func(s shape) int { return s.events }},
		{"activities", func(s shape) int { return s.activities }},
		{"heartbeating", func(s shape) int { return s.heartbeating }},
		{"markers", func(s shape) int { return s.markers }},
		{"tasks", func(s shape) int { return s.tasks }},
	} {
		b.ReportMetric(step(0, m.f), m.name+"/step-glidepath")
		b.ReportMetric(step(1, m.f), m.name+"/step-plain")
		b.ReportMetric(float64(m.f(shapes[2])), m.name+"/run-glidepath")
		b.ReportMetric(float64(m.f(shapes[3])), m.name+"/run-plain")
	}
}

// stepWarmUp is how many uncounted runs each arm makes first.
const stepWarmUp = 3
