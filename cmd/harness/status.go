package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

// statusEvery is how often the live line is redrawn. SPEC §4 asks for at
// least every 250ms; a tenth of a second is the resolution the line shows
// spent time in under 10s, so every frame can move it.
const statusEvery = 100 * time.Millisecond

// barCells is the bar's width in cells, each 5% of the budget, so that the
// ladder's 60% and 80% rungs fall on cell boundaries. On a terminal
// narrower than wideLine the bar has narrowCells, each 10%, whose
// boundaries hold the rungs too: the ten columns go to the calls in
// flight (issue 24: on 80 columns the demo's parallel step showed only
// "+4 more").
const (
	barCells    = 20
	narrowCells = 10
	wideLine    = 100
)

// erase returns the cursor to the start of the line and clears it.
const erase = "\r\033[K"

// statusLine is the live line on stderr (SPEC §4): a bar of the budget with
// the ladder's marks, spent and total, the phase, the step and the calls in
// flight, each with the time left on its lease:
//
//	[######------|---!-|----] 3.0s of 10s · explore · step 1 · tool:sleepy 4.5s
//
// It is a [trace.Sink] and draws on a goroutine of its own, apart from the
// records. Record runs under the run's recorder lock, and a terminal write
// can block (a terminal paused with Ctrl-S, a slow ssh link): were the
// records to draw, the run would wait for the terminal. So Record only
// updates the state and asks for a frame; the goroutine that [statusLine.Start]
// starts draws one soon after, and every [statusEvery] from the budget's
// clock, so that the line moves while a long model call writes no records.
// [statusLine.Close] stops it, waits for it and erases the line.
//
// A line that is off (not a terminal in auto mode, or mode never) writes
// nothing of its own: no frame, no escape sequence.
type statusLine struct {
	w     io.Writer
	b     *budget.Budget
	on    bool
	width func() int // the terminal's columns, read at every frame: it may be resized

	kick chan struct{} // holds one request for a frame; more coalesce
	stop context.CancelFunc
	wg   sync.WaitGroup // the drawing goroutine

	// term is held, as a channel (STYLE: no mutex across a blocking wait),
	// while writing to w; it guards drawn.
	term  chan struct{}
	drawn bool // reports whether a frame is on the terminal

	mu    sync.Mutex // guards state and held; never held while writing to w
	state statusState
	// held reports the call in flight whose allowance holds the run's
	// quiet clock (harness.Session.Held); nil until the run starts.
	held func() (watchdog.Silent, bool)
}

// Watch has the line read, at every frame, the call whose allowance of
// silence holds the run's quiet clock, and warn of it once half its
// allowance has passed (issue 27).
func (l *statusLine) Watch(held func() (watchdog.Silent, bool)) {
	l.mu.Lock()
	l.held = held
	l.mu.Unlock()
}

// newStatusLine returns the live line of the run whose budget is b, drawn
// on w when mode is "always", or "auto" and w is a terminal. The bar and
// the times are read from b, so its reserve is the run's.
func newStatusLine(w io.Writer, mode string, b *budget.Budget) *statusLine {
	fd := -1
	if f, ok := fileOf(w); ok {
		fd = int(f.Fd())
	}
	on := mode == "always" || mode == "auto" && fd >= 0 && term.IsTerminal(fd)
	return &statusLine{
		w: w, b: b, on: on && b != nil, width: widthOf(fd),
		kick: make(chan struct{}, 1), term: make(chan struct{}, 1),
	}
}

// widthOf returns a reader of the width to fit the line in: the terminal's
// when fd is one, else $COLUMNS, else 80.
func widthOf(fd int) func() int {
	return func() int {
		if fd >= 0 {
			if cols, _, err := term.GetSize(fd); err == nil && cols > 0 {
				return cols
			}
		}
		if cols, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && cols > 0 {
			return cols
		}
		return 80
	}
}

// Start starts drawing the line until ctx ends or [statusLine.Close] is
// called. It returns at once, and does nothing when the line is off or
// already started.
func (l *statusLine) Start(ctx context.Context) {
	if !l.on || l.stop != nil {
		return
	}
	ctx, l.stop = context.WithCancel(ctx)
	l.wg.Go(func() { l.loop(ctx) })
}

// Close stops drawing, waits for the drawing goroutine, and leaves the
// line erased, so that what is printed next starts a clean line. It may be
// called more than once, and on a line never started.
func (l *statusLine) Close() {
	if l.stop != nil {
		l.stop()
	}
	l.wg.Wait()
}

