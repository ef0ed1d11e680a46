//go:build !linux

package tools

import "os/exec"

// waitGroup waits for cmd, started in a process group of its own, and
// kills whatever its leader left running in the group, so that no process
// outlives the attempt. Without Linux's waitid with WNOWAIT the group is
// killed after the leader was reaped; its id could then name another
// group only once the system's pids have wrapped around.
func waitGroup(cmd *exec.Cmd) error {
	err := cmd.Wait()
	killGroup(cmd.Process.Pid)
	return err
}
