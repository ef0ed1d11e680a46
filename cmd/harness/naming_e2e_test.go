package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/sim"
)

// Issue 24, "Failures called by the wrong name": each failure is named
// once, in words about what happened, as a user sees it from the process.

// chatRequests counts the chat completion requests srv was sent.
func chatRequests(srv *sim.Server) int {
	n := 0
	for _, r := range srv.Requests() {
		if r.Completion > 0 {
			n++
		}
	}
	return n
}

// A model that sends only keepalives (examples/sim/keepalive.yaml), or
// streams an answer it never finishes, was told "no tool call had
// finished", with no tools at all, and was sent the landing call on the
// same endpoint.
func TestE2EAModelThatSendsOnlyKeepalivesOrNeverFinishesIsNamed(t *testing.T) {
	keepalive, err := sim.LoadScenario("../../examples/sim/keepalive.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		scenario *sim.Scenario
		says     []string // what the boundary says, on stdout
	}{
		{"examples/sim/keepalive.yaml: only keepalives", keepalive,
			[]string{"PARTIAL RESULT. Stopped at step 1: the model sent only keepalives for "}},
		{"a stream that never ends", &sim.Scenario{Rules: []sim.Rule{{ChunkGap: 100 * time.Millisecond, Answer: strings.Repeat("and so on ", 300)}}},
			[]string{"PARTIAL RESULT. Stopped at step 1: the model's answer was still streaming after ", "; it never finished."}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := sim.NewServer(tc.scenario)
			defer srv.Close()

			stdout, stderr, code := runHarness(t, []string{"OPENAI_API_KEY=sk-test"}, "run", "--budget", "5s", "--model", "gpt-4.1",
				"--base-url", srv.URL, "--profile", "off", "q")

			if code != exitPartial {
				t.Errorf("exit %d, want 3; stderr:\n%s", code, stderr)
			}
			for _, want := range tc.says {
				if !strings.Contains(stdout, want) {
					t.Errorf("stdout:\n%s\nwant it to say %q", stdout, want)
				}
			}
			if !strings.Contains(stdout, "summarized by the harness") {
				t.Errorf("stdout:\n%s\nwant the harness's summary: the model is not asked to land", stdout)
			}
			if strings.Contains(stdout+stderr, "tool call") {
				t.Errorf("a run with no tools speaks of tool calls:\n%s%s", stdout, stderr)
			}
			if n := chatRequests(srv); n != 1 {
				t.Errorf("%d chat requests, want 1: no landing call to the model that never answered", n)
			}
		})
	}
}

// A --base-url that answered a page, garbage or nothing was told "its
// answer ended before it was whole", asked three times, then asked to
// land.
func TestE2EABaseURLThatIsNotAModelServerIsNamedOnce(t *testing.T) {
	cases := []struct {
		name        string
		contentType string // "": none set; Go sniffs one from a body
		body        string
		answered    string
	}{
		{"an HTML page", "text/html; charset=utf-8", "<!doctype html><html><body><h1>Welcome to nginx!</h1></body></html>\n", "200 text/html"},
		{"garbage", "", "\x00\x01\x02\xff\xfe garbage", "200 application/octet-stream"},
		{"an empty body", "", "", "200 with an empty body"},
		{"JSON of the wrong shape", "application/json", `{"status":"ok","version":"1.2.3"}`, "200 application/json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var requests atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				if tc.contentType != "" {
					w.Header().Set("Content-Type", tc.contentType)
				}
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()

			stdout, stderr, code := runHarness(t, []string{"OPENAI_API_KEY=sk-test"}, "run", "--budget", "20s", "--json",
				"--model", "gpt-4.1", "--base-url", srv.URL+"/v1", "--profile", "off", "q")

			res := jsonResult(t, stdout)
			named := srv.URL + "/v1 is not an OpenAI-compatible model server: it answered " + tc.answered
			if code != exitPartial || res.Status != landing.Partial || res.Cause != landing.CauseUpstream {
				t.Errorf("exit %d, status %s, cause %s; want 3, partial, upstream", code, res.Status, res.Cause)
			}
			if want := "The model failed at step 1: " + named + "."; res.Boundary != want || !strings.Contains(stderr, "harness run: "+want) {
				t.Errorf("boundary %q\nstderr:\n%s\nwant %q in both", res.Boundary, stderr, want)
			}
			if strings.Contains(stdout+stderr, "ended before it was whole") {
				t.Errorf("it is called a stream cut short:\n%s%s", stdout, stderr)
			}
			if n := requests.Load(); n != 1 || res.Attempts != 1 {
				t.Errorf("%d requests, %d attempts; want 1: not retried, and no landing call to it", n, res.Attempts)
			}
		})
	}
}

// A run whose every tool call failed printed the model's answer as
// complete, exit 0.
func TestE2EARunWhoseEveryToolCallFailedIsPartial(t *testing.T) {
	cfg := writeFile(t, "tools.yaml", "tools:\n  - name: search\n    command: [sh, -c, 'echo index is down >&2; exit 1']\n    effect: read\n")

	stdout, stderr, code := runHarness(t, nil, "run", "--budget", "20s", "--json", "--tools", cfg, "--profile", "off", "find-cats")

	res := jsonResult(t, stdout)
	if code != exitPartial || res.Status != landing.Partial || res.Cause != landing.CauseToolsFailed {
		t.Fatalf("exit %d, status %s, cause %s; want 3, partial, tools_failed\nstderr: %s", code, res.Status, res.Cause, stderr)
	}
	if !strings.HasPrefix(res.Answer, "[sim]") || !strings.HasPrefix(res.Boundary, "Answered at step 2 without a tool's result: search failed") {
		t.Errorf("answer %q, boundary %q; want the model's answer kept, and the failed tool named", res.Answer, res.Boundary)
	}
	if want := "every tool call it made failed or never started (cause tools_failed)"; !strings.Contains(stderr, want) ||
		strings.Contains(stderr, "landed early") {
		t.Errorf("stderr:\n%s\nwant it to say %q, and not that the run landed early", stderr, want)
	}
}
