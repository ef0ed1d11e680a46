package timeline

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/glidepath/glidepath/trace"
)

// Options are the knobs of [Write]. The zero value is valid.
type Options struct {
	// Title heads the page. "" is "Glidepath runs".
	Title string
	// Sources name the traces the records were read from, shown under the
	// title; nil shows none.
	Sources []string
}

//go:embed page.tmpl
var pageText string

var pageTemplate = template.Must(template.New("page").Parse(pageText))

// Write writes the page of records, from one trace or many, to w: a
// timeline per run, sub-agents nested under the calls that ran them, and
// across the runs the utilization histogram and what spent the budget of
// the runs that ran out. It returns w's error, or the template's.
func Write(w io.Writer, records []trace.Record, opts Options) error {
	return pageTemplate.Execute(w, buildPage(records, opts))
}

// pageView is the whole page, laid out.
type pageView struct {
	Title   string
	Sources []string
	Summary string
	Across  acrossView
	Runs    []runView
	Bars    int // attempts drawn, on every run: the page's script counts them too
}

type runView struct {
	Anchor    string
	ID        string
	Class     string // complete, partial, unfinished
	Badge     string
	Heading   string
	Sub       []string
	Landing   string
	Where     []shareView
	Exhausted string
	Strip     stripView
	SVG       svgView
}

type shareView struct {
	Step, Full string // Step may be shortened
	Time, Pct  string
	W, SVGW    float64
}

// whereBar is the longest bar of a run's "where the time went".
const whereBar = 36.0

func buildPage(records []trace.Record, opts Options) pageView {
	top, all := readRuns(records)
	rep := trace.Summarize(records)
	p := pageView{Title: opts.Title, Sources: opts.Sources}
	if p.Title == "" {
		p.Title = "Glidepath runs"
	}
	p.Summary = summaryLine(rep, len(records))
	for _, r := range top {
		p.Runs = append(p.Runs, runPage(r))
	}
	for _, rv := range p.Runs {
		p.Bars += len(rv.SVG.Bars)
	}
	p.Across = across(rep, top, all)
	return p
}

// summaryLine is the page's one line over all runs.
func summaryLine(rep trace.Report, records int) string {
	if records == 0 {
		return "No records: the traces are empty."
	}
	parts := []string{fmt.Sprintf("%s: %d complete, %d partial", plural(rep.Runs, "run"), rep.Results["complete"], rep.Results["partial"])}
	if rep.Unfinished > 0 {
		parts[0] += fmt.Sprintf(", %d unfinished", rep.Unfinished)
	}
	if n := len(rep.SubAgents); n > 0 {
		var kids int
		for _, s := range rep.SubAgents {
			kids += s.Runs
		}
		parts = append(parts, plural(kids, "sub-agent run"))
	}
	o := rep.Outcomes
	attempts := o.OK + o.Ours.Total + o.Theirs.Total
	for _, n := range o.Other {
		attempts += n
	}
	parts = append(parts, fmt.Sprintf("%s: %d ok, %d we gave up, %d they failed", plural(attempts, "attempt"), o.OK, o.Ours.Total, o.Theirs.Total))
	if rep.Retries > 0 {
		parts = append(parts, plural(rep.Retries, "retry"))
	}
	if o.Refused > 0 {
		parts = append(parts, fmt.Sprintf("%d refused", o.Refused))
	}
	if rep.Orphans > 0 {
		parts = append(parts, plural(rep.Orphans, "orphan"))
	}
	return strings.Join(parts, " · ")
}

// causeWords says what a run_end cause means.
func causeWords(cause string) string {
	switch cause {
	case "budget":
		return "ran out of budget"
	case "quiet":
		return "stalled: the quiet clock fired"
	case "cancelled":
		return "cancelled"
	case "max_steps":
		return "hit its step limit"
	case "upstream":
		return "a server failed it"
	case "unsettled":
		return "a write's outcome is unknown"
	case "tools_failed":
		return "answered, but every tool call failed or never started"
	case "":
		return "no cause given"
	}
	return cause
}

