package bench_test

import (
	"fmt"
	"time"

	"github.com/glidepath/glidepath/temporal/durable"
	"github.com/glidepath/glidepath/trace"
	"go.temporal.io/sdk/workflow"
)

// plainName is the name the plain workflow is registered under.
const plainName = "bench.plain"

// plainInput starts a plain run: the same task and system prompt as the
// harness's run, so that its activities carry the same payloads.
type plainInput struct {
	Task, System string
	Parallel     bool
}

// plainTimeout is the plain workflow's StartToCloseTimeout for every
// activity: a fixed per-call timeout, as a Temporal workflow without a
// budget has one.
const plainTimeout = 30 * time.Second

// plainWorkflow is the baseline of the overhead bench (SPEC §7's last
// bullet): a Temporal workflow written the plain way, making the same
// activity calls as durable.Workflow — durable's own ModelActivity and
// ToolActivity, with the same messages and arguments — and nothing else:
// no budget (a fixed StartToCloseTimeout per activity, Temporal's default
// retry policy), no ladder or budget note, no keys minted in a SideEffect
// (a key made of the workflow's ID and the call's number, which a Temporal
// workflow gets for free), no trace, no decisions on how a call failed.
// The tool calls of a turn run side by side, as Temporal futures.
func plainWorkflow(ctx workflow.Context, in plainInput) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: plainTimeout})
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	conv := []durable.Message{{Role: "system", Content: in.System}, {Role: "user", Content: in.Task}}
	calls := 0
	for {
		var reply durable.ModelReply
		req := durable.ModelRequest{Messages: conv, Tools: true, Parallel: in.Parallel}
		if err := workflow.ExecuteActivity(ctx, durable.ModelActivity, req).Get(ctx, &reply); err != nil {
			return "", err
		}
		if reply.Outcome != trace.OK {
			return "", fmt.Errorf("model: %s", reply.Failure)
		}
		if len(reply.ToolCalls) == 0 {
			return reply.Content, nil
		}
		conv = append(conv, durable.Message{Role: "assistant", Content: reply.Content, ToolCalls: reply.ToolCalls})
		futures := make([]workflow.Future, len(reply.ToolCalls))
		for i, tc := range reply.ToolCalls {
			calls++
			req := durable.ToolRequest{Tool: tc.Name, Key: fmt.Sprintf("%s-%d", id, calls), Args: tc.Arguments, Attempt: 1}
			futures[i] = workflow.ExecuteActivity(ctx, durable.ToolActivity, req)
		}
		for i, f := range futures {
			var tr durable.ToolReply
			if err := f.Get(ctx, &tr); err != nil {
				return "", err
			}
			content := string(tr.Output)
			if tr.Err != "" {
				content = "error: " + tr.Err
			}
			conv = append(conv, durable.Message{Role: "tool", Content: content, ToolCallID: reply.ToolCalls[i].ID})
		}
	}
}
