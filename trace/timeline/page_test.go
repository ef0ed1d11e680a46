package timeline

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/glidepath/glidepath/trace"
)

func write(t *testing.T, records []trace.Record) string {
	t.Helper()
	var page bytes.Buffer
	if err := Write(&page, records, Options{}); err != nil {
		t.Fatal(err)
	}
	return page.String()
}

func TestEveryAttemptHasItsBar(t *testing.T) {
	cases := []struct {
		name    string
		records func(t *testing.T) []trace.Record
	}{
		{"the demo's complete run", func(t *testing.T) []trace.Record { return fixture(t, "demo.jsonl") }},
		{"the demo's run that landed early", func(t *testing.T) []trace.Record { return fixture(t, "demo-short.jsonl") }},
		{"a parent and its sub-agents, one served by harness serve", func(t *testing.T) []trace.Record { return fixture(t, "subagents.jsonl") }},
		{"a run on MCP servers, with setup calls in parallel", func(t *testing.T) []trace.Record { return fixture(t, "mcp.jsonl") }},
		{"all of them on one page", fixtures},
		{"a run whose trace lost its head and its tail", func(t *testing.T) []trace.Record {
			r := newRun("run-cut", 5000)
			r.at(10, trace.Record{Event: trace.AttemptEnd, Step: "tool:a", StepIndex: 1, Attempt: 1, Key: "gp_a", Outcome: trace.OK})
			r.at(20, trace.Record{Event: trace.AttemptStart, Step: "tool:b", StepIndex: 1, Attempt: 1, Key: "gp_b", GrantedMs: 100})
			return r.recs[1:] // no run_start, no run_end
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs := tc.records(t)
			page := write(t, recs)
			want := wantBars(recs)
			if got := gotBars(page); !slices.Equal(got, want) {
				t.Errorf("bars\n%v\nwant one for each attempt\n%v", got, want)
			}
		})
	}
}

func TestHostileStringsAreEscaped(t *testing.T) {
	const (
		script = `</title></text></svg><script>alert(1)</script>`
		attr   = `" onmouseover="alert(2)`
		img    = `<img src=x onerror=alert(3)>`
	)
	r := newRun(`run-<b>`+attr, 10000)
	r.attempt("tool:"+img, 1, 1, "gp_"+attr, 2000, 0, 500, trace.Outcome(script))
	r.recs[len(r.recs)-1].Message = script
	r.at(500, trace.Record{Event: trace.Backoff, Step: "tool:" + img, StepIndex: 1, Attempt: 1, Key: "gp_" + attr, SleepMs: 40, Source: img, RetryAfterInvalid: script})
	r.at(540, trace.Record{Event: trace.Progress, Step: "tool:" + img, Key: "gp_" + attr, Message: script})
	r.at(560, trace.Record{Event: trace.Refused, Step: attr, Reason: img, Message: script})
	r.at(600, trace.Record{Event: trace.CancelSent, Step: "tool:" + img, Key: "gp_" + attr, State: attr})
	r.at(700, trace.Record{Event: trace.PhaseChange, Phase: img, From: "explore", To: img})
	r.at(800, trace.Record{Event: trace.Landing, Cause: script, Result: img, Message: script})
	r.end(900, script, img)
	var page bytes.Buffer
	if err := Write(&page, r.recs, Options{Title: script, Sources: []string{img, attr}}); err != nil {
		t.Fatal(err)
	}
	got := page.String()
	for _, bad := range []string{"<script>alert", "<img", `onmouseover="alert`, "</svg><script"} {
		if strings.Contains(got, bad) {
			t.Errorf("the page contains %q unescaped", bad)
		}
	}
	if n := strings.Count(got, "<script"); n != 1 {
		t.Errorf("the page has %d script elements, want its own alone", n)
	}
	if !strings.Contains(got, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the message is not on the page, escaped")
	}
	// The attributes still name the attempt as the trace does.
	if bars := gotBars(got); !slices.Equal(bars, wantBars(r.recs)) {
		t.Errorf("bars %q, want %q", bars, wantBars(r.recs))
	}
}

