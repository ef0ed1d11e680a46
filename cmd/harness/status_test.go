package main

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/trace"
)

func TestTheBarIsTheBudgetWithTheLaddersMarks(t *testing.T) {
	cases := []struct {
		name                  string
		total, reserve, spent time.Duration
		want                  string
	}{
		// B = 10s: the default reserve, 2.5s, begins at 75%, between the rungs.
		{"10s, nothing spent", 10 * time.Second, 2500 * time.Millisecond, 0, "[------------|---!-|----]"},
		{"10s, under a cell", 10 * time.Second, 2500 * time.Millisecond, 499 * time.Millisecond, "[------------|---!-|----]"},
		{"10s, one cell", 10 * time.Second, 2500 * time.Millisecond, 500 * time.Millisecond, "[#-----------|---!-|----]"},
		{"10s, at 60%", 10 * time.Second, 2500 * time.Millisecond, 6 * time.Second, "[############|---!-|----]"},
		{"10s, at the reserve", 10 * time.Second, 2500 * time.Millisecond, 7500 * time.Millisecond, "[############|###!-|----]"},
		{"10s, at 80%", 10 * time.Second, 2500 * time.Millisecond, 8 * time.Second, "[############|###!#|----]"},
		{"10s, all spent", 10 * time.Second, 2500 * time.Millisecond, 10 * time.Second, "[############|###!#|####]"},
		// B = 20s with --reserve 2s: the reserve begins at 90%, after both rungs.
		{"20s, nothing spent", 20 * time.Second, 2 * time.Second, 0, "[------------|----|--!--]"},
		{"20s, at 65%", 20 * time.Second, 2 * time.Second, 13 * time.Second, "[############|#---|--!--]"},
		{"20s, at 95%", 20 * time.Second, 2 * time.Second, 19 * time.Second, "[############|####|##!#-]"},
		// B = 2m: the default reserve, 20s, begins at 83.3%: the nearest boundary.
		{"2m", 2 * time.Minute, 20 * time.Second, time.Minute, "[##########--|----|-!---]"},
		// A reserve of 20% begins where fit would: landing wins (landing.PhaseAt).
		{"shared boundary", 10 * time.Second, 2 * time.Second, 0, "[------------|----!----]"},
		// A reserve of half the budget begins before both rungs.
		{"large reserve", 10 * time.Second, 5 * time.Second, 0, "[----------!--|----|----]"},
	}
	for _, tc := range cases {
		if got := bar(tc.spent, tc.total, tc.reserve, barCells); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	// On a narrow terminal, cells of 10%: the rungs still fall between
	// cells, and the reserve's mark wins the boundary it shares.
	for _, tc := range []struct {
		name                  string
		total, reserve, spent time.Duration
		want                  string
	}{
		{"10s, narrow, at 80%", 10 * time.Second, 2500 * time.Millisecond, 8 * time.Second, "[######|##!--]"},
		{"20s, narrow, at 65%", 20 * time.Second, 2 * time.Second, 13 * time.Second, "[######|--|-!-]"},
	} {
		if got := bar(tc.spent, tc.total, tc.reserve, narrowCells); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestTheFrameFitsTheTerminalAndCutsTheCallsInFlight(t *testing.T) {
	st := statusState{phase: "explore", step: 1, calls: []statusCall{
		{step: "tool:sleepy", key: "k1", attempt: 1, leaseEnd: 7500 * time.Millisecond},
		{step: "tool:fetch", key: "k2", attempt: 1, leaseEnd: 5 * time.Second},
		{step: "model", attempt: 1, leaseEnd: 4 * time.Second},
	}}
	const head = "[######------|---!-|----] 3.0s of 10s · explore · step 1 · "
	// Below 100 columns the bar has 10 cells, and its columns go to the
	// calls (issue 24).
	const narrow = "[###---|--!--] 3.0s of 10s · explore · step 1 · "
	cases := []struct {
		width int
		want  string
	}{
		{200, head + "tool:sleepy 4.5s, tool:fetch 2.0s, model 1.0s"},
		{105, head + "tool:sleepy 4.5s, tool:fetch 2.0s, model 1.0s"}, // 104 columns, the last kept free
		{104, head + "sleepy 4.5s, fetch 2.0s, model 1.0s"},           // a tool's kind without its "tool:"
		{100, head + "sleepy 4.5s, fetch 2.0s, model 1.0s"},
		{99, narrow + "tool:sleepy 4.5s, tool:fetch 2.0s, model 1.0s"},
		{84, narrow + "sleepy 4.5s, fetch 2.0s, model 1.0s"},
		{80, narrow + "sleepy, fetch, model"}, // every call by name rather than one with its time
		{70, narrow + "sleepy, fetch, model"},
		{66, narrow + "sleepy, fetch, +1"}, // two calls by name rather than one with its time
		{65, narrow + "sleepy 4.5s, +2"},
		{62, narrow + "sleepy, +2"},
		{57, narrow + "+3 more"},
		{55, narrow + "+3"},
		{50, strings.TrimSuffix(narrow, " · ")},
		{40, "[###---|--!--] 3.0s of 10s · explore"},
		{20, "[###---|--!--] 3.0s"},
		{1, ""},
	}
	for _, tc := range cases {
		got := st.frame(3*time.Second, 10*time.Second, 2500*time.Millisecond, tc.width)
		if got != tc.want {
			t.Errorf("width %d:\n got %q\nwant %q", tc.width, got, tc.want)
		}
	}
	idle := statusState{phase: "narrow", step: 2}
	if got, want := idle.frame(6*time.Second, 10*time.Second, 2500*time.Millisecond, 100),
		"[############|---!-|----] 6.0s of 10s · narrow · step 2 · -"; got != want {
		t.Errorf("nothing in flight:\n got %q\nwant %q", got, want)
	}
	// The demo's parallel step on an 80-column terminal showed "step 1 ·
	// +4 more" throughout (issue 24); it names what is in flight.
	demo := statusState{phase: "explore", step: 1, calls: []statusCall{
		{step: "tool:deep_research", leaseEnd: 10 * time.Second}, {step: "tool:pay", leaseEnd: 550 * time.Millisecond},
		{step: "tool:search", leaseEnd: 2 * time.Second}, {step: "tool:fetch", leaseEnd: time.Second},
	}}
	if got, want := demo.frame(300*time.Millisecond, 20*time.Second, 2*time.Second, 80),
		"[------|--|-!-] 0.3s of 20s · explore · step 1 · deep_research, pay, search, +1"; got != want {
		t.Errorf("the demo's parallel step on 80 columns:\n got %q\nwant %q", got, want)
	}
}

func TestTheLineFollowsItsOwnRunsAttempts(t *testing.T) {
	var st statusState
	for _, r := range []trace.Record{
		{Event: trace.RunStart, RunID: "parent", Phase: "explore"},
		{Event: trace.AttemptStart, RunID: "parent", Step: "tool:search", Key: "a", Attempt: 1, ElapsedMs: 10, GrantedMs: 1000},
		{Event: trace.AttemptStart, RunID: "parent", Step: "tool:search", Key: "b", Attempt: 1, ElapsedMs: 10, GrantedMs: 2000},
		// A sub-agent's records, in the same sinks, are not this line's.
		{Event: trace.RunStart, RunID: "child", Phase: "explore"},
		{Event: trace.AttemptStart, RunID: "child", Step: "model", StepIndex: 7, Attempt: 1},
		{Event: trace.AttemptEnd, RunID: "child", Step: "tool:search", Key: "a", Attempt: 1},
		// The second call of the same tool ends first; then a retry of the first begins.
		{Event: trace.AttemptEnd, RunID: "parent", Step: "tool:search", Key: "b", Attempt: 1},
		{Event: trace.AttemptEnd, RunID: "parent", Step: "tool:search", Key: "a", Attempt: 1},
		{Event: trace.AttemptStart, RunID: "parent", Step: "tool:search", Key: "a", Attempt: 2, ElapsedMs: 500, GrantedMs: 300},
	} {
		st.follow(r)
	}
	want := []statusCall{{step: "tool:search", key: "a", attempt: 2, leaseEnd: 800 * time.Millisecond}}
	if len(st.calls) != 1 || st.calls[0] != want[0] || st.step != 0 {
		t.Errorf("calls %+v, step %d; want %+v, step 0", st.calls, st.step, want)
	}
}

// frameLog is a terminal that notes when each write came, in a synctest
// bubble's time.
type frameLog struct {
	start time.Time
	mu    sync.Mutex
	w     []logged
}

type logged struct {
	at   time.Duration
	text string
}

func (f *frameLog) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.w = append(f.w, logged{time.Since(f.start), string(p)})
	return len(p), nil
}

func (f *frameLog) writes() []logged {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.w)
}

// startLine starts the budget cfg and a line of it on a frameLog of the
// given width, with a recorder that stamps records as a run's does.
func startLine(t *testing.T, cfg budget.Config, width int) (*statusLine, *frameLog, *trace.Recorder) {
	t.Helper()
	b, err := budget.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := &frameLog{start: b.Start()}
	line := newStatusLine(out, "always", b)
	line.width = func() int { return width }
	rec := trace.NewRecorder("run-1", b, func(spent time.Duration) string {
		return landing.PhaseAt(spent, b.Total(), b.Reserve()).String()
	}, line)
	line.Start(t.Context())
	return line, out, rec
}

// showsAt reports an error unless the last write to out is a frame of
// want, drawn at the instant at, which is now.
func showsAt(t *testing.T, out *frameLog, at time.Duration, want string) {
	t.Helper()
	w := out.writes()
	last := w[len(w)-1]
	if got := strings.TrimPrefix(last.text, erase); got != want || last.at != at {
		t.Errorf("at %v: the last frame, drawn at %v, is\n %q\nwant\n %q", at, last.at, got, want)
	}
}

// TestTheLineIsRedrawnFromTheBudgetsClock follows a run of B = 10s, in fake
// time: a model turn, two tool calls, the ladder's 60% rung reached
// between records, and the landing call. At each instant the last frame
// drawn is the one asserted, drawn then; a frame is drawn at every 100ms
// tick as well, whether or not a record came.
func TestTheLineIsRedrawnFromTheBudgetsClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		line, out, rec := startLine(t, budget.Config{Total: 10 * time.Second}, 100)
		const ms = time.Millisecond
		steps := []struct {
			at   time.Duration
			recs []trace.Record
			want string
		}{
			{0, []trace.Record{{Event: trace.RunStart, TotalMs: 10000}},
				"[------------|---!-|----] 0.0s of 10s · explore · step 0 · -"},
			{50 * ms, []trace.Record{{Event: trace.AttemptStart, Step: "model", StepIndex: 1, Attempt: 1, GrantedMs: 7400}},
				"[------------|---!-|----] 0.1s of 10s · explore · step 1 · model 7.4s"},
			{100 * ms, nil, "[------------|---!-|----] 0.1s of 10s · explore · step 1 · model 7.4s"},
			{1900 * ms, nil, "[###---------|---!-|----] 1.9s of 10s · explore · step 1 · model 5.6s"},
			// A long model call writes no records; the line moves all the same.
			{3 * time.Second, nil, "[######------|---!-|----] 3.0s of 10s · explore · step 1 · model 4.5s"},
			{3020 * ms, []trace.Record{
				{Event: trace.AttemptEnd, Step: "model", StepIndex: 1, Attempt: 1},
				{Event: trace.AttemptStart, Step: "tool:sleepy", StepIndex: 1, Key: "k1", Attempt: 1, GrantedMs: 4000},
				{Event: trace.AttemptStart, Step: "tool:fetch", StepIndex: 1, Key: "k2", Attempt: 1, GrantedMs: 2000},
			}, "[######------|---!-|----] 3.0s of 10s · explore · step 1 · tool:sleepy 4.0s, tool:fetch 2.0s"},
			// 60% is reached with no record yet: the phase is read off the budget.
			{6 * time.Second, nil, "[############|---!-|----] 6.0s of 10s · narrow · step 1 · tool:sleepy 1.0s, tool:fetch 0.0s"},
			{6010 * ms, []trace.Record{{Event: trace.AttemptEnd, Step: "tool:fetch", StepIndex: 1, Key: "k2", Attempt: 1}},
				"[############|---!-|----] 6.0s of 10s · narrow · step 1 · tool:sleepy 1.0s"},
			// The landing call is not a step: the line keeps the last one.
			{7600 * ms, []trace.Record{
				{Event: trace.AttemptEnd, Step: "tool:sleepy", StepIndex: 1, Key: "k1", Attempt: 1},
				{Event: trace.AttemptStart, Step: "model", StepIndex: 0, Attempt: 1, GrantedMs: 2300},
			}, "[############|###!-|----] 7.6s of 10s · land · step 1 · model 2.3s"},
			{10 * time.Second, nil, "[############|###!#|####] 10s of 10s · land · step 1 · model 0.0s"},
		}
		for _, s := range steps {
			time.Sleep(s.at - time.Since(out.start))
			for _, r := range s.recs {
				rec.Record(r)
			}
			synctest.Wait()
			showsAt(t, out, s.at, s.want)
		}
		line.Close()
		w := out.writes()
		ticks := map[time.Duration]bool{}
		for i, l := range w[:len(w)-1] {
			if i > 0 && l.at-w[i-1].at > 250*time.Millisecond { // SPEC §4
				t.Errorf("no frame between %v and %v", w[i-1].at, l.at)
			}
			if !strings.HasPrefix(l.text, erase) || strings.ContainsAny(l.text[len(erase):], "\r\n\033") {
				t.Errorf("at %v: %q is not one frame", l.at, l.text)
			}
			ticks[l.at] = true
		}
		for at := time.Duration(0); at <= 10*time.Second; at += statusEvery {
			if !ticks[at] {
				t.Errorf("no frame drawn at %v", at)
			}
		}
		if last := w[len(w)-1]; last.text != erase {
			t.Errorf("Close wrote %q last, want the line erased", last.text)
		}
		// Closed, the line draws nothing more.
		rec.Record(trace.Record{Event: trace.AttemptStart, Step: "model", StepIndex: 2, Attempt: 1})
		time.Sleep(time.Second)
		synctest.Wait()
		if n := len(out.writes()); n != len(w) {
			t.Errorf("%d writes after Close", n-len(w))
		}
	})
}

