package harness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
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

	// The budget starts first: whatever the caller does before the run is
	// spent from it too.
	b, err := budget.New(budget.Config{Total: 30 * time.Second})
	if err != nil {
		panic(err)
	}
	res, err := harness.Run(context.Background(), b, harness.Config{
		Task:  "find cats",
		Model: client,
		Tools: reg,
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

	b, err := budget.New(budget.Config{Total: 30 * time.Second})
	if err != nil {
		panic(err)
	}
	res, err := harness.Run(context.Background(), b, harness.Config{
		Task:     "find cats",
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

// A config is checked before anything is sent; the budget's numbers were
// checked by budget.New, which made the budget.
func ExampleConfigError() {
	b, err := budget.New(budget.Config{Total: time.Minute})
	if err != nil {
		panic(err)
	}
	_, err = harness.Run(context.Background(), b, harness.Config{Task: "find cats", MaxSteps: -1})
	fmt.Println(err)
	// Output:
	// harness: max-steps -1: must not be negative
}

// A run started on a budget, with setup work spent from it and recorded,
// then driven by the harness's own loop.
func ExampleStart() {
	srv, client, reg := exampleSetup()
	defer srv.Close()
	b, err := budget.New(budget.Config{Total: 30 * time.Second})
	if err != nil {
		panic(err)
	}
	var sink kept
	s, ctx, err := harness.Start(context.Background(), b, harness.Config{Task: "find cats", Model: client, Tools: reg,
		Sinks: []trace.Sink{&sink}})
	if err != nil {
		panic(err)
	}
	err = s.Setup(ctx, "warm the cache", time.Second, func(ctx context.Context) error { return nil })
	if err != nil {
		panic(err)
	}
	res := s.Run(ctx)
	if err := s.Close(); err != nil {
		panic(err)
	}
	fmt.Println(res.Status, res.Budget.TotalMs)
	for _, r := range sink {
		if r.Event == trace.AttemptStart {
			fmt.Println(r.Step, r.StepIndex)
		}
	}
	// Output:
	// complete 30000
	// setup 0
	// model 1
	// tool:search 1
	// model 2
}

// A loop of the caller's own, which sends its model requests itself: the
// Session leases each one and records it, gates the tool calls and lands
// the run.
func ExampleSession_BeginTurn() {
	srv := sim.NewServer(nil)
	defer srv.Close()
	// The client's requests are the turns' attempts: leased, retried and
	// recorded by the run whose turn each is sent on.
	oa := openai.NewClient(append([]option.RequestOption{option.WithBaseURL(srv.URL)}, harness.ClientOptions()...)...)
	b, err := budget.New(budget.Config{Total: 10 * time.Second})
	if err != nil {
		panic(err)
	}
	s, ctx, err := harness.Start(context.Background(), b, harness.Config{Task: "say hello"})
	if err != nil {
		panic(err)
	}
	defer s.Close()

	tctx, turn, err := s.BeginTurn(ctx)
	if err != nil {
		fmt.Println(s.Land(ctx, err, nil).Text()) // the run must land, or has no time for a turn
		return
	}
	resp, err := oa.Chat.Completions.New(tctx, openai.ChatCompletionNewParams{
		Model:    sim.ModelID,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("say hello"), openai.SystemMessage(s.Note())},
	}) // on the turn's context: Budget-Remaining-Ms, the lease as deadline, retried per SPEC §2, on the record
	if err = turn.End(err); err != nil {
		fmt.Println(s.Land(ctx, err, nil).Text()) // the right words for any failure
		return
	}
	res := s.Answer(resp.Choices[0].Message.Content)
	fmt.Println(res.Status, res.Steps, res.Attempts)
	// Output:
	// complete 1 1
}

// kept is a sink that keeps what it is handed.
type kept []trace.Record

func (r *kept) Record(rec trace.Record) error {
	*r = append(*r, rec)
	return nil
}
