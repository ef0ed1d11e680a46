package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/trace"
)

// traceRun builds one run's records as the run loop's trace writer would
// have written them, at given milliseconds into a budget of total.
type traceRun struct {
	id            string
	total, landAt int64 // landing begins at landAt, where the reserve starts
	recs          []trace.Record
}

func newTraceRun(id string, total, reserve int64) *traceRun {
	r := &traceRun{id: id, total: total, landAt: total - reserve}
	return r.at(0, trace.Record{Event: trace.RunStart, TotalMs: total})
}

func (r *traceRun) at(ms int64, rec trace.Record) *traceRun {
	rec.TS = orphanTS.Add(time.Duration(ms) * time.Millisecond)
	rec.RunID, rec.Seq = r.id, int64(len(r.recs)+1)
	rec.ElapsedMs, rec.RemainingMs = ms, r.total-ms
	rec.Phase = "explore"
	if ms >= r.landAt {
		rec.Phase = "land"
	}
	r.recs = append(r.recs, rec)
	return r
}

// call is one attempt, from its start to its end.
func (r *traceRun) call(step string, index, attempt int, from, to int64, o trace.Outcome) *traceRun {
	a := trace.Record{Step: step, StepIndex: index, Attempt: attempt, ResendCount: attempt - 1, GrantedMs: r.landAt - from}
	if step != "model" {
		a.Key = "gp_" + r.id + "_" + step
	}
	start, end := a, a
	start.Event = trace.AttemptStart
	end.Event, end.Outcome = trace.AttemptEnd, o
	return r.at(from, start).at(to, end)
}

func (r *traceRun) end(ms int64, cause, result string) *traceRun {
	return r.at(ms, trace.Record{Event: trace.RunEnd, TotalMs: r.total, Cause: cause, Result: result})
}

// exhausted ran out of its 60s: a search at step 3 failed after 10s,
// slept 2s and took 13s more; step 18's model turn held the budget when
// the reserve began at 45s; the landing call took 4s of the reserve.
func exhausted() *traceRun {
	r := newTraceRun("run-exhausted", 60000, 15000)
	r.call("model", 1, 1, 0, 1000, trace.OK).call("model", 2, 1, 1000, 2000, trace.OK).call("model", 3, 1, 2000, 3000, trace.OK)
	r.call("tool:search", 3, 1, 3000, 13000, trace.UpstreamError)
	r.at(13000, trace.Record{Event: trace.Backoff, SleepMs: 2000, Source: "jitter"})
	r.call("tool:search", 3, 2, 15000, 28000, trace.OK)
	for i := range 14 {
		r.call("model", 4+i, 1, 28000+int64(i)*1000, 29000+int64(i)*1000, trace.OK)
	}
	r.call("model", 18, 1, 42000, 45000, trace.GaveUp)
	r.at(45000, trace.Record{Event: trace.PhaseChange, From: "explore", To: "land"})
	r.call("model", 19, 1, 45000, 49000, trace.OK)
	r.at(49000, trace.Record{Event: trace.Landing, Cause: "budget", Result: "model"})
	return r.end(49500, "budget", "partial")
}

// complete finished in 12s of 60s, after a fetch was rate limited for
// longer than the budget and a sub-agent was refused.
func complete() *traceRun {
	r := newTraceRun("run-ok", 60000, 15000)
	r.call("model", 1, 1, 0, 2000, trace.OK)
	r.call("tool:fetch", 1, 1, 2000, 2500, trace.RateLimited)
	r.at(2500, trace.Record{Event: trace.Backoff, Step: "tool:fetch", StepIndex: 1, SleepMs: 90000, Source: "retry_after", GaveUp: true, Reason: "retry_after_exceeds_budget"})
	r.call("model", 2, 1, 2500, 5000, trace.OK)
	r.at(5000, trace.Record{Event: trace.Refused, Step: "agent:review", StepIndex: 2, Attempt: 1, Reason: "below_p50"})
	r.call("tool:search", 2, 1, 5000, 11000, trace.OK)
	r.call("model", 3, 1, 11000, 12000, trace.OK)
	return r.end(12000, "", "complete")
}

