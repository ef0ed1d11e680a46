package fleet_test

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/glidepath/glidepath/bench/fleet"
	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
)

// BenchmarkOneTurn is the per-run cost the fleet pays before and around
// its first request (issue 20, item 4): one whole run of one model turn
// against an in-memory sim, Glidepath's harness.Run beside the bare SDK's
// one call of the same messages (fleet.FirstMessages), streaming and not.
// Run it with -benchmem for allocations per run, and -cpuprofile to see
// where Glidepath's extra time goes.
func BenchmarkOneTurn(b *testing.B) {
	srv := sim.NewPipeServer(nil)
	defer srv.Close()
	msgs, err := fleet.FirstMessages(b.Context(), fleet.Task, fleetBudget, 0)
	if err != nil {
		b.Fatal(err)
	}
	params := func() openai.ChatCompletionNewParams {
		return openai.ChatCompletionNewParams{Model: sim.ModelID, Messages: fleet.Params(msgs)}
	}
	b.Run("system=glidepath", func(b *testing.B) {
		c, err := model.New(model.Config{BaseURL: srv.URL, HTTPClient: srv.Client(), Model: sim.ModelID})
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			bud, err := budget.New(budget.Config{Total: fleetBudget})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := harness.Run(b.Context(), bud, harness.Config{Task: fleet.Task, Model: c}); err != nil {
				b.Fatal(err)
			}
		}
	})
	sdk := openai.NewClient(option.WithBaseURL(srv.URL), option.WithHTTPClient(srv.Client()), option.WithAPIKey("sim"))
	b.Run("system=sdk-stream", func(b *testing.B) {
		for b.Loop() {
			ctx, cancel := context.WithTimeout(b.Context(), fleetBudget)
			p := params()
			p.StreamOptions = fleet.IncludeUsage
			stream := sdk.Chat.Completions.NewStreaming(ctx, p)
			for stream.Next() {
			}
			err := stream.Err()
			stream.Close()
			cancel()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("system=sdk", func(b *testing.B) {
		for b.Loop() {
			ctx, cancel := context.WithTimeout(b.Context(), fleetBudget)
			_, err := sdk.Chat.Completions.New(ctx, params())
			cancel()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// fleetBudget is the fleet's B (fleet.Config's default).
const fleetBudget = fleet.DefaultBudget
