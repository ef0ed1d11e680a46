// Package demo holds the builtin tools of `harness run`'s demo: small local
// tools with fixed, deterministic outputs and realistic latencies, and two
// remote tools served in memory over the protocol of SPEC §5 — one whose
// first attempt hangs, one write that commits late — so that a run on the
// embedded simulated model shows leases, parallel calls, progress, a cut
// call cancelled and retried, and a late write reconciled rather than sent
// twice, without any network. The local tools honor their context like
// well-behaved tools: a lease that ends stops them. [NewServer] is the
// demo's tool server, which examples/toolserver serves on a port.
package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/tools"
)

// Builtins returns the demo tools by name, for the `builtin` field of a tool
// config: search, fetch and deep_research, local functions, and
// flaky_fetch and late_commit, remote tools served in memory (see
// [NewServer]), which close with the registry. Each call returns fresh
// values, so callers may not share them.
func Builtins() map[string]tools.Tool {
	b := map[string]tools.Tool{
		"search":        tools.Func(searchSpec, search),
		"fetch":         tools.Func(fetchSpec, fetch),
		"deep_research": tools.Func(researchSpec, research),
	}
	maps.Copy(b, remoteBuiltins())
	return b
}

var (
	searchSpec = tools.Spec{
		Name:        "search",
		Description: "Search a small fixed index; returns the three best titles and URLs.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
		Effect:      tools.Read,
		Ceiling:     2 * time.Second,
		P50:         80 * time.Millisecond,
		P95:         200 * time.Millisecond,
	}
	fetchSpec = tools.Spec{
		Name:        "fetch",
		Description: "Fetch a page of the fixed index and return its summary.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}`),
		Effect:      tools.Read,
		Ceiling:     3 * time.Second,
		P50:         300 * time.Millisecond,
		P95:         800 * time.Millisecond,
	}
	researchSpec = tools.Spec{
		Name:        "deep_research",
		Description: "Read several sources on a topic and report findings; slow, with progress heartbeats.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"topic":{"type":"string"}},"required":["topic"]}`),
		Effect:      tools.Read,
		Speculative: true,
		Ceiling:     10 * time.Second,
		P50:         2 * time.Second,
		P95:         4 * time.Second,
	}
)

// sleep stands for the tool's work: d, or until its lease ends.
func sleep(ctx context.Context, d time.Duration) error {
	return budget.Delay{Sleep: d}.Wait(ctx)
}

func search(ctx context.Context, args json.RawMessage, _ tools.Progress) (any, error) {
	var in struct{ Query string }
	if err := json.Unmarshal(args, &in); err != nil {
		return nil, err
	}
	if err := sleep(ctx, searchSpec.P50); err != nil {
		return nil, err
	}
	slug := strings.Join(strings.Fields(strings.ToLower(in.Query)), "-")
	type hit struct{ Title, URL string }
	hits := make([]hit, 3)
	for i := range hits {
		hits[i] = hit{fmt.Sprintf("%s, part %d", in.Query, i+1), fmt.Sprintf("https://index.example/%s/%d", slug, i+1)}
	}
	return map[string]any{"query": in.Query, "results": hits}, nil
}

func fetch(ctx context.Context, args json.RawMessage, _ tools.Progress) (any, error) {
	var in struct{ URL string }
	if err := json.Unmarshal(args, &in); err != nil {
		return nil, err
	}
	if err := sleep(ctx, fetchSpec.P50); err != nil {
		return nil, err
	}
	return map[string]any{"url": in.URL, "summary": "A run gets one deadline; every timeout is leased from what remains of it."}, nil
}

// research reports a heartbeat per source read: units that grow are what
// keeps a run's quiet clock from calling a long tool stalled.
func research(ctx context.Context, args json.RawMessage, p tools.Progress) (any, error) {
	var in struct{ Topic string }
	if err := json.Unmarshal(args, &in); err != nil {
		return nil, err
	}
	const sources = 4
	for i := range sources {
		if err := sleep(ctx, researchSpec.P50/sources); err != nil {
			return nil, err
		}
		p.Report(int64(i+1), sources, fmt.Sprintf("read source %d of %d", i+1, sources))
	}
	return map[string]any{"topic": in.Topic, "findings": []string{
		"Deadlines compose where timeouts do not.",
		"A reserve kept for landing turns a timeout into a labeled partial answer.",
	}}, nil
}
