package model

import (
	"testing"
	"unsafe"
)

// A Request is passed by value down the frames a run's goroutine holds
// while a model request is encoded and sent, its deepest point, a few
// bytes short of 16 KB: 8 bytes more in a Request (an int64
// MaxOutputTokens, issue 28) took it past, and every run in flight held a
// 32 KB stack (BenchmarkIdleRuns: 24.6 KB of stacks per idle run became
// 41.1 KB, 1.15× a bare SDK call's memory became 1.48×). A field more must
// make room first, or move the goroutine's deepest frames off its stack.
func TestARequestStaysInItsSize(t *testing.T) {
	if got := unsafe.Sizeof(Request{}); got > 64 {
		t.Errorf("a Request is %d bytes, want at most 64", got)
	}
}
