package timeline

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Every SVG is laid out svgWidth units wide, lane names on the left, the
// plot on the right, and drawn by its viewBox at the width of the window
// the page is opened in (SPEC §8): the layout's units are not pixels.
const (
	svgWidth  = 1200.0
	labelCol  = 208.0 // lane names end before the plot starts
	plotX     = labelCol
	plotRight = svgWidth - 16
	plotW     = plotRight - plotX

	fontSize  = 11.0
	charWidth = 7.0 // a generous average for fontSize in a sans font: DejaVu Sans digits are 7px

	rowH   = 22.0 // one row of a lane: one call at a time
	barY   = 3.0  // where a bar starts inside its row
	barH   = 14.0
	headH  = 56.0 // above the lanes: phase names, then three rows of line labels
	quietH = 14.0
	axisH  = 20.0 // below the lanes: the time ticks

	minBarW = 2.0 // an attempt of 0ms is still a bar one can find
)

// textWidth estimates how wide s is set at fontSize: charWidth a
// character, on the generous side, so that a label given room fits. The
// page's script measures the real text and hides the few that do not.
func textWidth(s string) float64 { return float64(utf8.RuneCountInString(s)) * charWidth }

// fmtMs writes a duration of ms milliseconds as a label reads it: at most
// three significant digits, ms below a second, m and s from a minute.
func fmtMs(ms int64) string {
	neg := ms < 0
	if neg {
		ms = -ms
	}
	var s string
	switch {
	case ms == 0:
		s = "0"
	case ms < 1000:
		s = strconv.FormatInt(ms, 10) + "ms"
	case ms < 60_000:
		s = trimFloat(sig3(float64(ms)/1000)) + "s"
	default:
		m, sec := ms/60_000, (ms%60_000+500)/1000
		if sec == 60 {
			m, sec = m+1, 0
		}
		s = strconv.FormatInt(m, 10) + "m"
		if sec > 0 {
			s += strconv.FormatInt(sec, 10) + "s"
		}
	}
	if neg {
		return "−" + s
	}
	return s
}

// sig3 rounds f (≥ 1) to three significant digits, down, as a lease is
// never shown longer than it was.
func sig3(f float64) float64 {
	d := math.Pow(10, 2-math.Floor(math.Log10(f)))
	return math.Floor(f*d+1e-9) / d
}

func trimFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// fmtPct writes a fraction as a whole percent, or with one decimal
// below 10%.
func fmtPct(f float64) string {
	p := 100 * f
	if p > 0 && p < 10 {
		return strconv.FormatFloat(math.Round(p*10)/10, 'f', -1, 64) + "%"
	}
	return strconv.FormatFloat(math.Round(p), 'f', 0, 64) + "%"
}

// niceStep is the step between time ticks for a domain of d ms: 1, 2,
// 2.5 or 5 times a power of ten (2.5 from 25ms, so that ticks stay whole
// milliseconds), the smallest that needs at most max steps.
func niceStep(d int64, max int) int64 {
	if d <= 0 || max < 1 {
		return 1
	}
	for p := int64(1); p <= math.MaxInt64/10; p *= 10 {
		// For p = 1, 25p/10 is 2 again: no tick falls between milliseconds.
		for _, step := range []int64{p, 2 * p, 25 * p / 10, 5 * p} {
			if (d+step-1)/step <= int64(max) {
				return step
			}
		}
	}
	return d
}

// domainOf is how much of a run's clock its timeline shows, in ms: the
// whole budget when the run spent half of it or more, since then the
// reserve and the phase lines tell its story; else the stretch the run
// took, rounded up to a tick, since a run that spent 10% of its budget
// would be a sliver at the left of the page. The budget strip above the
// timeline always shows the whole budget.
func domainOf(total, last int64) (d int64, zoomed bool) {
	switch {
	case total > 0 && 2*last >= total:
		return max(total, last), false
	case last <= 0:
		if total > 0 {
			return total, false
		}
		return 1000, false
	}
	want := last + last/25 + 1 // a little room for the last labels
	step := niceStep(want, 10)
	d = (want + step - 1) / step * step
	if total > 0 && d >= total {
		return total, false
	}
	return d, true
}

// scale maps a run's milliseconds onto the plot.
type scale struct {
	domain float64 // ms at plotRight
}

func (s scale) x(ms float64) float64 {
	if s.domain <= 0 {
		return plotX
	}
	return round1(plotX + plotW*min(max(ms, 0), s.domain)/s.domain)
}

