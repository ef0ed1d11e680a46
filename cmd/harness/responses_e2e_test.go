package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/trace"
)

// Issue 27 item 6: `harness run --api responses` runs the same run over
// the Responses API: the same answer and records as over Chat
// Completions, with the reasoning summary parts as the model call's
// progress.

func TestE2EHarnessRunAPIResponsesRunsTheDemo(t *testing.T) {
	cases := []struct {
		name  string
		model []string // --model, and where it is
		paths bool     // reports whether the sim's records say which path was used
	}{
		{"on the embedded simulated model", []string{"--model", "sim"}, false},
		{"on a sim served over HTTP", nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var srv *sim.Server
			args := tc.model
			if args == nil {
				srv = sim.NewServer(nil)
				defer srv.Close()
				args = []string{"--model", "gpt-5-mini", "--base-url", srv.URL}
			}
			path := filepath.Join(t.TempDir(), "trace.jsonl")
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), append(append([]string{"run", "--api", "responses", "--json", "--budget", "20s",
				"--tools", demoTools, "--profile", "off", "--trace", path}, args...), "find cats"),
				strings.NewReader(""), &stdout, &stderr)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			var res landing.Result
			if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
				t.Fatal(err)
			}
			if res.Status != landing.Complete || !strings.HasPrefix(res.Answer, `[sim] Answer to "find cats": search returned `) {
				t.Errorf("result %s %q, want the sim's answer from its tools", res.Status, res.Answer)
			}
			var finishes []string
			var progress []trace.Record
			for _, r := range readTrace(t, path) {
				switch {
				case r.Event == trace.AttemptEnd && r.Step == "model":
					finishes = append(finishes, r.FinishReason)
				case r.Event == trace.Progress && r.Step == "model":
					progress = append(progress, r)
				}
			}
			if got := strings.Join(finishes, " "); got != "tool_calls stop" {
				t.Errorf("model attempts finished %s, want tool_calls then stop", got)
			}
			if len(progress) != 2 || progress[0].Units != 1 || progress[1].Units != 2 {
				t.Errorf("model progress records %+v, want one a turn, units rising", progress)
			}
			if srv == nil {
				return
			}
			reqs := srv.Requests()
			for _, r := range reqs {
				if r.Path != "/v1/responses" {
					t.Errorf("request %d went to %s, want /v1/responses", r.Index, r.Path)
				}
			}
			// The second turn carried the first's reasoning item back.
			if len(reqs) != 2 || len(reqs[0].Reasoning) != 0 || len(reqs[1].Reasoning) != 1 ||
				!strings.HasPrefix(reqs[1].Reasoning[0], "rs_sim_") {
				t.Errorf("reasoning carried %v, want the first turn's item on the second", reasoningOf(reqs))
			}
		})
	}
}

func TestE2EAnErrorInTheResponsesStreamIsRetriedAsA429(t *testing.T) {
	srv := sim.NewServer(&sim.Scenario{Rules: []sim.Rule{{Request: 1, StreamError: "rate_limit_exceeded"}}})
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"run", "--api", "responses", "--budget", "20s", "--profile", "off", "--trace", path,
		"--model", "gpt-5-mini", "--base-url", srv.URL, "find cats"}, strings.NewReader(""), &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var got []string
	for _, r := range readTrace(t, path) {
		if r.Event == trace.AttemptEnd {
			got = append(got, string(r.Outcome))
		}
	}
	if strings.Join(got, " ") != "rate_limited ok" {
		t.Errorf("attempts ended %v, want rate_limited then ok", got)
	}
}

func TestHarnessRunRefusesAnAPIItDoesNotSpeak(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"run", "--api", "completions", "q"}, strings.NewReader(""), &stdout, &stderr)
	if code != exitUsage {
		t.Errorf("exit %d, want %d", code, exitUsage)
	}
	if want := `--api "completions": want chat or responses`; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
}

func reasoningOf(reqs []sim.Request) [][]string {
	var out [][]string
	for _, r := range reqs {
		out = append(out, r.Reasoning)
	}
	return out
}
