package model_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	"github.com/openai/openai-go/v3"
)

// A model turn over the Responses API: the first attempt's stream reports
// rate_limit_exceeded in an error event, which is retried as a 429 is;
// the second answers, and its reasoning summary part is the call's
// progress.
func ExampleConfig_responses() {
	srv := sim.NewServer(&sim.Scenario{Rules: []sim.Rule{{Request: 1, StreamError: "rate_limit_exceeded"}}})
	defer srv.Close()
	c, err := model.New(model.Config{BaseURL: srv.URL, HTTPClient: srv.Client(), Model: "sim", API: model.APIResponses})
	if err != nil {
		log.Fatal(err)
	}
	b, err := budget.New(budget.Config{Total: time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	obs := &trace.Observer{
		AttemptEnd: func(a trace.Attempt) { fmt.Printf("attempt %d: %s %d\n", a.N, a.Outcome, a.Status) },
		Signal: func(s trace.Signal) {
			if s.Event == watchdog.Progress {
				fmt.Printf("progress of %s: %d\n", s.Step, s.Units)
			}
		},
	}
	resp, err := c.Complete(context.Background(), b, model.Request{
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("capital of France?")},
	}, obs)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.FinishReason, resp.Attempts)
	// Output:
	// attempt 1: rate_limited 429
	// progress of model: 1
	// attempt 2: ok 0
	// stop 2
}