// runStatus is how a run ended, in a few words, and its class.
func runStatus(r *run) (string, string) {
	switch {
	case r.end == nil:
		return "unfinished: the trace ends at " + fmtMs(r.last) + " with no run_end", "unfinished"
	case r.end.Result == "complete":
		return "complete in " + fmtMs(r.end.ElapsedMs), "complete"
	case r.end.Result == "partial":
		return "partial at " + fmtMs(r.end.ElapsedMs) + ": " + causeWords(r.end.Cause), "partial"
	}
	return orWord(r.end.Result, "no result") + " at " + fmtMs(r.end.ElapsedMs) + ": " + causeWords(r.end.Cause), "other"
}

// anchor is an HTML id for a run.
func anchor(id string) string {
	var sb strings.Builder
	sb.WriteString("t-")
	for _, c := range id {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
			sb.WriteRune(c)
		default:
			sb.WriteByte('_')
		}
	}
	return sb.String()
}

// runPage lays out one run shown on its own, with its children nested.
func runPage(r *run) runView {
	status, class := runStatus(r)
	v := runView{Anchor: anchor(r.id), ID: r.id, Class: class, Badge: class}
	of := ""
	if r.total > 0 {
		spent := r.last
		if r.end != nil {
			spent = r.end.ElapsedMs
		}
		of = fmt.Sprintf(" of %s (%s)", fmtMs(r.total), fmtPct(float64(spent)/float64(r.total)))
	}
	if late := lateOf(r); late > 0 {
		of += " — ended " + fmtMs(late) + " late"
	}
	switch class {
	case "complete":
		v.Heading = "Complete in " + fmtMs(r.end.ElapsedMs) + of
	case "partial":
		v.Heading = "Partial — " + causeWords(r.end.Cause) + ": " + fmtMs(r.end.ElapsedMs) + of
	case "unfinished":
		v.Heading = "Unfinished — the trace ends at " + fmtMs(r.last) + of + ", with no run_end"
	default:
		v.Heading = status + of
	}
	v.Sub = append(v.Sub, r.id)
	if r.total > 0 {
		rule := "default rule"
		if r.reserveSet {
			rule = "as the trace shows"
		}
		v.Sub = append(v.Sub, fmt.Sprintf("budget %s, reserve %s (%s)", fmtMs(r.total), fmtMs(r.reserve), rule))
	}
	attempts, retries := 0, 0
	for _, l := range r.lanes {
		for _, c := range l.calls {
			attempts += len(c.attempts)
			for _, w := range c.waits {
				if !w.rec.Reconciling {
					retries++
				}
			}
		}
	}
	v.Sub = append(v.Sub, plural(attempts, "attempt")+", "+plural(retries, "retry"))
	if n := countChildren(r); n > 0 {
		v.Sub = append(v.Sub, plural(n, "sub-agent")+" nested")
	}
	if r.parentID != "" {
		v.Sub = append(v.Sub, "a sub-agent of "+r.parentID+", whose call is not in these traces")
	}
	if l := r.landing; l != nil {
		who := orWord(l.Result, "?")
		v.Landing = fmt.Sprintf("Landed at %s, summarized by the %s", fmtMs(l.ElapsedMs), who)
		if l.Message != "" {
			v.Landing += ": " + l.Message
		}
	}

	// Where the time went: the run's own report, as harness report would
	// print it for this run alone.
	own := make([]trace.Record, len(r.records))
	for i, rec := range r.records {
		rec.ParentRunID = ""
		if rec.Event == trace.RunStart {
			rec.Key = "" // shown on its own: not a child here
		}
		own[i] = rec
	}
	rep := trace.Summarize(own)
	var most int64
	for _, s := range rep.Steps {
		most = max(most, s.Ms)
	}
	room := 1000.0 // of the line, beside its title
	for i, s := range rep.Steps {
		w := whereBar + 40 + textWidth(s.Step+" "+fmtMs(s.Ms)+" "+fmtPct(s.Share))
		if i > 0 && w > room {
			break
		}
		room -= w
		w = 0.0
		if most > 0 {
			w = round1(whereBar * float64(s.Ms) / float64(most))
		}
		v.Where = append(v.Where, shareView{Step: s.Step, Full: s.Step, Time: fmtMs(s.Ms), Pct: fmtPct(s.Share), W: max(w, 1), SVGW: whereBar + 2})
	}
	if len(rep.Exhausted) > 0 {
		e := rep.Exhausted[0]
		if e.StepIndex >= 0 {
			v.Exhausted = fmt.Sprintf("Out of budget: step %d spent most of it — %s of %s (%s), mostly %s", e.StepIndex, fmtMs(e.Ms), fmtMs(e.SpentMs), fmtPct(e.Share), e.Step)
			if e.HeldBy != "" && (e.HeldBy != e.Step || e.HeldByIndex != e.StepIndex) {
				v.Exhausted += fmt.Sprintf("; step %d's %s held the budget when it ran out", e.HeldByIndex, e.HeldBy)
			}
			v.Exhausted += "."
		}
	}

	d, zoomed := domainOf(r.total, r.last)
	v.SVG = layoutRun(r, d)
	v.Strip = layoutStrip(r, d, zoomed)
	// Rows are named per run; on the page, a run's are its own.
	prefix := v.Anchor + ":"
	for i := range v.SVG.Texts {
		v.SVG.Texts[i].Row = prefixed(prefix, v.SVG.Texts[i].Row)
	}
	for i := range v.SVG.Bars {
		v.SVG.Bars[i].Row = prefixed(prefix, v.SVG.Bars[i].Row)
	}
	for i := range v.SVG.Waits {
		v.SVG.Waits[i].Row = prefixed(prefix, v.SVG.Waits[i].Row)
	}
	for i := range v.SVG.Marks {
		v.SVG.Marks[i].Row = prefixed(prefix, v.SVG.Marks[i].Row)
	}
	for i := range v.Strip.Texts {
		v.Strip.Texts[i].Row = prefixed(prefix, v.Strip.Texts[i].Row)
	}
	return v
}

