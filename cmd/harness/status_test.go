package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/glidepath/glidepath/trace"
)

func TestTheStatusLineFollowsTheRunsRecords(t *testing.T) {
	var out bytes.Buffer
	line := newStatusLine(&out, "always")
	frames := []struct {
		rec  trace.Record
		want string
	}{
		{trace.Record{Event: trace.RunStart, TotalMs: 20000, Phase: "explore"}, "0s of 20s spent · explore · step 0 · -"},
		{trace.Record{Event: trace.AttemptStart, Step: "model", StepIndex: 1, ElapsedMs: 12, Phase: "explore"},
			"0s of 20s spent · explore · step 1 · model"},
		{trace.Record{Event: trace.AttemptEnd, Step: "model", StepIndex: 1, ElapsedMs: 900, Phase: "explore"},
			"900ms of 20s spent · explore · step 1 · -"},
		{trace.Record{Event: trace.AttemptStart, Step: "tool:search", StepIndex: 1, ElapsedMs: 901, Phase: "explore"},
			"900ms of 20s spent · explore · step 1 · tool:search"},
		{trace.Record{Event: trace.AttemptStart, Step: "tool:fetch", StepIndex: 1, ElapsedMs: 901, Phase: "explore"},
			"900ms of 20s spent · explore · step 1 · tool:search, tool:fetch"},
		{trace.Record{Event: trace.PhaseChange, ElapsedMs: 12000, Phase: "narrow"},
			"12s of 20s spent · narrow · step 1 · tool:search, tool:fetch"},
		{trace.Record{Event: trace.AttemptEnd, Step: "tool:search", StepIndex: 1, ElapsedMs: 12345, Phase: "narrow"},
			"12.3s of 20s spent · narrow · step 1 · tool:fetch"},
		// The landing call is not a step: the line keeps the last one.
		{trace.Record{Event: trace.AttemptStart, Step: "model", StepIndex: 0, ElapsedMs: 15000, Phase: "land"},
			"15s of 20s spent · land · step 1 · tool:fetch, model"},
	}
	for i, f := range frames {
		out.Reset()
		if err := line.Record(f.rec); err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimPrefix(out.String(), "\r\033[K"); got != f.want {
			t.Errorf("frame %d: %q, want %q", i+1, got, f.want)
		}
	}
	out.Reset()
	line.clear()
	if out.String() != "\r\033[K" {
		t.Errorf("clear wrote %q, want the line erased", out.String())
	}
}

func TestAStatusLineThatIsOffDrawsNothing(t *testing.T) {
	var out bytes.Buffer
	line := newStatusLine(&out, "auto") // a buffer is not a terminal
	line.Record(trace.Record{Event: trace.RunStart, TotalMs: 1000})
	line.clear()
	if out.Len() != 0 {
		t.Errorf("wrote %q", out.String())
	}
}
