package tools

import (
	"os/exec"
	"syscall"
	"unsafe"
)

// waitGroup waits for cmd, started in a process group of its own, and
// kills whatever its leader left running in the group, a child put in the
// background included, so that no process outlives the attempt. The group
// is killed once the leader has exited but before it is reaped: until
// then its pid, which is the group's id, cannot be given to another
// process.
func waitGroup(cmd *exec.Cmd) error {
	const pPID = 1     // P_PID of waitid(2)
	var info [128]byte // a siginfo_t, which waitid fills and nobody reads
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(cmd.Process.Pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno != syscall.EINTR {
			break // on another error, Wait says what is wrong
		}
	}
	killGroup(cmd.Process.Pid)
	return cmd.Wait()
}