func prefixed(prefix, row string) string {
	if row == "" {
		return ""
	}
	return prefix + row
}

func countChildren(r *run) int {
	n := 0
	for _, c := range r.children {
		n += 1 + countChildren(c.run)
	}
	return n
}

// stripView is the whole budget of a run in one thin bar: the ladder's
// phases as planned, the time spent, and the stretch the timeline below
// shows.
type stripView struct {
	Label  string
	H      float64
	Bands  []rectView
	Spent  rectView
	Late   *rectView // the time spent past the budget's end, nil when none
	Lines  []lineView
	Zoom   *lineView
	Texts  []textView
	Budget bool // reports whether the trace gives the budget
}

const (
	stripY    = 6.0
	stripH    = 12.0
	stripRows = 3 // rows of labels under the strip
)

func layoutStrip(r *run, d int64, zoomed bool) stripView {
	v := stripView{H: 22}
	if r.total <= 0 {
		v.Label = "budget not in the trace"
		return v
	}
	v.Budget = true
	v.Label = "budget " + fmtMs(r.total)
	spent := r.last
	if r.end != nil {
		spent = r.end.ElapsedMs
	}
	// A run that ended past its budget is drawn to its end: the strip
	// then reaches past the budget's end, which its line marks.
	s := scale{domain: float64(max(r.total, spent))}
	landAt := r.total - r.reserve
	bounds := []struct {
		phase    string
		from, to int64
	}{
		{"explore", 0, min(int64(math.Round(narrowAt*float64(r.total))), landAt)},
		{"narrow", int64(math.Round(narrowAt * float64(r.total))), min(int64(math.Round(fitAt*float64(r.total))), landAt)},
		{"fit", int64(math.Round(fitAt * float64(r.total))), landAt},
		{landPhase, landAt, r.total},
	}
	for _, p := range bounds {
		if p.to <= p.from {
			continue
		}
		x := s.x(float64(p.from))
		v.Bands = append(v.Bands, rectView{X: x, Y: stripY, W: s.x(float64(p.to)) - x, H: stripH, Class: "band " + phaseClass(p.phase),
			Title: fmt.Sprintf("%s from %s to %s of the budget", p.phase, fmtMs(p.from), fmtMs(p.to))})
	}
	v.Spent = rectView{X: plotX, Y: stripY + 3, W: max(s.x(float64(spent))-plotX, minBarW), H: stripH - 6, Class: "spent",
		Title: fmt.Sprintf("spent %s of %s (%s)", fmtMs(spent), fmtMs(r.total), fmtPct(float64(spent)/float64(r.total)))}
	late := lateOf(r)
	if spent > r.total {
		x := s.x(float64(r.total))
		v.Late = &rectView{X: x, Y: stripY + 1, W: max(s.x(float64(spent))-x, minBarW), H: stripH - 2, Class: "spent late",
			Title: fmt.Sprintf("%s past the budget's end", fmtMs(spent-r.total))}
	}
	var labels []stacked
	var titles, classes []string
	var lines []int // the index in v.Lines of each label's line, −1 for none
	add := func(l stacked, title, class string, line int) {
		labels = append(labels, l)
		titles = append(titles, title)
		classes = append(classes, class)
		lines = append(lines, line)
	}
	spentText := "spent " + fmtMs(spent) + " · " + fmtPct(float64(spent)/float64(r.total))
	alts := []string{}
	if late > 0 {
		spentText += " · ended " + fmtMs(late) + " late"
		alts = append(alts, "spent "+fmtMs(spent)+" · "+fmtMs(late)+" late")
	}
	if zoomed {
		alts = append([]string{spentText}, alts...)
		spentText += " · the timeline below shows 0–" + fmtMs(d)
	}
	add(stacked{x: v.Spent.X + v.Spent.W, text: spentText, alts: alts}, v.Spent.Title, "spent", -1)
	for _, l := range ladderLines(r) {
		if len(l.strip) == 0 {
			continue // the landing and the end are the timeline's
		}
		x := s.x(float64(l.at))
		v.Lines = append(v.Lines, lineView{X1: x, Y1: stripY - 3, X2: x, Y2: stripY + stripH + 3, Class: "ln " + l.class, Title: l.title})
		add(stacked{x: x, text: l.strip[0], alts: l.strip[1:], pole: true}, l.title, l.class, len(v.Lines)-1)
	}
	if zoomed {
		x2 := s.x(float64(d))
		v.Zoom = &lineView{X1: plotX, Y1: stripY + stripH + 3, X2: x2, Y2: stripY + stripH + 3, Class: "zoom", Title: "the timeline below shows 0 to " + fmtMs(d)}
		v.Lines = append(v.Lines, lineView{X1: x2, Y1: stripY, X2: x2, Y2: stripY + stripH + 3, Class: "zoom", Title: v.Zoom.Title})
	}
	rows := stack(labels, stripRows, plotX, svgWidth-2, false)
	used := 1
	for i, row := range rows {
		if row < 0 {
			continue
		}
		used = max(used, row+1)
		baseline := stripY + stripH + 14 + 12*float64(row)
		v.Texts = append(v.Texts, labelText(labels[i], baseline, "lbl strip "+classes[i], "s"+strconv.Itoa(row), titles[i]))
		if lines[i] >= 0 {
			v.Lines[lines[i]].Y2 = baseline + 1
		}
	}
	v.H = stripY + stripH + 14 + 12*float64(used-1) + 6
	return v
}

