package lines

import (
	"fmt"
	"strings"
)

// Skipped is the lines a reader skipped because they were not what it
// reads, each an error naming its line, in file order, and the words its
// message says them in: the error the trace's reader and the journal's
// return beside what they read from every other line (issue 24). Each
// package's SkippedError is a thin type of its own over it, so that
// errors.AsType tells a trace's skipped lines from a journal's.
type Skipped[L error] struct {
	// Prefix is the message's package prefix, as "trace".
	Prefix string
	// Noun is what a skipped line was, in the singular, as "bad line".
	Noun  string
	Lines []L
	// Name is one line as the message lists it — where it is and why,
	// without its own package prefix — as "line 3: not JSON".
	Name func(L) string
}

// shown is how many of the skipped lines a message names; the rest are
// counted.
const shown = 3

// Error counts the lines and names the first few: "trace: 5 bad lines
// skipped: line 1: not JSON; line 2: …; line 4: …; and 2 more".
func (s Skipped[L]) Error() string {
	var b strings.Builder
	noun := s.Noun + "s"
	if len(s.Lines) == 1 {
		noun = s.Noun
	}
	fmt.Fprintf(&b, "%s: %d %s skipped", s.Prefix, len(s.Lines), noun)
	for i, l := range s.Lines[:min(len(s.Lines), shown)] {
		sep := "; "
		if i == 0 {
			sep = ": "
		}
		b.WriteString(sep + s.Name(l))
	}
	if len(s.Lines) > shown {
		fmt.Fprintf(&b, "; and %d more", len(s.Lines)-shown)
	}
	return b.String()
}

// Unwrap returns the skipped lines' errors, so that the error matches
// whatever each of them matches (a package's bad-line sentinel), and
// errors.AsType finds the first.
func (s Skipped[L]) Unwrap() []error {
	errs := make([]error, len(s.Lines))
	for i, l := range s.Lines {
		errs[i] = l
	}
	return errs
}
