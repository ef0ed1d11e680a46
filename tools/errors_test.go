package tools

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/trace"
)

func TestErrorsReadAsSentencesAndMatchTheirSentinels(t *testing.T) {
	cause := errors.New("boom")
	cases := []struct {
		err     error
		want    string
		is      error
		unwraps error
	}{
		{&SpecError{Tool: "a", Field: "name", Err: ErrDuplicate}, `tools: tool "a": name: tools: name already registered`, ErrBadSpec, ErrDuplicate},
		{&ArgumentsError{Tool: "a", Err: cause}, `invalid arguments for tool "a": boom`, ErrInvalidArguments, cause},
		{&trace.AttemptError{Step: "tool:a", Attempt: 2, Outcome: trace.UpstreamError, Status: 503, Err: cause}, "tool:a: attempt 2: upstream_error (status 503): boom", trace.ErrFailed, cause},
		{&trace.AttemptError{Step: "tool:a", Attempt: 1, Outcome: trace.Quiet, Err: cause}, "tool:a: attempt 1: quiet: boom", trace.ErrGaveUp, cause},
		{&trace.GaveUpError{Step: "tool:a", Delay: budget.Delay{Sleep: time.Minute, Reason: budget.RetryAfterExceedsBudget}, Last: cause}, "tool:a: gave up: retry_after_exceeds_budget (sleep 1m0s): boom", trace.ErrGaveUp, cause},
		{&OrphanError{Entry: cancel.Entry{Tool: "pay", IdempotencyKey: "gp_k"}, Err: cause}, "tools: pay call gp_k orphaned: boom (not journaled)", ErrOrphaned, cause},
		{&OrphanError{Entry: cancel.Entry{Tool: "pay", IdempotencyKey: "gp_k"}, Journaled: true, Err: cause}, "tools: pay call gp_k orphaned: boom", ErrOrphaned, cause},
		{&ManifestError{URL: "http://x", Tool: "a", Err: cause}, `tools: manifest of http://x: tool "a": boom`, ErrManifest, cause},
		{&ManifestError{URL: "http://x", Err: cause}, `tools: manifest of http://x: boom`, ErrManifest, cause},
		{&ConfigError{File: "t.yaml", Line: 3, Field: "tools[0].p50", Value: "x", Err: cause}, `tools: t.yaml:3: tools[0].p50 "x": boom`, ErrConfig, cause},
		{&ConfigError{File: "t.yaml", Err: cause}, `tools: t.yaml: boom`, ErrConfig, cause},
		{&PanicError{Value: "x"}, "tools: panic: x", nil, nil},
		{&ToolError{Message: "disk full"}, "disk full", nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
			if tc.is != nil && !errors.Is(tc.err, tc.is) {
				t.Errorf("does not match %v", tc.is)
			}
			if tc.unwraps != nil && !errors.Is(tc.err, tc.unwraps) {
				t.Errorf("does not unwrap to %v", tc.unwraps)
			}
		})
	}
}

func TestContentIsWhatTheModelReads(t *testing.T) {
	cases := []struct {
		res  Result
		want string
	}{
		{Result{Output: []byte(`{"a":1}`)}, `{"a":1}`},
		{Result{Output: []byte(`"abc"`), CutShort: true}, "\"abc\"\n[output cut short]"},
		// The error is a sentence of its own before the output (issue 18).
		{Result{Err: "t: no answer within its ceiling of 1s; it was cancelled", Output: []byte(`"ab"`), CutShort: true},
			"error: t: no answer within its ceiling of 1s; it was cancelled.\nOutput before the cut: \"ab\""},
		{Result{Err: "t: failed?", Output: []byte(`"ab"`), CutShort: true}, "error: t: failed?\nOutput before the cut: \"ab\""},
		// A subprocess that said nothing before its cut has no output to show.
		{Result{Err: "t: no answer within its ceiling of 1s", Output: []byte(`""`), CutShort: true}, "error: t: no answer within its ceiling of 1s"},
		{Result{Err: "not started: not enough time"}, "error: not started: not enough time"},
	}
	for _, tc := range cases {
		if got := tc.res.Content(); got != tc.want {
			t.Errorf("Content() = %q, want %q", got, tc.want)
		}
	}
}

func TestAWriteNeverReceivedWithNoAttemptsLeftFails(t *testing.T) {
	s := &toolServer{post: hang}
	srv := startServer(t, s)
	spec := Spec{Name: "pay", Effect: Write, Ceiling: 100 * time.Millisecond, MaxAttempts: 1}
	reg := mustRegister(t, Remote(spec, srv.URL, srv.Client()))
	res := reg.Call(context.Background(), &Run{Budget: newBudget(t, time.Minute)}, "pay", nil)
	posts, asks, _ := s.got()
	if len(posts) != 1 || len(asks) != 1 || res.State != "" || res.Outcome != trace.GaveUp {
		t.Errorf("%d POSTs, %d asks, result %+v", len(posts), len(asks), res)
	}
	if want := "pay: no answer within its ceiling of 100ms; it never reached the tool, and no attempts are left"; res.Err != want {
		t.Errorf("Err %q, want %q", res.Err, want)
	}
}