// loop draws a frame at once, then at every tick and soon after every
// change, until ctx ends; it erases the line on its way out.
func (l *statusLine) loop(ctx context.Context) {
	t := time.NewTicker(statusEvery)
	defer t.Stop()
	for {
		l.draw()
		select {
		case <-ctx.Done():
			l.lockTerm()
			l.eraseLocked()
			l.unlockTerm()
			return
		case <-t.C:
		case <-l.kick:
		}
	}
}

// draw writes the frame of this instant over the last one.
func (l *statusLine) draw() {
	spent, _ := l.b.Read()
	width := l.width() // an ioctl: outside l.mu, which Record waits for
	l.mu.Lock()
	held := l.held
	l.mu.Unlock()
	var silent watchdog.Silent
	if held != nil { // outside l.mu: it takes the watchdog's lock
		silent, _ = held()
	}
	l.mu.Lock()
	text := l.state.frame(spent, l.b.Total(), l.b.Reserve(), width)
	l.mu.Unlock()
	if w := landing.HeldWarning(silent); w != "" {
		text = cut(w+" · "+text, width-1)
	}
	l.lockTerm()
	defer l.unlockTerm()
	io.WriteString(l.w, erase+text) // a frame that cannot be drawn is no reason to stop
	l.drawn = true
}

// Write writes p to the line's writer, erasing the line first when it is
// drawn, so that a message written while the line is live (a warning)
// stands on a line of its own rather than after a frame; the next frame is
// drawn below it. p should end with a newline. Off, it is w's Write.
func (l *statusLine) Write(p []byte) (int, error) {
	l.lockTerm()
	l.eraseLocked()
	n, err := l.w.Write(p)
	l.unlockTerm()
	l.requestFrame()
	return n, err
}

func (l *statusLine) lockTerm()   { l.term <- struct{}{} }
func (l *statusLine) unlockTerm() { <-l.term }

// eraseLocked erases the frame on the terminal, if any; l.term is held.
func (l *statusLine) eraseLocked() {
	if l.drawn {
		io.WriteString(l.w, erase)
		l.drawn = false
	}
}

// requestFrame asks the drawing goroutine for a frame without waiting:
// a request already pending stands for this one too.
func (l *statusLine) requestFrame() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// Record follows the run and asks for a frame when what the line shows
// changed. It never blocks on the terminal and never fails: a line that
// cannot be drawn is no reason to stop a run.
func (l *statusLine) Record(r trace.Record) error {
	if !l.on {
		return nil
	}
	l.mu.Lock()
	changed := l.state.follow(r)
	l.mu.Unlock()
	if changed {
		l.requestFrame()
	}
	return nil
}

// statusState is what the records told the line: the phase, the step and
// the calls in flight. Spent time is not part of it: it is read from the
// budget at every frame.
type statusState struct {
	started bool   // run_start was seen
	runID   string // its run's: records of other runs (a sub-agent's) are not this line's
	phase   string // the last record's; "" before any
	step    int
	calls   []statusCall // in start order
}

// statusCall is one attempt in flight.
type statusCall struct {
	step, key string
	attempt   int
	leaseEnd  time.Duration // the spent time at which its lease ends; 0: none known
}

// follow updates st with r and reports whether what the line shows
// changed: the total from run_start is the budget's, the step is that of
// each model turn's attempt (the landing call, step 0, is not a step), and
// what is in flight comes from attempts starting and ending.
func (st *statusState) follow(r trace.Record) bool {
	if r.Event == trace.RunStart && !st.started {
		st.started, st.runID = true, r.RunID
	} else if st.started && r.RunID != st.runID {
		return false
	}
	changed := r.Phase != "" && r.Phase != st.phase
	if r.Phase != "" {
		st.phase = r.Phase
	}
	switch r.Event {
	case trace.RunStart:
		changed = true
	case trace.AttemptStart:
		if r.Step == "model" && r.StepIndex > 0 {
			st.step = r.StepIndex
		}
		c := statusCall{step: r.Step, key: r.Key, attempt: r.Attempt}
		if r.GrantedMs > 0 {
			c.leaseEnd = time.Duration(r.ElapsedMs+r.GrantedMs) * time.Millisecond
		}
		st.calls = append(st.calls, c)
		changed = true
	case trace.AttemptEnd:
		i := slices.IndexFunc(st.calls, func(c statusCall) bool {
			return c.step == r.Step && c.key == r.Key && c.attempt == r.Attempt
		})
		if i >= 0 {
			st.calls = slices.Delete(st.calls, i, i+1)
			changed = true
		}
	}
	return changed
}

