package mcp

import "syscall"

// procAttr starts a stdio server in a process group of its own, which
// Close kills as a whole, and has the kernel kill its leader should the
// harness die first (SIGKILL, a crash): a server never outlives the run
// that started it unnoticed.
//
// Pdeathsig fires when the thread that started the server exits, not the
// process; the Go runtime ends a thread only when a goroutine locked to it
// exits, which the harness does not do on the goroutines that call tools.
// It reaches the leader alone: what the leader started (npx runs the
// server as its child) sees its input close, as every stdio server does
// when its client goes.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
