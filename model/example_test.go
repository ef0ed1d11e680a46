package model_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/trace"
	"github.com/openai/openai-go/v3"
)

// A model turn on the run's budget, against the simulated model: the first
// request fails with a 500, the client retries once on a new lease.
func Example() {
	srv := sim.NewServer(&sim.Scenario{Rules: []sim.Rule{{Request: 1, Status: 500}}})
	defer srv.Close()
	c, err := model.New(model.Config{BaseURL: srv.URL, HTTPClient: srv.Client(), Model: "sim"})
	if err != nil {
		log.Fatal(err)
	}
	b, err := budget.New(budget.Config{Total: time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	obs := &trace.Observer{
		AttemptEnd: func(a trace.Attempt) { fmt.Printf("attempt %d: %s\n", a.N, a.Outcome) },
	}
	resp, err := c.Complete(context.Background(), b, model.Request{
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("capital of France?")},
	}, obs)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.FinishReason, resp.Attempts)
	// Output:
	// attempt 1: upstream_error
	// attempt 2: ok
	// stop 2
}

// The landing call offers no tools and may spend the reserve; it is one
// attempt, and a failure is reported rather than retried.
func ExampleClient_Land() {
	srv := sim.NewServer(&sim.Scenario{Rules: []sim.Rule{{Status: 503}}})
	defer srv.Close()
	c, err := model.New(model.Config{BaseURL: srv.URL, HTTPClient: srv.Client(), Model: "sim"})
	if err != nil {
		log.Fatal(err)
	}
	b, err := budget.New(budget.Config{Total: time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.Land(context.Background(), b, []openai.ChatCompletionMessageParamUnion{
		openai.UserMessage("Summarize what is established."),
	}, nil)
	ae, ok := errors.AsType[*trace.AttemptError](err)
	if !ok {
		log.Fatalf("Land = %v, want an attempt error", err)
	}
	fmt.Println(len(srv.Requests()), ae.Outcome, ae.Status)
	// Output:
	// 1 upstream_error 503
}
