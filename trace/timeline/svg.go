package timeline

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/glidepath/glidepath/trace"
)

// svgView is one run's timeline, every element placed: the template only
// writes it out.
type svgView struct {
	H                   float64
	PlotTop, PlotBottom float64
	Bands               []rectView // phases, behind everything
	Lanes               []laneView
	Grid                []lineView
	Lines               []lineView // 60%, 80%, reserve, landing, end
	Waits               []rectView // backoff sleeps and reconcile waits
	Leases              []lineView
	Slices              []lineView // the budget slice of each nested child
	Bars                []barView
	Ticks               []lineView // quiet-clock resets and progress inside bars
	Marks               []markView
	Texts               []textView
}

type rectView struct {
	X, Y, W, H  float64
	Class, Call string
	Row         string // the row of labels it must not be covered by
	Title       string
}

type lineView struct {
	X1, Y1, X2, Y2 float64
	Class, Call    string
	Title          string
}

type laneView struct {
	Y, H      float64
	TextY     float64 // the baseline of its name
	Name      string  // as shown, maybe shortened
	Full      string  // the whole step kind, for the title
	X         float64
	Class     string
	Separator bool // reports whether a line is drawn above the lane
}

// barView is one attempt. Its data-* attributes name it as the trace does,
// so that a test or a reader of the DOM finds every attempt's bar.
type barView struct {
	rectView
	Run, Step, Key string
	Index, Attempt int
	Outcome        string
	GrantedMs      int64
	StartMs, EndMs int64
	Landing        bool
}

type markView struct {
	X, Y        float64
	Ref         string // the symbol drawn: "#mk-refused", "#mk-cancel-accepted" …
	Class, Call string
	Row         string
	Title       string
	At, Seq     int64  // its record's elapsed_ms and seq
	State       string // a cancel's: how it settled
}

type textView struct {
	X, Y   float64
	Text   string
	Class  string
	Row    string // labels of one row must not cover each other; the page's script checks
	Anchor string // start, end
	Call   string
	Title  string
	// In reports whether the label sits inside a bar, which spans
	// [InFrom, InTo): it must fit there.
	In           bool
	InFrom, InTo float64
}

// outcomeClass is the colour of an outcome: ok, ours (we gave up), theirs
// (they failed), open (never ended), other.
func outcomeClass(o trace.Outcome, ended bool) string {
	switch {
	case !ended:
		return "open"
	case o == trace.OK:
		return "ok"
	case o.Ours():
		return "ours"
	case o == trace.UpstreamError || o == trace.RateLimited || o == trace.Invalid:
		return "theirs"
	}
	return "other"
}

// builder lays out one top-level run and the children nested in it.
type builder struct {
	v    svgView
	s    scale
	rows int // labels rows handed out, for data-row
}

func (b *builder) row() string {
	b.rows++
	return "r" + strconv.Itoa(b.rows)
}

// layoutRun lays out r's timeline over a domain of d ms.
func layoutRun(r *run, d int64) svgView {
	b := &builder{s: scale{domain: float64(d)}}
	y := headH
	b.quiet(r, y)
	y += quietH + 4
	b.v.PlotTop = headH
	y = b.lanes(r, 0, y)
	b.v.PlotBottom = y
	b.header(r, d)
	b.axis(d)
	b.v.H = y + axisH
	return b.v
}

// quiet draws the quiet-clock resets: every progress record and attempt
// end, as the watchdog counts them, is a tick; the gaps between ticks are
// where the quiet clock ran.
func (b *builder) quiet(r *run, y float64) {
	b.v.Lanes = append(b.v.Lanes, laneView{Y: y, H: quietH, TextY: y + 11, Name: "quiet-clock resets", Full: "progress records and attempt ends: each resets the quiet clock", X: 8, Class: "quiet"})
	for _, t := range r.resets {
		what := "attempt end"
		if t.rec.Event == trace.Progress {
			what = "progress"
			if t.rec.Units != 0 || t.rec.Total != 0 {
				what += " " + strconv.FormatInt(t.rec.Units, 10)
				if t.rec.Total > 0 {
					what += "/" + strconv.FormatInt(t.rec.Total, 10)
				}
			}
		}
		title := fmt.Sprintf("%s at %s: %s", what, fmtMs(t.at), t.rec.Step)
		if t.rec.Message != "" && t.rec.Event == trace.Progress {
			title += "\n" + t.rec.Message
		}
		x := b.s.x(float64(t.at))
		b.v.Ticks = append(b.v.Ticks, lineView{X1: x, Y1: y + 2, X2: x, Y2: y + quietH - 2, Class: "reset", Call: callID(r, t.rec), Title: title})
	}
}

