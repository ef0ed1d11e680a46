package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/trace"
)

// MaxOutput bounds the output kept of a subprocess tool: its stdout past
// this is dropped and the output labeled cut short.
const MaxOutput = 1 << 20 // 1 MiB

// stderrTail is how much of a subprocess's stderr is kept for its error.
const stderrTail = 2 << 10

// waitDelay bounds how long a subprocess's pipes may stay open after it was
// killed or exited: a grandchild that left the process group could hold
// them open forever.
const waitDelay = 250 * time.Millisecond

// Command returns a subprocess tool that runs argv. Each attempt starts
// argv[0] with the arguments JSON on its standard input, followed by end of
// file, in a process group of its own. Its standard output, up to
// [MaxOutput], is the tool's output: used as it is when it is one JSON
// value, else as a JSON string. A non-zero exit is a tool error carrying
// the tail of its standard error.
//
// Its environment is not the harness's: it is [Environ]'s, which passes
// PATH, HOME and the like but no key or token the harness holds. The
// process learns its lease and its call from it:
// GLIDEPATH_BUDGET_REMAINING_MS is the attempt's lease in whole
// milliseconds (as Budget-Remaining-Ms is to a remote tool), and
// GLIDEPATH_IDEMPOTENCY_KEY the call's key, the same on every attempt. It
// may report progress by writing JSON lines {"units":n,"total":t,"message":"…"}
// to file descriptor 3: heartbeats, under the same rule as a remote tool's
// (units strictly increase), so that a long build that says how far it has
// come is not taken for a stalled one. Lines that are not that are
// ignored.
//
// When the attempt's lease ends, or the run does, the whole process group
// is killed with SIGKILL, children included; the output so far is kept and
// the result labeled cut short. When argv[0] exits, whatever it left running
// in its group is killed too: no process outlives its attempt.
func Command(spec Spec, argv []string) Tool {
	return &commandTool{spec: spec, argv: append([]string(nil), argv...)}
}

type commandTool struct {
	spec Spec
	argv []string
	env  map[string]string // the entry's env ([Environ]); nil when built in code
	file string            // the tools file whose entry built it; empty when built in code
}

// ToolsFile returns the tools file whose entry built the tool, if any.
func (t *commandTool) ToolsFile() string { return t.file }

// CommandWithStatus returns a [Command] tool that can also say how a call
// went, so that a write whose attempt was cut is reconciled by its key
// rather than left an orphan, and an orphan of it can be settled later by
// `harness reconcile`, which builds it again from the tools file its
// journal entry names. Its Status runs status, in a process
// group of its own, with the call's key in GLIDEPATH_IDEMPOTENCY_KEY (in
// the environment a command tool gets) and nothing on its standard input; it must print one JSON object
// {"state":"running|done|failed|never_received","output":…,"units":n} and
// exit 0. never_received licenses sending the call again with the same
// key, so print it only when the key is surely unknown. Any other exit, or
// other output, is an error: the outcome stays unknown.
func CommandWithStatus(spec Spec, argv, status []string) Tool {
	return &statusCommandTool{commandTool: commandTool{spec: spec, argv: append([]string(nil), argv...)},
		status: append([]string(nil), status...)}
}

// statusCommandTool is a command tool with a status command: a
// [cancel.StatusReader], which a plain one is not.
type statusCommandTool struct {
	commandTool
	status []string
}

func (t *statusCommandTool) check() *fieldErr {
	if err := t.commandTool.check(); err != nil {
		return err
	}
	if len(t.status) == 0 || t.status[0] == "" {
		return &fieldErr{"status", errors.New("no program to run")}
	}
	return nil
}

