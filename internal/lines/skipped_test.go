package lines_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/glidepath/glidepath/internal/lines"
)

var errBad = errors.New("test: bad line")

// lineError is a reader's error for one line: it matches errBad.
type lineError struct {
	n   int
	why string
}

func (e *lineError) Error() string        { return fmt.Sprintf("test: line %d: %s", e.n, e.why) }
func (e *lineError) Is(target error) bool { return target == errBad }

func skippedOf(n int) lines.Skipped[*lineError] {
	s := lines.Skipped[*lineError]{Prefix: "test", Noun: "bad line",
		Name: func(l *lineError) string { return fmt.Sprintf("#%d: %s", l.n, l.why) }}
	for i := range n {
		s.Lines = append(s.Lines, &lineError{n: i + 1, why: "not JSON"})
	}
	return s
}

func TestSkippedLinesAreCountedAndTheFirstFewNamed(t *testing.T) {
	cases := []struct {
		name  string
		lines int
		want  string
	}{
		{"one line is a line, named", 1, "test: 1 bad line skipped: #1: not JSON"},
		{"three lines are each named", 3, "test: 3 bad lines skipped: #1: not JSON; #2: not JSON; #3: not JSON"},
		{"past three, the rest are counted", 5, "test: 5 bad lines skipped: #1: not JSON; #2: not JSON; #3: not JSON; and 2 more"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := skippedOf(tc.lines).Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSkippedLinesMatchWhatEachLineMatches(t *testing.T) {
	var err error = skippedOf(4)
	if !errors.Is(err, errBad) {
		t.Errorf("errors.Is(%v, errBad) = false, want true", err)
	}
	if l, ok := errors.AsType[*lineError](err); !ok || l.n != 1 {
		t.Errorf("errors.AsType found %v, %v; want the first line's error", l, ok)
	}
	if got := len(skippedOf(4).Unwrap()); got != 4 {
		t.Errorf("Unwrap() has %d errors, want the 4 lines'", got)
	}
}