// callID names a call across the page, for the highlight of its
// attempts, waits and marks together.
func callID(r *run, rec *trace.Record) string {
	if rec.Key != "" {
		return r.id + "|" + rec.Key
	}
	return r.id + "|" + rec.Step + "|" + strconv.Itoa(rec.StepIndex)
}

// lanes lays out r's lanes from y down, r's clock starting at r.offset on
// the page's, and returns where they end.
func (b *builder) lanes(r *run, depth int, y float64) float64 {
	indent := 8 + 14*float64(depth)
	maxName := int((labelCol - indent - 10) / charWidth)
	for li, l := range r.lanes {
		ivs := make([]interval, len(l.calls))
		for i, c := range l.calls {
			from, to := c.span()
			ivs[i] = interval{float64(from), float64(to)}
		}
		rows, n := assignRows(ivs)
		// Refusals sit in the lane's first row, beside what ran.
		n = max(n, 1)
		name := l.step
		if depth > 0 {
			name = "↳ " + name
		}
		class := ""
		if li%2 == 1 {
			class = "alt"
		}
		b.v.Lanes = append(b.v.Lanes, laneView{Y: y, TextY: y + 15, H: float64(n) * rowH, Name: ellipsize(name, maxName), Full: l.step, X: indent, Class: class, Separator: true})
		spaces := make([]space, n)
		rowIDs := make([]string, n)
		for i := range rowIDs {
			rowIDs[i] = b.row()
		}
		// What each row holds comes first, so that labels go only where
		// nothing is.
		var first []shape // what the lane's first row draws, for its refusals
		for i, c := range l.calls {
			ry := y + float64(rows[i])*rowH
			drawn := b.call(r, c, ry, &spaces[rows[i]], rowIDs[rows[i]])
			if rows[i] == 0 {
				first = append(first, drawn...)
			}
		}
		for _, ref := range l.refusals {
			first = append(first, b.refusal(r, &ref, y, &spaces[0], rowIDs[0], first))
		}
		for i, c := range l.calls {
			ry := y + float64(rows[i])*rowH
			b.labels(r, c, ry, &spaces[rows[i]], rowIDs[rows[i]])
		}
		// A cancel's label says how it settled, where there is room left;
		// its shape and title say it always.
		for i, c := range l.calls {
			ry := y + float64(rows[i])*rowH
			b.cancelLabels(r, c, ry, &spaces[rows[i]], rowIDs[rows[i]])
		}
		y += float64(n) * rowH
		// The children of this lane's calls, each under the lane, in the
		// order they started.
		for _, ch := range r.children {
			if ch.at.call == nil || ch.at.call.step != l.step || !slices.Contains(l.calls, ch.at.call) {
				continue
			}
			y = b.child(ch.run, depth+1, y)
		}
	}
	if w := r.cancelWait; w != nil {
		y = b.cancelWait(r, w, indent, y)
	}
	return y
}

// cancelWait draws the run's wait for cancel answers, between its result
// and its run_end, in a lane of its own under the others: the stretch
// would otherwise be empty, and it is time the run took (SPEC §8).
func (b *builder) cancelWait(r *run, w *cancelWait, indent, y float64) float64 {
	b.v.Lanes = append(b.v.Lanes, laneView{Y: y, TextY: y + 15, H: rowH, Name: "cancel answers", Full: "the wait for the answers of the cancels the run sent, after its result existed", X: indent, Class: "cancelwait", Separator: true})
	row := b.row()
	x := b.s.x(r.offset + float64(w.from))
	width := b.s.width(r.offset+float64(w.from), r.offset+float64(w.to))
	var sb strings.Builder
	fmt.Fprintf(&sb, "waiting for cancel answers from %s to %s (%s): the result existed (%s at %s), and the run gave the cancels still unanswered their grace before it ended", fmtMs(w.from), fmtMs(w.to), fmtMs(w.to-w.from), w.result.Event, fmtMs(w.from))
	for _, m := range w.cancels {
		fmt.Fprintf(&sb, "\n%s: cancel sent at %s, %s", m.rec.Step, fmtMs(m.at), settledWords(m))
	}
	title := sb.String()
	b.v.Waits = append(b.v.Waits, rectView{X: x, Y: y + barY, W: width, H: barH, Class: "wait cancelwait", Call: r.id + "|cancel answers", Row: row, Title: title})
	var sp space
	sp.take(x, x+width)
	long, short := "waiting for cancel answers", "cancel answers"
	for _, t := range []string{long, short} {
		if tw := textWidth(t); tw+2*labelPad+2 <= width {
			b.v.Texts = append(b.v.Texts, textView{X: round1(x + labelPad + 1), Y: y + barY + barH - 3, Text: t, Class: "lbl in cancelwait", Row: row, Anchor: "start", Title: title, In: true, InFrom: x, InTo: x + width})
			return y + rowH
		}
	}
	if text, tx, ok := sp.beside(x, x+width, plotX, plotRight, long, short); ok {
		b.v.Texts = append(b.v.Texts, textView{X: tx, Y: y + barY + barH - 3, Text: text, Class: "lbl cancelwait", Row: row, Anchor: "start", Title: title})
	}
	return y + rowH
}