// frame is the line after spent of a budget total with reserve reserve,
// cut to width columns:
//
//	[############|---!-|----] 6.1s of 10s · narrow · step 2 · tool:sleepy 4.5s, tool:fetch 2.0s, +1 more
//
// It keeps the last column free, so that no terminal wraps it. The calls
// in flight are shown in the first of these forms that fits: each with its
// kind and the time left on its lease; without the "tool:" of a tool's
// kind; by name alone; as many of the first as fit, with their time if it
// fits too, and "+2 more" (or "+2", when that keeps one more in view);
// "+3 more". A terminal too narrow for the rest gets the line cut.
func (st *statusState) frame(spent, total, reserve time.Duration, width int) string {
	phase := landing.PhaseAt(spent, total, reserve)
	cells := barCells
	if width < wideLine {
		cells = narrowCells
	}
	head := fmt.Sprintf("%s %s of %s · %s · step %d · ",
		bar(spent, total, reserve, cells), landing.Rounded(spent), landing.Rounded(total), laterPhase(st.phase, phase), st.step)
	limit := width - 1
	if len(st.calls) == 0 {
		return cut(head+"-", limit)
	}
	full, short, names := make([]string, len(st.calls)), make([]string, len(st.calls)), make([]string, len(st.calls))
	for i, c := range st.calls {
		left := ""
		if c.leaseEnd > 0 {
			left = " " + landing.Rounded(c.leaseEnd-spent)
		}
		names[i] = strings.TrimPrefix(c.step, "tool:")
		full[i], short[i] = c.step+left, names[i]+left
	}
	fits := func(s string) bool { return utf8.RuneCountInString(head+s) <= limit }
	for _, all := range [][]string{full, short, names} {
		if s := strings.Join(all, ", "); fits(s) {
			return head + s
		}
	}
	for k := len(st.calls) - 1; k >= 0; k-- { // as many calls named as fit, with their time if it fits too
		for _, some := range [][]string{short, names} {
			for _, more := range []string{" more", ""} {
				if s := strings.Join(append(some[:k:k], fmt.Sprintf("+%d%s", len(some)-k, more)), ", "); fits(s) {
					return head + s
				}
			}
		}
	}
	return cut(head, limit)
}

// laterPhase returns the later of the phase the records named and the one
// the budget is in now. Between records the budget moves on, and the
// ladder is never behind it; a phase forced by an early landing is ahead
// of it, and only the records know it.
func laterPhase(recorded string, now landing.Phase) string {
	for p := now + 1; p <= landing.Land; p++ {
		if p.String() == recorded {
			return recorded
		}
	}
	return now.String()
}

// cut returns s cut to at most n runes (every rune of a frame is one
// column), without a separator left dangling at the end.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:max(n, 0)])
	}
	return strings.TrimRight(s, " ·")
}

// bar draws the budget as cells cells (barCells or narrowCells), those
// spent filled, with a mark between cells at each of the ladder's rungs:
// '|' at 60% and 80%, '!' at the start of the reserve, B − R, where
// landing begins. A cell fills once it is wholly spent; a mark stands at
// the boundary nearest its instant, and the reserve's wins a boundary it
// shares with another.
//
//	[############|###!#|----]   B = 10s, R = 2.5s, 8s spent, 20 cells
//	[######|#!#|--]             the same, 10 cells
func bar(spent, total, reserve time.Duration, cells int) string {
	at := func(f float64) int { return int(f*float64(cells) + 0.5) }
	frac := func(d time.Duration) float64 { return float64(d) / float64(total) }
	filled := min(max(int(frac(spent)*float64(cells)), 0), cells)
	narrow, fit, land := at(landing.NarrowAt), at(landing.FitAt), at(frac(total-reserve))
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i <= cells; i++ {
		switch i {
		case land:
			b.WriteByte('!')
		case narrow, fit:
			b.WriteByte('|')
		}
		switch {
		case i == cells:
		case i < filled:
			b.WriteByte('#')
		default:
			b.WriteByte('-')
		}
	}
	b.WriteByte(']')
	return b.String()
}
