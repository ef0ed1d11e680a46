package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/glidepath/glidepath/tools/kit"
)

// ServerConfig sets the timings of the demo's tool server; zero fields
// take the demo's defaults.
type ServerConfig struct {
	Keepalive   time.Duration // 0: the kit's default
	Tick        time.Duration // long_job and stale report every Tick; 200ms
	Steps       int           // long_job's steps; 10
	CommitAfter time.Duration // how long commit works before it commits; 1.5s
}

func (c ServerConfig) withDefaults() ServerConfig {
	if c.Tick == 0 {
		c.Tick = 200 * time.Millisecond
	}
	if c.Steps == 0 {
		c.Steps = 10
	}
	if c.CommitAfter == 0 {
		c.CommitAfter = 1500 * time.Millisecond
	}
	return c
}

// NewServer returns a tool server (package tools/kit) with the demo's six
// remote tools registered, each showing one behavior of SPEC §5: search (a
// fast read), fetch (hangs on the first attempt of each call until its
// deadline; a retry with the same key answers), long_job (progress
// heartbeats), commit (a write that commits late, once per key), stuck
// (only keepalives) and stale (progress whose units never grow).
// examples/toolserver serves it on a port; [Builtins] serves fetch and
// commit in memory.
func NewServer(cfg ServerConfig) *kit.Server {
	srv := &kit.Server{KeepaliveEvery: cfg.Keepalive}
	for _, t := range serverTools(cfg) {
		if err := srv.Register(t); err != nil {
			panic(err) // the list is fixed: a failure is this package's bug
		}
	}
	return srv
}

// serverTools returns the demo server's tools.
func serverTools(cfg ServerConfig) []kit.Tool {
	cfg = cfg.withDefaults()
	var commits atomic.Int64
	return []kit.Tool{
		{
			Name:        "search",
			Description: "Search the demo index; the same query always gives the same results.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":10}},"required":["query"]}`),
			Effect:      kit.Read,
			P50:         5 * time.Millisecond,
			P95:         20 * time.Millisecond,
			Max:         2 * time.Second,
			Handler:     remoteSearch,
		},
		{
			Name:        "fetch",
			Description: "Fetch a page. Hangs on the first attempt of each call until its deadline; a retry with the same Idempotency-Key answers.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}`),
			Effect:      kit.Read,
			Cancellable: true,
			P50:         50 * time.Millisecond,
			P95:         300 * time.Millisecond,
			Max:         30 * time.Second,
			Handler:     remoteFetch,
		},
		{
			Name:        "long_job",
			Description: fmt.Sprintf("A job of %d steps that reports progress after each one, every %v.", cfg.Steps, cfg.Tick),
			Effect:      kit.Read,
			Cancellable: true,
			P50:         time.Duration(cfg.Steps) * cfg.Tick,
			P95:         time.Duration(cfg.Steps)*cfg.Tick + time.Second,
			Max:         time.Minute,
			Handler:     longJob(cfg.Steps, cfg.Tick),
		},
		{
			Name:        "commit",
			Description: fmt.Sprintf("Commit a payment. Not cancellable, and late: it works %v whatever the caller's deadline, then commits once per Idempotency-Key.", cfg.CommitAfter),
			Parameters:  json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"},"amount":{"type":"number"}},"required":["id","amount"]}`),
			Effect:      kit.Write,
			Cancellable: false,
			P50:         cfg.CommitAfter,
			P95:         cfg.CommitAfter + 500*time.Millisecond,
			Max:         time.Minute,
			Handler:     commit(cfg.CommitAfter, &commits),
		},
		{
			Name:        "stuck",
			Description: "Never answers: its stream carries only keepalive comments until its deadline.",
			Effect:      kit.Read,
			Cancellable: true,
			P50:         100 * time.Millisecond,
			P95:         time.Second,
			Max:         10 * time.Minute,
			Handler:     stuck,
		},
		{
			Name:        "stale",
			Description: "Never answers: it reports the same progress units over and over, which the kit sends once.",
			Effect:      kit.Read,
			Cancellable: true,
			P50:         100 * time.Millisecond,
			P95:         time.Second,
			Max:         10 * time.Minute,
			Handler:     stale(cfg.Tick),
		},
	}
}

func decode(call *kit.Call, v any) error {
	if err := json.Unmarshal(call.Args, v); err != nil {
		return &kit.Error{Message: fmt.Sprintf("%s: bad arguments: %v", call.Tool, err)}
	}
	return nil
}

type hit struct {
	Title string  `json:"title"`
	URL   string  `json:"url"`
	Score float64 `json:"score"`
}

func remoteSearch(ctx context.Context, call *kit.Call) (any, error) {
	var args struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if err := decode(call, &args); err != nil {
		return nil, err
	}
	q := strings.TrimSpace(args.Query)
	if q == "" {
		return nil, &kit.Error{Message: "search: query must not be empty"}
	}
	limit := args.Limit
	if limit <= 0 {
		limit = 3
	}
	limit = min(limit, 10)
	slug := strings.Join(strings.Fields(strings.ToLower(q)), "-")
	hits := make([]hit, limit)
	for i := range hits {
		h := fnv.New32a()
		fmt.Fprintf(h, "%s#%d", q, i)
		// Scores fall with rank so the order is the relevance order.
		hits[i] = hit{
			Title: fmt.Sprintf("%s (%d)", q, i+1),
			URL:   fmt.Sprintf("https://docs.example/%s/%d", slug, i+1),
			Score: float64(100-10*i-int(h.Sum32()%10)) / 100,
		}
	}
	return map[string]any{"query": q, "results": hits}, nil
}

func remoteFetch(ctx context.Context, call *kit.Call) (any, error) {
	var args struct {
		URL string `json:"url"`
	}
	if err := decode(call, &args); err != nil {
		return nil, err
	}
	if call.Attempt == 1 {
		// The first attempt hangs like a stuck upstream; its context's end
		// makes the failure retryable, so the kit runs the retry.
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}
	return map[string]any{"url": args.URL, "status": 200, "attempt": call.Attempt, "body": "<html>" + args.URL + "</html>"}, nil
}

func longJob(steps int, tick time.Duration) kit.Handler {
	return func(ctx context.Context, call *kit.Call) (any, error) {
		t := time.NewTicker(tick)
		defer t.Stop()
		for i := 1; i <= steps; i++ {
			select {
			case <-t.C:
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
			call.Progress(int64(i), int64(steps), fmt.Sprintf("step %d of %d", i, steps))
		}
		return map[string]int{"steps": steps}, nil
	}
}

func commit(after time.Duration, commits *atomic.Int64) kit.Handler {
	return func(ctx context.Context, call *kit.Call) (any, error) {
		var args struct {
			ID     string  `json:"id"`
			Amount float64 `json:"amount"`
		}
		if err := decode(call, &args); err != nil {
			return nil, err
		}
		// A commit that has begun runs to its end, deadline or not: that is
		// what makes it a late commit, which the caller's reconciliation
		// finds done by its key. The kit runs it once per key.
		time.Sleep(after)
		return map[string]any{"id": args.ID, "amount": args.Amount, "commit": commits.Add(1)}, nil
	}
}

func stuck(ctx context.Context, call *kit.Call) (any, error) {
	<-ctx.Done()
	return nil, context.Cause(ctx)
}

func stale(tick time.Duration) kit.Handler {
	return func(ctx context.Context, call *kit.Call) (any, error) {
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			call.Progress(1, 0, "still working")
			select {
			case <-t.C:
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}
	}
}