// shape is a stretch of a row a call or a mark drew, with the seqs of
// its first and last record, so that a refusal is set among them in the
// order of the records.
type shape struct {
	from, to    float64
	first, last int64
}

// call draws one call's attempts, waits, leases, progress ticks and marks
// in the row at y, takes their room in sp, and returns what it drew.
func (b *builder) call(r *run, c *call, y float64, sp *space, row string) []shape {
	off := r.offset
	var drawn []shape
	for _, w := range c.waits {
		x := b.s.x(off + float64(w.from))
		width := b.s.width(off+float64(w.from), off+float64(w.to))
		class, what := "wait", "backoff sleep before the retry"
		if w.rec.Reconciling {
			class, what = "wait recon", "reconciling: a wait between two asks of the write's status; nothing is sent again"
		}
		title := fmt.Sprintf("%s: %s, from %s to %s\n%s after attempt %d", c.step, what, fmtMs(w.from), fmtMs(w.to), fmtMs(w.to-w.from), w.rec.Attempt)
		if w.rec.Source != "" {
			title += " (" + w.rec.Source + ")"
		}
		if w.rec.RetryAfterInvalid != "" {
			title += "\nunreadable Retry-After " + strconv.Quote(w.rec.RetryAfterInvalid) + ": jittered instead"
		}
		b.v.Waits = append(b.v.Waits, rectView{X: x, Y: y + barY, W: width, H: barH, Class: class, Call: callID(r, w.rec), Row: row, Title: title})
		sp.take(x, x+width)
		drawn = append(drawn, shape{x, x + width, w.rec.Seq, w.rec.Seq})
	}
	for _, a := range c.attempts {
		rec := a.rec()
		x := b.s.x(off + float64(a.start))
		width := b.s.width(off+float64(a.start), off+float64(a.end))
		landing := rec.Phase == landPhase && a.startRec != nil
		bar := barView{
			rectView:  rectView{X: x, Y: y + barY, W: width, H: barH, Class: "bar " + outcomeClass(a.outcome(), a.ended), Call: callID(r, rec), Row: row, Title: attemptTitle(r, c, a)},
			Run:       r.id,
			Step:      rec.Step,
			Key:       rec.Key,
			Index:     rec.StepIndex,
			Attempt:   rec.Attempt,
			Outcome:   string(a.outcome()),
			GrantedMs: rec.GrantedMs,
			StartMs:   a.start,
			EndMs:     a.end,
			Landing:   landing,
		}
		if landing {
			bar.Class += " landing"
		}
		if a.startRec == nil {
			bar.Class += " headless"
		}
		b.v.Bars = append(b.v.Bars, bar)
		sp.take(x, x+width)
		last := int64(math.MaxInt64) // an attempt never ended is still drawn at the trace's end
		if a.endRec != nil {
			last = a.endRec.Seq
		}
		drawn = append(drawn, shape{x, x + width, rec.Seq, last})
		if rec.GrantedMs > 0 && a.startRec != nil {
			x2 := b.s.x(off + float64(a.start+rec.GrantedMs))
			b.v.Leases = append(b.v.Leases, lineView{X1: x, Y1: y + barY + barH + 2, X2: x2, Y2: y + barY + barH + 2, Class: "lease", Call: bar.Call,
				Title: fmt.Sprintf("%s attempt %d: lease %s granted (Budget-Remaining-Ms %d), to %s", rec.Step, rec.Attempt, fmtMs(rec.GrantedMs), rec.GrantedMs, fmtMs(a.start+rec.GrantedMs))})
		}
		for _, p := range a.progress {
			px := b.s.x(off + float64(p.ElapsedMs))
			if px > x+1 && px < x+width-1 {
				// Across the bar's top edge, clear of its label.
				b.v.Ticks = append(b.v.Ticks, lineView{X1: px, Y1: y + barY - 2, X2: px, Y2: y + barY + 3, Class: "progress", Call: bar.Call,
					Title: fmt.Sprintf("progress %d at %s: %s", p.Units, fmtMs(p.ElapsedMs), p.Message)})
			}
		}
	}
	// Marks that fall on one instant are set side by side, in the order
	// of their records, so that each can be seen and hovered.
	marks := slices.Clone(c.marks)
	slices.SortStableFunc(marks, func(a, b *mark) int { return cmp.Compare(a.at, b.at) })
	last := math.Inf(-1)
	for _, m := range marks {
		x := max(b.s.x(off+float64(m.at)), last+9)
		last = x
		ref, state := "#mk-"+string(m.kind), m.rec.State
		if m.kind == markCancel {
			state = m.cancelState()
			if stateClass(state) != "" {
				ref += "-" + state // one shape per way a cancel settles
			}
		}
		b.v.Marks = append(b.v.Marks, markView{X: x, Y: y + rowH/2, Ref: ref, Class: "mark " + string(m.kind) + stateClass(state), Call: callID(r, m.rec), Row: row, Title: markTitle(c, m), At: m.at, Seq: m.rec.Seq, State: state})
		sp.mark(x-5, x+5)
		drawn = append(drawn, shape{x - 5, x + 5, m.rec.Seq, m.rec.Seq})
	}
	return drawn
}