// acrossView is the part of the page over all runs.
type acrossView struct {
	Hist        histView
	Steps       []shareView
	Exhausted   []exhaustView
	Outcomes    []outcomeView
	SubAgents   []subView
	Utilization string
}

type exhaustView struct {
	Anchor, Run, Spent, Step, Time, Pct, HeldBy string
	W                                           float64
}

type outcomeView struct {
	Class, Name string
	N           int
	Detail      string
}

type subView struct {
	Step, Runs, Results, Slices, Spent, Mostly string
}

func across(rep trace.Report, top []*run, all map[string]*run) acrossView {
	v := acrossView{}
	// The runs trace.Summarize counts as runs: not a child by parent_run_id
	// or by a key of another run's call.
	var utils []float64
	for _, r := range top {
		if r.parentID != "" || r.end == nil || r.total <= 0 {
			continue
		}
		utils = append(utils, float64(r.end.ElapsedMs)/float64(r.total))
	}
	v.Hist = layoutHist(utils, rep.Utilization)
	if u := rep.Utilization; u.Runs > 0 {
		v.Utilization = fmt.Sprintf("p50 %s · p90 %s · p99 %s over %s", fmtPct(u.P50), fmtPct(u.P90), fmtPct(u.P99), plural(u.Runs, "finished run"))
	}
	var most int64
	for _, s := range rep.Steps {
		most = max(most, s.Ms)
	}
	for _, s := range rep.Steps {
		w := 0.0
		if most > 0 {
			w = round1(160 * float64(s.Ms) / float64(most))
		}
		v.Steps = append(v.Steps, shareView{Step: ellipsize(s.Step, 32), Full: s.Step, Time: fmtMs(s.Ms) + " · " + plural(s.Attempts, "attempt"), Pct: fmtPct(s.Share), W: max(w, 1)})
	}
	for _, e := range rep.Exhausted {
		ev := exhaustView{Anchor: anchor(e.RunID), Run: shortID(e.RunID), Spent: fmtMs(e.SpentMs), Step: "—", Time: fmtMs(e.Ms), Pct: fmtPct(e.Share), W: round1(120 * min(max(e.Share, 0), 1)), HeldBy: "—"}
		if e.StepIndex >= 0 {
			ev.Step = fmt.Sprintf("step %d · %s", e.StepIndex, e.Step)
		}
		if e.HeldBy != "" {
			ev.HeldBy = fmt.Sprintf("step %d · %s", e.HeldByIndex, e.HeldBy)
		}
		if _, ok := all[e.RunID]; !ok {
			ev.Anchor = ""
		}
		v.Exhausted = append(v.Exhausted, ev)
	}
	o := rep.Outcomes
	nonZero := func(pairs ...any) string {
		var parts []string
		for i := 0; i+1 < len(pairs); i += 2 {
			if n := pairs[i+1].(int); n > 0 {
				parts = append(parts, fmt.Sprintf("%v %d", pairs[i], n))
			}
		}
		return strings.Join(parts, ", ")
	}
	ours, theirs := o.Ours.By, o.Theirs.By
	v.Outcomes = []outcomeView{
		{"ok", "ok", o.OK, ""},
		{"ours", "we gave up", o.Ours.Total, nonZero(trace.GaveUp, ours[trace.GaveUp], trace.Quiet, ours[trace.Quiet], trace.Cancelled, ours[trace.Cancelled])},
		{"theirs", "they failed", o.Theirs.Total, nonZero(trace.UpstreamError, theirs[trace.UpstreamError], trace.RateLimited, theirs[trace.RateLimited], trace.Invalid, theirs[trace.Invalid])},
		{"refused", "refused", o.Refused, ""},
		{"wait", noun(rep.Retries, "retry", "retries"), rep.Retries, nonZero("given up", o.RetriesGivenUp, "on a server's wait", o.ServerWaitsGivenUp)},
		cancelsView(all),
		{"reconcile", "reconciled", rep.Reconciled["done"] + rep.Reconciled["failed"] + rep.Reconciled["never_received"] + rep.Reconciled["running"], nonZero("done", rep.Reconciled["done"], "failed", rep.Reconciled["failed"], "never received", rep.Reconciled["never_received"], "running", rep.Reconciled["running"])},
		{"orphan", noun(rep.Orphans, "orphan", "orphans"), rep.Orphans, ""},
	}
	for _, s := range rep.SubAgents {
		results := fmt.Sprintf("%d complete, %d partial", s.Results["complete"], s.Results["partial"])
		if s.Unfinished > 0 {
			results += fmt.Sprintf(", %d unfinished", s.Unfinished)
		}
		mostly := "—"
		if len(s.Steps) > 0 {
			mostly = s.Steps[0].Step + " " + fmtMs(s.Steps[0].Ms)
		}
		v.SubAgents = append(v.SubAgents, subView{Step: s.Step, Runs: strconv.Itoa(s.Runs), Results: results,
			Slices: fmtMs(s.SliceP50Ms) + " / " + fmtMs(s.SliceMaxMs), Spent: fmtMs(s.SpentMs), Mostly: mostly})
	}
	return v
}

