package procstart_test

import (
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/internal/procstart"
)

func TestAtIsSetBeforeTheFirstTestRuns(t *testing.T) {
	now := time.Now()
	if procstart.At.IsZero() || !procstart.At.Before(now) {
		t.Errorf("At = %v, want an instant before the test, %v", procstart.At, now)
	}
	// A monotonic reading survives Sub; a wall-clock-only time prints
	// without "m=".
	if s := procstart.At.String(); !strings.Contains(s, " m=+") {
		t.Errorf("At = %s has no monotonic reading", s)
	}
}