// TestTheLineMovesDuringALongModelCall: one model call of a run of B = 20s
// with --reserve 2s; no record comes after it starts, and the frames follow
// the budget's clock across both rungs and into the reserve.
func TestTheLineMovesDuringALongModelCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		line, out, rec := startLine(t, budget.Config{Total: 20 * time.Second, Reserve: 2 * time.Second}, 100)
		defer line.Close()
		rec.Record(trace.Record{Event: trace.RunStart, TotalMs: 20000})
		rec.Record(trace.Record{Event: trace.AttemptStart, Step: "model", StepIndex: 1, Attempt: 1, GrantedMs: 17950})
		for _, s := range []struct {
			at   time.Duration
			want string
		}{
			{4300 * time.Millisecond, "[####--------|----|--!--] 4.3s of 20s · explore · step 1 · model 14s"},
			{12 * time.Second, "[############|----|--!--] 12s of 20s · narrow · step 1 · model 6.0s"},
			{16 * time.Second, "[############|####|--!--] 16s of 20s · fit · step 1 · model 2.0s"},
			{18 * time.Second, "[############|####|##!--] 18s of 20s · land · step 1 · model 0.0s"},
		} {
			time.Sleep(s.at - time.Since(out.start))
			synctest.Wait()
			showsAt(t, out, s.at, s.want)
		}
	})
}

