package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/glidepath/glidepath/trace"
)

// statusLine is the live line on stderr: budget spent, phase, step and
// the calls in flight. It is a sink of the run's records, so it reads the
// run from the same stamped records as the trace, and redraws at each.
type statusLine struct {
	w  io.Writer
	on bool

	mu       sync.Mutex // guards the fields below and serializes draws
	drawn    bool
	total    time.Duration
	spent    time.Duration
	phase    string
	step     int
	inFlight []string // "model", "tool:search", in start order
}

func newStatusLine(w io.Writer, mode string) *statusLine {
	on := mode == "always"
	if mode == "auto" {
		if f, ok := w.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
				on = true
			}
		}
	}
	return &statusLine{w: w, on: on}
}

// Record follows the run: its total from run_start, spent time and phase
// from every record, the step from each model turn's attempt, and what is
// in flight from attempts starting and ending. It never fails: a line that
// cannot be drawn is no reason to stop a run.
func (l *statusLine) Record(r trace.Record) error {
	if !l.on {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.spent = time.Duration(r.ElapsedMs) * time.Millisecond
	l.phase = r.Phase
	switch r.Event {
	case trace.RunStart:
		l.total = time.Duration(r.TotalMs) * time.Millisecond
	case trace.AttemptStart:
		if r.Step == "model" && r.StepIndex > 0 {
			l.step = r.StepIndex
		}
		l.inFlight = append(l.inFlight, r.Step)
	case trace.AttemptEnd:
		if i := slices.Index(l.inFlight, r.Step); i >= 0 {
			l.inFlight = slices.Delete(l.inFlight, i, i+1)
		}
	}
	l.draw()
	return nil
}

// draw writes the line over the last one; l.mu is held.
func (l *statusLine) draw() {
	inFlight := strings.Join(l.inFlight, ", ")
	if inFlight == "" {
		inFlight = "-"
	}
	fmt.Fprintf(l.w, "\r\033[K%v of %v spent · %s · step %d · %s",
		l.spent.Truncate(100*time.Millisecond), l.total, l.phase, l.step, inFlight)
	l.drawn = true
}

// clear erases the line before the result is printed.
func (l *statusLine) clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.drawn {
		fmt.Fprint(l.w, "\r\033[K")
		l.drawn = false
	}
}
