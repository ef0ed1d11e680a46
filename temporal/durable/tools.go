package durable

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/internal/toolset"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/demo"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// ErrUnsupported is matched by the error of a tools file that asks for what
// a worker cannot run: MCP servers, a sub-agent on a model of its own.
var ErrUnsupported = errors.New("not supported on Temporal")

// A Toolset is the tools a worker runs, loaded as `harness run --tools`
// loads them ([toolset.Load]); a run uses the set of its Input.Toolset.
// A nil Toolset has no tools.
type Toolset toolset.Set

// A Fetch is a fetch of a tool server's manifest made when the worker
// loaded its tools file, which a run records as a setup attempt.
type Fetch = toolset.Fetch

// LoadTools reads a tools file as `harness run --tools` does (SPEC §5), with the demo's builtins,
// and resolves its url entries within ctx. client nil: one with no Timeout, as leases bound each request.
func LoadTools(ctx context.Context, path string, client *http.Client) (*Toolset, error) {
	builtins := demo.Builtins() // one instance: a builtin's status is its own
	cfg, err := tools.LoadConfig(path, builtins)
	if err == nil {
		err = unsupported(cfg)
	}
	if err != nil {
		return nil, err
	}
	return (*Toolset)(toolset.Load(ctx, cfg, toolset.Options{Client: client, Builtins: builtins})), nil
}

// unsupported is what of cfg, or of its sub-agents' files, a worker cannot run.
func unsupported(cfg *tools.Config) error {
	switch {
	case cfg == nil:
		return nil
	case len(cfg.MCPServers) > 0:
		return fmt.Errorf("%s: mcpServers: %w: an MCP session lives in one process, and a run's calls go to whichever worker "+
			"takes them; serve those tools from a tool server (package kit, or harness serve) and name it by url", cfg.File, ErrUnsupported)
	}
	for _, e := range cfg.Entries {
		if e.Agent == nil {
			continue
		} else if e.Agent.Model != "" {
			return fmt.Errorf("%s: %s: model %s: %w: a worker runs one model, its own (--model); leave the agent's model out",
				cfg.File, e.Name, e.Agent.Model, ErrUnsupported)
		} else if e.Agent.API != "" {
			return fmt.Errorf("%s: %s: api %s: %w: a worker speaks one API to its model, its own (--api); leave the agent's api out",
				cfg.File, e.Name, e.Agent.API, ErrUnsupported)
		} else if err := unsupported(e.Agent.Tools); err != nil {
			return fmt.Errorf("agent %s: %w", e.Name, err)
		}
	}
	return nil
}

// A Fingerprint identifies a worker's tools file ([toolset.Fingerprint]):
// a run records its worker's at setup, and a worker whose tools have
// another refuses the run's tool steps (ToolList).
type Fingerprint = toolset.Fingerprint

// Fingerprint is the fingerprint of the worker's whole tools file, its
// sub-agents' among them; a nil Toolset's is [toolset.None].
func (ts *Toolset) Fingerprint() Fingerprint { return ts.set().Fingerprint() }

// Close closes the tools, its sub-agents' among them, within ctx.
func (ts *Toolset) Close(ctx context.Context) error { return ts.set().Close(ctx) }

func (ts *Toolset) set() *toolset.Set        { return (*toolset.Set)(ts) }
func (ts *Toolset) sub(path string) *Toolset { return (*Toolset)(ts.set().Sub(path)) }

// specs are what the model is offered, in the tools file's order.
func (ts *Toolset) specs() []tools.Spec {
	return ts.set().Specs(func(e tools.Entry) tools.Spec { return harness.NewAgent(e.Spec(tools.Spec{}), harness.Config{}).Spec() })
}