// cancelsView counts the cancels of every run once each, as the
// timelines draw them, by how they settled: a trace writes a cancel's
// sending and its answer as two cancel_sent records (SPEC §6), and
// counting records counts most cancels twice.
func cancelsView(all map[string]*run) outcomeView {
	by := map[string]int{}
	n := 0
	for _, r := range all {
		for _, m := range r.cancels {
			n++
			by[m.cancelState()]++
		}
	}
	var parts []string
	for _, s := range []struct{ state, words string }{
		{"accepted", "accepted"}, {"unknown", "unknown"}, {"failed", "failed"}, {"sent", "unanswered"},
	} {
		if by[s.state] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", s.words, by[s.state]))
		}
		delete(by, s.state)
	}
	for _, state := range slices.Sorted(maps.Keys(by)) { // words outside the SPEC's, as the trace has them
		parts = append(parts, fmt.Sprintf("%s %d", orWord(state, "?"), by[state]))
	}
	detail := ""
	if n > 0 {
		detail = fmt.Sprintf("sent %d: %s", n, strings.Join(parts, ", "))
	}
	return outcomeView{"cancel", noun(n, "cancel", "cancels"), n, detail}
}

func noun(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// histView is the utilization histogram: finished runs by spent/total, in
// tenths, with the report's percentiles.
type histView struct {
	W, H   float64
	Bars   []rectView
	Lines  []lineView
	Texts  []textView
	Base   float64
	X0, X1 float64
	Empty  bool
}

const (
	histW    = 520.0
	histX0   = 36.0
	histX1   = histW - 14
	histTop  = 38.0
	histBase = 116.0
)

// bins counts utilizations in tenths, [0, 10%) … [90%, 100%], and a last
// bin over 100% when a run spent more than its budget.
func bins(utils []float64) []int {
	out := make([]int, 10)
	for _, u := range utils {
		switch i := int(math.Floor(u*10 + 1e-9)); {
		case u > 1+1e-9:
			if len(out) == 10 {
				out = append(out, 0)
			}
			out[10]++
		case i >= 10:
			out[9]++
		default:
			out[max(i, 0)]++
		}
	}
	return out
}

func layoutHist(utils []float64, u trace.Utilization) histView {
	v := histView{W: histW, H: histBase + 24, Base: histBase, X0: histX0, X1: histX1}
	counts := bins(utils)
	if len(utils) == 0 {
		v.Empty = true
	}
	most := slices.Max(counts)
	bw := (histX1 - histX0) / float64(len(counts))
	x := func(f float64) float64 {
		return round1(histX0 + (histX1-histX0)*min(f, float64(len(counts))/10)/(float64(len(counts))/10))
	}
	for i, n := range counts {
		bx := round1(histX0 + float64(i)*bw)
		label := fmt.Sprintf("%d%%–%d%%", 10*i, 10*i+10)
		if i == 10 {
			label = "over 100%"
		}
		h := 0.0
		if most > 0 {
			h = round1((histBase - histTop - 14) * float64(n) / float64(most))
		}
		v.Bars = append(v.Bars, rectView{X: bx + 2, Y: histBase - h, W: round1(bw - 4), H: h, Class: "hbar", Title: fmt.Sprintf("%s of the budget spent: %s", label, plural(n, "run"))})
		if n > 0 {
			v.Texts = append(v.Texts, textView{X: round1(bx + bw/2), Y: histBase - h - 4, Text: strconv.Itoa(n), Class: "lbl count", Anchor: "middle", Row: "hc"})
		}
	}
	for i := 0; i <= len(counts); i += 2 {
		if i > 10 {
			break
		}
		v.Texts = append(v.Texts, textView{X: x(float64(i) / 10), Y: histBase + 14, Text: strconv.Itoa(10*i) + "%", Class: "lbl tick", Anchor: "middle", Row: "hx"})
	}
	if len(counts) == 11 {
		// A line lower than the ticks: beside the 100% tick it would
		// cover it (runs that end late spend more than their budget).
		v.Texts = append(v.Texts, textView{X: round1(histX0 + 10.5*bw), Y: histBase + 27, Text: ">100%", Class: "lbl tick", Anchor: "middle", Row: "hx2"})
		v.H += 13
	}
	if u.Runs == 0 {
		return v
	}
	var labels []stacked
	ps := []struct {
		name string
		f    float64
	}{{"p50", u.P50}, {"p90", u.P90}, {"p99", u.P99}}
	for _, p := range ps {
		labels = append(labels, stacked{x: x(p.f), text: p.name + " " + fmtPct(p.f), pole: true})
	}
	for i, row := range stack(labels, 3, 0, histW, true) {
		top := histTop - 6
		title := fmt.Sprintf("%s: %s of the budget spent", ps[i].name, fmtPct(ps[i].f))
		if row >= 0 {
			baseline := 12 + 11*float64(row)
			top = baseline - 9
			v.Texts = append(v.Texts, labelText(labels[i], baseline, "lbl pct", "hp"+strconv.Itoa(row), title))
		}
		v.Lines = append(v.Lines, lineView{X1: labels[i].x, Y1: top, X2: labels[i].x, Y2: histBase, Class: "ln pct", Title: title})
	}
	return v
}
