//go:build !unix

package profile

import "os"

// crossProcess reports whether the lock excludes other processes, not only
// other goroutines of this one. Without flock it does not: there, runs of
// one process lose none of each other's observations, but two processes
// recording at the same instant may lose one's batch (the rename keeps the
// file whole either way).
const crossProcess = false

// inProcess is the lock of every profile in this process: a channel rather
// than a mutex, so that a waiter is not stuck in a lock that nothing can
// interrupt.
var inProcess = make(chan struct{}, 1)

func tryLock(*os.File) (bool, error) {
	select {
	case inProcess <- struct{}{}:
		return true, nil
	default:
		return false, nil
	}
}

func unlockFile(*os.File) { <-inProcess }
