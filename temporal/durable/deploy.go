package durable

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// buildPrefix starts every build ID of [BuildID].
const buildPrefix = "rules-"

// BuildID is the Worker Deployment build ID of a worker whose workflow
// runs rules v: "rules-10". Two binaries with the same rules are one build
// to Temporal, since each replays the other's runs; a change of the rules
// is a new build (rules.go).
func BuildID(v workflow.Version) string { return buildPrefix + strconv.Itoa(int(v)) }

// rulesOf reads a build ID of [BuildID]; ok is false for any other.
func rulesOf(buildID string) (v workflow.Version, ok bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(buildID, buildPrefix))
	if err != nil || !strings.HasPrefix(buildID, buildPrefix) {
		return 0, false
	}
	return workflow.Version(n), true
}

// DeploymentName is the Worker Deployment of the workers of task queue
// queue: the queue's name, with the characters a deployment's name
// cannot hold ('.' and ':') made '-'. One deployment a queue, so that
// promoting a build of one queue never asks about the queues of another
// toolset.
func DeploymentName(queue string) string {
	return strings.NewReplacer(".", "-", ":", "-").Replace(queue)
}

// Deployment returns o with this build's Worker Deployment version on
// task queue queue ([DeploymentName], [BuildID] of [RulesVersion]) and
// every run pinned to it: a run's workflow tasks go only to workers of
// the build that started it, never to a build that cannot replay it.
// New runs go to the deployment's current version ([Promote]).
func Deployment(o worker.Options, queue string) worker.Options {
	o.DeploymentOptions = worker.DeploymentOptions{
		UseVersioning:             true,
		Version:                   Version(queue),
		DefaultVersioningBehavior: workflow.VersioningBehaviorPinned,
	}
	return o
}

// Version is this build's Worker Deployment version on task queue queue.
func Version(queue string) worker.WorkerDeploymentVersion {
	return worker.WorkerDeploymentVersion{DeploymentName: DeploymentName(queue), BuildID: BuildID(RulesVersion)}
}

// PromoteWithin bounds how long [Promote] waits for the server to know a
// worker that has just started polling.
const PromoteWithin = 30 * time.Second

// ErrNewerBuild is matched by [Promote]'s error when the deployment's
// current version runs newer rules than v: new runs stay with it.
var ErrNewerBuild = errors.New("durable: a newer build is current")

// Promote makes v the current version of its deployment, so that new runs
// go to it, when the deployment has no current version, one of older
// rules, or one whose build ID [BuildID] did not name; it leaves a current version of the same rules as it is, and one
// of newer rules too (with [ErrNewerBuild]): an old worker started again
// serves the runs pinned to its build, not new ones. A worker of v must
// be polling: the server refuses to make current a version it has not
// seen poll, and Promote asks again until it has, within
// [PromoteWithin].
func Promote(ctx context.Context, c client.Client, v worker.WorkerDeploymentVersion) error {
	ctx, cancel := context.WithTimeout(ctx, PromoteWithin)
	defer cancel()
	h := c.WorkerDeploymentClient().GetHandle(v.DeploymentName)
	for {
		err := promoteOnce(ctx, h, v)
		switch {
		case err == nil || errors.Is(err, ErrNewerBuild):
			return err
		case !notYet(err):
			return fmt.Errorf("durable: %s of %s was not made current: %w", v.BuildID, v.DeploymentName, err)
		}
		t := time.NewTimer(200 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("durable: %s of %s was not made current within %s: %w", v.BuildID, v.DeploymentName, PromoteWithin, err)
		case <-t.C:
		}
	}
}

// promoteOnce is one try of [Promote].
func promoteOnce(ctx context.Context, h client.WorkerDeploymentHandle, v worker.WorkerDeploymentVersion) error {
	d, err := h.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	if err != nil {
		return err
	}
	if cur := d.Info.RoutingConfig.CurrentVersion; cur != nil {
		have, ok := rulesOf(cur.BuildID)
		want, _ := rulesOf(v.BuildID)
		switch {
		case cur.BuildID == v.BuildID:
			return nil
		case ok && have > want:
			return fmt.Errorf("%w: %s of %s is current, this worker is %s: it serves the runs pinned to it only", ErrNewerBuild, cur.BuildID, v.DeploymentName, v.BuildID)
		}
	}
	_, err = h.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: v.BuildID, ConflictToken: d.ConflictToken})
	return err
}

// notYet reports whether err says that the server does not know the
// deployment or its version yet, or that another changed it meanwhile: a
// worker's first polls register both, a little after it starts.
func notYet(err error) bool {
	_, notFound := errors.AsType[*serviceerror.NotFound](err)
	_, precondition := errors.AsType[*serviceerror.FailedPrecondition](err)
	return notFound || precondition
}
