package trace_test

import (
	"bytes"
	"testing"

	"github.com/glidepath/glidepath/cost"
	"github.com/glidepath/glidepath/trace"
)

func TestAnAttemptsCachedAndReasoningTokensAreOnItsEndRecord(t *testing.T) {
	a := trace.Attempt{Step: "model", N: 1, Outcome: trace.OK, Finish: "length",
		Usage: trace.Usage{Input: 900, Cached: 640, Output: 128, Reasoning: 96, Total: 1028}}
	rec := trace.AttemptRecord(trace.AttemptEnd, 3, a)
	if rec.InputTokens != 900 || rec.CachedTokens != 640 || rec.OutputTokens != 128 || rec.ReasoningTokens != 96 ||
		rec.Tokens != 1028 || rec.FinishReason != "length" {
		t.Errorf("record %+v, want the attempt's usage and finish reason", rec)
	}
	line := trace.AppendJSON(nil, rec)
	want := `,"tokens":1028,"input_tokens":900,"output_tokens":128,"cached_tokens":640,"reasoning_tokens":96,"finish_reason":"length"`
	if !bytes.Contains(line, []byte(want)) {
		t.Errorf("line\n%s\nwant it to hold\n%s", line, want)
	}
}

func TestTokensNotReportedAreLeftOffTheRecord(t *testing.T) {
	line := trace.AppendJSON(nil, trace.AttemptRecord(trace.AttemptEnd, 1,
		trace.Attempt{Step: "model", N: 1, Outcome: trace.OK, Usage: trace.Usage{Input: 10, Output: 2, Total: 12}}))
	for _, field := range []string{`"cached_tokens"`, `"reasoning_tokens"`} {
		if bytes.Contains(line, []byte(field)) {
			t.Errorf("%s is zero but written: %s", field, line)
		}
	}
}

func TestAnAttemptsUsageIsPricedPartByPart(t *testing.T) {
	u := trace.Usage{Input: 900, Cached: 640, Output: 128, Reasoning: 96, Total: 1028}
	want := cost.Usage{Input: 900, Cached: 640, Output: 128, Reasoning: 96}
	if got := u.Cost(); got != want {
		t.Errorf("Cost() = %+v, want %+v", got, want)
	}
}