// stalled stalled in a payment at 30s of 60s and left it an orphan.
func stalled() *traceRun {
	r := newTraceRun("run-quiet", 60000, 15000)
	r.call("model", 1, 1, 0, 1000, trace.OK)
	r.call("tool:pay", 1, 1, 1000, 29000, trace.Quiet)
	r.at(29000, trace.Record{Event: trace.CancelSent, Step: "tool:pay", Key: "gp_pay", State: "accepted"})
	r.at(29100, trace.Record{Event: trace.Reconcile, Step: "tool:pay", Key: "gp_pay", State: "running"})
	r.at(29200, trace.Record{Event: trace.Orphan, Step: "tool:pay", Key: "gp_pay", State: "open"})
	return r.end(30000, "quiet", "partial")
}

func jsonl(recs []trace.Record) []byte {
	var b []byte
	for _, r := range recs {
		b = append(trace.AppendJSON(b, r), '\n')
	}
	return b
}

// reportFiles writes the traces of the tests to dir: the exhausted run is
// split over two files, as a run resumed into a second trace would be.
func reportFiles(t *testing.T, dir string) {
	t.Helper()
	ex := exhausted().recs
	files := map[string][]byte{
		"a.jsonl":       append(jsonl(complete().recs), jsonl(ex[:20])...),
		"b.jsonl":       append(jsonl(ex[20:]), jsonl(stalled().recs)...),
		"empty.jsonl":   nil,
		"bad.jsonl":     append(jsonl(ex[:1]), "{\"ts\":\"2025-03-14T15:09:26Z\"\n"...),
		"short.jsonl":   append(jsonl(ex[:1]), `{"ts":"2025-03-14T15:09:26Z","run_id":"r","seq":2,"event":"progress"}`+"\n"...),
		"long.jsonl":    append(append([]byte(`{"message":"`+strings.Repeat("x", trace.MaxLine)+`"}`+"\n"), jsonl(ex[:1])...), "\n"...),
		"garbage.jsonl": []byte("not a trace\n\n42\n"),
		"torn.jsonl":    append(jsonl(ex[:1]), jsonl(ex[1:2])[:40]...), // a run killed as it wrote its second record
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

const wantReport = `3 runs: 1 complete, 2 partial (budget 1, quiet 1)

budget utilization (spent/total, 3 runs)
  p50  50.0%
  p90  82.5%
  p99  82.5%

time by step kind (attempts and backoff sleeps)
  step         attempts  time   share
  tool:search  3         31s    34.4%
  model        23        30.5s  33.9%
  tool:pay     1         28s    31.1%
  tool:fetch   1         500ms  0.6%

runs out of budget: the step that spent most
  run            spent  step  mostly       time  of run  held at the end
  run-exhausted  49.5s  3     tool:search  26s   52.5%   step 18 model

attempt outcomes
  ok                     24
  we gave up             2  gave_up 1, quiet 1, cancelled 0
  they failed            2  upstream_error 1, rate_limited 1, invalid 0
  refused                1  not started: the budget or the phase refused them
  retries given up       0  the backoff would have outlasted the budget
  server waits given up  1  a server asked, with Retry-After, for longer than the time left
  retries                1  attempts made again after a backoff sleep

cancels
  sent      0  calls cut short whose tool was asked to stop
  accepted  1
  unknown   0  the tool did not know the call
  failed    0  no answer in time

reconciliation and orphans
  done            0
  failed          0
  never_received  0
  running         1
  orphans         1
`

// wantUnfinished is a.jsonl alone: the exhausted run without its end.
const wantUnfinished = `2 runs: 1 complete, 0 partial, 1 unfinished (no run_end)

budget utilization (spent/total, 1 run)
  p50  20.0%
  p90  20.0%
  p99  20.0%

time by step kind (attempts and backoff sleeps)
  step         attempts  time   share
  tool:search  3         31s    70.5%
  model        10        12.5s  28.4%
  tool:fetch   1         500ms  1.1%

attempt outcomes
  ok                     12
  we gave up             0  gave_up 0, quiet 0, cancelled 0
  they failed            2  upstream_error 1, rate_limited 1, invalid 0
  refused                1  not started: the budget or the phase refused them
  retries given up       0  the backoff would have outlasted the budget
  server waits given up  1  a server asked, with Retry-After, for longer than the time left
  retries                1  attempts made again after a backoff sleep

cancels
  sent      0  calls cut short whose tool was asked to stop
  accepted  0
  unknown   0  the tool did not know the call
  failed    0  no answer in time

reconciliation and orphans
  done            0
  failed          0
  never_received  0
  running         0
  orphans         0
`

// wantStartOnly is a trace of the exhausted run's run_start alone.
const wantStartOnly = `1 run: 0 complete, 0 partial, 1 unfinished (no run_end)

attempt outcomes
  ok                     0
  we gave up             0  gave_up 0, quiet 0, cancelled 0
  they failed            0  upstream_error 0, rate_limited 0, invalid 0
  refused                0  not started: the budget or the phase refused them
  retries given up       0  the backoff would have outlasted the budget
  server waits given up  0  a server asked, with Retry-After, for longer than the time left
  retries                0  attempts made again after a backoff sleep

cancels
  sent      0  calls cut short whose tool was asked to stop
  accepted  0
  unknown   0  the tool did not know the call
  failed    0  no answer in time

reconciliation and orphans
  done            0
  failed          0
  never_received  0
  running         0
  orphans         0
`

func TestReport(t *testing.T) {
	dir := t.TempDir()
	reportFiles(t, dir)
	path := func(name string) string { return filepath.Join(dir, name) }
	cases := []struct {
		name       string
		args       []string
		stdin      string
		wantCode   int
		wantStdout string // exactly; only the first line for usage
		wantStderr []string
	}{
		{
			name:       "runs are grouped by run ID across files, the run out of budget pinned on the slow search",
			args:       []string{"report", path("a.jsonl"), path("b.jsonl")},
			wantStdout: wantReport,
		},
		{
			name:       "the order of files does not matter",
			args:       []string{"report", path("b.jsonl"), path("a.jsonl")},
			wantStdout: wantReport,
		},
		{
			name:       "a file given twice is counted once",
			args:       []string{"report", path("a.jsonl"), path("b.jsonl"), path("a.jsonl")},
			wantStdout: wantReport,
		},
		{
			name:       "- reads standard input",
			args:       []string{"report", path("a.jsonl"), "-"},
			stdin:      string(jsonl(exhausted().recs[20:])) + string(jsonl(stalled().recs)),
			wantStdout: wantReport,
		},
		{
			name:       "an empty trace has no runs",
			args:       []string{"report", path("empty.jsonl")},
			wantStdout: "0 runs: 0 complete, 0 partial\n",
		},
		{
			name:       "a run without its end is counted as unfinished",
			args:       []string{"report", path("a.jsonl")},
			wantStdout: wantUnfinished,
		},
		{
			name:       "no TRACE is bad usage",
			args:       []string{"report", "--json"},
			wantCode:   2,
			wantStderr: []string{"harness report: no TRACE given", "try: harness report --help"},
		},
		{
			name:       "a missing file is bad usage naming it",
			args:       []string{"report", path("a.jsonl"), path("none.jsonl")},
			wantCode:   2,
			wantStderr: []string{"harness report: open " + path("none.jsonl") + ": no such file or directory", "try: harness report --help"},
		},
		{
			name:       "a malformed line is named with file and line, skipped, and the rest reported",
			args:       []string{"report", path("a.jsonl"), path("bad.jsonl")},
			wantStdout: wantUnfinished, // bad.jsonl's good line is a.jsonl's first again
			wantStderr: []string{path("bad.jsonl") + ":2: not JSON: unexpected end of JSON input, skipped\n"},
		},
		{
			name:       "a line without a field every record carries is named and skipped",
			args:       []string{"report", path("short.jsonl")},
			wantStdout: wantStartOnly,
			wantStderr: []string{path("short.jsonl") + ":2: no elapsed_ms, skipped\n"},
		},
		{
			name:       "a line longer than a trace's is named and skipped, and the next line read",
			args:       []string{"report", path("long.jsonl")},
			wantStdout: wantStartOnly,
			wantStderr: []string{path("long.jsonl") + ":1: longer than 1048576 bytes, skipped\n"},
		},
		{
			name:       "a torn last line, as a killed run leaves it, is named as cut short and the rest reported",
			args:       []string{"report", path("torn.jsonl")},
			wantStdout: wantStartOnly,
			wantStderr: []string{
				path("torn.jsonl") + ":2: cut short: the last line has no newline (its write was interrupted, or is still going on), skipped\n",
				"harness report: " + path("torn.jsonl") + ": 1 bad line skipped, 1 record read\n",
			},
		},
		{
			name:       "a bad line on standard input is named as stdin, and nothing left to report is bad usage",
			args:       []string{"report", "-"},
			stdin:      "\n[]\n",
			wantCode:   2,
			wantStderr: []string{"stdin:2: a JSON array, not an object, skipped\n", "harness report: no record could be read: 1 bad line skipped\n", "try: harness report --help"},
		},
		{
			name:       "traces of bad lines only are bad usage, every line named",
			args:       []string{"report", path("garbage.jsonl"), path("empty.jsonl")},
			wantCode:   2,
			wantStderr: []string{path("garbage.jsonl") + ":1: not JSON", path("garbage.jsonl") + ":3: a JSON number, not an object", "no record could be read: 2 bad lines skipped"},
		},
		{
			name:       "a directory is bad usage",
			args:       []string{"report", dir},
			wantCode:   2,
			wantStderr: []string{"harness report: read " + dir + ": is a directory\n"},
		},
		{
			name:       "an unknown flag is bad usage",
			args:       []string{"report", "--csv", path("a.jsonl")},
			wantCode:   2,
			wantStderr: []string{"flag provided but not defined: -csv", "try: harness report --help"},
		},
		{
			name:       "--help prints its usage on stdout",
			args:       []string{"report", "--help"},
			wantStdout: "usage: harness report [--json] [--html FILE] [--story] TRACE...\n",
		},
		{
			name:       "help report prints its usage on stdout",
			args:       []string{"help", "report"},
			wantStdout: "usage: harness report [--json] [--html FILE] [--story] TRACE...\n",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			invocation{args: tc.args, stdin: tc.stdin, wantCode: tc.wantCode, wantStdout: tc.wantStdout, wantStderr: tc.wantStderr}.check(t)
		})
	}
}

// One bad line in the middle of a trace costs that line and no other:
// the report is the one of the trace without it (issue 24).
func TestReportSkipsABadMiddleLineAndReportsTheRest(t *testing.T) {
	dir := t.TempDir()
	recs := complete().recs
	whole, middle := filepath.Join(dir, "whole.jsonl"), filepath.Join(dir, "middle.jsonl")
	bad := append(append(jsonl(recs[:3]), "{\"ts\":\"2025-03-14T15:09:26Z\",\"run_id\":\n"...), jsonl(recs[3:])...)
	if err := os.WriteFile(whole, jsonl(recs), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(middle, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	var want, got, wantErr, gotErr bytes.Buffer
	if code := run(t.Context(), []string{"report", whole}, nil, &want, &wantErr); code != 0 {
		t.Fatalf("report of the whole trace: exit %d: %s", code, &wantErr)
	}
	if code := run(t.Context(), []string{"report", middle}, nil, &got, &gotErr); code != 0 {
		t.Fatalf("report of the trace with a bad line: exit %d: %s", code, &gotErr)
	}
	if got.String() != want.String() {
		t.Errorf("report with a bad middle line:\n%s\nwant the whole trace's:\n%s", &got, &want)
	}
	wantStderr := middle + ":4: not JSON: unexpected end of JSON input, skipped\n" +
		"harness report: " + middle + ": 1 bad line skipped, " + strconv.Itoa(len(recs)) + " records read\n"
	if gotErr.String() != wantStderr {
		t.Errorf("stderr:\n%s\nwant:\n%s", &gotErr, wantStderr)
	}
}

func TestReportJSONIsOneObjectOfTheReport(t *testing.T) {
	dir := t.TempDir()
	reportFiles(t, dir)
	var stdout, stderr bytes.Buffer
	args := []string{"report", "--json", filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")}
	if code := run(t.Context(), args, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d: %s", code, &stderr)
	}
	dec := json.NewDecoder(bytes.NewReader(stdout.Bytes()))
	var got trace.Report
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if dec.More() {
		t.Error("more than one JSON value on stdout")
	}
	var recs []trace.Record
	for _, r := range []*traceRun{complete(), exhausted(), stalled()} {
		recs = append(recs, r.recs...)
	}
	if want := trace.Summarize(recs); !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
	if e := got.Exhausted; len(e) != 1 || e[0].Step != "tool:search" || e[0].StepIndex != 3 || e[0].HeldBy != "model" || e[0].HeldByIndex != 18 {
		t.Errorf("exhausted %+v, want tool:search at step 3, held by model at step 18", e)
	}
	for _, key := range []string{`"we_gave_up":{"total":2,"by":{"cancelled":0,"gave_up":1,"quiet":1}}`, `"they_failed":{"total":2,`, `"utilization":{"runs":3,"p50":0.5,"p90":0.825,"p99":0.825}`} {
		if !strings.Contains(stdout.String(), key) {
			t.Errorf("stdout does not contain %s:\n%s", key, &stdout)
		}
	}
}

func TestReportOfAFailedWriteIsAnInternalError(t *testing.T) {
	dir := t.TempDir()
	reportFiles(t, dir)
	for _, args := range [][]string{
		{"report", filepath.Join(dir, "a.jsonl")},
		{"report", "--json", filepath.Join(dir, "a.jsonl")},
	} {
		t.Run(strings.Join(args[:len(args)-1], " "), func(t *testing.T) {
			var stderr bytes.Buffer
			if code := run(t.Context(), args, nil, failingWriter{}, &stderr); code != 1 {
				t.Errorf("exit code %d, want 1", code)
			}
			if want := "harness report: file already closed\n"; stderr.String() != want {
				t.Errorf("stderr = %q, want %q", stderr.String(), want)
			}
		})
	}
}

func TestReportHTML(t *testing.T) {
	dir := t.TempDir()
	reportFiles(t, dir)
	path := func(name string) string { return filepath.Join(dir, name) }
	cases := []struct {
		name       string
		args       []string
		page       string // where the page should be; "" for none
		wantCode   int
		wantStdout string // exactly, unless wantJSON
		wantJSON   bool
		wantStderr []string
	}{
		{
			name:       "--html writes the page and prints only where it went",
			args:       []string{"report", "--html", path("page.html"), path("a.jsonl"), path("b.jsonl")},
			page:       path("page.html"),
			wantStdout: "wrote " + path("page.html") + ": the timeline of 3 runs\n",
		},
		{
			name:     "--html with --json writes the page and prints the JSON",
			args:     []string{"report", "--json", path("a.jsonl"), "--html", path("page2.html"), path("b.jsonl")},
			page:     path("page2.html"),
			wantJSON: true,
		},
		{
			name:       "--html skips a malformed line as the report does",
			args:       []string{"report", "--html", path("page3.html"), path("a.jsonl"), path("b.jsonl"), path("bad.jsonl")},
			page:       path("page3.html"),
			wantStdout: "wrote " + path("page3.html") + ": the timeline of 3 runs\n",
			wantStderr: []string{path("bad.jsonl") + ":2: not JSON"},
		},
		{
			name:       "an unwritable --html FILE is an internal error naming it, and nothing is printed",
			args:       []string{"report", "--html", path("none/page.html"), path("a.jsonl")},
			wantCode:   1,
			wantStderr: []string{"harness report: --html: open " + path("none/page.html") + ": no such file or directory\n"},
		},
		{
			name:       "--html - is bad usage: standard output has the report",
			args:       []string{"report", "--html", "-", path("a.jsonl")},
			wantCode:   2,
			wantStderr: []string{"harness report: --html -: the page goes to a file", "try: harness report --help"},
		},
		{
			name:       "--html without its FILE is bad usage",
			args:       []string{"report", path("a.jsonl"), "--html"},
			wantCode:   2,
			wantStderr: []string{"flag needs an argument: -html", "try: harness report --help"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), tc.args, strings.NewReader(""), &stdout, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d\nstderr:\n%s", code, tc.wantCode, &stderr)
			}
			switch {
			case tc.wantJSON:
				var got trace.Report
				if err := json.Unmarshal(stdout.Bytes(), &got); err != nil || got.Runs != 3 {
					t.Errorf("stdout is not the JSON report of 3 runs (%v):\n%s", err, &stdout)
				}
			case stdout.String() != tc.wantStdout:
				t.Errorf("stdout:\n%s\nwant:\n%s", &stdout, tc.wantStdout)
			}
			for _, want := range tc.wantStderr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr does not contain %q:\n%s", want, &stderr)
				}
			}
			if tc.wantStderr == nil && stderr.Len() > 0 {
				t.Errorf("unexpected stderr:\n%s", &stderr)
			}
			if tc.page == "" {
				return
			}
			page, err := os.ReadFile(tc.page)
			if err != nil {
				t.Fatal(err)
			}
			// Every attempt of the three runs has its bar: 23 model turns, 3
			// searches, a fetch and a payment.
			if got := strings.Count(string(page), ` data-attempt="`); got != 28 {
				t.Errorf("the page has %d bars, want 28", got)
			}
			for _, want := range []string{`<!DOCTYPE html>`, `id="t-run-exhausted"`, `id="t-run-ok"`, `id="t-run-quiet"`, `data-bars="28"`} {
				if !strings.Contains(string(page), want) {
					t.Errorf("the page does not contain %s", want)
				}
			}
		})
	}
}

