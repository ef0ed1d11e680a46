package durable

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/glidepath/glidepath/landing"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// The custom search attributes a run keeps up to date, so that
// `temporal workflow list --query 'GlidepathStatus = "partial"'` finds it
// (issue 26). They hold words of the run's rules and its deadline only:
// search attributes are not encoded by a payload codec, so no key, task,
// prompt or tool output ever goes in them.
var (
	// StatusAttribute is the run's status: running, then the result's
	// (complete, partial).
	StatusAttribute = temporal.NewSearchAttributeKeyKeyword("GlidepathStatus")
	// CauseAttribute is the result's cause (budget, quiet, cancelled, …),
	// set when the run ends.
	CauseAttribute = temporal.NewSearchAttributeKeyKeyword("GlidepathCause")
	// PhaseAttribute is the phase on record (explore, narrow, fit, land).
	PhaseAttribute = temporal.NewSearchAttributeKeyKeyword("GlidepathPhase")
	// DeadlineAttribute is the run's deadline D.
	DeadlineAttribute = temporal.NewSearchAttributeKeyTime("GlidepathDeadline")
)

// Running is the status a run's StatusAttribute holds until it ends.
const Running = "running"

// SearchAttributes are the names and types of the attributes a run keeps,
// as an operator registers them (AddSearchAttributes, or
// `temporal operator search-attribute create`).
func SearchAttributes() map[string]enumspb.IndexedValueType {
	return map[string]enumspb.IndexedValueType{
		StatusAttribute.GetName():   enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		CauseAttribute.GetName():    enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		PhaseAttribute.GetName():    enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		DeadlineAttribute.GetName(): enumspb.INDEXED_VALUE_TYPE_DATETIME,
	}
}

// ErrSearchAttribute is matched by the error of an attribute registered
// in a namespace with another type than a run's.
var ErrSearchAttribute = errors.New("durable: a search attribute of another type")

// RegisterSearchAttributes adds to namespace ns those of
// [SearchAttributes] it lacks, with the operator service, which asks for
// the namespace's admin role. It is `harness-temporal dev`'s, and a
// test's; a deployment registers them once, by hand or in its own setup.
func RegisterSearchAttributes(ctx context.Context, c client.Client, ns string) error {
	missing, err := missingAttributes(ctx, c, ns)
	if err != nil || len(missing) == 0 {
		return err
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: ns, SearchAttributes: missing})
	if err != nil {
		return fmt.Errorf("durable: registering the search attributes in %s: %w", ns, err)
	}
	return nil
}

// missingAttributes are those of [SearchAttributes] namespace ns has not
// registered; an error wraps [ErrSearchAttribute] when one is registered
// with another type.
func missingAttributes(ctx context.Context, c client.Client, ns string) (map[string]enumspb.IndexedValueType, error) {
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	if err != nil {
		return nil, fmt.Errorf("durable: listing the search attributes of %s: %w", ns, err)
	}
	missing := SearchAttributes()
	for name, want := range SearchAttributes() {
		got, ok := resp.GetCustomAttributes()[name]
		if !ok {
			continue
		}
		if got != want {
			return nil, fmt.Errorf("%w: %s is a %v in %s, a run's is a %v", ErrSearchAttribute, name, got, ns, want)
		}
		delete(missing, name)
	}
	return missing, nil
}

// searchCheck bounds the run's read of its namespace's attributes: a
// server that does not answer within it leaves the run unlisted, not
// stalled. A tenth of the budget, when that is shorter.
const searchCheck = time.Second

// findable reports whether the worker's namespace has every one of
// [SearchAttributes], with its type: a local activity, so that the
// answer is the run's, recorded once in its history (a marker) and read
// back on replay, whatever the namespace says by then. It needs the
// namespace's read role only (ListSearchAttributes).
func findable(ctx context.Context) (bool, error) {
	missing, err := missingAttributes(ctx, activity.GetClient(ctx), activity.GetInfo(ctx).WorkflowNamespace)
	return err == nil && len(missing) == 0, err
}

// startSearch reads once whether the run's namespace has its attributes,
// and, if it has, sets them for a run that starts: running, its phase,
// its deadline. A namespace without them is not an error: the server
// fails every workflow task that upserts an attribute it does not know,
// so a run there upserts nothing, and is found by its ID only.
func (r *run) startSearch(ctx workflow.Context) {
	lease := min(searchCheck, r.frame.Total()/10)
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: lease, RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
	if err := workflow.ExecuteLocalActivity(lctx, findable).Get(ctx, &r.findable); err != nil {
		r.findable = false
		workflow.GetLogger(ctx).Warn("durable: the run keeps no search attributes", "error", err)
		return
	}
	r.upsert(ctx, StatusAttribute.ValueSet(Running), PhaseAttribute.ValueSet(r.frame.Phase().String()),
		DeadlineAttribute.ValueSet(r.frame.Start().Add(r.frame.Total())))
}

// searchPhase sets the phase a phase record moved to: one upsert, so one
// history event, per change of phase.
func (r *run) searchPhase(ctx workflow.Context, to string) {
	r.upsert(ctx, PhaseAttribute.ValueSet(to))
}

// endSearch sets the result's status and cause.
func (r *run) endSearch(ctx workflow.Context, res landing.Result) {
	u := []temporal.SearchAttributeUpdate{StatusAttribute.ValueSet(string(res.Status))}
	if res.Cause != "" {
		u = append(u, CauseAttribute.ValueSet(string(res.Cause)))
	}
	r.upsert(ctx, u...)
}

// upsert sets the attributes of u when the namespace has them. Upserting
// attributes the namespace knows cannot fail in the workflow: an error is
// a bug.
func (r *run) upsert(ctx workflow.Context, u ...temporal.SearchAttributeUpdate) {
	if !r.findable {
		return
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, u...); err != nil {
		panic(err)
	}
}
