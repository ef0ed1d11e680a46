package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

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

	if err := cmd.Start(); err != nil {
		return Answer{Err: &ToolError{Message: err.Error()}, Outcome: trace.UpstreamError}
	}
	// From here the process ran, and when waitGroup returns its whole
	// group is gone: whatever it did, nothing of it is left running.
	err := waitGroup(cmd)
	if ctx.Err() != nil {
		return Answer{Err: context.Cause(ctx), Output: stringOutput(stdout.buf.Bytes()), CutShort: true, Sent: true, Stopped: true}
	}
	if err != nil && !(errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState.Success()) {
		msg := err.Error()
		if _, ok := errors.AsType[*exec.ExitError](err); ok {
			if s := strings.TrimSpace(stderr.String()); s != "" {
				msg += ": " + s
			}
		}
		return Answer{Err: &ToolError{Message: msg}, Outcome: trace.UpstreamError, Sent: true, Stopped: true}
	}
	if stdout.over {
		return Answer{Output: stringOutput(stdout.buf.Bytes()), CutShort: true, Sent: true, Stopped: true}
	}
	out := bytes.TrimSpace(stdout.buf.Bytes())
	if len(out) > 0 && json.Valid(out) {
		return Answer{Output: bytes.Clone(out), Sent: true, Stopped: true}
	}
	return Answer{Output: stringOutput(stdout.buf.Bytes()), Sent: true, Stopped: true}
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
