package main

import (
	"context"
	"os"
	"strings"
)

// Plan the configuration of the package documentation: twenty steps, each
// a model call of at most 60s retried twice and a search of at most 30s
// retried twice, meant to fit in 2m.
func Example_plan() {
	config := `
budget: 2m
steps: 20
tool_calls_per_step: 1
model:
  ceiling: 60s
  retries: 2
tools:
  - name: search
    ceiling: 30s
    retries: 2
`
	run(context.Background(), []string{"plan", "-"}, strings.NewReader(config), os.Stdout, os.Stdout)
	// Output:
	// plan: stdin
	//
	// without a budget: every attempt runs to its ceiling and fails, every backoff sleeps its longest
	//   call         ceiling  retries  worst per call
	//   model        1m0s     2        1m0s × 3 + 1.5s backoff = 3m1.5s
	//   tool search  30s      2        30s × 3 + 750ms backoff = 1m30.75s
	//   per step     model 3m1.5s + 1 × search 1m30.75s = 4m32.25s
	//   total        20 steps × 4m32.25s = 1h30m45s
	//
	// if servers send Retry-After: openai-go waits up to 2m0s before each model retry
	//   model     1m0s × 3 + 2 × 2m0s = 7m0s
	//   per step  model 7m0s + 1 × search 1m30.75s = 8m30.75s
	//   total     20 steps × 8m30.75s = 2h50m15s
	//
	// under Glidepath: every attempt and every sleep is leased from one deadline
	//   budget B    2m0s
	//   reserve R   20s, kept for landing: max(10%·B, min(20s, 25%·B))
	//   floor F     50ms, nothing starts with less
	//   work        1m40s (B − R); each attempt gets min(its ceiling, time left − R − F)
	//   worst case  2m0s, and the run returns a labeled answer, complete or partial
	//
	// verdict: unbudgeted worst case is 1h30m45s, 45.4× the 2m0s budget; under Glidepath the run lands by 2m0s
}

// With --json, plan prints one JSON object for machines: every duration in
// milliseconds, an unbounded one null beside a true *_unbounded. Here the
// model's limits are left to openai-go, so the total is unbounded.
func Example_planJSON() {
	run(context.Background(), []string{"plan", "--json", "--budget", "1m", "--steps", "3"}, nil, os.Stdout, os.Stdout)
	// Output:
	// {"source":"flags and defaults","budget_ms":60000,"steps":3,"tool_calls_per_step":0,"model":{"name":"model","ceiling_ms":null,"ceiling_unbounded":true,"retries":2,"attempts":3,"backoff_ms":1500,"worst_ms":null,"worst_unbounded":true},"tools":[],"slowest_tool":null,"per_step_ms":null,"per_step_unbounded":true,"total_ms":null,"total_unbounded":true,"unbounded_because":["openai-go has no overall timeout by default"],"ratio":null,"retry_after":{"max_wait_ms":120000,"model_worst_ms":null,"model_worst_unbounded":true,"per_step_ms":null,"per_step_unbounded":true,"total_ms":null,"total_unbounded":true},"glidepath":{"budget_ms":60000,"reserve_ms":15000,"floor_ms":50,"work_ms":45000,"worst_ms":60000},"defaults":[{"field":"model.ceiling","tool":null,"value":"none","why":"openai-go sets no request timeout (RequestTimeout 0)"},{"field":"model.retries","tool":null,"value":"2","why":"openai-go's MaxRetries; backoff 0.5s·2^n, at most 8s"}],"verdict":"unbudgeted worst case is unbounded (openai-go has no overall timeout by default); under Glidepath the run lands by 1m0s"}
}