// width is the width of [from, to], at least minBarW.
func (s scale) width(from, to float64) float64 {
	return round1(max(s.x(to)-s.x(from), minBarW))
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }

// ticks are the time ticks of a domain of d ms.
func ticks(d int64) []int64 {
	step := niceStep(d, 10)
	var out []int64
	for t := int64(0); t <= d; t += step {
		out = append(out, t)
	}
	return out
}

// interval is [from, to) on some axis.
type interval struct{ from, to float64 }

// assignRows lays intervals out in rows so that none covers another in
// its row: each goes, in order of start, into the first row free at its
// start (greedy interval partitioning uses as few rows as any layout). It
// returns each interval's row and the number of rows.
func assignRows(ivs []interval) (rows []int, n int) {
	order := make([]int, len(ivs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case ivs[a].from < ivs[b].from:
			return -1
		case ivs[a].from > ivs[b].from:
			return 1
		}
		return 0
	})
	rows = make([]int, len(ivs))
	var ends []float64 // per row, where its last interval ends
	for _, i := range order {
		row := -1
		for r, end := range ends {
			if end <= ivs[i].from {
				row = r
				break
			}
		}
		if row < 0 {
			row = len(ends)
			ends = append(ends, 0)
		}
		ends[row] = ivs[i].to
		rows[i] = row
	}
	return rows, len(ends)
}

// space is the taken stretches of one row of labels or marks, in pixels.
// Marks are drawn over bars, so a label inside a bar keeps clear of them
// too.
type space struct{ taken, marks []interval }

// free reports whether [from, to) touches nothing taken, with pad pixels
// to spare on each side.
func (s *space) free(from, to, pad float64) bool {
	for _, t := range s.taken {
		if from < t.to+pad && t.from < to+pad {
			return false
		}
	}
	return true
}

func (s *space) take(from, to float64) { s.taken = append(s.taken, interval{from, to}) }

// mark takes [from, to) for a mark.
func (s *space) mark(from, to float64) {
	s.take(from, to)
	s.marks = append(s.marks, interval{from, to})
}

// clearOfMarks reports whether [from, to) touches no mark, with pad
// pixels to spare.
func (s *space) clearOfMarks(from, to, pad float64) bool {
	for _, m := range s.marks {
		if from < m.to+pad && m.from < to+pad {
			return false
		}
	}
	return true
}

// labelPad is the room kept between a label and whatever is beside it.
const labelPad = 3.0

// place finds room for a label in s: inside [barFrom, barTo) when it fits
// there, else just right of it when that is free up to limit, trying each
// text in turn (the long one first). It returns the text chosen, its x,
// whether it is inside the bar, and false when none fits anywhere.
func (s *space) place(barFrom, barTo, limit float64, texts ...string) (text string, x float64, inside, ok bool) {
	for _, t := range texts {
		w := textWidth(t)
		x := barFrom + labelPad + 1
		if w+2*labelPad+2 <= barTo-barFrom && s.clearOfMarks(x, x+w, 1) {
			return t, round1(x), true, true
		}
	}
	for _, t := range texts {
		w := textWidth(t)
		from := barTo + labelPad
		if from+w <= limit && s.free(from, from+w, labelPad) {
			s.take(from, from+w)
			return t, round1(from), false, true
		}
	}
	return "", 0, false, false
}

// beside finds room in s for a label of a mark that spans [from, to):
// just right of it, else just left, between lo and hi, trying each text
// in turn (the long one first). It returns the text chosen and where it
// starts, and false when none fits either side.
func (s *space) beside(from, to, lo, hi float64, texts ...string) (text string, x float64, ok bool) {
	for _, t := range texts {
		w := textWidth(t)
		for _, x := range []float64{to + labelPad, from - labelPad - w} {
			if x >= lo && x+w <= hi && s.free(x, x+w, labelPad) {
				s.take(x, x+w)
				return t, round1(x), true
			}
		}
	}
	return "", 0, false
}

// stacked is a label beside a vertical line at x: just right of it, or
// just left when there is no room on the right. A label with a pole is
// joined to its line's end by the line itself, which then crosses the
// rows between the label and the plot.
type stacked struct {
	x    float64
	text string   // the label; stack sets the one of text and alts it placed
	alts []string // shorter texts to fall back on, in order
	pole bool
	end  bool // set by stack: the label sits left of its line
}

