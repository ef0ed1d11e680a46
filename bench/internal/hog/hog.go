// Package hog starves a machine for a benchmark: one busy process per
// core beside what the benchmark measures (SPEC §7, "on a starved
// machine"). A hog is a copy of the running binary, started with an
// environment variable that [Main] recognizes, so that a benchmark binary
// or a command needs nothing but a call to Main at the top of its main or
// TestMain.
//
// Processes, not goroutines: a goroutine hog would compete inside our own
// scheduler, which a user's machine under load does not do; a busy
// process competes where a loaded machine's neighbours do, in the
// kernel's scheduler, for our process and for a `harness run` process
// alike.
//
// # Bounds
//
// Every hog is bounded twice: it stops when its standard input ends —
// when [Hogs.Stop] closes it, or when its owner dies and the pipe closes
// with it — and at the latest after the time [Start] was given, so that no
// hog outlives a benchmark cut short. [Hogs.Stop] kills whatever is still
// running and waits for every hog.
package hog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync/atomic"
	"time"
)

// childEnv, when set, makes the binary a hog; its value is the longest it
// may spin, a duration.
const childEnv = "GLIDEPATH_HOG_CHILD"

// Main makes the running binary a hog, if it was started as one by
// [Start], and then exits; otherwise it returns at once.
func Main() {
	if v, ok := os.LookupEnv(childEnv); ok {
		os.Exit(spin(v))
	}
}

// sink keeps the spinning loop's work observable, so that the compiler
// cannot drop it.
var sink atomic.Uint64

// spin keeps one core busy until standard input ends or within has
// passed, whichever is first.
func spin(within string) int {
	d, err := time.ParseDuration(within)
	if err != nil || d <= 0 {
		fmt.Fprintf(os.Stderr, "hog: %s=%q: want a positive duration\n", childEnv, within)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	// The reader ends with standard input; if the bound comes first, it is
	// still blocked in a read of a blocking pipe, which the process's exit
	// ends: nothing of it is waited for or left.
	go func() {
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	var n uint64
	for ctx.Err() == nil {
		for range 1 << 16 {
			n++
		}
		sink.Store(n)
	}
	return 0
}

// Hogs are running hog processes, owned by the caller of [Start].
type Hogs struct {
	cmds   []*exec.Cmd
	stdins []io.Closer
	n      int           // how many were started
	cpu    time.Duration // what the stopped hogs spent
}

// Start starts n hogs (n ≤ 0: one per CPU, runtime.NumCPU()), each a copy
// of this binary that keeps one core busy until [Hogs.Stop], or for at most
// within. It returns once every hog has been started, not once each is
// spinning: a caller that needs them at work waits a little (a few
// scheduler ticks) before it measures.
func Start(n int, within time.Duration) (*Hogs, error) {
	if n <= 0 {
		n = runtime.NumCPU()
	}
	if within <= 0 {
		return nil, fmt.Errorf("hog: within %v: want a positive duration", within)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("hog: %w", err)
	}
	h := &Hogs{}
	for range n {
		cmd := exec.Command(self)
		// One P: a hog is one busy thread, the runtime's own threads idle.
		cmd.Env = append(os.Environ(), childEnv+"="+within.String(), "GOMAXPROCS=1")
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			h.Stop()
			return nil, fmt.Errorf("hog: %w", err)
		}
		h.cmds = append(h.cmds, cmd)
		h.stdins = append(h.stdins, stdin)
		h.n++
	}
	return h, nil
}

// Len returns how many hogs were started.
func (h *Hogs) Len() int { return h.n }

// Stop stops every hog and waits for each; it returns an error only when
// a hog had failed before it was stopped. Stop on a nil *Hogs does
// nothing.
func (h *Hogs) Stop() error {
	if h == nil {
		return nil
	}
	for _, in := range h.stdins {
		in.Close()
	}
	var errs []error
	for _, cmd := range h.cmds {
		// A hog stops within one round of its loop once its input ends;
		// one that has not within a second is killed.
		timer := time.AfterFunc(time.Second, func() { cmd.Process.Kill() })
		err := cmd.Wait()
		timer.Stop()
		if ps := cmd.ProcessState; ps != nil {
			h.cpu += ps.UserTime() + ps.SystemTime()
		}
		if ee, ok := errors.AsType[*exec.ExitError](err); ok && !ee.Exited() {
			continue // killed by us: stopped, not failed
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("hog %d: %w", cmd.Process.Pid, err))
		}
	}
	h.cmds, h.stdins = nil, nil
	return errors.Join(errs...)
}

// CPU returns the CPU time, user and system, that the hogs spent: valid
// once [Hogs.Stop] has returned, for the hogs it waited for.
func (h *Hogs) CPU() time.Duration { return h.cpu }