// TestAWarningStandsOnALineOfItsOwn: a message written through the line
// erases the frame first, and the frame is drawn again after it.
func TestAWarningStandsOnALineOfItsOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		line, out, _ := startLine(t, budget.Config{Total: 10 * time.Second}, 100)
		defer line.Close()
		time.Sleep(50 * time.Millisecond)
		synctest.Wait()
		before := len(out.writes())
		line.Write([]byte("harness run: warning: no manifest\n"))
		synctest.Wait()
		var got []string
		for _, l := range out.writes()[before:] {
			got = append(got, l.text)
		}
		want := []string{erase, "harness run: warning: no manifest\n",
			erase + "[------------|---!-|----] 0.1s of 10s · explore · step 0 · -"}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("wrote %q, want %q", got, want)
		}
	})
}

// stuckTerminal is a terminal paused with Ctrl-S: a write waits until it
// is resumed.
type stuckTerminal struct{ resumed chan struct{} }

func (s stuckTerminal) Write(p []byte) (int, error) {
	<-s.resumed
	return len(p), nil
}

// TestAStuckTerminalDoesNotHoldTheRun: while the drawing goroutine waits on
// the terminal, records go on at once (they run under the run's recorder
// lock); a Record that waited would leave the bubble deadlocked.
func TestAStuckTerminalDoesNotHoldTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := budget.New(budget.Config{Total: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		tty := stuckTerminal{make(chan struct{})}
		line := newStatusLine(tty, "always", b)
		rec := trace.NewRecorder("run-1", b, func(time.Duration) string { return "explore" }, line)
		line.Start(t.Context())
		synctest.Wait() // the first frame waits on the terminal
		start := time.Now()
		for i := range 1000 {
			rec.Record(trace.Record{Event: trace.AttemptStart, Step: "model", StepIndex: i + 1, Attempt: 1})
			rec.Record(trace.Record{Event: trace.AttemptEnd, Step: "model", StepIndex: i + 1, Attempt: 1})
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("the records took %v", took)
		}
		close(tty.resumed)
		line.Close()
	})
}

func TestAStatusLineThatIsOffDrawsNothing(t *testing.T) {
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	b, err := budget.New(budget.Config{Total: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"auto", "never"} { // a buffer is not a terminal
		t.Run(mode, func(t *testing.T) {
			var out bytes.Buffer
			line := newStatusLine(&out, mode, b)
			line.Start(t.Context())
			line.Record(trace.Record{Event: trace.RunStart, TotalMs: 1000})
			line.Write([]byte("a warning\n"))
			line.Close()
			if out.String() != "a warning\n" {
				t.Errorf("wrote %q, want only the warning", out.String())
			}
		})
	}
	// /dev/null is a character device, but not a terminal.
	if newStatusLine(devNull, "auto", b).on {
		t.Error("the line is on for /dev/null in auto mode")
	}
	if !newStatusLine(devNull, "always", b).on {
		t.Error("the line is off in always mode")
	}
}
