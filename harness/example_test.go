package harness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools"
)

// exampleSetup starts the simulated model and a registry with one local
// tool, search.
func exampleSetup() (*sim.Server, *model.Client, *tools.Registry) {
	srv := sim.NewServer(nil)
	client, err := model.New(model.Config{BaseURL: srv.URL, HTTPClient: srv.Client(), Model: sim.ModelID})
	if err != nil {
		panic(err)
	}
	reg := tools.NewRegistry(nil)
	search := tools.Spec{
		Name:        "search",
		Description: "search the web",
		Effect:      tools.Read,
		Parameters:  json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
	}
	err = reg.Register(tools.Func(search, func(ctx context.Context, args json.RawMessage, _ tools.Progress) (any, error) {
		var a struct{ Query string }
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, err
		}
		return "3 results for " + a.Query, nil
	}))
	if err != nil {
		panic(err)
	}
	return srv, client, reg
}

// A run whose model calls the tool and answers from its result.
func ExampleRun() {
	srv, client, reg := exampleSetup()
	defer srv.Close()

	res, err := harness.Run(context.Background(), harness.Config{
		Task:   "find cats",
		Budget: 30 * time.Second,
		Model:  client,
		Tools:  reg,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Status, res.Steps)
	fmt.Println(res.Answer)
	// Output:
	// complete 2
	// [sim] Answer to "find cats": search returned "3 results for find cats".
}

// A run that lands early: one step is allowed and it called a tool. The
// landing call summarizes, and the partial result leads with its boundary.
func ExampleRun_landing() {
	srv, client, reg := exampleSetup()
	defer srv.Close()

	res, err := harness.Run(context.Background(), harness.Config{
		Task:     "find cats",
		Budget:   30 * time.Second,
		MaxSteps: 1,
		Model:    client,
		Tools:    reg,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Status, res.Cause)
	fmt.Println(res.Text())
	// Output:
	// partial max_steps
	// PARTIAL RESULT. Reached the step limit at step 1: search done.
	//
	// [sim] Summary of "find cats"
	// Established: search returned "3 results for find cats".
	// Not established: nothing.
}

// A config is checked before anything is sent.
func ExampleConfigError() {
	_, err := harness.Run(context.Background(), harness.Config{Task: "find cats", Budget: 0})
	fmt.Println(err)
	// Output:
	// harness: budget 0s: must be positive
}