// cancelLabels writes beside each cancel of c how it settled, where the
// row has room for it.
func (b *builder) cancelLabels(r *run, c *call, y float64, sp *space, row string) {
	for _, mv := range b.v.Marks {
		if mv.Row != row || !strings.HasPrefix(mv.Ref, "#mk-cancel") || mv.Call != callIDOf(r, c) {
			continue
		}
		words := orWord(mv.State, "?")
		if words == string(trace.CancelStateSent) {
			words = "no answer"
		}
		if text, x, ok := sp.beside(mv.X-5, mv.X+5, plotX, plotRight, "cancel "+words, words); ok {
			b.v.Texts = append(b.v.Texts, textView{X: x, Y: y + barY + barH - 3, Text: text, Class: "lbl cancel", Row: row, Anchor: "start", Call: mv.Call, Title: mv.Title})
		}
	}
}

// callIDOf is callID of the call c, by its first attempt.
func callIDOf(r *run, c *call) string {
	if len(c.attempts) == 0 {
		return ""
	}
	return callID(r, c.attempts[0].rec())
}

// refusal marks a call the budget or a gate refused before it started,
// at its own time and in the order of the records (issue 18): left of
// what the row drew after it, right of what it drew before, at its time
// over a call that ran across it. It returns the shape it drew.
func (b *builder) refusal(r *run, rec *trace.Record, y float64, sp *space, row string, others []shape) shape {
	at := b.s.x(r.offset + float64(rec.ElapsedMs))
	x, settled := at, false
	for range 8 { // each move may meet another shape; a few rounds settle it
		moved := false
		for _, o := range others {
			if x+5 <= o.from || x-5 >= o.to {
				continue
			}
			switch {
			case o.first > rec.Seq:
				x, moved = o.from-5.5, true
			case o.last < rec.Seq:
				x, moved = o.to+5.5, true
			}
		}
		if !moved {
			settled = true
			break
		}
	}
	if !settled {
		// No room between what came before it and what came after: it is
		// drawn at its time, over both, still between them.
		x = at
	}
	x = round1(min(max(x, plotX), plotRight))
	title := fmt.Sprintf("refused at %s: %s step %d attempt %d was not started", fmtMs(rec.ElapsedMs), rec.Step, rec.StepIndex, rec.Attempt)
	if rec.Reason != "" {
		title += " (" + rec.Reason + ")"
	}
	if rec.Message != "" {
		title += "\n" + rec.Message
	}
	b.v.Marks = append(b.v.Marks, markView{X: x, Y: y + rowH/2, Ref: "#mk-refused", Class: "mark refused", Call: callID(r, rec), Row: row, Title: title, At: rec.ElapsedMs, Seq: rec.Seq})
	sp.mark(x-5, x+5)
	texts := []string{"refused", "refused"}
	if rec.Reason != "" {
		texts[0] = "refused: " + rec.Reason
	}
	if text, tx, ok := sp.beside(x-5, x+5, plotX, plotRight, texts...); ok {
		b.v.Texts = append(b.v.Texts, textView{X: tx, Y: y + barY + barH - 3, Text: text, Class: "lbl refused", Row: row, Anchor: "start", Call: callID(r, rec)})
	}
	return shape{x - 5, x + 5, rec.Seq, rec.Seq}
}

