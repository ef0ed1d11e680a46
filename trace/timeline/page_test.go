package timeline

import (
	"bytes"
	"errors"
	"math"
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

// runView is the page's view of the run id of records.
func runViewOf(t *testing.T, records []trace.Record, id string) runView {
	t.Helper()
	for _, rv := range buildPage(records, Options{}).Runs {
		if rv.ID == id {
			return rv
		}
	}
	t.Fatalf("no run %s on the page", id)
	return runView{}
}

// idOf is the run ID of a trace of one run.
func idOf(t *testing.T, records []trace.Record) string {
	t.Helper()
	if len(records) == 0 {
		t.Fatal("no records")
	}
	return records[0].RunID
}

func TestACancelIsDrawnOnceAndCountedOnce(t *testing.T) {
	cases := []struct {
		name       string
		records    func(t *testing.T) []trace.Record
		wantMarks  map[string]string // run → the classes of its cancel marks, in order
		wantChip   int
		wantDetail string
	}{
		{
			name: "the demo's two runs: one cancel each, both accepted",
			records: func(t *testing.T) []trace.Record {
				return slices.Concat(fixture(t, "demo.jsonl"), fixture(t, "demo-short.jsonl"))
			},
			wantMarks: map[string]string{
				"run-ourjs626ylrokkxdcteltmigsy": "mark cancel st-accepted",
				"run-gg3giysvxzd4g3ptqi6nanrmtu": "mark cancel st-accepted",
			},
			wantChip:   2,
			wantDetail: "sent 2: accepted 2",
		},
		{
			name: "cancels that settled each way",
			records: func(*testing.T) []trace.Record {
				r := newRun("run-ways", 20000)
				for i, state := range []string{"accepted", "unknown", "failed", ""} {
					step, key := "tool:t"+itoa(int64(i)), "gp_"+itoa(int64(i))
					ms := int64(100 * (i + 1))
					r.attempt(step, 1, 1, key, 1000, 0, ms, trace.GaveUp)
					r.at(ms, cancelOf(step, key, "sent"))
					if state != "" {
						r.at(ms+5, cancelOf(step, key, state))
					}
				}
				return r.end(2000, "", "complete").recs
			},
			wantMarks: map[string]string{
				"run-ways": "mark cancel st-accepted|mark cancel st-unknown|mark cancel st-failed|mark cancel st-sent",
			},
			wantChip:   4,
			wantDetail: "sent 4: accepted 1, unknown 1, failed 1, unanswered 1",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs := tc.records(t)
			p := buildPage(recs, Options{})
			for _, rv := range p.Runs {
				var got []string
				for _, m := range rv.SVG.Marks {
					if strings.HasPrefix(m.Class, "mark cancel") {
						got = append(got, m.Class)
						if !strings.HasPrefix(m.Ref, "#mk-cancel-") {
							t.Errorf("%s: a cancel drawn as %s, not as the shape of how it settled", rv.ID, m.Ref)
						}
					}
				}
				if w := tc.wantMarks[rv.ID]; strings.Join(got, "|") != w {
					t.Errorf("%s: cancel marks %q, want %q", rv.ID, got, w)
				}
			}
			var chip outcomeView
			for _, o := range p.Across.Outcomes {
				if o.Class == "cancel" {
					chip = o
				}
			}
			if chip.N != tc.wantChip || chip.Detail != tc.wantDetail {
				t.Errorf("the cancels counted %d (%s), want %d (%s)", chip.N, chip.Detail, tc.wantChip, tc.wantDetail)
			}
		})
	}
}

func TestAMarkOfACancelSaysHowItSettledInItsTitle(t *testing.T) {
	recs := fixture(t, "demo-short.jsonl")
	rv := runViewOf(t, recs, idOf(t, recs))
	for _, m := range rv.SVG.Marks {
		if !strings.HasPrefix(m.Class, "mark cancel") {
			continue
		}
		for _, want := range []string{"cancel sent at 850ms on a 299ms lease", "accepted at 851ms, 1ms later"} {
			if !strings.Contains(m.Title, want) {
				t.Errorf("the cancel's title %q does not say %q", m.Title, want)
			}
		}
	}
}

