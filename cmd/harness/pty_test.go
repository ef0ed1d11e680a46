package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/creack/pty"

	"github.com/glidepath/glidepath/budget"
)

// runOnATerminal runs `harness run ARGS` as a process whose standard
// input, output and error are a pseudo-terminal of cols columns, as a
// person's shell would start it, and returns all the terminal showed and
// the exit code. $COLUMNS says 40, so a line that fits 100 columns has read
// the terminal's width. Real process and clock: bounded generously.
func runOnATerminal(t *testing.T, cols uint16, args string) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GLIDEPATH_RUN_MAIN=1", "COLUMNS=40", "GLIDEPATH_ARGS="+args)
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: cols})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var out bytes.Buffer
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		io.Copy(&out, tty) // ends with EIO once the process has closed the terminal
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case <-waited:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-waited
		tty.Close()
		<-copied
		t.Fatalf("harness run did not end within 60s; the terminal showed:\n%q", out.String())
	}
	select {
	case <-copied:
	case <-time.After(10 * time.Second):
		tty.Close() // unblocks the copy
		<-copied
		t.Fatalf("the terminal was not closed 10s after the process ended")
	}
	return out.String(), cmd.ProcessState.ExitCode()
}

// sleepyTools writes a tools file whose one tool sleeps 1.5s.
func sleepyTools(t *testing.T) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "tools.yaml")
	err := os.WriteFile(cfg, []byte(`tools:
  - name: sleepy
    description: sleep a while
    parameters: {"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}
    effect: read
    ceiling: 8s
    command: ["sh", "-c", "sleep 1.5; echo slept"]
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A frame of B = 10s, whose default reserve of 2.5s begins at 75%, with
// the tool in flight: the bar, the marks, the spent time, the lease.
var sleepyFrame = regexp.MustCompile(`^\[[#-]{12}\|[#-]{3}![#-]\|[#-]{4}\] (\d+\.\d)s of 10s · explore · step 1 · tool:sleepy \d+\.\ds$`)

// TestTheLiveLineOnARealTerminal runs `harness run --progress auto` on a
// pseudo-terminal, as a person sees it: the line turns on because stderr
// is a terminal, is drawn again and again while the tool sleeps, its
// spent time advancing, fits the terminal's width, and is erased before
// the answer is printed.
func TestTheLiveLineOnARealTerminal(t *testing.T) {
	shown, code := runOnATerminal(t, 100, "run --budget 10s --progress auto --tools "+sleepyTools(t)+" sleep-it")
	if code != 0 {
		t.Fatalf("exit code %d; the terminal showed:\n%q", code, shown)
	}
	parts := strings.Split(shown, erase)
	if len(parts) < 3 {
		t.Fatalf("no live line; the terminal showed:\n%q", shown)
	}
	frames, after := parts[1:len(parts)-1], parts[len(parts)-1]
	var spent []float64
	for _, f := range frames {
		if n := utf8.RuneCountInString(f); n > 99 || strings.ContainsAny(f, "\r\n\033") {
			t.Errorf("frame %q (%d columns) does not fit one line of a 100-column terminal", f, n)
		}
		if m := sleepyFrame.FindStringSubmatch(f); m != nil {
			s, _ := strconv.ParseFloat(m[1], 64)
			if len(spent) > 0 && s < spent[len(spent)-1] {
				t.Errorf("spent went back from %.1fs to %.1fs", spent[len(spent)-1], s)
			}
			spent = append(spent, s)
		}
	}
	distinct := map[float64]bool{}
	for _, s := range spent {
		distinct[s] = true
	}
	// The tool sleeps 1.5s and the line is drawn every 100ms: 3 is generous.
	if len(distinct) < 3 {
		t.Errorf("%d distinct frames while the tool ran (spent %v), want several; frames:\n%s",
			len(distinct), spent, strings.Join(frames, "\n"))
	}
	if len(spent) > 0 {
		t.Logf("a frame: %s", frames[len(frames)/2])
	}
	// The last erase is the line's: the answer follows it on a clean line.
	if !strings.HasPrefix(after, `[sim] Answer to "sleep-it"`) {
		t.Errorf("the answer does not follow the erased line; after the last erase:\n%q", after)
	}
	if !strings.Contains(after, "complete · cause none") {
		t.Errorf("no summary after the answer:\n%q", after)
	}
}

// TestNoLiveLineWithProgressNever: on a terminal, --progress never writes
// no escape sequence at all.
func TestNoLiveLineWithProgressNever(t *testing.T) {
	shown, code := runOnATerminal(t, 100, "run --budget 10s --progress never --tools "+sleepyTools(t)+" sleep-it")
	if code != 0 {
		t.Fatalf("exit code %d; the terminal showed:\n%q", code, shown)
	}
	if strings.ContainsAny(shown, "\033") || !strings.HasPrefix(shown, `[sim] Answer to "sleep-it"`) {
		t.Errorf("the terminal showed:\n%q\nwant the answer and the summary alone", shown)
	}
}

// TestTheLineIsOnInAutoModeOnATerminal: auto turns the line on for a
// terminal, and the width read from it wins over $COLUMNS, which wins
// over 80.
func TestTheLineIsOnInAutoModeOnATerminal(t *testing.T) {
	master, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer tty.Close()
	if err := pty.Setsize(tty, &pty.Winsize{Rows: 24, Cols: 132}); err != nil {
		t.Fatal(err)
	}
	b, err := budget.New(budget.Config{Total: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("COLUMNS", "40")
	line := newStatusLine(tty, "auto", b)
	if !line.on {
		t.Error("the line is off on a terminal in auto mode")
	}
	if got := line.width(); got != 132 {
		t.Errorf("width %d, want the terminal's 132", got)
	}
	if got := widthOf(-1)(); got != 40 {
		t.Errorf("width %d off a terminal, want $COLUMNS, 40", got)
	}
	t.Setenv("COLUMNS", "")
	if got := widthOf(-1)(); got != 80 {
		t.Errorf("width %d with neither, want 80", got)
	}
}

// harness run -v on a terminal: console lines, coloured, with the fields
// of SPEC §8; and with --log-format json, JSON lines even there.
func TestVerboseLogsOnATerminal(t *testing.T) {
	shown, code := runOnATerminal(t, 100, "run -v --progress never --budget 10s sleep-it")
	if code != 0 {
		t.Fatalf("exit code %d; the terminal showed:\n%q", code, shown)
	}
	for _, want := range []string{"attempt_end model", "granted_ms=", "remaining_ms=", "outcome=", "run_id=", "\033["} {
		if !strings.Contains(shown, want) {
			t.Errorf("the terminal showed no %q:\n%q", want, shown)
		}
	}
	shown, code = runOnATerminal(t, 100, "run -v --log-format json --budget 10s sleep-it")
	if code != 0 || !strings.Contains(shown, `"granted_ms":`) || strings.Contains(shown, "\033[") {
		t.Errorf("exit %d; with --log-format json the terminal showed:\n%q", code, shown)
	}
}

// TestTheDemosParallelStepOnAnEightyColumnTerminal runs the demo's run on
// 80 columns: while its four tools are in flight the line names them
// (issue 24: it showed "step 1 · +4 more" throughout), every frame in 79
// columns.
func TestTheDemosParallelStepOnAnEightyColumnTerminal(t *testing.T) {
	shown, code := runOnATerminal(t, 80, "run --budget 20s --progress auto --journal "+filepath.Join(t.TempDir(), "j.jsonl")+
		" --profile off --tools "+demoTools+" Pay-invoice-43")
	if code != 0 {
		t.Fatalf("exit code %d; the terminal showed:\n%q", code, shown)
	}
	parts := strings.Split(shown, erase)
	named := 0
	for _, f := range parts[1 : len(parts)-1] {
		if n := utf8.RuneCountInString(f); n > 79 || strings.ContainsAny(f, "\r\n\033") {
			t.Errorf("frame %q (%d columns) does not fit one line of an 80-column terminal", f, n)
		}
		if strings.Contains(f, "step 1 · deep_research") {
			named++
		}
	}
	if named == 0 {
		t.Errorf("no frame of step 1 names a call in flight; frames:\n%s", strings.Join(parts[1:len(parts)-1], "\n"))
	}
}
