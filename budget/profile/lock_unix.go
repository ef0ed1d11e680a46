//go:build unix

package profile

import (
	"errors"
	"os"
	"syscall"
)

// crossProcess reports whether the lock excludes other processes, not only
// other goroutines of this one.
const crossProcess = true

// tryLock tries to take an exclusive advisory lock (flock) on f and
// reports whether it did. flock locks belong to an open file, so two
// goroutines that each opened the lock file exclude each other as two
// processes do; the kernel drops the lock when its holder dies.
func tryLock(f *os.File) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		}
		return false, err
	}
}

func unlockFile(f *os.File) {
	// Closing f drops the lock anyway; nothing to do on failure.
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