func TestTheWaitForCancelAnswersIsDrawnAndLabeled(t *testing.T) {
	r := newRun("run-wait", 1200)
	r.attempt("tool:fetch", 1, 1, "gp_f", 800, 0, 800, trace.GaveUp)
	r.at(800, cancelOf("tool:fetch", "gp_f", "sent"))
	r.attempt("model", 0, 1, "", 300, 800, 850, trace.OK)
	r.at(850, trace.Record{Event: trace.Landing, Cause: "budget", Result: "model"})
	r.at(950, cancelOf("tool:fetch", "gp_f", "failed"))
	r.end(950, "budget", "partial")
	rv := runViewOf(t, r.recs, "run-wait")
	s := scale{domain: 1200}
	var wait *rectView
	for i, w := range rv.SVG.Waits {
		if w.Class == "wait cancelwait" {
			wait = &rv.SVG.Waits[i]
		}
	}
	if wait == nil {
		t.Fatal("no wait for cancel answers is drawn")
	}
	if math.Abs(wait.X-s.x(850)) > 0.05 || math.Abs(wait.X+wait.W-s.x(950)) > 0.05 {
		t.Errorf("the wait is drawn from %v to %v, want %v to %v: from the landing to the run's end", wait.X, wait.X+wait.W, s.x(850), s.x(950))
	}
	for _, want := range []string{"waiting for cancel answers from 850ms to 950ms (100ms)", "tool:fetch: cancel sent at 800ms, failed at 950ms"} {
		if !strings.Contains(wait.Title, want) {
			t.Errorf("the wait's title %q does not say %q", wait.Title, want)
		}
	}
	labeled := false
	for _, tx := range rv.SVG.Texts {
		if strings.Contains(tx.Class, "cancelwait") && tx.Row == wait.Row {
			labeled = tx.Text == "waiting for cancel answers"
		}
	}
	if !labeled {
		t.Error(`the wait is not labeled "waiting for cancel answers"`)
	}
}

func TestTheSixtyEightyAndReserveLinesAreLabeled(t *testing.T) {
	cases := []struct {
		name     string
		records  func(t *testing.T) []trace.Record
		timeline bool // the timeline shows the whole budget, so its lines too
	}{
		{"the demo's run that landed early, where 80% falls in the reserve", func(t *testing.T) []trace.Record { return fixture(t, "demo-short.jsonl") }, true},
		{"the demo's complete run, its timeline zoomed", func(t *testing.T) []trace.Record { return fixture(t, "demo.jsonl") }, false},
		{"a run whose ladder showed its reserve", func(*testing.T) []trace.Record {
			r := newRun("run-r", 60000)
			r.attempt("model", 1, 1, "", 30000, 0, 40000, trace.OK)
			r.at(36000, trace.Record{Event: trace.PhaseChange, Phase: "narrow", From: "explore", To: "narrow"})
			r.at(45000, trace.Record{Event: trace.PhaseChange, Phase: "land", From: "narrow", To: "land"})
			return r.end(50000, "budget", "partial").recs
		}, true},
		{"a short budget whose lines crowd each other", func(*testing.T) []trace.Record {
			r := newRun("run-s", 400)
			r.attempt("model", 1, 1, "", 300, 0, 390, trace.GaveUp)
			r.at(390, trace.Record{Event: trace.Landing, Cause: "budget", Result: "harness"})
			return r.end(399, "budget", "partial").recs
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs := tc.records(t)
			rv := runViewOf(t, recs, idOf(t, recs))
			for _, line := range []string{"narrow", "fit", "reserve"} {
				if !slices.ContainsFunc(rv.Strip.Texts, func(tx textView) bool { return slices.Contains(strings.Fields(tx.Class), line) }) {
					t.Errorf("the budget strip has no label on its %s line: %v", line, rv.Strip.Texts)
				}
				if tc.timeline && !slices.ContainsFunc(rv.SVG.Texts, func(tx textView) bool {
					return strings.HasPrefix(tx.Class, "lbl line") && slices.Contains(strings.Fields(tx.Class), line)
				}) {
					t.Errorf("the timeline has no label on its %s line", line)
				}
			}
		})
	}
}

