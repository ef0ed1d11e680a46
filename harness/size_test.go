package harness

import (
	"testing"
	"unsafe"
)

// Every run holds a Session and, driven by the harness's loop, a loop,
// for its whole life; each is kept inside a size class of the allocator
// (issue 25 item 6: an idle run's memory, SPEC §7). A field more moves it
// up a class: make room first, or say in the limit why the run needs it.
// A Session is over 512 bytes, so it carries a word of header: 888 bytes
// fill the 896-byte class.
func TestAnIdleRunsSessionAndLoopStayInTheirSizeClasses(t *testing.T) {
	for _, c := range []struct {
		name        string
		size, limit uintptr
	}{
		{"Session", unsafe.Sizeof(Session{}), 896 - 8},
		{"loop", unsafe.Sizeof(loop{}), 384},
	} {
		if c.size > c.limit {
			t.Errorf("%s is %d bytes, want at most %d", c.name, c.size, c.limit)
		}
	}
}