// TestLabelsLeaveEachOtherRoom checks the layout's own estimate: in every
// row of every timeline no two labels touch, and no label beside a bar
// covers one. The page's script checks again with the browser's widths.
func TestLabelsLeaveEachOtherRoom(t *testing.T) {
	crowded := newRun("run-crowded", 10000)
	for i := range 40 { // forty model turns back to back, and a tool each at once
		ms := int64(i) * 100
		crowded.attempt("model", i+1, 1, "", 9000, ms, ms+40, trace.OK)
		for j, name := range []string{"tool:a", "tool:b", "tool:c"} {
			crowded.attempt(name, i+1, 1, "gp_"+name+itoa(int64(i)), 3000, ms+40, ms+60+int64(j)*20, trace.UpstreamError)
		}
	}
	crowded.at(6000, trace.Record{Event: trace.PhaseChange, Phase: "narrow", From: "explore", To: "narrow"})
	crowded.at(7500, trace.Record{Event: trace.PhaseChange, Phase: "land", From: "narrow", To: "land"})
	crowded.at(7600, trace.Record{Event: trace.Landing, Result: "model"})
	crowded.end(7600, "budget", "partial")
	cases := []struct {
		name    string
		records func(t *testing.T) []trace.Record
	}{
		{"the runs of testdata", fixtures},
		{"a crowded run", func(*testing.T) []trace.Record { return crowded.recs }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := buildPage(tc.records(t), Options{})
			for _, rv := range p.Runs {
				var isMark []bool
				check := func(what string, texts []textView, shapes []interval, shapeRows []string) {
					byRow := map[string][]interval{}
					for _, tx := range texts {
						if tx.Row == "" {
							t.Errorf("%s: label %q has no row", what, tx.Text)
							continue
						}
						w := textWidth(tx.Text)
						iv := interval{tx.X, tx.X + w}
						switch tx.Anchor {
						case "end":
							iv = interval{tx.X - w, tx.X}
						case "middle":
							iv = interval{tx.X - w/2, tx.X + w/2}
						}
						for _, o := range byRow[tx.Row] {
							if iv.from < o.to && o.from < iv.to {
								t.Errorf("%s: label %q at %v covers another in row %s", what, tx.Text, iv, tx.Row)
							}
						}
						byRow[tx.Row] = append(byRow[tx.Row], iv)
						if tx.In && (iv.from < tx.InFrom || iv.to > tx.InTo) {
							t.Errorf("%s: label %q at %v is wider than its bar %v–%v", what, tx.Text, iv, tx.InFrom, tx.InTo)
						}
						for i, s := range shapes {
							// A label inside a bar covers that bar, and must
							// keep clear of the marks drawn over it alone.
							if shapeRows[i] != tx.Row || tx.In && !isMark[i] {
								continue
							}
							if iv.from < s.to && s.from < iv.to {
								t.Errorf("%s: label %q at %v covers a bar or mark at %v", what, tx.Text, iv, s)
							}
						}
					}
				}
				var shapes []interval
				var rows []string
				for _, b := range rv.SVG.Bars {
					shapes, rows, isMark = append(shapes, interval{b.X, b.X + b.W}), append(rows, b.Row), append(isMark, false)
				}
				for _, w := range rv.SVG.Waits {
					shapes, rows, isMark = append(shapes, interval{w.X, w.X + w.W}), append(rows, w.Row), append(isMark, false)
				}
				for _, m := range rv.SVG.Marks {
					shapes, rows, isMark = append(shapes, interval{m.X - 5, m.X + 5}), append(rows, m.Row), append(isMark, true)
				}
				check(rv.ID, rv.SVG.Texts, shapes, rows)
				check(rv.ID+" strip", rv.Strip.Texts, nil, nil)
			}
			check := p.Across.Hist.Texts
			for i, a := range check {
				for _, b := range check[i+1:] {
					if a.Row == b.Row && a.Y == b.Y && a.X == b.X {
						t.Errorf("histogram labels %q and %q at one place", a.Text, b.Text)
					}
				}
			}
		})
	}
}

