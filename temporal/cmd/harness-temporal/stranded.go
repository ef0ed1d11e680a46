package main

import (
	"context"
	"fmt"

	"github.com/glidepath/glidepath/temporal/durable"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// pinnedTo says, for the result of run id that the server ended unlanded,
// which build the run was pinned to (its Worker Deployment version, from
// DescribeWorkflowExecution's versioning info): the build whose workers
// must come back for its status to be read, since no other build replays
// a pinned run (docs/temporal.md, Deploying a new build). A run no worker ever took is
// pinned to none. "" when the server does not say.
func pinnedTo(ctx context.Context, cl client.Client, id, queue string) string {
	d, err := cl.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return ""
	}
	vi := d.GetWorkflowExecutionInfo().GetVersioningInfo()
	v := vi.GetDeploymentVersion()
	if v.GetBuildId() == "" || vi.GetBehavior() != enumspb.VERSIONING_BEHAVIOR_PINNED {
		return fmt.Sprintf("; no worker of task queue %q ever took it, so it was pinned to no build", queue)
	}
	return fmt.Sprintf("; it was pinned to build %s of deployment %s, and only a worker of that build replays it: bring one back to read its status "+
		"(this harness-temporal is build %s)", v.GetBuildId(), v.GetDeploymentName(), durable.BuildID(durable.RulesVersion))
}
