package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/tools"
)

func Example() {
	params := json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`)
	add := func(ctx context.Context, args json.RawMessage, p tools.Progress) (any, error) {
		var in struct{ A, B int }
		if err := json.Unmarshal(args, &in); err != nil {
			return nil, err
		}
		return in.A + in.B, nil
	}
	reg := tools.NewRegistry(nil)
	if err := reg.Register(tools.Func(tools.Spec{Name: "add", Effect: tools.Read, Parameters: params}, add)); err != nil {
		panic(err)
	}
	b, err := budget.New(budget.Config{Total: time.Minute})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	res := reg.Call(ctx, &tools.Run{Budget: b}, "add", json.RawMessage(`{"a":2,"b":3}`))
	fmt.Println(res.Outcome, res.Content())

	res = reg.Call(ctx, &tools.Run{Budget: b}, "add", json.RawMessage(`{"a":"two","b":3}`))
	fmt.Println(res.Outcome, res.Attempts)
	fmt.Println(res.Content())
	// Output:
	// ok 5
	// invalid 0
	// error: invalid arguments for tool "add": they do not match its parameters:
	// - at '/a': got string, want integer
}

// The Observer hears every heartbeat as the tool reported it; the run's
// watchdog decides which are progress.
func ExampleRun_signals() {
	count := func(ctx context.Context, _ json.RawMessage, p tools.Progress) (any, error) {
		for _, units := range []int64{1, 2, 2} {
			p.Report(units, 2, "counting")
		}
		return "counted", nil
	}
	reg := tools.NewRegistry(nil)
	if err := reg.Register(tools.Func(tools.Spec{Name: "count"}, count)); err != nil {
		panic(err)
	}
	b, err := budget.New(budget.Config{Total: time.Minute})
	if err != nil {
		panic(err)
	}
	w, _, err := watchdog.Start(context.Background(), watchdog.Config{})
	if err != nil {
		panic(err)
	}
	defer w.Stop()
	run := &tools.Run{Budget: b, Observer: &trace.Observer{
		Signal: func(s trace.Signal) {
			if s.Event == watchdog.Progress {
				fmt.Println(s.Event, s.Units, "progress:", w.Progress(s.Key, s.Units))
				return
			}
			fmt.Println(s.Event, s.Step)
		},
	}}
	reg.Call(context.Background(), run, "count", nil)
	// Output:
	// tool_call tool:count
	// begun tool:count
	// progress 1 progress: true
	// progress 2 progress: true
	// progress 2 progress: false
	// tool_result tool:count
}

func ExampleCommand() {
	// cat echoes the arguments back: they arrive as JSON on its standard
	// input, and JSON on its standard output is the tool's output.
	reg := tools.NewRegistry(nil)
	if err := reg.Register(tools.Command(tools.Spec{Name: "echo", Effect: tools.Read, Ceiling: 10 * time.Second}, []string{"cat"})); err != nil {
		panic(err)
	}
	b, err := budget.New(budget.Config{Total: time.Minute})
	if err != nil {
		panic(err)
	}
	res := reg.Call(context.Background(), &tools.Run{Budget: b}, "echo", json.RawMessage(`{"say": "hi"}`))
	fmt.Println(res.Outcome, string(res.Output))
	// Output:
	// ok {"say":"hi"}
}

func ExampleParseConfig() {
	file := []byte(`
tools:
  - name: search
    url: http://127.0.0.1:8700
    effect: read
    ceiling: 10s
    cancellable: true
  - name: grep
    command: [grep, -rn, TODO]
    ceiling: 5s
`)
	cfg, err := tools.ParseConfig("tools.yaml", file, nil)
	if err != nil {
		panic(err)
	}
	// cfg.Resolve(ctx, client, 5*time.Second) would fill in what the entries
	// leave out from the search server's manifest.
	reg := tools.NewRegistry(nil)
	for _, t := range cfg.Tools(nil) {
		if err := reg.Register(t); err != nil {
			panic(err)
		}
	}
	for _, s := range reg.Specs() {
		fmt.Println(s.Name, s.Effect, s.Ceiling, s.Cancellable, s.MaxAttempts)
	}
	// Output:
	// search read 10s true 3
	// grep write 5s false 3
}

func ExampleParseConfig_error() {
	file := []byte(`
tools:
  - name: search
    url: http://127.0.0.1:8700
    effect: sometimes
    ceiling: 10 seconds
`)
	_, err := tools.ParseConfig("tools.yaml", file, nil)
	fmt.Println(err)
	ce, _ := errors.AsType[*tools.ConfigError](err)
	fmt.Println(ce.Field, ce.Line)
	// Output:
	// tools: tools.yaml:5: tools[0].effect "sometimes": must be read or write
	// tools: tools.yaml:6: tools[0].ceiling "10 seconds": not a duration such as "1s" or "250ms"
	// tools[0].effect 5
}
