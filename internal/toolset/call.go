package toolset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/internal/redact"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
)

// The errors of a call a host makes on a Set away from a run's own
// [tools.Registry.Call] (a Temporal activity). Their words are not
// package-prefixed: they reach the model and a workflow's records as
// they were before the set made them (histories replay).
var (
	// ErrUnknown is matched by the error of a name the set has no tool for.
	ErrUnknown = errors.New("unknown tool")

	// ErrNoStatus is the error of a status asked of a tool that is no
	// [cancel.StatusReader].
	ErrNoStatus = errors.New("the tool cannot be asked how a call went")
)

// Checked returns the tool of s named name and args as its own registry
// checks and compacts them ([tools.Registry.Validate]): a sub-agent's tool
// is never checked against its parent's of the same name (issue 25). A
// name s has no tool for is an [ErrUnknown]; arguments that do not fit a
// [*tools.ArgumentsError].
func (s *Set) Checked(name string, args json.RawMessage) (tools.Tool, json.RawMessage, error) {
	t, _, ok := s.Lookup(name)
	if !ok {
		return nil, nil, fmt.Errorf("%w %q", ErrUnknown, name)
	}
	args, err := s.Registry.Validate(name, args)
	if err != nil {
		return nil, nil, err
	}
	return t, args, nil
}

// Redact is msg, what a tool said, with s's secrets and more (the model's
// key) taken out, for a record or the model (issue 25).
func (s *Set) Redact(msg string, more ...string) string {
	return redact.Secrets(msg, slices.Concat(more, s.Secrets())...)
}

// StatusOf asks the tool of s named name how the call with key went,
// without sending it again; it blocks until the tool answers or ctx ends.
// A name s has no tool for is an [ErrUnknown]; a tool that cannot be asked
// an [ErrNoStatus].
func (s *Set) StatusOf(ctx context.Context, name string, key cancel.Key) (cancel.Status, error) {
	_, impl, ok := s.Lookup(name)
	if !ok {
		return cancel.Status{}, fmt.Errorf("%w %q", ErrUnknown, name)
	}
	sr, ok := impl.(cancel.StatusReader)
	if !ok {
		return cancel.Status{}, ErrNoStatus
	}
	return sr.Status(ctx, key)
}

// CancelOf asks the tool of s named name to stop the call with key, and
// returns how the cancel stands, as its cancel_sent record says it
// ([tools.CancelStateOf]): failed when s has no such tool or the tool
// cannot be cancelled. It blocks as the tool's Cancel does.
func (s *Set) CancelOf(ctx context.Context, name string, key cancel.Key) trace.CancelState {
	_, impl, ok := s.Lookup(name)
	if !ok {
		return trace.CancelStateFailed
	}
	c, ok := impl.(cancel.Canceller)
	if !ok {
		return trace.CancelStateFailed
	}
	return tools.CancelStateOf(c.Cancel(ctx, key))
}
