package battery

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/mcp"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

// mcpServerName is the tool server's name in Glidepath's MCP config: its
// tools are offered as mcp__tools__NAME.
const mcpServerName = "tools"

// subAgentName is the sub-agent tool of an Agent scenario.
const subAgentName = "researcher"

// mcpConnectCeiling bounds connecting to the MCP server, a setup step.
const mcpConnectCeiling = time.Second

// closeWithin bounds closing a run's tools after it returned.
const closeWithin = 5 * time.Second

// runGlidepath is system (c): harness.Run on one budget B, the model
// client against the sim, the tool as tools.Remote, or over MCP with
// tools/mcp, connected as a setup step of the run.
func runGlidepath(ctx context.Context, w *world, log *runLog) outcome {
	sc := w.sc
	est := budget.NewEstimates()
	if sc.modelProfile != nil {
		est.Kind(model.Kind).Warm(sc.modelProfile) // as a latency profile seeds it (harness run --profile)
	}
	b, err := budget.New(budget.Config{Total: sc.Budget, Estimates: est}) // the run's clock starts here
	if err != nil {
		return outcome{err: err}
	}
	mc, err := model.New(model.Config{BaseURL: w.sim.URL, HTTPClient: w.sim.Client(), Model: sim.ModelID, API: sc.API})
	if err != nil {
		return outcome{err: err}
	}
	reg := tools.NewRegistry(est)
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeWithin)
		defer cancel()
		reg.Close(cctx)
	}()
	switch {
	case sc.Agent:
		// The work goes to a child on a slice of this run's budget; the
		// child's registry is the Agent's, closed with it when reg closes.
		child := tools.NewRegistry(est)
		if err := child.Register(tools.Remote(sc.spec(), w.url(), w.client)); err != nil {
			return outcome{err: err}
		}
		agent := harness.NewAgent(tools.Spec{Name: subAgentName, Description: "Researches the task with its own tools.",
			Effect: tools.Read}, harness.Config{Model: mc, Tools: child})
		if err := reg.Register(agent); err != nil {
			return outcome{err: err}
		}
	case !sc.MCP:
		if err := reg.Register(tools.Remote(sc.spec(), w.url(), w.client)); err != nil {
			return outcome{err: err}
		}
	}
	cfg := harness.Config{
		Task:  sc.task,
		Quiet: sc.Quiet,
		Model: mc,
		Tools: reg,
		Sinks: []trace.Sink{&sink{est: est, log: log, b: b, ceiling: sc.ToolCeiling}},
	}
	s, rctx, err := harness.Start(ctx, b, cfg)
	if err != nil {
		return outcome{err: err}
	}
	if sc.MCP {
		var srv *mcp.Server
		err := s.Setup(rctx, "mcp "+mcpServerName, mcpConnectCeiling, func(ctx context.Context) error {
			var err error
			srv, err = mcp.Connect(ctx, mcpConfig(sc, w), mcp.Options{HTTPClient: w.client})
			if err != nil {
				return err
			}
			var errs []error
			for _, t := range srv.Tools() {
				errs = append(errs, reg.Register(t))
			}
			return errors.Join(errs...)
		})
		if srv != nil {
			defer func() {
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeWithin)
				defer cancel()
				srv.Close(cctx)
			}()
		}
		_ = err // a server that did not come up is the run's to land without: it is in the trace
	}
	res := s.Run(rctx)
	if err := s.Close(); err != nil {
		return outcome{err: err}
	}
	return outcome{
		answer:   res.Text(),
		labeled:  labeled(res),
		complete: res.Status == landing.Complete,
		stuck:    res.Cause == landing.CauseStuck,
		orphans:  res.Orphans,
	}
}

// labeled reports whether res is a labeled answer: complete, or partial
// with its boundary.
func labeled(res landing.Result) bool {
	switch res.Status {
	case landing.Complete:
		return true
	case landing.Partial:
		return res.Boundary != ""
	}
	return false
}

// mcpConfig is the MCP server entry Glidepath runs with: the tool server's
// /mcp, the tool's effect and ceiling as a tools file would say them.
func mcpConfig(sc *Scenario, w *world) tools.MCPServer {
	return tools.MCPServer{
		Name: mcpServerName,
		URL:  w.url() + "/mcp",
		Tools: map[string]tools.MCPTool{sc.tool.name: {
			Effect: tools.Effect(sc.tool.effect), Ceiling: sc.ToolCeiling, P50: sc.tool.p50, P95: sc.tool.p95,
		}},
	}
}

