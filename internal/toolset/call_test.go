package toolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/internal/toolset"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/kit"
	"github.com/glidepath/glidepath/trace"
)

// builtin is a local tool named name whose one argument, field, is required.
func builtin(name, field string) tools.Tool {
	params := json.RawMessage(`{"type":"object","properties":{"` + field + `":{"type":"string"}},"required":["` + field + `"]}`)
	return tools.Func(tools.Spec{Name: name, Effect: tools.Read, Parameters: params},
		func(context.Context, json.RawMessage, tools.Progress) (any, error) { return "ok", nil })
}

// A tool is found by name in its own set and its arguments checked by
// its own set's registry: a sub-agent's tool is not checked against its
// parent's of the same name.
func TestACheckedToolIsItsOwnSetsWithItsArgumentsCheckedThere(t *testing.T) {
	builtins := map[string]tools.Tool{"byQuery": builtin("byQuery", "query"), "byURL": builtin("byURL", "url")}
	s := load(t, builtins,
		[2]string{"top.yaml", "tools:\n  - name: search\n    builtin: byQuery\n" +
			"  - name: researcher\n    agent:\n      instructions: You research.\n      tools: child.yaml\n"},
		[2]string{"child.yaml", "tools:\n  - name: search\n    builtin: byURL\n"})

	isUnknown := func(err error) bool { return errors.Is(err, toolset.ErrUnknown) }
	isBadArgs := func(err error) bool { _, ok := errors.AsType[*tools.ArgumentsError](err); return ok }
	cases := []struct {
		name, set, tool, args string
		wantArgs              string
		wantErr               func(error) bool // nil: none
		wantMsg               string
	}{
		{name: "the parent's search takes a query, compacted", tool: "search", args: `{ "query": "x" }`, wantArgs: `{"query":"x"}`},
		{name: "the sub-agent's search takes a url", set: "researcher", tool: "search", args: `{"url":"u"}`, wantArgs: `{"url":"u"}`},
		{name: "the parent's search refuses a url", tool: "search", args: `{"url":"u"}`, wantErr: isBadArgs},
		{name: "a name the set has no tool for is unknown, in the workflow's words", tool: "nope", args: `{}`,
			wantErr: isUnknown, wantMsg: `unknown tool "nope"`},
		{name: "a sub-agent the worker has not is unknown", set: "nobody", tool: "search", args: `{}`, wantErr: isUnknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tool, args, err := s.Sub(tc.set).Checked(tc.tool, json.RawMessage(tc.args))
			switch {
			case tc.wantErr != nil:
				if !tc.wantErr(err) || (tc.wantMsg != "" && err.Error() != tc.wantMsg) {
					t.Errorf("error %v, not the one wanted %s", err, tc.wantMsg)
				}
			case err != nil:
				t.Errorf("error %v, want none", err)
			case tool.Spec().Name != tc.tool || string(args) != tc.wantArgs:
				t.Errorf("got %s %s, want %s %s", tool.Spec().Name, args, tc.tool, tc.wantArgs)
			}
		})
	}
}

// What a tool said is kept from records without the set's secrets, nor
// the other keys its host names.
func TestRedactTakesOutTheSetsSecretsAndTheHostsKeys(t *testing.T) {
	t.Setenv("TOOLSET_TEST_TOKEN", "settoken0123456789")
	s := load(t, nil, [2]string{"top.yaml", "tools:\n  - name: a\n    effect: read\n    command: [env]\n" +
		"    env: {K: \"${TOOLSET_TEST_TOKEN}\"}\n"})

	got := s.Redact("said settoken0123456789 and sk-model0123456789", "sk-model0123456789")
	if strings.Contains(got, "settoken") || strings.Contains(got, "sk-model") {
		t.Errorf("got %q, want both secrets redacted", got)
	}
	if got := (*toolset.Set)(nil).Redact("said key0123456789", "key0123456789"); got != "said [redacted]" {
		t.Errorf("a nil set redacted %q, want %q", got, "said [redacted]")
	}
}

// A remote tool is asked how a call went and told to stop it by its key,
// through its server's status and cancel endpoints.
func TestARemoteToolIsAskedAndCancelledByKey(t *testing.T) {
	started := make(chan struct{})
	var srv kit.Server
	err := srv.Register(kit.Tool{Name: "write", Effect: kit.Write, Cancellable: true, Max: time.Minute,
		Handler: func(ctx context.Context, call *kit.Call) (any, error) {
			if call.Key == "quick" {
				return "written", nil
			}
			close(started)
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(&srv)
	defer hs.Close()
	s := load(t, map[string]tools.Tool{"local": builtin("local", "q")},
		[2]string{"top.yaml", "tools:\n  - name: write\n    url: " + hs.URL + "\n  - name: local\n    builtin: local\n"})

	attempt := func(key string) tools.AttemptEnd {
		tool, args, err := s.Checked("write", json.RawMessage(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		lease := budget.Lease{Granted: 10 * time.Second, Remaining: 10 * time.Second, Deadline: time.Now().Add(10 * time.Second)}
		return tools.AttemptOnLease(t.Context(), lease, tool, &tools.Call{Key: cancel.Key(key), Args: args, N: 1})
	}
	if end := attempt("quick"); end.Err != nil {
		t.Fatalf("the quick write failed: %v", end.Err)
	}
	st, err := s.StatusOf(t.Context(), "write", "quick")
	if err != nil || st.State != cancel.Done || string(st.Output) != `"written"` {
		t.Errorf("status of the quick write: %+v, %v; want done with its output", st, err)
	}
	if st, err := s.StatusOf(t.Context(), "write", "never"); err != nil || st.State != cancel.NeverReceived {
		t.Errorf("status of a key never sent: %+v, %v; want never_received", st, err)
	}

	ended := make(chan tools.AttemptEnd, 1)
	go func() { ended <- attempt("slow") }()
	<-started
	if got := s.CancelOf(t.Context(), "write", "slow"); got != trace.CancelStateAccepted {
		t.Errorf("cancel of the running write: %s, want accepted", got)
	}
	<-ended
	if got := s.CancelOf(t.Context(), "write", "never"); got != trace.CancelStateUnknown {
		t.Errorf("cancel of a key never sent: %s, want unknown", got)
	}

	for _, name := range []string{"local", "nope"} {
		if got := s.CancelOf(t.Context(), name, "k"); got != trace.CancelStateFailed {
			t.Errorf("cancel of %s: %s, want failed", name, got)
		}
	}
	if _, err := s.StatusOf(t.Context(), "local", "k"); !errors.Is(err, toolset.ErrNoStatus) {
		t.Errorf("status of a local tool: %v, want ErrNoStatus", err)
	}
	if _, err := s.StatusOf(t.Context(), "nope", "k"); !errors.Is(err, toolset.ErrUnknown) || err.Error() != `unknown tool "nope"` {
		t.Errorf("status of an unknown tool: %v, want %q", err, `unknown tool "nope"`)
	}
}
