package redact

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// holds decides, by a byte window, whether a pattern's regexp is tried at
// all: that is exact only if every rune a literal's letters fold to under
// (?i) is one byte long, as the letter is. A literal with an s or a k
// would not be: ſ (U+017F) folds to s, and the Kelvin sign (U+212A) to k.
func TestTheLiteralsFoldOnlyToASCII(t *testing.T) {
	for _, p := range secretPatterns {
		if !strings.Contains(p.re.String(), p.literal) {
			t.Errorf("pattern %s does not hold its literal %q", p.re, p.literal)
		}
		if !p.foldCase {
			continue
		}
		for _, r := range p.literal {
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				if utf8.RuneLen(f) != 1 {
					t.Errorf("%q of %q folds to %q, %d bytes", r, p.literal, f, utf8.RuneLen(f))
				}
			}
		}
	}
}

// A message that holds a literal in any case is still redacted; one that
// holds none is returned as it was.
func TestSecretsTriesAPatternOnlyWhereItsLiteralIs(t *testing.T) {
	cases := []struct{ in, want string }{
		{"AUTHORIZATION: Bearer abcdefghijkl", "AUTHORIZATION: [redacted]"},
		{"sent BeArEr abcdefghijklmnop", "sent Bearer [redacted]"},
		{"503 Service Unavailable: [sim] overloaded: try again later.", "503 Service Unavailable: [sim] overloaded: try again later."},
		{"SK-abcdefghijkl is not a key of OpenAI's shape", "SK-abcdefghijkl is not a key of OpenAI's shape"},
	}
	for _, tc := range cases {
		if got := Secrets(tc.in); got != tc.want {
			t.Errorf("Secrets(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