// Status runs the status command for key and reads its answer.
func (t *statusCommandTool) Status(ctx context.Context, key cancel.Key) (cancel.Status, error) {
	cmd := exec.CommandContext(ctx, t.status[0], t.status[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	cmd.WaitDelay = waitDelay
	stdout := &capped{max: cancel.MaxAnswer}
	stderr := &tail{max: stderrTail}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Env = Environ(t.env, envKey+"="+string(key))
	fail := func(err error) (cancel.Status, error) {
		return cancel.Status{}, fmt.Errorf("%w: %s status command: %w", cancel.ErrUnreachable, t.spec.Name, err)
	}
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	err := waitGroup(cmd)
	switch {
	case ctx.Err() != nil:
		return fail(context.Cause(ctx))
	case err != nil && !(errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState.Success()):
		if s := strings.TrimSpace(stderr.String()); s != "" {
			err = fmt.Errorf("%w: %s", err, clip(s, 512))
		}
		return fail(err)
	case stdout.over:
		return fail(fmt.Errorf("an answer larger than %d bytes", cancel.MaxAnswer))
	}
	var a struct {
		State  *cancel.State   `json:"state"`
		Output json.RawMessage `json:"output"`
		Units  int64           `json:"units"`
	}
	if err := json.Unmarshal(stdout.buf.Bytes(), &a); err != nil || a.State == nil {
		return fail(errors.New(`its output is not {"state":…}`))
	}
	switch *a.State {
	case cancel.Running, cancel.Done, cancel.Failed, cancel.NeverReceived:
	default:
		return fail(fmt.Errorf("unknown state %q", clip(string(*a.State), 64)))
	}
	return cancel.Status{State: *a.State, Output: a.Output, Units: a.Units}, nil
}

func (t *commandTool) Spec() Spec { return t.spec }

func (t *commandTool) check() *fieldErr {
	if len(t.argv) == 0 || t.argv[0] == "" {
		return &fieldErr{"command", errors.New("no program to run")}
	}
	return nil
}

// killGroup kills the process group whose id is pid. ESRCH, a group
// already empty, is what a well-behaved tool leaves.
func killGroup(pid int) error { return syscall.Kill(-pid, syscall.SIGKILL) }

func (t *commandTool) Attempt(ctx context.Context, call *Call) Answer {
	cmd := exec.CommandContext(ctx, t.argv[0], t.argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// The group's id is the leader's pid (Setpgid with Pgid 0); the
		// minus sign sends the signal to every process in it.
		return killGroup(cmd.Process.Pid)
	}
	cmd.WaitDelay = waitDelay
	cmd.Stdin = bytes.NewReader(call.Args)
	stdout := &capped{max: MaxOutput}
	stderr := &tail{max: stderrTail}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Env = Environ(t.env, envBudget+"="+call.Lease.Millis(), envKey+"="+string(call.Key))
	progress, report, err := os.Pipe()
	if err != nil {
		return Answer{Err: &ToolError{Message: "progress pipe: " + err.Error()}, Outcome: trace.UpstreamError, NotSent: true}
	}
	cmd.ExtraFiles = []*os.File{report} // file descriptor 3

	err = cmd.Start()
	report.Close() // the child holds its own copy; EOF comes when the group is gone
	if err != nil {
		progress.Close()
		// The process never started: nothing of the call ran.
		return Answer{Err: &ToolError{Message: err.Error()}, Outcome: trace.UpstreamError, NotSent: true}
	}
	var reading sync.WaitGroup
	reading.Go(func() { readProgress(progress, call) })
	// From here the process ran, and when waitGroup returns its whole
	// group is gone: whatever it did, nothing of it is left running. What
	// it wrote last may still be in the pipe: the reading drains it to its
	// end, which comes at once, unless a process that left the group still
	// holds the pipe; that one gets progressDrain, then the reading ends.
	// (Closing our end at once lost those last lines.)
	err = waitGroup(cmd)
	if progress.SetReadDeadline(time.Now().Add(progressDrain)) != nil {
		progress.Close() // a pipe with no deadline: end the reading as before
	}
	reading.Wait()
	progress.Close()
	if ctx.Err() != nil {
		return Answer{Err: context.Cause(ctx), Output: stringOutput(stdout.buf.Bytes()), CutShort: true, Stopped: true}
	}
	if err != nil && !(errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState.Success()) {
		msg := err.Error()
		if _, ok := errors.AsType[*exec.ExitError](err); ok {
			if s := strings.TrimSpace(stderr.String()); s != "" {
				msg += ": " + s
			}
		}
		return Answer{Err: &ToolError{Message: msg}, Outcome: trace.UpstreamError, Stopped: true}
	}
	if stdout.over {
		return Answer{Output: stringOutput(stdout.buf.Bytes()), CutShort: true, Stopped: true}
	}
	out := bytes.TrimSpace(stdout.buf.Bytes())
	if len(out) > 0 && json.Valid(out) {
		return Answer{Output: bytes.Clone(out), Stopped: true}
	}
	return Answer{Output: stringOutput(stdout.buf.Bytes()), Stopped: true}
}

// The environment a subprocess tool learns its call from.
const (
	envBudget = "GLIDEPATH_BUDGET_REMAINING_MS"
	envKey    = "GLIDEPATH_IDEMPOTENCY_KEY"
)

// progressDrain bounds the reading of what a subprocess wrote to its
// progress pipe once its group is gone, should a process that left the
// group hold the pipe open.
const progressDrain = 20 * time.Millisecond

// maxProgressLine bounds one progress line of a subprocess; a longer one is
// skipped, and the lines after it are read.
const maxProgressLine = 64 << 10

// readProgress reads the JSON lines a subprocess writes to file descriptor
// 3 and reports each heartbeat, until the pipe is closed or ends. A line
// that is not a heartbeat, too long ones included, is skipped: one bad line
// must not silence the heartbeats after it.
func readProgress(r io.Reader, call *Call) {
	br := bufio.NewReaderSize(r, maxProgressLine)
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// Too long: skip the rest of it, up to its newline.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil {
				return
			}
			continue
		}
		var p struct {
			Units   *int64 `json:"units"`
			Total   int64  `json:"total"`
			Message string `json:"message"`
		}
		if json.Unmarshal(line, &p) == nil && p.Units != nil {
			call.Progress(*p.Units, p.Total, p.Message)
		}
		if err != nil {
			return // the pipe ended; its last line, unterminated, was read above
		}
	}
}

// stringOutput encodes raw output as a JSON string, invalid UTF-8 replaced.
func stringOutput(b []byte) json.RawMessage {
	s := string(b)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	out, _ := json.Marshal(s) // a valid string always encodes
	return out
}

// capped keeps the first max bytes written and drops the rest, reporting
// success so that the process is not killed by a broken pipe.
type capped struct {
	buf  bytes.Buffer
	max  int
	over bool // reports whether bytes were dropped
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room < len(p) {
		c.over = true
		c.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return c.buf.Write(p)
}

// tail keeps the last max bytes written.
type tail struct {
	buf []byte
	max int
}

func (t *tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string { return strings.ToValidUTF8(string(t.buf), "\uFFFD") }
