// Command embed adds Glidepath to an agent loop that already exists: the
// loop in agent.go calls its own model through openai-go and its own tools,
// and uses a harness.Session only for time (a lease for every request, the
// budget note for the model), gates (tool calls through the landing
// ladder) and landing (a labeled answer, complete or partial, inside the
// budget). Run it with
//
//	go run ./examples/embed
//
// It talks to the simulated model, served in memory; point the openai-go
// client at any OpenAI-compatible server instead.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

func main() {
	// The budget starts first: whatever the program does from here on is
	// spent from it.
	b, err := budget.New(budget.Config{Total: 20 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(2)
	}
	srv := sim.NewPipeServer(nil)
	defer srv.Close()
	client := openai.NewClient(append([]option.RequestOption{option.WithBaseURL(srv.URL), option.WithHTTPClient(srv.Client())},
		harness.ClientOptions()...)...) // every request is a turn's attempt: leased, retried, recorded
	reg, err := searchTool()
	if err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
	res, err := agent(context.Background(), b, client, reg, "What is a deadline budget?")
	if err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(2)
	}
	fmt.Println(res.Text())
	fmt.Printf("%s · %d steps · %d attempts · spent %dms of %dms\n",
		res.Status, res.Steps, res.Attempts, res.Budget.SpentMs, res.Budget.TotalMs)
}

// searchTool is the loop's one tool, registered for the Session to call;
// the Session offers it to the model (Session.Tools).
func searchTool() (*tools.Registry, error) {
	params := json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`)
	spec := tools.Spec{Name: "search", Description: "Search the web.", Effect: tools.Read, Ceiling: 5 * time.Second, Parameters: params}
	reg := tools.NewRegistry(nil)
	err := reg.Register(tools.Func(spec, func(ctx context.Context, args json.RawMessage, _ tools.Progress) (any, error) {
		var a struct{ Query string }
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, err
		}
		return "A deadline budget is one deadline per run; every timeout is leased from it. (" + a.Query + ")", nil
	}))
	return reg, err
}