// labels writes each attempt's lease and outcome on its bar, or just
// right of it, where there is room; an attempt without room keeps its
// title.
func (b *builder) labels(r *run, c *call, y float64, sp *space, row string) {
	for i, a := range c.attempts {
		rec := a.rec()
		if a.startRec == nil {
			continue
		}
		from := b.s.x(r.offset + float64(a.start))
		to := from + b.s.width(r.offset+float64(a.start), r.offset+float64(a.end))
		outcome := string(a.outcome())
		if !a.ended {
			outcome = "no end"
		}
		lease := fmtMs(rec.GrantedMs)
		prefix := ""
		if rec.Attempt > 1 || i > 0 {
			prefix = "#" + strconv.Itoa(rec.Attempt) + " "
		}
		if rec.Phase == landPhase {
			prefix = "landing "
		}
		long := prefix + "lease " + lease + " · " + outcome
		short := prefix + lease + " · " + outcome
		text, x, inside, ok := sp.place(from, to, plotRight, long, short)
		if !ok {
			continue
		}
		class := "lbl"
		if inside {
			class += " in " + outcomeClass(a.outcome(), a.ended)
		}
		b.v.Texts = append(b.v.Texts, textView{X: x, Y: y + barY + barH - 3, Text: text, Class: class, Row: row, Anchor: "start", Call: callID(r, rec), In: inside, InFrom: from, InTo: to})
	}
}

// child lays out a nested run under its parent's lane: a row with its
// budget slice, then its lanes, its phases shaded behind them.
func (b *builder) child(c *run, depth int, y float64) float64 {
	top := y
	indent := 8 + 14*float64(depth-1)
	from := c.offset
	b.v.Lanes = append(b.v.Lanes, laneView{Y: y, TextY: y + 15, H: rowH, Name: ellipsize("↳ sub-agent "+shortID(c.id), int((labelCol-indent-10)/charWidth)), Full: c.id, X: indent, Class: "childhead", Separator: true})
	x1 := b.s.x(from)
	x2 := b.s.x(from + float64(max(c.total, c.last)))
	ly := y + rowH - 5 // the slice runs under its label
	call := ""
	if c.parentAttempt != nil {
		call = callID(c.parent, c.parentAttempt.rec())
	}
	status, _ := runStatus(c)
	sliceTitle := fmt.Sprintf("sub-agent %s: a slice of %s from its parent's %s call, starting at %s\n%s", c.id, fmtMs(c.total), stepOf(c), fmtMs(int64(from)), status)
	b.v.Slices = append(b.v.Slices, lineView{X1: x1, Y1: ly, X2: x2, Y2: ly, Class: "slice", Call: call, Title: sliceTitle})
	var sp space
	text := fmt.Sprintf("slice %s · %s", fmtMs(c.total), status)
	if t, tx, _, ok := sp.place(x1-labelPad, x1-labelPad, plotRight, text, status); ok {
		b.v.Texts = append(b.v.Texts, textView{X: tx, Y: ly - 4, Text: t, Class: "lbl child", Row: b.row(), Anchor: "start", Call: call, Title: sliceTitle})
	}
	y += rowH
	y = b.lanes(c, depth, y)
	// The child's phases and lines, inside its block only.
	for _, p := range c.phases {
		if p.phase == "explore" {
			continue
		}
		px := b.s.x(from + float64(p.from))
		b.v.Bands = append(b.v.Bands, rectView{X: px, Y: top, W: max(b.s.x(from+float64(p.to))-px, 0), H: y - top, Class: "band child " + phaseClass(p.phase), Title: "sub-agent phase " + p.phase})
	}
	for _, l := range ladderLines(c) {
		x := b.s.x(from + float64(l.at))
		if from+float64(l.at) > b.s.domain {
			continue
		}
		b.v.Lines = append(b.v.Lines, lineView{X1: x, Y1: top, X2: x, Y2: y, Class: "ln child " + l.class, Title: "sub-agent " + l.title})
	}
	return y
}

// stepOf names the parent's step that ran a child.
func stepOf(c *run) string {
	if c.parentAttempt == nil {
		return "agent:?"
	}
	return c.parentAttempt.rec().Step
}

// ladderLine is one of a run's vertical lines: where the ladder turns,
// where the run landed and where it ended.
type ladderLine struct {
	at     int64
	class  string
	label  []string // the label and shorter ones to fall back on
	strip  []string // the same in the budget strip
	title  string
	weight int // lower labels are placed first
}