// sink reads a Glidepath run's records as they are made: it counts the
// work attempts started and those granted less than their kind's p50 as
// the estimates knew it when they started; the attempts that ended
// gave_up (a lease or the deadline) or quiet (the quiet clock), doomed
// either way, and of those the ones started below p50; the calls refused
// by a budget rule, with the lease they would have been granted; and the
// first attempt of the stalled part that the run cut.
//
// It is a trace.ContextSink, so that the run calls it on its own path, in
// seq order: a queued sink is handed records a moment later (by then the
// p50 an attempt was judged by may have moved), and can have records
// dropped for it at the run's end on a loaded machine (trace.FlushGrace),
// which would lose cut attempts from the count and fail the run with
// harness.ErrTrace.
type sink struct {
	est     *budget.Estimates
	log     *runLog
	b       *budget.Budget
	ceiling time.Duration // the tool's

	// mu guards below.
	mu       sync.Mutex
	below    map[attemptID]bool       // attempts started below their kind's p50
	reserves map[string]time.Duration // by run id: a sub-agent's child has a reserve of its own
}

type attemptID struct {
	step      string
	stepIndex int
	key       string
	attempt   int
}

// allowance is E of the attempt r starts, by the rule the run holds its
// quiet clock by ([watchdog.Expected.Allowance]), from what the run
// knows of the attempt's kind as it starts: the kind's p95 and its
// source, the tool's ceiling (the model client has none), the lease r
// was granted (in whole ms, as the trace has it). The battery states no
// silence and no --max-silence.
func (k *sink) allowance(r trace.Record) (time.Duration, watchdog.Source) {
	ceiling := k.ceiling
	if r.Step == model.Kind {
		ceiling = 0
	}
	return k.est.Kind(r.Step).Expected().Allowance(ceiling, time.Duration(r.GrantedMs)*time.Millisecond)
}

// AttemptContext gives the attempt ctx as it is: the sink only counts.
func (k *sink) AttemptContext(ctx context.Context, _ trace.Record) context.Context { return ctx }

func (k *sink) Record(r trace.Record) error {
	switch r.Event {
	case trace.RunStart:
		// A child's budget is a slice with the default reserve of its own
		// total (budget.Budget.Child); the run's own is k.b's.
		if r.ParentRunID != "" {
			k.mu.Lock()
			if k.reserves == nil {
				k.reserves = map[string]time.Duration{}
			}
			k.reserves[r.RunID] = budget.DefaultReserve(time.Duration(r.TotalMs) * time.Millisecond)
			k.mu.Unlock()
		}
	case trace.AttemptStart:
		if r.Step == "setup" || (r.Step == "model" && r.StepIndex == 0) {
			return nil // setup and landing leases are not work leases
		}
		p50 := k.est.Kind(r.Step).P50()
		k.mu.Lock()
		if k.below == nil {
			k.below = map[attemptID]bool{}
		}
		below := r.GrantedMs < p50.Milliseconds() // whole ms, as the trace has it
		k.below[attemptID{step: r.Step, stepIndex: r.StepIndex, key: r.Key, attempt: r.Attempt}] = below
		k.mu.Unlock()
		k.log.started(below)
		e, src := k.allowance(r)
		k.log.allow(r.Step, e, src)
	case trace.AttemptEnd:
		switch r.Outcome {
		case trace.GaveUp, trace.Quiet:
			k.mu.Lock()
			below := k.below[attemptID{step: r.Step, stepIndex: r.StepIndex, key: r.Key, attempt: r.Attempt}]
			k.mu.Unlock()
			// The stamp, not now: the record was made when the attempt
			// ended, a moment before it reaches a sink.
			k.log.cut(r.Step, below, true, r.TS)
		}
	case trace.Refused:
		if r.Reason == "gated" {
			return nil // the ladder's, not a budget rule's: no lease was in question
		}
		// What the lease rule would have granted (SPEC §2), from the
		// remaining time stamped on the record.
		k.mu.Lock()
		reserve, child := k.reserves[r.RunID]
		k.mu.Unlock()
		if !child {
			reserve = k.b.Reserve()
		}
		left := time.Duration(r.RemainingMs)*time.Millisecond - reserve - k.b.Floor()
		k.log.refused(r.Step, max(0, min(k.ceiling, left)))
	}
	return nil
}
