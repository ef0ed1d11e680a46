package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/glidepath/glidepath/trace"
)

// printGrace is how long after its run_end the answer may reach stdout: a
// few milliseconds on an idle machine, generous for a busy one, and well
// below what the release of the demo's tools took before issue 24 (the
// in-memory tool server held the answer until the deadline, 340ms after
// run_end on 1.2s, and 0.9s after a Ctrl-C on 20s).
const printGrace = 250 * time.Millisecond

// lateness is whether a case's run must land by its deadline, past it, or
// either, as run_end's own stamp says.
type lateness int

const (
	onTime lateness = iota
	pastDeadline
	// asStamped is a run whose work takes about its whole budget: on a
	// loaded machine (two cores under -race) the demo's 1.2s run ends +58
	// to +604ms past its deadline (issue 24), and then it must say so.
	asStamped
)

// stampSlack is how far the test's reading of a run_end's place beside
// the deadline may be from the whole milliseconds of its late_ms: both are
// truncated to the millisecond, the test's from run_start's elapsed_ms.
const stampSlack = 2 * time.Millisecond

// True time everywhere (SPEC §3, issue 24): `harness run` with the demo's
// tools prints its answer when the run's result exists, not once its
// tools are released; the spent time it reports is the time that passed
// until then, read in the same instant as run_end; and an answer that
// comes after the deadline says so, with late_ms on run_end and spent_ms
// past total_ms. Each case is a real process read as a user would: the
// instant the answer reaches stdout, beside the trace's run_start and
// run_end.
func TestE2EAnAnswerIsPrintedWhenItsResultExistsAndSaysHowLongItTook(t *testing.T) {
	cases := []struct {
		name   string
		budget string
		// act, when not nil, is sent once the pay tool's first attempt has
		// started (or ended: on), as stderr's JSON logs tell it.
		on   trace.Event
		act  func(t *testing.T, pid int)
		late lateness
	}{
		{name: "a run that lands by its budget", budget: "1.2s", late: asStamped},
		{name: "a run cut by Ctrl-C while a payment is still at work", budget: "20s", on: trace.AttemptEnd, late: onTime,
			act: func(t *testing.T, pid int) {
				if err := syscall.Kill(pid, syscall.SIGINT); err != nil {
					t.Error(err)
				}
			}},
		{name: "a run stopped past its deadline", budget: "1.2s", on: trace.AttemptStart, late: pastDeadline,
			act: func(t *testing.T, pid int) {
				if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(2 * time.Second) // stopped this long: the time that must show
				if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
					t.Error(err)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			trc := filepath.Join(dir, "trace.jsonl")
			cmd := harnessCmd(t, nil, "run", "--budget", tc.budget, "--tools", demoTools, "--journal", filepath.Join(dir, "j.jsonl"),
				"--json", "-v", "--log-format", "json", "--trace", trc, "q")
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var (
				wg        sync.WaitGroup
				out       bytes.Buffer
				printedAt time.Time
				errLines  []string
			)
			wg.Go(func() {
				first := make([]byte, 1)
				if n, _ := stdout.Read(first); n == 1 {
					printedAt = time.Now()
					out.Write(first)
				}
				io.Copy(&out, stdout)
			})
			acted := make(chan struct{})
			wg.Go(func() {
				defer close(acted)
				sc := bufio.NewScanner(stderr)
				sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
				done := tc.act == nil
				for sc.Scan() {
					errLines = append(errLines, sc.Text())
					var l struct{ Event, Step string }
					if !done && json.Unmarshal(sc.Bytes(), &l) == nil && l.Event == string(tc.on) && l.Step == "tool:pay" {
						done = true
						tc.act(t, cmd.Process.Pid)
					}
				}
			})
			wg.Wait()
			cmd.Wait()
			ended := time.Now()
			if code := cmd.ProcessState.ExitCode(); code != exitPartial {
				t.Fatalf("exit %d, want %d\nstderr:\n%s", code, exitPartial, strings.Join(errLines, "\n"))
			}
			res := jsonResult(t, out.String())
			recs := readTrace(t, trc)
			first, end := recs[0], recs[len(recs)-1]
			if first.Event != trace.RunStart || end.Event != trace.RunEnd {
				t.Fatalf("trace from %s to %s, want run_start to run_end", first.Event, end.Event)
			}
			// The budget's clock started this long before run_start was
			// stamped (the process's start-up is spent from it).
			began := first.TS.Add(-time.Duration(first.ElapsedMs) * time.Millisecond)
			deadline := began.Add(time.Duration(res.Budget.TotalMs) * time.Millisecond)

			if res.Budget.SpentMs != end.ElapsedMs {
				t.Errorf("--json spent_ms %d, run_end elapsed_ms %d: want one instant", res.Budget.SpentMs, end.ElapsedMs)
			}
			if gap := printedAt.Sub(end.TS); gap > printGrace {
				t.Errorf("the answer reached stdout %v after run_end, want within %v", gap, printGrace)
			}
			// What the answer says it spent is the time that passed until
			// it was printed, not until something before (a Ctrl-C).
			if said, took := time.Duration(res.Budget.SpentMs)*time.Millisecond, printedAt.Sub(began); took-said > printGrace {
				t.Errorf("the answer says it spent %v; it was printed %v after the budget began", said, took)
			}
			// Late is told by run_end's own stamp, not by when the answer
			// was read here: late_ms is how far past the deadline run_end
			// was stamped, and --json's spent_ms is past total_ms by as
			// much.
			past := end.TS.Sub(deadline)
			if d := time.Duration(end.LateMs)*time.Millisecond - max(past, 0); d < -stampSlack || d > stampSlack {
				t.Errorf("run_end was stamped %v past the deadline, and says late_ms %d", past, end.LateMs)
			}
			if over := max(res.Budget.SpentMs-res.Budget.TotalMs, 0); over != end.LateMs {
				t.Errorf("spent_ms %d of %d, run_end late_ms %d: want late by as much in both",
					res.Budget.SpentMs, res.Budget.TotalMs, end.LateMs)
			}
			isLate := end.LateMs > 0
			if tc.late != asStamped && isLate != (tc.late == pastDeadline) {
				t.Errorf("late_ms %d (spent_ms %d of %d): want late %v", end.LateMs, res.Budget.SpentMs, res.Budget.TotalMs, tc.late == pastDeadline)
			}
			t.Logf("run_end at %dms (late_ms %d), the answer %v after it; spent_ms %d; the process ended %v after the deadline",
				end.ElapsedMs, end.LateMs, printedAt.Sub(end.TS).Round(100*time.Microsecond), res.Budget.SpentMs,
				ended.Sub(deadline).Round(time.Millisecond))
		})
	}
}
