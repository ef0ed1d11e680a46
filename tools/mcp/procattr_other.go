//go:build !linux

package mcp

import "syscall"

// procAttr starts a stdio server in a process group of its own, which
// Close kills as a whole. Only Linux can also tie the server's life to the
// harness's (Pdeathsig): elsewhere a harness that is killed leaves the
// server to see its input close.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