// span is where the label is drawn.
func (l stacked) span() (from, to float64) { return spanOf(l.x, l.text, l.end) }

func spanOf(x float64, text string, end bool) (from, to float64) {
	w := textWidth(text)
	if end {
		return x - labelPad - w, x - labelPad
	}
	return x + labelPad, x + labelPad + w
}

// maxStackTries bounds the search of stack: a page of a few lines per
// run takes a few dozen tries; a crowded one stops here with the best
// layout found.
const maxStackTries = 20000

// stack gives each label one of rows rows, a side of its line and one of
// its texts, so that it touches no other label and no other label's pole,
// between lo and hi; −1 for a label that finds no room: labels are never
// drawn over each other, and one that finds no room is left to its
// line's title. The first layout in which every label has room wins,
// each label preferring, in order, its longer text, a row nearer the
// plot, the right of its line; when there is none, the one that places
// the most labels, earlier labels first. Rows count from the plot when
// down is false (the plot is above them) and towards it when down is
// true (the plot is below them), so a pole from row r crosses the rows
// after r when down, and those before it otherwise. It sets each
// label's text and end as placed.
func stack(labels []stacked, rows int, lo, hi float64, down bool) []int {
	type choice struct {
		row  int
		text string
		end  bool
	}
	crossed := func(r int) []int { // the rows a pole from row r crosses
		var q []int
		for i := range rows {
			if down && i > r || !down && i < r {
				q = append(q, i)
			}
		}
		return q
	}
	// Per row, the labels' texts and the poles that cross it: a text
	// keeps clear of both, a pole only of texts (two lines at one x are
	// one line to the eye).
	texts, poles := make([]space, rows), make([]space, rows)
	cur := make([]choice, len(labels))
	best := make([]choice, len(labels))
	for i := range best {
		best[i].row = -1
	}
	bestN, tries := -1, 0
	var try func(i, placed int) bool
	try = func(i, placed int) bool {
		tries++
		if i == len(labels) {
			if placed > bestN {
				bestN = placed
				copy(best, cur)
			}
			return placed == len(labels)
		}
		if placed+len(labels)-i <= bestN || tries > maxStackTries {
			return false // no better layout below here, or no time for one
		}
		l := labels[i]
		for _, text := range append([]string{l.text}, l.alts...) {
			for r := range rows {
				for _, end := range []bool{false, true} {
					from, to := spanOf(l.x, text, end)
					if from < lo || to > hi || !texts[r].free(from, to, labelPad) || !poles[r].free(from, to, labelPad) {
						continue
					}
					if l.pole && slices.ContainsFunc(crossed(r), func(q int) bool { return !texts[q].free(l.x, l.x, 1) }) {
						continue
					}
					// Take the room, and give it back if no layout follows.
					nt, np := len(texts[r].taken), make([]int, rows)
					for q := range poles {
						np[q] = len(poles[q].taken)
					}
					texts[r].take(from, to)
					if l.pole {
						// A pole is a line, no wider: a label of another line
						// at the same x still fits just beside it.
						for _, q := range crossed(r) {
							poles[q].take(l.x, l.x)
						}
					}
					cur[i] = choice{r, text, end}
					if try(i+1, placed+1) {
						return true
					}
					texts[r].taken = texts[r].taken[:nt]
					for q := range poles {
						poles[q].taken = poles[q].taken[:np[q]]
					}
				}
			}
		}
		cur[i] = choice{row: -1}
		return try(i+1, placed)
	}
	try(0, 0)
	out := make([]int, len(labels))
	for i, c := range best {
		out[i] = c.row
		if c.row >= 0 {
			labels[i].text, labels[i].end = c.text, c.end
		}
	}
	return out
}

// ellipsize shortens s to at most n runes, cutting its middle, where a
// long tool name ("tool:mcp__everything__trigger-long-running-operation")
// says least.
func ellipsize(s string, n int) string {
	rs := []rune(s)
	if len(rs) <= n || n < 3 {
		return s
	}
	head := (n - 1) / 2
	tail := n - 1 - head
	return string(rs[:head]) + "…" + string(rs[len(rs)-tail:])
}

// shortID is a run ID as a heading shows it: "run-" and 8 characters.
func shortID(id string) string {
	if rest, ok := strings.CutPrefix(id, "run-"); ok && len(rest) > 8 {
		return "run-" + rest[:8]
	}
	return ellipsize(id, 14)
}