// lateOf is how many milliseconds after its deadline r ended: its
// run_end's late_ms, else, for a trace without it, how far its end is
// past its budget; 0 for a run that ended in time (SPEC §3, §6).
func lateOf(r *run) int64 {
	switch {
	case r.end == nil:
		return 0
	case r.end.LateMs > 0:
		return r.end.LateMs
	case r.total > 0 && r.end.ElapsedMs > r.total:
		return r.end.ElapsedMs - r.total
	}
	return 0
}

// ladderLines are r's lines: 60%, 80%, the reserve, the landing, the end.
func ladderLines(r *run) []ladderLine {
	var out []ladderLine
	if r.total > 0 {
		landAt := r.total - r.reserve
		rule := "default rule"
		if r.reserveSet {
			rule = "seen in the trace"
		}
		out = append(out, ladderLine{at: landAt, class: "reserve", label: []string{"reserve " + fmtMs(r.reserve), "reserve"},
			strip: []string{"reserve " + fmtMs(r.reserve) + " from " + fmtMs(landAt), "reserve " + fmtMs(r.reserve), "reserve"}, weight: 1,
			title: fmt.Sprintf("the reserve begins at %s: the last %s of %s are kept for landing (%s)", fmtMs(landAt), fmtMs(r.reserve), fmtMs(r.total), rule)})
		for _, t := range []struct {
			f      float64
			class  string
			phase  string
			forbid string
		}{
			{narrowAt, "narrow", "narrow", "no new parallel branches, sub-agents or speculative calls"},
			{fitAt, "fit", "fit", "a call is admitted only if its p95 fits before the reserve"},
		} {
			at := int64(math.Round(t.f * float64(r.total)))
			line := ladderLine{at: at, class: t.class, label: []string{fmtPct(t.f)}, strip: []string{fmtPct(t.f) + " · " + fmtMs(at), fmtPct(t.f)}, weight: 2,
				title: fmt.Sprintf("%s of the budget (%s): %s begins — %s", fmtPct(t.f), fmtMs(at), t.phase, t.forbid)}
			if at >= landAt {
				line.class += " moot"
				line.weight = 4
				line.title = fmt.Sprintf("%s of the budget (%s) falls inside the reserve, which begins at %s: %s never comes", fmtPct(t.f), fmtMs(at), fmtMs(landAt), t.phase)
			}
			out = append(out, line)
		}
	}
	if l := r.landing; l != nil {
		who := l.Result
		if who == "" {
			who = "?"
		}
		title := fmt.Sprintf("landed at %s: summarized by the %s", fmtMs(l.ElapsedMs), who)
		if l.Cause != "" {
			title += ", because of " + l.Cause
		}
		if l.Message != "" {
			title += "\n" + l.Message
		}
		out = append(out, ladderLine{at: l.ElapsedMs, class: "landed", label: []string{"landed · " + who, "landed"}, title: title, weight: 0})
	}
	if r.end != nil {
		status, _ := runStatus(r)
		end := ladderLine{at: r.end.ElapsedMs, class: "end", label: []string{"end " + fmtMs(r.end.ElapsedMs), "end"}, weight: 3, title: fmt.Sprintf("run_end at %s: %s", fmtMs(r.end.ElapsedMs), status)}
		if late := lateOf(r); late > 0 {
			// Time is told as it passed (SPEC §3): the end is drawn where
			// it came, past the budget's end, and says by how much.
			words := "ended " + fmtMs(late) + " late"
			end.class += " late"
			end.label = []string{"end " + fmtMs(r.end.ElapsedMs) + " · " + fmtMs(late) + " late", words, fmtMs(late) + " late"}
			end.weight = 0
			end.title += fmt.Sprintf("; it %s, after its deadline (late_ms %d)", words, late)
		}
		out = append(out, end)
	} else {
		out = append(out, ladderLine{at: r.last, class: "end open", label: []string{"trace ends " + fmtMs(r.last), "trace ends"}, weight: 3, title: fmt.Sprintf("the trace ends at %s with no run_end", fmtMs(r.last))})
	}
	if r.total > 0 && (lateOf(r) > 0 || r.last > r.total) {
		// The budget's end is the plot's edge unless the run went past it.
		out = append(out, ladderLine{at: r.total, class: "budget", label: []string{"budget " + fmtMs(r.total), "B"}, strip: []string{"budget " + fmtMs(r.total), "B"}, weight: 1,
			title: fmt.Sprintf("the budget ends at %s: the run's deadline", fmtMs(r.total))})
	}
	return out
}

func phaseClass(p string) string {
	switch p {
	case "explore", "narrow", "fit", landPhase:
		return "ph-" + p
	}
	return "ph-other"
}