func TestRunHeadingsSayResultAndCause(t *testing.T) {
	cases := []struct {
		name  string
		build func() *runRecs
		want  string
		class string
	}{
		{"a complete run says how long of its budget it took", func() *runRecs {
			return newRun("run-a", 20000).attempt("model", 1, 1, "", 15000, 0, 2005, trace.OK).end(2005, "", "complete")
		}, "Complete in 2s of 20s (10%)", "complete"},
		{"a run that ran out says so", func() *runRecs {
			return newRun("run-a", 1200).attempt("model", 1, 1, "", 800, 0, 852, trace.GaveUp).end(852, "budget", "partial")
		}, "Partial — ran out of budget: 852ms of 1.2s (71%)", "partial"},
		{"a run that stalled says what fired", func() *runRecs {
			return newRun("run-a", 60000).attempt("tool:pay", 1, 1, "gp_p", 50000, 1000, 29000, trace.Quiet).end(30000, "quiet", "partial")
		}, "Partial — stalled: the quiet clock fired: 30s of 1m (50%)", "partial"},
		{"a run without its end says where its trace stops", func() *runRecs {
			return newRun("run-a", 60000).attempt("model", 1, 1, "", 50000, 0, 1300, trace.OK)
		}, "Unfinished — the trace ends at 1.3s of 1m (2.2%), with no run_end", "unfinished"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := buildPage(tc.build().recs, Options{})
			if len(p.Runs) != 1 {
				t.Fatalf("%d runs", len(p.Runs))
			}
			if got := p.Runs[0]; got.Heading != tc.want || got.Class != tc.class {
				t.Errorf("heading %q (%s), want %q (%s)", got.Heading, got.Class, tc.want, tc.class)
			}
		})
	}
}

func TestAcrossRunsCountsWhatTheReportCounts(t *testing.T) {
	recs := fixtures(t)
	p := buildPage(recs, Options{})
	rep := trace.Summarize(recs)
	var inHist int
	for _, b := range p.Across.Hist.Bars {
		for _, n := range []string{"1 run", "2 runs", "3 runs"} {
			if strings.HasSuffix(b.Title, ": "+n) {
				inHist += int(n[0] - '0')
			}
		}
	}
	if inHist != rep.Utilization.Runs {
		t.Errorf("the histogram holds %d runs, the report's utilization %d", inHist, rep.Utilization.Runs)
	}
	if len(p.Across.Exhausted) != len(rep.Exhausted) || len(p.Across.Steps) != len(rep.Steps) || len(p.Across.SubAgents) != len(rep.SubAgents) {
		t.Errorf("exhausted %d, steps %d, sub-agents %d; the report has %d, %d, %d",
			len(p.Across.Exhausted), len(p.Across.Steps), len(p.Across.SubAgents), len(rep.Exhausted), len(rep.Steps), len(rep.SubAgents))
	}
	// The sub-agents are inside their parents, not runs of their own.
	if len(p.Runs) != rep.Runs {
		t.Errorf("%d runs shown on their own, the report counts %d", len(p.Runs), rep.Runs)
	}
}

func TestNoRecordsIsAPageThatSaysSo(t *testing.T) {
	page := write(t, nil)
	for _, want := range []string{"No records: the traces are empty.", "No runs in these traces.", `data-bars="0"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not say %q", want)
		}
	}
}

type failingWriter struct{}

var errWrite = errors.New("disk full")

func (failingWriter) Write([]byte) (int, error) { return 0, errWrite }

func TestWriteReturnsTheWritersError(t *testing.T) {
	if err := Write(failingWriter{}, fixture(t, "demo.jsonl"), Options{}); !errors.Is(err, errWrite) {
		t.Errorf("Write = %v, want %v", err, errWrite)
	}
}
