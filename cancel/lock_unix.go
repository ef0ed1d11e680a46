//go:build unix

package cancel

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock on f, which other processes
// appending to the same journal also take, and waits for it.
func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}

func unlockFile(f *os.File) {
	// The lock is dropped on close or exit anyway; nothing to do on failure.
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