// late ran 3.5s past its 2s budget (a process stopped and resumed): its
// run_end carries late_ms and an elapsed_ms past total_ms.
func late() *traceRun {
	r := newTraceRun("run-late", 2000, 500)
	r.call("model", 1, 1, 0, 5400, trace.OK)
	r.recs = append(r.recs, trace.Record{})
	end := trace.Record{TS: orphanTS.Add(5500 * time.Millisecond), RunID: r.id, Seq: int64(len(r.recs)), Event: trace.RunEnd,
		ElapsedMs: 5500, RemainingMs: 0, Phase: "land", TotalMs: 2000, LateMs: 3500, Result: "complete"}
	r.recs[len(r.recs)-1] = end
	return r
}

func TestReportCountsTheRunsThatEndedLate(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "late.jsonl")
	if err := os.WriteFile(file, append(jsonl(late().recs), jsonl(complete().recs)...), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"report", file}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d: %s", code, &stderr)
	}
	first, _, _ := strings.Cut(stdout.String(), "\n")
	if want := "2 runs: 2 complete, 0 partial; 1 late (ended past the deadline, by up to 3.5s)"; first != want {
		t.Errorf("first line %q, want %q", first, want)
	}
	stdout.Reset()
	if code := run(t.Context(), []string{"report", "--json", file}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d: %s", code, &stderr)
	}
	var got trace.Report
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Late != 1 || got.LateMaxMs != 3500 {
		t.Errorf("late %d, late_max_ms %d; want 1 and 3500", got.Late, got.LateMaxMs)
	}
	// Utilization is told as it was: 5.5s of 2s, not capped at 100%.
	if got.Utilization.P99 != 2.75 {
		t.Errorf("utilization p99 %v, want 2.75 (5500/2000)", got.Utilization.P99)
	}
}
