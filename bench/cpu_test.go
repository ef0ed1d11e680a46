//go:build unix

package bench_test

import (
	"context"
	"encoding/json"
	"errors"
	"runtime/metrics"
	"syscall"
	"testing"
	"time"

	"github.com/glidepath/glidepath/bench/battery"
	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// stepTask is the task of every run of BenchmarkStepCPU; the sim passes it
// to the tool as its query.
const stepTask = "look up cats"

// stepTool is the one tool of BenchmarkStepCPU: a local function that
// answers at once, so that what is measured is the loop around it.
var stepTool = tools.Spec{
	Name:        "lookup",
	Description: "Looks things up.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
	Effect:      tools.Read,
}

// stepWarmUp is how many steps each arm of BenchmarkStepCPU makes before
// it counts.
const stepWarmUp = 100

// stepOutput is what the tool returns, already JSON, as both arms send it
// back.
var stepOutput = json.RawMessage(`{"cats":3}`)

func lookup(_ context.Context, args json.RawMessage, _ tools.Progress) (any, error) {
	if len(args) == 0 {
		return nil, errors.New("no arguments")
	}
	return stepOutput, nil
}

// BenchmarkStepCPU measures SPEC §7's "the harness's own CPU per step (one
// model turn and one tool call against sim in memory) at most 1.1× that
// of a bare openai-go loop making the same requests". A step is what the
// sim's default policy makes of one offered tool: a streamed turn that
// asks for the tool, the tool's call, and a streamed turn, with the tool's
// result, that answers. The Glidepath arm is a whole harness.Run on its
// own budget, from budget.New to the complete result; the baseline is a
// loop of openai-go streaming calls under a context.WithTimeout that calls
// the same function inline and sends the same messages: the harness's
// system prompt, the task and the budget note, read from what the sim
// recorded of a first Glidepath run. Both talk to one sim.NewPipeServer
// through its Client, in memory.
//
// The figures are CPU time, not wall time: the process's user + system
// time (getrusage RUSAGE_SELF) around each arm, the arms interleaved for
// b.N iterations and taking turns to go first, so that a GC cycle or a
// goroutine one arm leaves running falls on either alike, after
// stepWarmUp uncounted steps of each. The sim serves in the same process,
// so each arm's figure includes the sim's side of its two requests, the
// same for both. cpu-us/step-glidepath and cpu-us/step-bare are the means
// per step; glidepath/bare is their ratio (target: at most 1.1). A third
// arm, the baseline's loop with Glidepath's model.Client making its turns
// (cpu-us/step-client), tells the model client's share of the difference
// from the harness's around it; what each arm allocates and the garbage
// collector's share of the CPU say how much of it is allocation. The
// ratio moves by a few hundredths from run to run on a 2-core machine;
// GOMAXPROCS=1 steadies it, and shows the harness's cost without the
// scheduler's.
func BenchmarkStepCPU(b *testing.B) {
	srv := sim.NewPipeServer(nil)
	defer srv.Close()
	c := glidepathModel(b, srv.URL, srv.Client())
	reg := tools.NewRegistry(nil)
	if err := reg.Register(tools.Func(stepTool, lookup)); err != nil {
		b.Fatal(err)
	}
	defer reg.Wait()
	loop := bareStepLoop(b, srv, c, reg)
	// Warm up both arms first, uncounted: the first steps pay for what a
	// process does once (type caches of the JSON codecs, a heap still
	// growing to its working size, GC cycles that come often while it is
	// small), which a short -benchtime would otherwise charge to the steps.
	for range stepWarmUp {
		glidepathStep(b, c, reg)
		loop.step(b)
		loop.clientStep(b, c)
	}

	var gp, bare, client armCost
	gc := readCPUClasses()
	i := 0
	for b.Loop() {
		arms := [...]func(){
			func() { gp.add(func() { glidepathStep(b, c, reg) }) },
			func() { bare.add(func() { loop.step(b) }) },
			func() { client.add(func() { loop.clientStep(b, c) }) },
		}
		for j := range arms {
			arms[(i+j)%len(arms)]() // each arm goes first in turn
		}
		i++
	}
	gc = readCPUClasses().minus(gc)
	n := float64(b.N)
	b.ReportMetric(0, "ns/op") // it would add the two arms together
	b.ReportMetric(float64(gp.cpu.Microseconds())/n, "cpu-us/step-glidepath")
	b.ReportMetric(float64(bare.cpu.Microseconds())/n, "cpu-us/step-bare")
	b.ReportMetric(float64(client.cpu.Microseconds())/n, "cpu-us/step-client")
	b.ReportMetric(float64(gp.cpu)/float64(bare.cpu), "glidepath/bare")
	b.ReportMetric(float64(gp.bytes)/n, "B/step-glidepath")
	b.ReportMetric(float64(bare.bytes)/n, "B/step-bare")
	b.ReportMetric(float64(gp.objects)/n, "allocs/step-glidepath")
	b.ReportMetric(float64(bare.objects)/n, "allocs/step-bare")
	b.ReportMetric(float64(client.bytes)/n, "B/step-client")
	b.ReportMetric(float64(client.objects)/n, "allocs/step-client")
	b.ReportMetric(gc.gc/gc.total, "gc-cpu-share")
}

// armCost is what one arm of BenchmarkStepCPU spent: CPU time, and the
// bytes and objects it allocated. The allocations are read apart from the
// CPU time, so that reading them is not charged to the arm; they tell the
// garbage collector's work each arm makes, which runs on the process's
// CPU whichever arm happens to be running then (gc-cpu-share).
type armCost struct {
	cpu            time.Duration
	bytes, objects uint64
}

// add runs fn and adds what it spent.
func (a *armCost) add(fn func()) {
	before := readAllocs()
	a.cpu += cpuOf(fn)
	after := readAllocs()
	a.bytes += after[0].Value.Uint64() - before[0].Value.Uint64()
	a.objects += after[1].Value.Uint64() - before[1].Value.Uint64()
}

// readAllocs reads the bytes and objects allocated so far, without
// stopping the world as runtime.ReadMemStats would.
func readAllocs() [2]metrics.Sample {
	s := [2]metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/allocs:objects"}}
	metrics.Read(s[:])
	return s
}

// cpuClasses is the process's CPU time so far as the runtime estimates
// it: all of it, and the garbage collector's.
type cpuClasses struct{ total, gc float64 }

func readCPUClasses() cpuClasses {
	s := []metrics.Sample{{Name: "/cpu/classes/total:cpu-seconds"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	return cpuClasses{total: s[0].Value.Float64(), gc: s[1].Value.Float64()}
}

func (c cpuClasses) minus(d cpuClasses) cpuClasses { return cpuClasses{c.total - d.total, c.gc - d.gc} }

// cpuOf returns the CPU time the process spent, user and system, while fn
// ran.
func cpuOf(fn func()) time.Duration {
	start := processCPU()
	fn()
	return processCPU() - start
}

// processCPU is the user + system CPU time of the process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err) // RUSAGE_SELF with a valid pointer cannot fail
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// glidepathStep runs one step with the harness and checks that it
// answered.
func glidepathStep(b *testing.B, c *model.Client, reg *tools.Registry) {
	bud, err := budget.New(budget.Config{Total: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	res, err := harness.Run(context.Background(), bud, harness.Config{Task: stepTask, Model: c, Tools: reg})
	if err != nil {
		b.Fatal(err)
	}
	if res.Status != landing.Complete {
		b.Fatalf("glidepath: got status %q (cause %q), want complete", res.Status, res.Cause)
	}
}

// bareLoop is the baseline: openai-go as it comes, and the messages of
// the harness's requests.
type bareLoop struct {
	c            openai.Client
	prompt, note string // the harness's system prompt and a budget note of its
	tools        []openai.ChatCompletionToolUnionParam
}

// bareStepLoop makes the baseline's loop. It runs one Glidepath step
// first and takes from what the sim recorded the system prompt and the
// budget note the harness sent, so that both arms send requests of the
// same size.
func bareStepLoop(b *testing.B, srv *sim.Server, gp *model.Client, reg *tools.Registry) *bareLoop {
	before := len(srv.Requests())
	glidepathStep(b, gp, reg)
	reqs := srv.Requests()[before:]
	if len(reqs) == 0 || len(reqs[0].Messages) < 3 {
		b.Fatalf("sim recorded %d requests of the first run, want its first with 3 messages", len(reqs))
	}
	msgs := reqs[0].Messages
	fd := shared.FunctionDefinitionParam{Name: stepTool.Name, Description: openai.String(stepTool.Description)}
	if err := json.Unmarshal(stepTool.Parameters, &fd.Parameters); err != nil {
		b.Fatal(err)
	}
	return &bareLoop{
		c:      sdkClient(srv.URL, srv.Client()),
		prompt: msgs[0].Content,
		note:   msgs[len(msgs)-1].Content,
		tools:  []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(fd)},
	}
}

// step makes the baseline's step: the turn that asks for the tool, the
// call, and the turn that answers.
func (l *bareLoop) step(b *testing.B) { l.loop(b, battery.StreamTurn) }

// clientStep makes the baseline's step with Glidepath's model.Client in
// place of the bare streaming call, on a budget of its own: the model
// client's share of what a harness step costs over the bare loop, apart
// from the harness around it (cpu-us/step-client).
func (l *bareLoop) clientStep(b *testing.B, c *model.Client) {
	bud, err := budget.New(budget.Config{Total: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	l.loop(b, func(ctx context.Context, _ openai.Client, p openai.ChatCompletionNewParams) (openai.ChatCompletionMessage, error) {
		resp, err := c.CompletePointer(ctx, bud, model.Request{Messages: p.Messages, Tools: p.Tools, Parallel: true}, nil)
		if err != nil {
			return openai.ChatCompletionMessage{}, err
		}
		return resp.Message, nil
	})
}

// loop is a step of the baseline, its turns sent by send.
func (l *bareLoop) loop(b *testing.B, send func(context.Context, openai.Client, openai.ChatCompletionNewParams) (openai.ChatCompletionMessage, error)) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conv := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(l.prompt), openai.UserMessage(stepTask)}
	for turn := 1; ; turn++ {
		params := openai.ChatCompletionNewParams{
			Model:             sim.ModelID,
			Messages:          append(conv[:len(conv):len(conv)], openai.SystemMessage(l.note)),
			Tools:             l.tools,
			ParallelToolCalls: openai.Bool(true),
			StreamOptions:     openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		}
		msg, err := send(ctx, l.c, params)
		if err != nil {
			b.Fatalf("bare loop: turn %d: %v", turn, err)
		}
		if len(msg.ToolCalls) == 0 {
			if msg.Content == "" || turn != 2 {
				b.Fatalf("bare loop: turn %d answered %q, want the answer at turn 2", turn, msg.Content)
			}
			return
		}
		conv = append(conv, toolCallMessage(msg))
		for _, call := range msg.ToolCalls {
			out, err := lookup(ctx, json.RawMessage(call.Function.Arguments), nil)
			content := ""
			if err != nil {
				content = "error: " + err.Error()
			} else {
				content = string(out.(json.RawMessage))
			}
			conv = append(conv, openai.ToolMessage(content, call.ID))
		}
	}
}

// toolCallMessage turns the model's message back into one of the
// conversation, field by field as the harness does: the SDK's ToParam
// drops a tool call whose type the stream did not name.
func toolCallMessage(m openai.ChatCompletionMessage) openai.ChatCompletionMessageParamUnion {
	var p openai.ChatCompletionAssistantMessageParam
	if m.Content != "" {
		p.Content.OfString = openai.String(m.Content)
	}
	for _, c := range m.ToolCalls {
		p.ToolCalls = append(p.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID:       c.ID,
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Function.Name, Arguments: c.Function.Arguments},
			},
		})
	}
	return openai.ChatCompletionMessageParamUnion{OfAssistant: &p}
}