// ToolInfos lists the worker's tools with their capabilities: the run's
// setup step (SPEC §3).
func (a *Activities) ToolInfos(ctx context.Context, path string) (ToolList, error) {
	ts := a.Tools.sub(path)
	if path != "" && ts == nil {
		return ToolList{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the worker has no sub-agent %q in its tools file", path), "NoToolset", nil)
	}
	// The whole file's fingerprint, a sub-agent's run's too: whichever
	// worker takes one of its steps must run the same file.
	out := ToolList{Unavailable: ts.set().Unavailable(), Fetches: ts.set().Fetches(), Fingerprint: a.Tools.Fingerprint()}
	for _, s := range ts.specs() {
		_, impl, _ := ts.set().Lookup(s.Name)
		_, canStatus := impl.(cancel.StatusReader)
		info := ToolInfo{Spec: s, CanCancel: s.Cancellable, CanStatus: canStatus}
		if sub := ts.set().Sub(s.Name); sub != nil && sub.Agent != nil {
			info = ToolInfo{Spec: s, Agent: &AgentInfo{Instructions: sub.Agent.Instructions, MaxSteps: sub.Agent.MaxSteps, Toolset: sub.Path}}
		}
		out.Tools = append(out.Tools, info)
	}
	return out, nil
}

// Identity is the Temporal identity of a worker whose tools have the
// fingerprint fp: the SDK's default (pid@host), and the fingerprint's
// short form, so that [CheckQueue] can read it off the task queue's
// pollers.
func Identity(fp Fingerprint) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%d@%s@%s%s", os.Getpid(), host, identityMark, fp.Short())
}

// identityMark is what precedes the fingerprint in a worker's identity.
const identityMark = "toolset="

// fingerprintOf is the short fingerprint an identity carries; false when
// it carries none (a worker of a build before fingerprints, or no
// Glidepath worker).
func fingerprintOf(identity string) (string, bool) {
	_, fp, ok := strings.Cut(identity, identityMark)
	return fp[:min(len(fp), toolset.ShortLen)], ok
}

// LivePoller is how recently a worker must have polled a task queue for
// [CheckQueue] to count it. A live worker polls again at least once a
// minute (a long poll's end); a worker that died stays listed by the
// server for minutes, and counts until this has passed since its last poll.
const LivePoller = 90 * time.Second

// ErrOtherToolset is matched by a [QueueError].
var ErrOtherToolset = errors.New("another toolset")

// A QueueError is a worker that may not serve a task queue: a live
// worker of it runs another toolset.
type QueueError struct {
	Queue  string
	Own    Fingerprint
	Others []string // the other workers' identities, each with its toolset
}

func (e *QueueError) Error() string {
	return fmt.Sprintf("task queue %q is served by workers with %v: %s; this worker's is %s. Every worker of a task queue must run the same tools file "+
		"(the same tools, each with the same effect and where it runs: builtin, url, sub-agent's tools), or none at all on each: "+
		"start this one with their tools file or on another --task-queue (a worker that stopped counts for %s after its last poll)",
		e.Queue, ErrOtherToolset, strings.Join(e.Others, ", "), e.Own.Label(), LivePoller)
}

func (e *QueueError) Unwrap() error { return ErrOtherToolset }

// CheckQueue asks the server who polls queue (its workflow and activity
// tasks) and returns a [*QueueError] when a poller seen within
// [LivePoller] runs a toolset other than own, or states none: its runs'
// calls could come to this worker, with another idea of their tools.
func CheckQueue(ctx context.Context, c client.Client, queue string, own Fingerprint) error {
	var others []string
	seen := map[string]bool{}
	for _, kind := range []enumspb.TaskQueueType{enumspb.TASK_QUEUE_TYPE_WORKFLOW, enumspb.TASK_QUEUE_TYPE_ACTIVITY} {
		resp, err := c.DescribeTaskQueue(ctx, queue, kind)
		if err != nil {
			return fmt.Errorf("task queue %q: who polls it cannot be read: %w", queue, err)
		}
		for _, p := range resp.GetPollers() {
			id := p.GetIdentity()
			if seen[id] || time.Since(p.GetLastAccessTime().AsTime()) > LivePoller {
				continue
			}
			seen[id] = true
			switch fp, ok := fingerprintOf(id); {
			case !ok:
				others = append(others, fmt.Sprintf("%s (no toolset stated: another build)", id))
			case fp != own.Short():
				others = append(others, fmt.Sprintf("%s (toolset %s)", id, Fingerprint(fp).Label()))
			}
		}
	}
	if len(others) > 0 {
		return &QueueError{Queue: queue, Own: own, Others: others}
	}
	return nil
}