// header shades r's phases behind the lanes, names them, and draws the
// ladder's lines with their labels, none over another.
func (b *builder) header(r *run, d int64) {
	top, bottom := 0.0, b.v.PlotBottom
	var ph space
	for _, p := range r.phases {
		x := b.s.x(r.offset + float64(p.from))
		w := max(b.s.x(r.offset+float64(p.to))-x, 0)
		title := fmt.Sprintf("phase %s from %s to %s", p.phase, fmtMs(p.from), fmtMs(p.to))
		if p.forced {
			title += " (forced: the run landed early)"
		}
		b.v.Bands = append(b.v.Bands, rectView{X: x, Y: top, W: w, H: bottom - top, Class: "band " + phaseClass(p.phase), Title: title})
		name := p.phase
		if p.forced {
			name += " (forced)"
		}
		for _, t := range []string{name, p.phase} {
			if textWidth(t)+8 <= w && ph.free(x+4, x+4+textWidth(t), labelPad) {
				ph.take(x+4, x+4+textWidth(t))
				b.v.Texts = append(b.v.Texts, textView{X: round1(x + 4), Y: 12, Text: t, Class: "lbl phase", Row: "h0", Anchor: "start", Title: title})
				break
			}
		}
	}
	lines := ladderLines(r)
	slices.SortStableFunc(lines, func(a, b ladderLine) int { return a.weight - b.weight })
	var labels []stacked
	var shown []ladderLine
	for _, l := range lines {
		if l.at > d || l.at < 0 {
			continue
		}
		labels = append(labels, stacked{x: b.s.x(float64(l.at)), text: l.label[0], alts: l.label[1:], pole: true})
		shown = append(shown, l)
	}
	rows := stack(labels, 3, plotX, svgWidth-2, true)
	for i, row := range rows {
		l := labels[i]
		top := headH - 4
		if row >= 0 {
			baseline := 26 + 12*float64(row)
			top = baseline - 10
			b.v.Texts = append(b.v.Texts, labelText(l, baseline, "lbl line "+shown[i].class, "h"+strconv.Itoa(row+1), shown[i].title))
		}
		b.v.Lines = append(b.v.Lines, lineView{X1: l.x, Y1: top, X2: l.x, Y2: bottom, Class: "ln " + shown[i].class, Title: shown[i].title})
	}
}

// labelText is a stacked label, placed.
func labelText(l stacked, baseline float64, class, row, title string) textView {
	t := textView{X: round1(l.x + labelPad), Y: baseline, Text: l.text, Class: class, Row: row, Anchor: "start", Title: title}
	if l.end {
		t.X, t.Anchor = round1(l.x-labelPad), "end"
	}
	return t
}

// axis writes the time ticks under the lanes, with a faint grid.
func (b *builder) axis(d int64) {
	for _, t := range ticks(d) {
		x := b.s.x(float64(t))
		b.v.Grid = append(b.v.Grid, lineView{X1: x, Y1: b.v.PlotTop, X2: x, Y2: b.v.PlotBottom, Class: "grid"})
		anchor := "middle"
		switch t {
		case 0:
			anchor = "start"
		case d:
			anchor = "end"
		}
		b.v.Texts = append(b.v.Texts, textView{X: x, Y: b.v.PlotBottom + 14, Text: fmtMs(t), Class: "lbl tick", Row: "axis", Anchor: anchor})
	}
}