func TestMarksArePlacedAtTheirTimeInRecordOrder(t *testing.T) {
	cases := []struct {
		name    string
		records func(t *testing.T) []trace.Record
	}{
		{"the demo's refusal below the floor, just before its landing call", func(t *testing.T) []trace.Record { return fixture(t, "demo-short.jsonl") }},
		{"a refusal just after the turn it followed", func(*testing.T) []trace.Record {
			r := newRun("run-after", 1200)
			r.attempt("model", 1, 1, "", 800, 0, 700, trace.OK)
			r.at(700, trace.Record{Event: trace.Refused, Step: "model", StepIndex: 2, Attempt: 1, Reason: "below floor"})
			r.attempt("model", 0, 1, "", 300, 760, 762, trace.OK)
			return r.end(762, "budget", "partial").recs
		}},
		{"a refusal with no room between the turns before and after it", func(*testing.T) []trace.Record {
			r := newRun("run-squeezed", 1200)
			r.attempt("model", 1, 1, "", 800, 0, 700, trace.OK)
			r.at(700, trace.Record{Event: trace.Refused, Step: "model", StepIndex: 2, Attempt: 1, Reason: "below floor"})
			r.attempt("model", 0, 1, "", 300, 700, 702, trace.OK)
			return r.end(702, "budget", "partial").recs
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs := tc.records(t)
			rv := runViewOf(t, recs, idOf(t, recs))
			seqOf := map[string]int64{} // a bar's start and end records, by its row and x
			for _, rec := range recs {
				if rec.Event == trace.AttemptStart || rec.Event == trace.AttemptEnd {
					seqOf[attemptID(rec.RunID, rec.Step, rec.StepIndex, rec.Attempt, rec.Key)+"|"+string(rec.Event)] = rec.Seq
				}
			}
			r := only(t, recs)
			d, _ := domainOf(r.total, r.last)
			s := scale{domain: float64(d)}
			checked := 0
			for _, m := range rv.SVG.Marks {
				if m.Class != "mark refused" {
					continue
				}
				at := s.x(float64(m.At))
				if d := m.X - at; d < -12 || d > 12 {
					t.Errorf("a refusal of %s is drawn at %v, %vpx from its time %dms", rv.ID, m.X, d, m.At)
				}
				if rv.ID == "run-squeezed" {
					// Between two bars that touch, it is at its time, over both.
					if math.Abs(m.X-at) > 0.05 {
						t.Errorf("a refusal with no room is drawn at %v, not at its time's %v", m.X, at)
					}
					checked++
					continue
				}
				for _, b := range rv.SVG.Bars {
					if b.Row != m.Row {
						continue
					}
					id := attemptID(b.Run, b.Step, b.Index, b.Attempt, b.Key)
					start, end := seqOf[id+"|attempt_start"], seqOf[id+"|attempt_end"]
					switch {
					case start > m.Seq && m.X+5 > b.X+0.05:
						t.Errorf("a refusal (seq %d) at %v covers or follows a bar that started after it (seq %d) at %v", m.Seq, m.X, start, b.X)
					case end < m.Seq && m.X-5 < b.X+b.W-0.05:
						t.Errorf("a refusal (seq %d) at %v covers or precedes a bar that ended before it (seq %d) at %v", m.Seq, m.X, end, b.X+b.W)
					}
					checked++
				}
			}
			if checked == 0 {
				t.Fatal("no refusal beside a bar was checked")
			}
		})
	}
}

func TestALateRunIsDrawnPastItsBudget(t *testing.T) {
	r := newRun("run-late", 1200)
	r.attempt("tool:slow", 1, 1, "gp_s", 900, 0, 1280, trace.GaveUp)
	r.at(1285, trace.Record{Event: trace.Landing, Cause: "budget", Result: "harness"})
	r.at(1287, trace.Record{Event: trace.RunEnd, TotalMs: 1200, Cause: "budget", Result: "partial", LateMs: 87})
	rv := runViewOf(t, r.recs, "run-late")
	if want := "— ended 87ms late"; !strings.Contains(rv.Heading, want) {
		t.Errorf("heading %q does not say %q", rv.Heading, want)
	}
	var end, budget *lineView
	for i, l := range rv.SVG.Lines {
		switch l.Class {
		case "ln end late":
			end = &rv.SVG.Lines[i]
		case "ln budget":
			budget = &rv.SVG.Lines[i]
		}
	}
	if end == nil || budget == nil {
		t.Fatalf("the timeline's lines %v: want the end, late, and the budget's", rv.SVG.Lines)
	}
	if !(budget.X1 < end.X1 && end.X1 <= plotRight) {
		t.Errorf("the end at %v, the budget's end at %v: want the end past it, inside the plot (≤ %v)", end.X1, budget.X1, plotRight)
	}
	if !slices.ContainsFunc(rv.SVG.Texts, func(tx textView) bool { return strings.Contains(tx.Text, "87ms late") }) {
		t.Error(`no label of the timeline says "87ms late"`)
	}
	if rv.Strip.Late == nil || rv.Strip.Late.X+rv.Strip.Late.W > plotRight+0.05 {
		t.Errorf("the strip's time past the budget %+v: want one, inside the strip", rv.Strip.Late)
	}
}