// attemptTitle is everything the trace says of one attempt, for its
// hover title.
func attemptTitle(r *run, c *call, a *attempt) string {
	rec := a.rec()
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s · step %d · attempt %d", rec.Step, rec.StepIndex, rec.Attempt)
	if rec.ResendCount > 0 {
		fmt.Fprintf(&sb, " (resend %d)", rec.ResendCount)
	}
	if rec.Phase == landPhase {
		sb.WriteString(" · landing")
	}
	sb.WriteByte('\n')
	took := a.end - a.start
	switch {
	case a.startRec == nil:
		fmt.Fprintf(&sb, "%s at %s; its attempt_start is not in the trace", a.outcome(), fmtMs(a.end))
	case !a.ended:
		fmt.Fprintf(&sb, "never ended: in flight from %s to the trace's end at %s (%s) of a %s lease", fmtMs(a.start), fmtMs(a.end), fmtMs(took), fmtMs(rec.GrantedMs))
	default:
		fmt.Fprintf(&sb, "%s after %s of a %s lease (Budget-Remaining-Ms %d)\nfrom %s to %s", a.outcome(), fmtMs(took), fmtMs(rec.GrantedMs), rec.GrantedMs, fmtMs(a.start), fmtMs(a.end))
	}
	fmt.Fprintf(&sb, " · phase %s · %s left", rec.Phase, fmtMs(rec.RemainingMs))
	if e := a.endRec; e != nil {
		var parts []string
		if e.Status != 0 {
			parts = append(parts, "HTTP "+strconv.Itoa(e.Status))
		}
		if e.Keepalives != 0 {
			parts = append(parts, plural(int(e.Keepalives), "keepalive"))
		}
		if e.Chunks != 0 {
			parts = append(parts, plural(int(e.Chunks), "chunk"))
		}
		switch {
		case e.InputTokens != 0 || e.OutputTokens != 0:
			parts = append(parts, fmt.Sprintf("%d tokens in, %d out", e.InputTokens, e.OutputTokens))
		case e.Tokens != 0:
			parts = append(parts, plural(int(e.Tokens), "token"))
		}
		if len(parts) > 0 {
			sb.WriteString("\n" + strings.Join(parts, " · "))
		}
	}
	if rec.Key != "" {
		sb.WriteString("\nkey " + rec.Key)
	}
	if rec.CallID != "" {
		sb.WriteString("\ntool call " + rec.CallID)
	}
	if n := len(a.progress); n > 0 {
		fmt.Fprintf(&sb, "\n%s", plural(n, "progress record"))
	}
	for _, ch := range a.children {
		status, _ := runStatus(ch)
		fmt.Fprintf(&sb, "\nran sub-agent %s: %s", ch.id, status)
	}
	msg := rec.Message
	if a.endRec != nil && a.endRec.Message != "" {
		msg = a.endRec.Message
	}
	if msg != "" {
		sb.WriteString("\n" + msg)
	}
	return sb.String()
}

func markTitle(c *call, m *mark) string {
	rec := m.rec
	var s string
	switch m.kind {
	case markGiveUp:
		s = fmt.Sprintf("retry given up at %s: the %s backoff of %s would outlast the budget", fmtMs(m.at), orWord(rec.Source, "next"), fmtMs(rec.SleepMs))
		if rec.Reason != "" {
			s += " (" + rec.Reason + ")"
		}
		if rec.Reconciling {
			s = fmt.Sprintf("reconciling given up at %s: the next ask of the write's status would not fit (%s)", fmtMs(m.at), rec.Reason)
		}
	case markCancel:
		s = "cancel sent at " + fmtMs(m.at)
		if rec.GrantedMs > 0 {
			s += " on a " + fmtMs(rec.GrantedMs) + " lease"
		}
		s += ": " + settledWords(m)
	case markReconcil:
		s = fmt.Sprintf("reconcile at %s: %s", fmtMs(m.at), orWord(rec.State, "?"))
	case markOrphan:
		s = fmt.Sprintf("orphan at %s: the write's outcome is unknown, left %s in the journal", fmtMs(m.at), orWord(rec.State, "open"))
	}
	s = c.step + ": " + s
	if rec.Key != "" {
		s += "\nkey " + rec.Key
	}
	if rec.Message != "" {
		s += "\n" + rec.Message
	}
	if m.settled != nil && m.settled != rec && m.settled.Message != "" {
		s += "\n" + m.settled.Message
	}
	return s
}

// settledWords says how a cancel settled, and when.
func settledWords(m *mark) string {
	a := m.settled
	switch {
	case a == nil:
		return "no answer came (state sent): the tool was asked to stop, and whether it did is not known"
	case a == m.rec && a.State == string(trace.CancelStateFailed):
		return "failed: it could not be sent"
	}
	when := fmtMs(a.ElapsedMs)
	if d := a.ElapsedMs - m.at; d > 0 {
		when += ", " + fmtMs(d) + " later"
	}
	switch a.State {
	case string(trace.CancelStateAccepted):
		return "accepted at " + when
	case string(trace.CancelStateUnknown):
		return "unknown at " + when + ": the tool did not know the call (404)"
	case string(trace.CancelStateFailed):
		return "failed at " + when + ": no usable answer"
	}
	return orWord(a.State, "?") + " at " + when
}

// stateClass is the class of a cancel's or reconciliation's state, for
// its colour: only the SPEC's words, since the state is the trace's text.
func stateClass(state string) string {
	switch state {
	case "accepted", "unknown", "failed", "sent", "done", "never_received", "running", "open":
		return " st-" + state
	}
	return ""
}

func orWord(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// plural is n and its noun, "1 retry", "2 retries".
func plural(n int, noun string) string {
	switch {
	case n == 1:
		return "1 " + noun
	case strings.HasSuffix(noun, "y") && !strings.HasSuffix(noun, "ey"):
		return strconv.Itoa(n) + " " + noun[:len(noun)-1] + "ies"
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
